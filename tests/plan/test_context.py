"""The context a user asks for (``plan.context``, issue 24): checked against the model's trained context and this
machine's memory before anything is planned, through the real CLI on recorded machines (tests/data/hardware) with
Qwen3.6's catalog shape facts, and a GGUF header stating ``context_length = 0`` refused, with the real llama-server
showing why (each slot is capped at the trained context: no prompt fits).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from bootstrap.catalog.models import load_catalog
from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.plan import context
from bootstrap.plan.model_facts import catalog_candidates
from bootstrap.plan.planner import choose
from tests.support.llama import LlamaServer
from tests.support.paths import TEST_DATA

HARDWARE = TEST_DATA / "hardware"
GIB = 1 << 30
TRAINED = 262144  # Qwen3.6's context_length (payload/catalog.toml n_ctx_train)

pytestmark = pytest.mark.usefixtures("english")


def run_plan(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8", "QWENKIT_LANG": "", "QWENKIT_HOME": str(home)}
    env.pop("QWENKIT_CATALOG", None)
    return subprocess.run([sys.executable, "-m", "bootstrap", "plan", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def first_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith(("error: ", "hint: "))]


def with_ram(name: str, gib: int) -> HardwareProfile:
    """A recorded machine with another amount of RAM (90 % of it available)."""
    hardware = load_profile(HARDWARE / f"{name}.json")
    memory = dataclasses.replace(hardware.memory, total_bytes=gib * GIB, available_bytes=int(gib * GIB * 0.9))
    return dataclasses.replace(hardware, memory=memory)


def test_a_context_above_the_trained_one_is_exit_2_naming_the_maximum(tmp_path: Path) -> None:
    proc = run_plan(tmp_path, "--hardware", str(HARDWARE / "rtx4090_24gb.json"), "--ctx", "300000")
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    error, hint = first_lines(proc)
    assert error.startswith("error: --ctx 300000 is more than Qwen3.6-35B-A3B")
    assert error.endswith(f"its maximum is {TRAINED} tokens.") and f"--ctx {TRAINED} or less" in hint
    at_max = run_plan(tmp_path, "--hardware", str(HARDWARE / "rtx4090_24gb.json"), "--ctx", str(TRAINED), "--json")
    assert at_max.returncode == 0 and json.loads(at_max.stdout)["settings"]["ctx"] == TRAINED


def test_a_context_too_large_for_memory_is_exit_3_with_the_largest_that_fits(tmp_path: Path) -> None:
    """An 8 GB GPU + 16 GB RAM: Qwen3.6 fits (its smallest quant), but not with the whole trained context. The plan
    used to swap in another model for the context (Qwen3.5-9B, "no quant fits", exit 0); now the user hears the
    largest context that fits, and that one is planned as it says."""
    hardware = str(HARDWARE / "rtx4060_8gb_16gb.json")
    proc = run_plan(tmp_path, "--hardware", hardware, "--ctx", str(TRAINED))
    assert proc.returncode == ExitCode.UNSUPPORTED, proc.stderr
    error, hint = first_lines(proc)
    assert error.startswith(f"error: A {TRAINED}-token context does not fit this machine's memory with any quant "
                            "of Qwen3.6-35B-A3B")
    largest = int(error.split("the largest that fits is ")[1].split()[0])
    assert 32768 < largest < TRAINED and largest % context.CTX_STEP == 0
    assert error.endswith("tokens, with Qwen3.6-35B-A3B UD-Q2_K_XL.") and f"--ctx {largest} or less" in hint
    fits = run_plan(tmp_path, "--hardware", hardware, "--ctx", str(largest), "--json")
    assert fits.returncode == 0, fits.stderr
    doc = json.loads(fits.stdout)
    assert (doc["model"]["quant"], doc["settings"]["ctx"]) == ("UD-Q2_K_XL", largest)
    assert doc["model"]["id"].startswith("qwen3.6-35b-a3b")  # the model asked for, not a fallback
    over = run_plan(tmp_path, "--hardware", hardware, "--ctx", str(largest + context.CTX_STEP))
    assert over.returncode == ExitCode.UNSUPPORTED  # it is the largest


def test_a_smaller_quant_for_the_asked_context_says_so() -> None:
    """CPU only with 27 GiB: UD-Q4_K_XL at the plan's own context, UD-IQ4_XS when the whole trained context is
    asked for (the context is never shrunk; the quant gives way, and the reason says why)."""
    hardware = with_ram("no_gpu_16gb", 27)
    candidates = catalog_candidates(load_catalog().model("qwen3.6-35b-a3b"), None, None)
    own = choose(candidates, hardware)
    asked = choose(candidates, hardware, requested_ctx=TRAINED)
    assert (own.quant, asked.quant, asked.settings.ctx) == ("UD-Q4_K_XL", "UD-IQ4_XS", TRAINED)
    reasons = {r.topic: r.text for r in asked.reasons}
    assert reasons["quant"] == (f"UD-IQ4_XS: the recommended UD-Q4_K_XL does not fit this machine's memory with the "
                                f"{TRAINED}-token context asked for.")
    assert reasons["ctx"].startswith(f"context {TRAINED} tokens: as asked (--ctx)")
    assert {r.topic: r.text for r in own.reasons}["ctx"].startswith("context 32768 tokens: enough for agent")


@pytest.mark.parametrize(("value", "expected"), [("8192", 8192), (" auto ", None), ("AUTO", None), (4096, 4096)])
def test_a_context_as_typed_or_answered(value: str | int, expected: int | None) -> None:
    assert context.parse_ctx(value) == expected


@pytest.mark.parametrize(("value", "message"), [
    ("lots", "Argument --ctx: invalid int value 'lots'."), ("-5", "Argument --ctx: invalid int value '-5'."),
    ("100", "--ctx 100 is out of range: use 512 to 1048576 tokens."),
    (2 << 20, "--ctx 2097152 is out of range: use 512 to 1048576 tokens."),
])
def test_a_bad_context_is_exit_2(value: str | int, message: str) -> None:
    with pytest.raises(UsageError) as exc:
        context.parse_ctx(value)
    assert exc.value.message == message


def test_largest_fitting_is_the_largest_padded_context_below() -> None:
    assert context.largest_fitting(lambda c: c <= 10_000, below=65536) == 9984
    assert context.largest_fitting(lambda c: True, below=8192) == 8192 - context.CTX_STEP
    assert context.largest_fitting(lambda c: False, below=8192) is None


def test_a_header_stating_context_length_0_is_refused(tmp_path: Path, make_tiny_model) -> None:
    model = make_tiny_model("llama", n_ctx=0)
    proc = run_plan(tmp_path, str(model), "--hardware", str(HARDWARE / "no_gpu_16gb.json"))
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    error, hint = first_lines(proc)
    assert error == ("error: The GGUF header states llama.context_length = 0: llama-server caps every request at "
                     "the model's trained context, so no prompt would fit.")
    assert "gguf-set-metadata" in hint
    ok = run_plan(tmp_path, str(make_tiny_model("llama", n_ctx=4096)), "--hardware",
                  str(HARDWARE / "no_gpu_16gb.json"))
    assert ok.returncode == 0, ok.stderr


def test_llama_server_cannot_serve_a_model_trained_for_0_tokens(llama_server: Path, make_tiny_model) -> None:
    """Why the header is refused rather than planned with a warning: the real server loads such a file with an
    explicit ``-c``, caps each slot at the trained 0 tokens, and the first request is over that context — on the
    pinned build it then aborts (``GGML_ASSERT(n_ctx > 0 && n_prompt_tokens > 0)`` in ``send_error``)."""
    model = make_tiny_model("llama", n_ctx=0)
    with LlamaServer(llama_server, model, ["-c", "512", "-t", "2", "-np", "1"]) as server:
        props = requests.get(f"{server.base_url}/props", timeout=30).json()
        try:
            reply: requests.Response | None = requests.post(
                f"{server.base_url}/v1/chat/completions", timeout=120,
                json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
        except requests.ConnectionError:  # the server died with the request
            reply = None
        log = server.log()
    assert props["default_generation_settings"]["n_ctx"] == 0, props
    assert reply is None or reply.status_code >= 400
    assert "exceeds the training context of the model (0) - capping" in log
    assert "exceeds the available context size (0 tokens)" in log
