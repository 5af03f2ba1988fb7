"""The shipped catalog and the MODEL argument: what the planner and the sources rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootstrap.catalog import models as catalog_mod
from bootstrap.catalog.model_ref import CatalogRef, HubFileRef, LocalFileRef, parse_model_ref
from bootstrap.catalog.models import load_catalog
from bootstrap.core.errors import ExitCode, UsageError


def test_shipped_catalog_has_the_default_model_with_exact_facts() -> None:
    cat = load_catalog()
    model = cat.model(None)
    assert model.id == "qwen3.6-35b-a3b" and model.architecture == "qwen35moe"
    assert {(r.hub, r.repo) for r in model.repos} == {("hf", "unsloth/Qwen3.6-35B-A3B-GGUF"),
                                                     ("modelscope", "unsloth/Qwen3.6-35B-A3B-GGUF")}
    q4km = model.quant("ud-q4_k_m")
    assert q4km.file.size == 22_134_528_992 and q4km.file.size_exact
    assert model.mmproj is not None and model.mmproj.size == 899_283_680
    # Quants run largest → smallest, so "from the default down" only ever shrinks.
    sizes = [q.file.size for q in model.quants]
    assert sizes == sorted(sizes, reverse=True)
    assert model.quants_from_default_down()[0].name == model.default_quant
    # 20,480 B/token of f16 KV (docs/models.md) follows from the shape.
    shape = model.shape
    assert shape is not None
    kv_layers = shape.n_layer // shape.full_attention_interval
    assert 2 * kv_layers * shape.n_head_kv * shape.key_length * 2 == 20_480
    for fallback in model.fallbacks:
        assert cat.model(fallback).quants


def test_shipped_mtp_variant_pins_the_verified_file() -> None:
    """The MTP repo's UD-Q4_K_XL: the bytes and sha256 public pins agree on, at the pinned revision."""
    cat = load_catalog()
    variant = cat.model(cat.model(None).mtp_variant)
    assert variant.repos[0].repo == "unsloth/Qwen3.6-35B-A3B-MTP-GGUF"
    assert variant.repos[0].revision == "5bc3e238d916f48a861bac2f8a1990a0e9b7e98d"
    file = variant.quant("UD-Q4_K_XL").file
    assert (file.size, file.size_exact) == (22_853_663_008, True)
    assert file.matches_hint("55983c5a75a1ab969824077b3bb3de4146e82a9234072b48ad4e8f92ad3fe9f1")
    assert variant.shape is not None and variant.shape.block_count == 41 and 0 < variant.shape.mtp_share < 0.05
    base = cat.model(None).shape
    assert base is not None and base.mtp_share == 0  # the base repo's files carry no head


def test_sha256_hint_cross_check() -> None:
    model = load_catalog().model("qwen3.6-35b-a3b")
    hint = model.quant("UD-Q4_K_M").file
    assert hint.matches_hint("ac0e2c1189e0" + "0" * 45 + "3e31a61")
    assert not hint.matches_hint("ac0e2c1189e0" + "0" * 45 + "3e31a62")
    assert model.quant("UD-IQ4_XS").file.matches_hint("f" * 64)  # no hint: anything listed is accepted


def test_unknown_model_and_quant_name_the_choices() -> None:
    cat = load_catalog()
    with pytest.raises(UsageError, match=r"qwen3\.5-4b") as exc:
        cat.model("llama-9000")
    assert exc.value.exit_code == ExitCode.USAGE
    with pytest.raises(UsageError, match="UD-IQ4_XS"):
        cat.model(None).quant("Q3_K_XXL")


def test_a_mistyped_id_or_quant_suggests_the_closest() -> None:
    cat = load_catalog()
    with pytest.raises(UsageError) as exc:
        cat.model("qwen3.6-27")
    assert exc.value.hint is not None and exc.value.hint.startswith("Did you mean 'qwen3.6-27b'")
    with pytest.raises(UsageError) as exc:
        cat.model(None).quant("ud-q4_k_xs")
    assert exc.value.hint is not None and "'UD-Q4_K_XL'" in exc.value.hint  # shown as the catalog spells it
    with pytest.raises(UsageError) as exc:
        cat.model("llama-9000")
    assert exc.value.hint is not None and "Did you mean" not in exc.value.hint  # nothing close: no guess,
    assert "'qwenkit models' lists them" in exc.value.hint  # but where to look (issue 41: no hint in Chinese)


