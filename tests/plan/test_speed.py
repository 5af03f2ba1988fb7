"""The speed model's arithmetic on recorded machines and Qwen3.6's real shapes (header-only GGUF files), and what
``plan`` shows of it.

The assertions are on the model's structure (more bandwidth → faster, experts on the CPU → the CPU sets the pace,
a fuller KV cache → slower), on the bytes it counts (the experts a token uses, not all of them) and on ``plan
--json`` carrying every input. How close the numbers come to real runs is ``scripts/bench_speed.py``'s job.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.plan import speed
from bootstrap.plan.gguf_header import read_header
from bootstrap.plan.memory import LaunchSettings, ModelProfile, kv_bytes_per_token, model_profile
from tests.support.header_only import qwen36_27b_header, qwen36_35b_a3b_header
from tests.support.paths import TEST_DATA

HARDWARE = TEST_DATA / "hardware"
GPU_MACHINES = ["rtx3070_8gb_32gb", "rtx4060_8gb_16gb", "rtx3060_12gb", "t4_16gb", "rtx4090_24gb", "apple_m2_16gb"]
REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("english")


@pytest.fixture(scope="module")
def moe(tmp_path_factory: pytest.TempPathFactory) -> ModelProfile:
    """Qwen3.6-35B-A3B UD-Q4_K_XL: 40 layers, 256 experts of which 8 are used."""
    return model_profile(read_header(qwen36_35b_a3b_header(tmp_path_factory.mktemp("moe"))))


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> ModelProfile:
    """Qwen3.6-27B Q4_K_M: dense, 16 of 64 layers with a KV cache."""
    return model_profile(read_header(qwen36_27b_header(tmp_path_factory.mktemp("dense"))))


def machine(name: str) -> HardwareProfile:
    return load_profile(HARDWARE / f"{name}.json")


def with_ram_bandwidth(hardware: HardwareProfile, gbps: float, threads: int = 6) -> HardwareProfile:
    memory = dataclasses.replace(hardware.memory, bandwidth_bytes_per_s=int(gbps * 1e9), bandwidth_threads=threads)
    return dataclasses.replace(hardware, memory=memory)


ALL_GPU = LaunchSettings(ctx=32768, n_gpu_layers=99)


def cpu_moe(profile: ModelProfile, n: int) -> LaunchSettings:
    return dataclasses.replace(ALL_GPU, n_cpu_moe=n, cache_type_k="q8_0", cache_type_v="q8_0")


def test_a_token_reads_only_the_experts_it_uses(moe: ModelProfile) -> None:
    """Bytes per token = every dense byte + 8/256 of the expert bytes + the output layer (+ KV and state)."""
    hw = machine("rtx4090_24gb")
    pred = speed.predict(moe, ALL_GPU, hw, 8, gpu_vendor="nvidia", gpu_bandwidth=1_008_000_000_000)
    weights = pred.inputs["weights_bytes_per_token"]["gpu"]
    dense = sum(lw.dense_bytes for lw in moe.layers)
    experts = sum(lw.expert_bytes for lw in moe.layers)
    assert pred.inputs["expert_share"] == pytest.approx(8 / 256)
    assert weights == pytest.approx(dense + experts * 8 / 256 + moe.output_bytes + moe.other_bytes, rel=1e-6)
    assert weights < moe.total_weight_bytes / 4  # a 3B-active model reads far less than its 20 GB per token


def test_more_bandwidth_is_faster(moe: ModelProfile) -> None:
    hw = machine("rtx4090_24gb")
    slow = speed.predict(moe, ALL_GPU, hw, 8, gpu_vendor="nvidia", gpu_bandwidth=300_000_000_000)
    fast = speed.predict(moe, ALL_GPU, hw, 8, gpu_vendor="nvidia", gpu_bandwidth=1_000_000_000_000)
    assert fast.decode_tps > slow.decode_tps
    # 24 threads process bytes faster than 80 GB/s of RAM delivers them: bandwidth-bound, nearly proportional
    cpu_slow = speed.predict(moe, LaunchSettings(ctx=4096), with_ram_bandwidth(hw, 20), 24)
    cpu_fast = speed.predict(moe, LaunchSettings(ctx=4096), with_ram_bandwidth(hw, 80), 24)
    assert cpu_fast.inputs["devices"]["cpu"]["bound"] == "bandwidth"
    assert cpu_fast.decode_tps > 2.5 * cpu_slow.decode_tps


def test_experts_on_the_cpu_make_the_cpu_the_bound(moe: ModelProfile) -> None:
    """With every expert in RAM, RAM bandwidth moves decode far more than GPU bandwidth does."""
    hw = machine("rtx3070_8gb_32gb")
    settings = cpu_moe(moe, moe.n_layer)
    base = speed.predict(moe, settings, with_ram_bandwidth(hw, 30), 8, gpu_vendor="nvidia",
                         gpu_bandwidth=448_000_000_000)
    ram_x2 = speed.predict(moe, settings, with_ram_bandwidth(hw, 60), 8, gpu_vendor="nvidia",
                           gpu_bandwidth=448_000_000_000)
    gpu_x2 = speed.predict(moe, settings, with_ram_bandwidth(hw, 30), 8, gpu_vendor="nvidia",
                           gpu_bandwidth=896_000_000_000)
    assert ram_x2.decode_tps - base.decode_tps > 2 * (gpu_x2.decode_tps - base.decode_tps)
    # and fewer experts in RAM is faster
    fewer = speed.predict(moe, cpu_moe(moe, 10), with_ram_bandwidth(hw, 30), 8, gpu_vendor="nvidia",
                          gpu_bandwidth=448_000_000_000)
    assert fewer.decode_tps > base.decode_tps
    assert fewer.inputs["weights_bytes_per_token"]["cpu"] < base.inputs["weights_bytes_per_token"]["cpu"]


def test_a_fuller_kv_cache_slows_decode(dense: ModelProfile) -> None:
    hw = with_ram_bandwidth(machine("no_gpu_16gb"), 40, 4)
    settings = LaunchSettings(ctx=131072)
    short = speed.predict(dense, settings, hw, 4, context_fill=1024)
    long = speed.predict(dense, settings, hw, 4, context_fill=131072)
    assert long.decode_tps < short.decode_tps
    # the KV cache grows by its per-token size (64 KiB at f16 for the 27B's 16 KV layers); the recurrent state
    # of the 48 DeltaNet layers is read and written whatever the fill
    grown = long.inputs["kv_bytes_per_token"]["cpu"] - short.inputs["kv_bytes_per_token"]["cpu"]
    assert grown == pytest.approx((131072 - 1024) * kv_bytes_per_token(dense), rel=1e-6)
    assert kv_bytes_per_token(dense) == 65536
    assert long.context_fill == 131072 and short.context_fill == 1024
    # a fill beyond the context is the context
    assert speed.predict(dense, LaunchSettings(ctx=4096), hw, 4, context_fill=100_000).context_fill == 4096


def test_an_unmeasured_cpu_uses_the_stated_default(moe: ModelProfile) -> None:
    hw = machine("no_gpu_16gb")
    assert hw.memory.bandwidth_bytes_per_s is None
    pred = speed.predict(moe, LaunchSettings(ctx=4096), hw, 4)
    assert pred.cpu_default and pred.inputs["devices"]["cpu"]["source"] == "default"
    assert pred.inputs["cpu_default_memory"] == speed.DEFAULT_CPU_MEMORY
    lines = speed.describe(pred)
    assert any(speed.DEFAULT_CPU_MEMORY in line for line in lines)
    measured = speed.predict(moe, LaunchSettings(ctx=4096), with_ram_bandwidth(hw, 30, 4), 4)
    assert not measured.cpu_default and not any(speed.DEFAULT_CPU_MEMORY in line for line in speed.describe(measured))


def test_prompt_is_faster_than_decode_and_ranges_hold_the_estimate(moe: ModelProfile) -> None:
    pred = speed.predict(moe, cpu_moe(moe, 20), machine("rtx3060_12gb"), 6, gpu_vendor="nvidia",
                         gpu_bandwidth=360_000_000_000)
    assert pred.prompt_tps > pred.decode_tps > 0
    assert pred.decode_low < pred.decode_tps < pred.decode_high
    assert pred.prompt_low < pred.prompt_tps < pred.prompt_high
    doc = pred.to_json()
    assert set(doc) == {"decode_tps", "decode_low", "decode_high", "prompt_tps", "prompt_low", "prompt_high",
                        "context_fill", "source", "measured_on", "kernel_rates", "inputs"}
    assert (doc["source"], doc["measured_on"]) == ("published", None)  # a recorded profile: nothing measured


def test_thinking_is_a_separate_line_with_the_same_speed(moe: ModelProfile) -> None:
    hw = machine("rtx4090_24gb")
    on = speed.predict(moe, ALL_GPU, hw, 8, gpu_vendor="nvidia", gpu_bandwidth=10**12, thinking=True)
    off = speed.predict(moe, ALL_GPU, hw, 8, gpu_vendor="nvidia", gpu_bandwidth=10**12, thinking=False)
    assert on.decode_tps == off.decode_tps
    assert speed.describe(on)[-1] != speed.describe(off)[-1] and "tokens/s" in speed.describe(on)[0]


def _plan_json(name: str, models_dir: Path, home: Path) -> dict[str, object]:
    env = {**os.environ, "QWENKIT_LANG": "en", "QWENKIT_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "plan", "--hardware", str(HARDWARE / f"{name}.json"),
                           "--json"], capture_output=True, text=True, timeout=120, env=env, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", GPU_MACHINES)
def test_plan_json_carries_the_prediction_and_its_inputs(name: str, tmp_path: Path) -> None:
    """Every recorded GPU profile gets a number, with what produced it: bytes per device, bandwidths and sources."""
    doc = _plan_json(name, tmp_path / "models", tmp_path / "home")
    got = doc["speed"]
    assert isinstance(got, dict)
    assert got["decode_low"] < got["decode_tps"] < got["decode_high"] and got["prompt_tps"] > 0
    inputs = got["inputs"]
    gpu = inputs["devices"]["gpu"]
    assert gpu["source"] in ("nvml", "apple-chip") and gpu["bandwidth_bytes_per_s"] > 0
    assert inputs["decode_bytes_per_token"]["gpu"] > 0 and inputs["threads"] >= 1
    assert set(inputs) >= {"weights_bytes_per_token", "kv_bytes_per_token", "prompt_flops_per_token", "overheads_s"}


def test_plan_text_shows_tokens_per_second(tmp_path: Path) -> None:
    env = {**os.environ, "QWENKIT_LANG": "en", "QWENKIT_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "plan", "--hardware",
                           str(HARDWARE / "rtx3070_8gb_32gb.json")], capture_output=True, text=True, timeout=120,
                          env=env, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "tokens/s" in proc.stdout and "Thinking" in proc.stdout  # the plan is the command's output


def test_a_model_without_thinking_gets_no_thinking_line(moe: ModelProfile) -> None:
    hw = machine("rtx3070_8gb_32gb")
    lines = speed.describe(speed.predict(moe, ALL_GPU, hw, 8, gpu_vendor="nvidia", gpu_bandwidth=10**12,
                                         thinking=None))
    assert lines and not any("hinking" in line for line in lines)


def test_nothing_in_ram_needs_no_ram_assumption(moe: ModelProfile) -> None:
    """All on an Apple GPU (unified memory, Apple's figure for the chip): no word about an assumed RAM type."""
    hw = machine("apple_m2_16gb")
    pred = speed.predict(moe, ALL_GPU, hw, 8, gpu_vendor="apple", gpu_bandwidth=100_000_000_000)
    assert not pred.cpu_default and pred.inputs["devices"]["gpu"]["source"] == "apple-chip"
    assert pred.inputs["pcie_bytes_per_s"] is None


def test_more_threads_help_until_bandwidth_binds(moe: ModelProfile) -> None:
    """The CPU roofline: with few threads the cores set the pace (decode grows with threads), once the threads
    together process bytes faster than RAM delivers them, more threads change nothing."""
    hw = with_ram_bandwidth(machine("rtx3070_8gb_32gb"), 40, 12)  # AVX2: half the AVX-512 rate per thread
    settings = LaunchSettings(ctx=4096)
    by_threads = {n: speed.predict(moe, settings, hw, n) for n in (1, 2, 4, 16, 32)}
    bounds = {n: p.inputs["devices"]["cpu"]["bound"] for n, p in by_threads.items()}
    assert bounds[1] == "compute" and bounds[32] == "bandwidth"
    assert by_threads[1].decode_tps < by_threads[2].decode_tps < by_threads[4].decode_tps
    assert by_threads[2].decode_tps > 1.5 * by_threads[1].decode_tps  # compute-bound: nearly proportional
    assert by_threads[16].decode_tps == pytest.approx(by_threads[32].decode_tps)
    cpu = by_threads[32].inputs["devices"]["cpu"]
    assert cpu["effective_bandwidth_bytes_per_s"] == int(40e9 * speed.CPU_BW_EFFICIENCY)
    assert by_threads[1].inputs["devices"]["cpu"]["effective_bandwidth_bytes_per_s"] == int(speed.CPU_CORE_RATE / 2)
