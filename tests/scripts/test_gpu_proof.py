"""``scripts/gpu_proof.py --dry-run``: every step of the NVIDIA proof that needs no GPU, run as the lead would run
the script, on this CPU — the GGUF writer at a tiny scale, the product's plan for the real shapes on an 8 GB
NVIDIA machine, the log parser on a recorded CUDA log, the one JSON line — and, with the test bed's engine, the
server step on a tiny model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "gpu_proof.py"
GIB = 1 << 30
MIB = 1 << 20


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_proof", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          timeout=timeout, check=False)


def _line(proc: subprocess.CompletedProcess[str]) -> dict:
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout  # one JSON line, progress on stderr
    return json.loads(lines[0])


def test_the_dry_run_runs_every_step_without_a_gpu(tmp_path: Path) -> None:
    proc = _run("--dry-run", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    doc = _line(proc)
    assert doc["ok"] and doc["dry_run"] and doc["vram_cap_gib"] == 8
    assert list(doc["steps"]) == ["model", "model_check", "header", "hardware", "plan", "log_parser"]
    assert json.loads((tmp_path / "out" / "gpu_proof.json").read_text()) == doc
    # the writer: the real layout at a tiny scale, each tensor its random block repeated (read back by GGUFReader)
    assert doc["model"]["check"] == {"tensors_checked": doc["model"]["tensors"], "arch": "qwen35moe"}
    assert doc["model"]["bytes"] > doc["model"]["tensor_bytes"] > 0
    # the plan: the real shapes on an 8 GB NVIDIA GPU and 32 GB of RAM, experts partly in RAM, within budget
    plan = doc["plan"]
    args = plan["args"]
    assert plan["gpu_name"] == "NVIDIA H200" and plan["gpu_budget_bytes"] == 7 * GIB  # 8 GiB less fit's margin
    assert 0 < plan["gpu_bytes"] <= plan["gpu_budget_bytes"] and plan["speed_class"] == "hybrid"
    assert args[args.index("-ngl") + 1] == "999" and int(args[args.index("--n-cpu-moe") + 1]) > 0
    # the log parser and the comparison on the recorded CUDA log (llama.cpp PR #22673)
    memory = doc["memory"]
    assert memory["devices"] == ["CPU_Mapped", "CUDA0", "CUDA_Host"]
    assert memory["gpu"]["model"]["reported"] == round(19201.62 * MIB)
    assert memory["gpu"]["kv"]["reported"] == 2560 * MIB
    assert memory["host"]["model"]["reported"] == round(21623.30 * MIB)
    assert memory["host"]["output"]["reported"] == round(0.95 * MIB)
    assert memory["gpu"]["model"]["planned"] > 0 and memory["gpu"]["model"]["ratio"] > 0
    assert doc["speed"]["predicted_decode_tps"] > 0 and "measured_decode_tps" not in doc["speed"]


def test_the_server_step_on_the_test_beds_cpu_engine(engine_bin_dir: Path, tmp_path: Path) -> None:
    """The server step's code (start with ``-lv 4``, the product's fixed measurement, the log's buffers) on the
    test bed's CPU build and a tiny qwen35moe: what runs on the GPU is the same code."""
    proc = _run("--dry-run", "--engine", str(engine_bin_dir), "--work", str(tmp_path / "work"), "--out",
                str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    doc = _line(proc)
    assert list(doc["steps"])[-3:] == ["tiny_model", "fit", "server"]
    assert doc["fit"]["adopted"] in ("plan", "fit") and doc["fit"]["fit_args"]  # llama-fit-params answered
    server = doc["server"]
    assert server["decode_tps"] > 0 and server["decode_n"] == 16 and server["prompt_n"] == 64
    assert server["buffers"]["CPU_Mapped"]["model"] > 0 and server["buffers"]["CPU"]["compute"] > 0
    kept = (tmp_path / "out" / "server-memory.log").read_text()
    assert "CPU_Mapped model buffer size" in kept


@pytest.mark.parametrize(("args", "words"), [
    ((), "run with --prepare first"),
    (("--engine", "/nonexistent"), "no llama-server in /nonexistent"),
    (("--dry-run", "--vram-gib", "0"), "--vram-gib must be at least 1"),
])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], words: str) -> None:
    proc = _run(*args, "--sdist", str(tmp_path / "missing.tar.gz"), timeout=60)
    assert proc.returncode == 2 and words in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("type_name", ["Q4_K", "Q5_K", "Q6_K", "Q8_0", "F16", "F32"])
def test_random_blocks_are_valid_blocks(type_name: str) -> None:
    """Each block is its type's size with finite, small fp16 scales: a random model must not compute NaN."""
    import random

    gpu_proof = _module()
    block = gpu_proof.random_block(type_name, "ffn_up_exps", random.Random(1))
    assert len(block) == gpu_proof.BLOCK_BYTES[type_name]
    scales = {"Q4_K": block[:4], "Q5_K": block[:4], "Q6_K": block[-2:], "Q8_0": block[:2]}.get(type_name)
    if scales is not None:
        values = np.frombuffer(scales, dtype=np.float16)
        assert np.all(np.isfinite(values)) and np.all(np.abs(values) < 0.01)
    norm = gpu_proof.random_block("F32", "attn_norm", random.Random(1))
    assert np.frombuffer(norm, dtype=np.float32)[0] == 1.0


def test_the_comparison_sides() -> None:
    """GPU buffers (CUDA*, Vulkan*) against the plan's GPU side, CPU* and *_Host against its host side."""
    gpu_proof = _module()
    breakdown = {"weights_gpu": 100, "weights_cpu": 200, "kv_gpu": 10, "kv_cpu": 0, "recurrent_gpu": 5,
                 "recurrent_cpu": 0, "compute_gpu": 50, "compute_cpu": 4, "output": 1, "mmproj_gpu": 0,
                 "mmproj_cpu": 0, "repack": 0, "mtp_gpu": 0}
    got = gpu_proof.compare({"memory": {"breakdown": breakdown}},
                            {"CUDA0": {"model": 110, "kv": 10, "compute": 40}, "CPU_Mapped": {"model": 200},
                             "CUDA_Host": {"compute": 4, "output": 1}})
    assert got["gpu"]["model"] == {"planned": 100, "reported": 110, "ratio": 1.1}
    assert got["gpu"]["recurrent"] == {"planned": 5, "reported": None, "ratio": None}
    assert got["host"]["compute"]["ratio"] == 1.0 and got["devices"] == ["CPU_Mapped", "CUDA0", "CUDA_Host"]