@pytest.mark.parametrize(("text", "field"), [
    ('schema = 2\ndefault_model = "a"\nmodels = []', "schema"),
    ('schema = 1\ndefault_model = "a"\n[[models]]\nid = "a"\narchitecture = "llama"\nrepos = []\nquants = []',
     "quants"),
    ('schema = 1\ndefault_model = "a"\n[[models]]\nid = "a"\narchitecture = "llama"\n'
     'repos = [{hub = "github", repo = "x/y"}]\nquants = [{name = "Q4", file = "a.gguf"}]', "hub"),
    ('schema = 1\ndefault_model = "a"\n[[models]]\nid = "a"\narchitecture = "llama"\nrepos = []\n'
     'quants = [{name = "Q4", file = "a.gguf", size = -3}]', "size"),
    ('schema = 1\ndefault_model = "b"\n[[models]]\nid = "a"\narchitecture = "llama"\nrepos = []\n'
     'quants = [{name = "Q4", file = "a.gguf"}]', "b"),
    ("schema = 1\ndefault_model = [", "catalog"),
    ('schema = 1\ndefault_model = "a"\n[[models]]\nid = "a"\narchitecture = "llama"\nrepos = []\n'
     'mtp_variant = "a-mtp"\nquants = [{name = "Q4", file = "a.gguf"}]', "a-mtp"),
    ('schema = 1\ndefault_model = "a"\n[[models]]\nid = "a"\narchitecture = "llama"\nrepos = []\n'
     'quants = [{name = "Q4", file = "a.gguf"}]\n[models.shape]\nn_layer = 1\nn_embd = 8\nn_vocab = 8\n'
     'n_ctx_train = 8\nn_head = 1\nn_head_kv = 1\nkey_length = 8\nvalue_length = 8\nn_expert = 0\n'
     'n_expert_used = 0\nfull_attention_interval = 1\nrecurrent_bytes_per_seq = 0\nexpert_share = 0\n'
     'token_embd_share = 0.1\noutput_share = 0.1\nmtp_share = 1.5', "mtp_share"),
])
def test_malformed_catalog_is_one_usage_error(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "catalog.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as exc:
        load_catalog(path)
    assert field in exc.value.message and "\n" not in exc.value.message


def test_catalog_override_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('schema = 1\ndefault_model = "tiny"\n[[models]]\nid = "tiny"\narchitecture = "llama"\n'
                    'repos = [{hub = "hf", repo = "me/tiny", revision = "main"}]\n'
                    'quants = [{name = "F32", file = "tiny.gguf", size = 491000}]\n', encoding="utf-8")
    monkeypatch.setenv("QWENKIT_CATALOG", str(path))
    assert catalog_mod.catalog_path() == path
    assert load_catalog().model(None).quant(None).file.path == "tiny.gguf"


@pytest.mark.parametrize(("text", "expected"), [
    ("qwen3.6-35b-a3b", CatalogRef("qwen3.6-35b-a3b")),
    ("qwen3.6-35b-a3b:UD-IQ4_XS", CatalogRef("qwen3.6-35b-a3b", "UD-IQ4_XS")),
    ("hf:unsloth/Qwen3.6-35B-A3B-GGUF/mmproj-F16.gguf",
     HubFileRef("hf", "unsloth/Qwen3.6-35B-A3B-GGUF", "mmproj-F16.gguf")),
    ("ms:unsloth/Qwen3.6-35B-A3B-GGUF/BF16/x-00001-of-00002.gguf@a2a9fd35",
     HubFileRef("modelscope", "unsloth/Qwen3.6-35B-A3B-GGUF", "BF16/x-00001-of-00002.gguf", "a2a9fd35")),
    ("hf:o/r/f.gguf@refs/pr/1", HubFileRef("hf", "o/r", "f.gguf", "refs/pr/1")),
    ("./models/模型 1.gguf", LocalFileRef(Path("./models/模型 1.gguf"))),
])
def test_model_ref_forms(text: str, expected: object) -> None:
    assert parse_model_ref(text) == expected


@pytest.mark.parametrize("text", ["", "hf:", "hf:owner/repo", "hf:owner//f.gguf", "hf:o/r/../etc/passwd",
                                  "ms:o/r/f.gguf@", "qwen:a:b", "a b", "hf:o/r/f.gguf@bad rev"])
def test_bad_model_ref_is_exit_2(text: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_model_ref(text)
    assert exc.value.exit_code == ExitCode.USAGE and exc.value.hint
