"""The MTP head served by the real engine: the test bed's llama-server (b11434 sources) loads a tiny qwen35moe
with a real nextn block, drafts with it under ``--spec-type draft-mtp --spec-draft-n-max 2 -np 1`` and reports
the drafts in the response's ``timings`` and in its log; the same file loads without the flag too. A file that
states ``nextn_predict_layers`` without the head's tensors is not MTP-capable for the header reader (it looks at
the tensors, not the key), and b11434 refuses to load it at all, flag or not: ``load_block_mtp`` creates the
head's tensors with TENSOR_SKIP but without TENSOR_NOT_REQUIRED, and ``check_tensor_dims`` wants them present
(src/models/qwen35moe.cpp, src/llama-model-loader.cpp).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import requests

from bootstrap.plan.gguf_header import read_header
from bootstrap.plan.memory import model_profile
from bootstrap.verify.speculation import MIN_ACCEPTANCE
from tests.support.install_bed import MTP_MODEL_FILE, MTP_MODEL_ID, MTP_MODEL_REPO, InstallBed
from tests.support.llama import LlamaServer, free_port

MTP = ["--spec-type", "draft-mtp", "--spec-draft-n-max", "2"]
COMMON = ["-c", "2048", "-np", "1", "--fit", "off", "-ngl", "0", "--jinja"]
# slot print_timing: id  0 | task 0 | draft acceptance = 0.02817 (    2 accepted /    71 generated), mean len =  1.06
ACCEPTANCE = re.compile(r"draft acceptance = ([\d.]+) \( *(\d+) accepted / +(\d+) generated\)")


def _greedy(server: LlamaServer, max_tokens: int) -> dict:
    return server.chat("Tell me about the sun and the water.", max_tokens=max_tokens, temperature=0.0, top_k=1,
                       seed=1)


def test_the_head_drafts_and_the_answer_is_unchanged(llama_server: Path,
                                                     make_tiny_model: Callable[..., Path]) -> None:
    model = make_tiny_model("qwen35moe", mtp_layers=1)
    assert model_profile(read_header(model)).has_mtp
    with LlamaServer(llama_server, model, [*COMMON, *MTP]) as server:
        drafted = _greedy(server, 48)
    log = server.log()  # after the stop: the slot's timing lines are written just after the reply
    timings = drafted["timings"]
    assert timings["draft_n"] > 0 and 0 <= timings["draft_n_accepted"] <= timings["draft_n"]
    match = ACCEPTANCE.search(log)
    assert match is not None, log[-2000:]
    assert int(match.group(3)) == timings["draft_n"] and int(match.group(2)) == timings["draft_n_accepted"]

    # Without the flag the same file loads (the head's tensors are skipped) and greedy decoding says the same:
    # speculation never changes what the target model picks.
    with LlamaServer(llama_server, model, COMMON) as server:
        plain = _greedy(server, 48)
    assert "draft_n" not in plain["timings"] or plain["timings"]["draft_n"] == 0
    assert plain["choices"][0]["message"]["content"] == drafted["choices"][0]["message"]["content"]


def test_a_file_stating_a_head_it_lacks(llama_server: Path, make_tiny_model: Callable[..., Path]) -> None:
    nextn = tuple(f"blk.8.nextn.{n}.weight" for n in ("eh_proj", "enorm", "hnorm", "shared_head_norm"))
    model = make_tiny_model("qwen35moe", mtp_layers=1, omit_tensors=nextn)
    profile = model_profile(read_header(model))
    assert profile.n_layer == 8 and not profile.has_mtp  # the key says 1; the tensors say no head
    for flags in (MTP, []):
        proc = subprocess.run([str(llama_server), "-m", str(model), "--port", "0", *COMMON, *flags],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode != 0, flags
        assert "tensor 'blk.8.nextn.eh_proj.weight' not found" in proc.stdout + proc.stderr


def test_the_install_measures_the_head_and_keeps_it_off_when_it_does_not_pay(
        make_bed: Callable[..., InstallBed]) -> None:
    """``make_bed(mtp=True)``: the product installs the tiny MTP model from the loopback hub (the catalog entry's
    server_args turn the head on: the test bed has no GPU, where the plan would not). Verify then runs the A/B on
    the real engine: the head drafts (the "on" arm reports drafts), random weights accept almost none of them, so
    the install keeps speculation off — a decision on real measurements — and the start script, the record and the
    running server all carry the arm kept."""
    bed = make_bed(mtp=True)
    port = free_port()
    proc = bed.install("--no-venv", "--port", str(port))
    assert proc.returncode == 0, proc.stderr
    state = json.loads(bed.home.state_file.read_text(encoding="utf-8"))
    assert state["model_id"] == MTP_MODEL_ID
    assert (bed.home.models_dir / MTP_MODEL_REPO / MTP_MODEL_FILE).is_file()
    trial = state["speed"]["speculation"]
    assert trial["flags"] == MTP
    on, off = trial["on"], trial["off"]
    assert on["draft_n"] > 0 and on["acceptance"] < MIN_ACCEPTANCE, trial  # the head ran; its drafts were refused
    assert on["decode_tps"] > 0 and off["decode_tps"] > 0 and off["draft_n"] is None
    assert trial["kept"] == "off" and state["speed"]["measured"] == off
    script = (bed.home.root / "run_qwen.sh").read_text(encoding="utf-8")
    assert "draft-mtp" not in script and "--spec-draft-n-max" not in script, script
    assert "turned off" in proc.stdout and "acceptance" in proc.stdout, proc.stdout  # the report's speed lines
    key = bed.home.api_key_file.read_text(encoding="utf-8").strip()
    with requests.Session() as session:
        session.trust_env = False
        reply = session.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60,
                             headers={"Authorization": f"Bearer {key}"},
                             json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}).json()
    assert reply["choices"][0]["message"] and "draft_n" not in reply["timings"]
    shown = bed.run("status")
    assert shown.returncode == 0 and "turned off" in shown.stdout, shown.stderr  # status: the output
