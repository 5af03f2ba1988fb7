"""Several models in one home, the parts without a server: the record round-trips with its library, the router's
load set follows memory, MODEL is told apart from the default, names are safe preset sections.
(With the real engine through the real CLI: tests/e2e/test_several_models.py.)"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bootstrap.catalog.model_ref import wanted_model
from bootstrap.core.home import Home
from bootstrap.install.library import embedding_args, models_max_for, names_default, names_entry, pooling_of
from bootstrap.plan.model_profile import POOLING_NAMES, ModelProfile
from bootstrap.record.state import (
    FileRecord,
    LibraryModel,
    RequestRecord,
    launch_spec,
    load_state,
    relative_to_home,
    save_state,
)
from tests.record.test_state import _state

GIB = 1 << 30


def _entry(home: Home, name: str, role: str = "chat", gib: int = 1) -> LibraryModel:
    path = relative_to_home(home, home.models_dir / name / f"{name}.gguf")
    return LibraryModel(name=name, model_id=name, quant="Q8_0", role=role,
                        files=(FileRecord("model", path, 10, "ab" * 32, "hf", "1" * 40),),
                        args=("-c", "8192", "--embeddings") if role == "embedding" else ("-c", "4096"),
                        request=name, source="auto", planned_ram=gib * GIB)


def test_the_record_round_trips_with_its_library_and_the_router_spec_follows(tmp_path: Path) -> None:
    home = Home(tmp_path / "家 home")
    state = replace(_state(home, tmp_path / "x.gguf"), library=(_entry(home, "embed", "embedding"),
                                                                 _entry(home, "chat2")), models_max=3)
    save_state(home, state)
    loaded = load_state(home)
    assert loaded == state
    spec = launch_spec(loaded, home)
    assert spec.router and spec.models_max == 3
    assert [o.name for o in spec.others] == ["embed", "chat2"]
    assert spec.others[0].model == home.models_dir / "embed" / "embed.gguf"
    assert all(o.load_on_startup for o in spec.others)  # all three fit: each loads at startup
    fewer = launch_spec(replace(loaded, models_max=2), home)
    assert not any(o.load_on_startup for o in fewer.others)  # on demand; the default alone at startup


def test_a_record_without_a_library_is_one_model_as_before(tmp_path: Path) -> None:
    home = Home(tmp_path / "h")
    save_state(home, _state(home, tmp_path / "x.gguf"))
    spec = launch_spec(load_state(home), home)  # type: ignore[arg-type]
    assert not spec.router and spec.argv()[1] == "-m"


@pytest.mark.parametrize(("planned", "total", "expected"), [
    ([8, 1, 1], 64, 3),  # all fit in 80 % of 64 GiB: all loaded at startup
    ([20, 1, 9], 32, 2),  # 30 > 25.6: the default and the smallest other
    ([30, 1], 32, 1),  # the default alone is over the budget: still one (it is what the install serves)
    ([4], 8, 1),
])
def test_models_loaded_together_follow_the_memory(planned: list[int], total: int, expected: int) -> None:
    assert models_max_for([p * GIB for p in planned], total * GIB) == expected


def test_model_is_told_apart_from_the_default(tmp_path: Path) -> None:
    home = Home(tmp_path / "h")
    state = replace(_state(home, tmp_path / "x.gguf"),
                    request=RequestRecord("qwen3.6-35b-a3b", "auto"))
    assert names_default(state, "qwen3.6-35b-a3b") and names_default(state, "qwen3.6-35b-a3b:Q8_0")
    assert not names_default(state, "qwen3-embedding-0.6b")
    hub = replace(state, request=RequestRecord("hf:o/r/m.gguf@main", "auto"))
    assert names_default(hub, "hf:o/r/m.gguf") and not names_default(hub, "hf:o/r/other.gguf")
    entry = _entry(home, "qwen3-embedding-0.6b", "embedding")
    assert names_entry(entry, wanted_model("qwen3-embedding-0.6b:F16", None))
    assert not names_entry(entry, wanted_model("qwen3.5-4b", None))


def _profile(pooling: int) -> ModelProfile:
    return ModelProfile(architecture="qwen3", n_layer=2, n_embd=64, n_head=1, n_vocab=10, n_ctx_train=32768,
                        n_head_kv=(1, 1), key_length=64, value_length=64, n_expert=0, n_expert_used=0,
                        kv_layers=(0, 1), swa_layers=(), n_swa=0, recurrent_layers=(), recurrent_bytes_per_seq=0,
                        layers=(), token_embd_bytes=0, output_bytes=0, other_bytes=0, total_weight_bytes=0,
                        is_moe=False, pooling=pooling)


def test_embedding_flags_follow_the_pooling() -> None:
    """``last`` pooling is split over micro-batches by llama-server; mean/cls need the whole input in one."""
    last = _profile(3)
    assert last.embedding and POOLING_NAMES[3] == "last" and pooling_of(last, ()) == "last"
    flags = embedding_args(pooling_of(last, ()), 8192)
    assert flags[:1] == ["--embeddings"] and flags[flags.index("--pooling") + 1] == "last"
    assert flags[flags.index("-c") + 1] == "8192" and flags[flags.index("-ub") + 1] == "512"
    assert flags[flags.index("--cache-ram") + 1] == "0"  # no prompt cache for embeddings (nothing to reuse)
    mean = embedding_args(pooling_of(_profile(1), ()), 4096)
    assert mean[mean.index("-ub") + 1] == mean[mean.index("-b") + 1] == "4096"
    assert pooling_of(_profile(0), ("--embeddings", "--pooling", "last")) == "last"  # the catalog's word wins
    assert not _profile(0).embedding


def test_an_embedding_plan_counts_the_batch_it_is_served_with() -> None:
    """A whole-input micro-batch costs compute memory: the plan's estimate is made for it (the engine's own
    figure for a 1024-wide model at 8,192 tokens matched to the 0.01 MiB: docs/several-models.md)."""
    from bootstrap.install.library import as_embedding
    from bootstrap.plan.engine_variant import VariantChoice
    from bootstrap.plan.memory import LaunchSettings, estimate
    from bootstrap.plan.planner import Budget, Plan

    profile = _profile(2)  # cls: the whole input in one micro-batch
    settings = LaunchSettings(ctx=8192, cache_ram_mib=1024)
    plan = Plan(model_id="e", title="e", quant="Q8_0", file="e.gguf", file_size=1, variant=VariantChoice("cpu", ""),
                settings=settings, estimate=estimate(profile, settings), budget=Budget(0, 1 << 34, False, None),
                args=("-c", "8192", "-b", "2048", "-ub", "512", "--cache-ram", "1024"), dropped_flags=(),
                reasons=(), warnings=(), speed_class="cpu", speed=None)  # type: ignore[arg-type]
    served = as_embedding(plan, profile, ())
    assert served.estimate.prompt_cache == 0 and served.settings.ubatch == 8192
    assert served.estimate.compute_cpu > 10 * plan.estimate.compute_cpu
    assert served.args[served.args.index("-ub") + 1] == "8192" and "--embeddings" in served.args
