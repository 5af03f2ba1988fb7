"""Whether the install's context holds what a client sends (bootstrap/agents/needs.py), and the plan's verdict for
``install --ctx 65536`` on this machine: the same planner ``qwenkit plan`` runs, for the installed model, on
hardware recorded from real machines (tests/data/hardware)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootstrap.agents.base import AGENT_CTX
from bootstrap.agents.launch import CLIENTS
from bootstrap.agents.needs import check_context, plan_verdict
from bootstrap.agents.target import Target
from bootstrap.core.home import Home
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.plan.launch_spec import request_ctx_of
from bootstrap.record.state import save_state
from tests.support.install_records import file_record, install_state, place_engine
from tests.support.qwen_chat_model import qwen_chat_model

HARDWARE = Path(__file__).resolve().parents[1] / "data" / "hardware"


def _hardware(name: str) -> HardwareProfile:
    return load_profile(HARDWARE / name)


def _home(tmp_path: Path, request: str, model_id: str) -> Home:
    """A home whose record installed ``request`` (a local GGUF path or a catalog id); the recorded model file is a
    placeholder (nothing here reads it)."""
    home = Home(tmp_path / "home")
    model = home.models_dir / "model.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF")
    save_state(home, install_state(home, place_engine(home), [file_record(home, model, "0" * 64)], model=request,
                                   model_id=model_id, quant="Q8_0"))
    return home


@pytest.fixture(scope="module")
def tiny_qwen() -> Path:
    return qwen_chat_model()


def _target(ctx: int | None, via: str = "install") -> Target:
    return Target("http://127.0.0.1:8080", "tiny-qwen-chat", ctx, "k" * 20, None, via)


def test_launch_refuses_a_context_smaller_than_the_clients_first_request(tmp_path: Path, tiny_qwen: Path) -> None:
    home = _home(tmp_path, str(tiny_qwen), "tiny-qwen-chat")
    check = check_context(CLIENTS["claude"], _target(8192), home, _hardware("no_gpu_16gb.json"))
    assert not check.ok and check.need == AGENT_CTX
    assert check.verdict.startswith("'qwenkit install --ctx 65536' fits here: tiny-qwen35moe Q8_0")
    assert CLIENTS["claude"].min_ctx() > 8192 > CLIENTS["aider"].min_ctx()


def test_launch_warns_below_what_coding_agents_want(tmp_path: Path, tiny_qwen: Path) -> None:
    home = _home(tmp_path, str(tiny_qwen), "tiny-qwen-chat")
    check = check_context(CLIENTS["codex"], _target(32768), home, _hardware("no_gpu_16gb.json"))
    assert check.ok and check.low and "fits here" in check.verdict
    assert check_context(CLIENTS["codex"], _target(AGENT_CTX), home) == check_context(CLIENTS["codex"],
                                                                                     _target(None), home)
    assert not check_context(CLIENTS["codex"], _target(AGENT_CTX), home).low


def test_launch_has_no_plan_for_a_gateways_context(tmp_path: Path) -> None:
    check = check_context(CLIENTS["claude"], _target(8192, via="endpoint"), Home(tmp_path / "none"))
    assert not check.ok and check.verdict == ""


def test_launch_verdict_names_another_model_when_the_installed_one_does_not_fit(tmp_path: Path) -> None:
    """Qwen3.6-35B-A3B on a 16 GB machine without a GPU: the plan takes the catalog's smaller model, and says so."""
    home = _home(tmp_path, "qwen3.6-35b-a3b", "qwen3.6-35b-a3b")
    verdict = plan_verdict(home, "qwen3.6-35b-a3b", AGENT_CTX, _hardware("no_gpu_16gb.json"))
    assert verdict.startswith("'qwenkit install --ctx 65536' does not fit Qwen3.6-35B-A3B")
    assert "the plan takes Qwen3.5-9B" in verdict
    fits = plan_verdict(home, "qwen3.6-35b-a3b", AGENT_CTX, _hardware("rtx4090_24gb.json"))
    assert fits.startswith("'qwenkit install --ctx 65536' fits here: Qwen3.6-35B-A3B")


def test_launch_verdict_for_a_context_beyond_the_trained_one(tmp_path: Path, tiny_qwen: Path) -> None:
    home = _home(tmp_path, str(tiny_qwen), "tiny-qwen-chat")
    verdict = plan_verdict(home, "tiny-qwen-chat", 1 << 20, _hardware("no_gpu_16gb.json"))
    assert verdict.startswith("'qwenkit install --ctx 1048576' does not fit here:") and "262144" in verdict


def test_launch_slot_context_from_the_install_flags() -> None:
    assert request_ctx_of(("-c", "65536", "-np", "1")) == 65536
    assert request_ctx_of(("-c", "65536", "-np", "4")) == 16384  # each slot its share
    assert request_ctx_of(("-c", "65536", "-np", "4", "-kvu")) == 65536  # one cache the slots share
    assert request_ctx_of(("-t", "2",)) is None
    assert request_ctx_of(("-c", "8192", "-np", "²")) == 8192  # a look-alike digit is no slot count (was a ValueError)


def test_launch_targets_a_chat_model_of_the_install(tmp_path: Path, tiny_qwen: Path) -> None:
    """The install's default model with its recorded context (``-c 512``), its key; another name is exit 2 naming the
    models there are."""
    from bootstrap.agents.target import install_target
    from bootstrap.core.errors import UsageError
    from bootstrap.place.api_key import ensure_api_key

    home = _home(tmp_path, str(tiny_qwen), "tiny-qwen-chat")
    ensure_api_key(home)
    target = install_target(home, None)
    assert (target.model, target.ctx, target.via, target.base_url) == ("tiny-qwen-chat", 512, "install",
                                                                        "http://127.0.0.1:8080")
    assert target.key_file == home.api_key_file and target.key == home.api_key_file.read_text().strip()
    with pytest.raises(UsageError) as refused:
        install_target(home, "qwen-max")
    assert "tiny-qwen-chat" in refused.value.message
