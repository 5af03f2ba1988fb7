"""``qwenkit install --ctx N`` (issue 24): the context is the user's choice, as Ollama's ``num_ctx`` or LM Studio's
slider. Through the real CLI on the loopback hub with the test bed's llama-server and the tiny chat model (its header
states a 32768-token trained context): the context reaches ``state.json``, ``run_qwen.sh`` and the running server
(``/props``); a rerun without ``--ctx`` keeps it; a rerun with another value downloads nothing and restarts the server
with it; ``--ctx auto`` (here from an answers file) gives the choice back to the plan; a context above the model's
trained one is exit 2 before any download.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from bootstrap.fetch.gguf_remote import INITIAL_FETCH
from bootstrap.register.managers import FallbackManager
from tests.support.install_bed import MODEL_FILE, InstallBed, one_line_error
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

TRAINED = 32768
CATALOG_CTX = 512  # the test catalog's own server_args (-c 512), what the plan runs without --ctx

pytestmark = pytest.mark.usefixtures("english")


def _state(bed: InstallBed) -> dict[str, Any]:
    return json.loads(bed.home.state_file.read_text(encoding="utf-8"))


def _props(bed: InstallBed) -> dict[str, Any]:
    """The running server's ``/props`` (with the install's key), and its pid (``GET /slots`` is off by default)."""
    state = _state(bed)
    key = bed.home.api_key_file.read_text(encoding="utf-8").strip()
    with requests.Session() as session:
        session.trust_env = False
        reply = session.get(f"http://127.0.0.1:{state['server']['port']}/props", timeout=30,
                            headers={"Authorization": f"Bearer {key}"})
    reply.raise_for_status()
    return reply.json()


def _ctx_flags(args: list[str]) -> list[str]:
    """Every context value on a command line (one only: the user's wins over the catalog's -c, not beside it)."""
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-c", "--ctx-size")]


def _downloaded(bed: InstallBed) -> tuple[int, int]:
    """(model bytes, engine bytes) the hub has served so far."""
    return bed.hub.bytes_served(MODEL_FILE), bed.hub.bytes_served("*.tar.gz")


def test_install_ctx_is_recorded_kept_and_changed_without_a_download(make_bed: Callable[..., InstallBed],
                                                                     tmp_path: Path) -> None:
    # The catalog's tiny chat model (install_bed.write_chat_model), but trained for 32k tokens.
    bed = make_bed(model=write_model("llama", tmp_path / "src" / MODEL_FILE, dtype="q8_0", n_layer=12,
                                     n_ctx=TRAINED))
    port = str(free_port())

    first = bed.install("--no-venv", "--port", port, "--ctx", "4096")
    assert first.returncode == 0, first.stderr
    assert "  context        4096 tokens" in first.stderr  # the proposal says what will run
    assert "Measuring this machine's speed" in first.stderr and "generation   measured" in first.stdout
    state = _state(bed)
    assert state["request"]["ctx"] == 4096
    assert _ctx_flags(state["server"]["args"]) == ["4096"]
    assert " -c 4096 " in bed.home.run_sh.read_text(encoding="utf-8")
    assert _props(bed)["default_generation_settings"]["n_ctx"] == 4096
    served = _downloaded(bed)
    assert served[0] > 0 and served[1] > 0

    # A rerun without --ctx keeps it: nothing to change.
    again = bed.install("--no-venv", "--port", port)
    assert again.returncode == 0, again.stderr
    assert "context changes" not in again.stderr and _state(bed)["request"]["ctx"] == 4096

    # Another value: only the launch parameters change; nothing is downloaded, the server restarts with it.
    pid_before = _server_pid(bed)
    bigger = bed.install("--no-venv", "--port", port, "--ctx", "8192")
    assert bigger.returncode == 0, bigger.stderr
    assert "the context changes from 4096 tokens to 8192 tokens" in bigger.stderr
    # Issue 41: a context change re-plans, re-renders and restarts; it measured this machine's speed twice and
    # ended "Upgraded in place …; the old files were removed." though nothing was removed.
    assert "Measuring this machine's speed" not in bigger.stderr and "generation   measured" not in bigger.stdout
    assert bigger.stdout.rstrip().splitlines()[-1].endswith("; nothing was downloaded or removed."), bigger.stdout
    assert "Restarted with the new settings" in bigger.stdout and "old files were removed" not in bigger.stdout
    assert _downloaded(bed) == served
    state = _state(bed)
    assert state["request"]["ctx"] == 8192 and _ctx_flags(state["server"]["args"]) == ["8192"]
    assert " -c 8192 " in bed.home.run_sh.read_text(encoding="utf-8")
    assert _props(bed)["default_generation_settings"]["n_ctx"] == 8192
    assert _server_pid(bed) != pid_before

    # More than the model was trained for: refused before the run announces a change (it said "the context
    # changes from … to 999999" first).
    refused = bed.install("--no-venv", "--port", port, "--ctx", "999999")
    assert refused.returncode == 2, refused.stderr
    assert one_line_error(refused).startswith(f"--ctx 999999 is more than Tiny chat (test) was trained for: its "
                                             f"maximum is {TRAINED} tokens")
    assert "context changes" not in refused.stderr and _state(bed)["request"]["ctx"] == 8192

    # "auto" from an answers file: the plan's choice again (the catalog's own -c here), recorded as no choice.
    answers = tmp_path / "answers.toml"
    answers.write_text(f'ctx = "auto"\nport = {port}\nvenv = false\n', encoding="utf-8")
    auto = bed.install("--answers", str(answers))
    assert auto.returncode == 0, auto.stderr
    assert "the context changes from 8192 tokens to the plan's choice" in auto.stderr
    state = _state(bed)
    assert state["request"]["ctx"] is None and _ctx_flags(state["server"]["args"]) == [str(CATALOG_CTX)]
    assert _props(bed)["default_generation_settings"]["n_ctx"] == CATALOG_CTX
    assert _downloaded(bed) == served


def test_install_ctx_above_the_trained_context_is_exit_2_before_any_download(
        make_bed: Callable[..., InstallBed]) -> None:
    bed = make_bed()  # the tiny chat model: trained for 4096 tokens
    proc = bed.install("--no-venv", "--port", str(free_port()), "--ctx", "8192")
    assert proc.returncode == 2, proc.stderr
    assert one_line_error(proc) == ("--ctx 8192 is more than Tiny chat (test) was trained for: its maximum is 4096 "
                                    "tokens.")
    _nothing_downloaded(bed)
    assert not bed.home.state_file.exists()


@pytest.mark.parametrize(("argv", "line"), [
    (["--ctx", "lots"], "Argument --ctx: invalid int value 'lots'."),
    (["--ctx", "100"], "--ctx 100 is out of range: use 512 to 1048576 tokens."),
])
def test_a_bad_install_ctx_is_one_line_exit_2(make_bed: Callable[..., InstallBed], argv: list[str],
                                              line: str) -> None:
    bed = make_bed()
    proc = bed.install("--no-venv", *argv)
    assert proc.returncode == 2 and one_line_error(proc) == line
    assert _downloaded(bed) == (0, 0)  # refused before the plan: not even the model's header was read


def _nothing_downloaded(bed: InstallBed) -> None:
    """Only the model's header was read (the plan's few ranged requests: the test catalog states no shape), no
    engine, and nothing was placed in the home."""
    model, engine = _downloaded(bed)
    assert engine == 0 and model <= INITIAL_FETCH
    assert not bed.home.models_dir.exists() and not bed.home.engines_dir.exists()


def _server_pid(bed: InstallBed) -> int:
    """The pid of the server the start script runs (the fallback manager's pid file: no service manager here)."""
    return int(FallbackManager(bed.home).pid_file.read_text(encoding="ascii").strip())
