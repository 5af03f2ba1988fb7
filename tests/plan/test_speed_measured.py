"""The speed model fed with this machine's measured kernel rates (``detect/kernel_rates.py``): the measurement, not the
constants, decides; each quantization type goes at its own rate; the RAM probe still bounds it; ``plan`` says
where its number comes from, in ``--json`` and on screen.

The rates here are data (a ``KernelRates`` record as an install or ``doctor --json`` carries it); how they are
measured is ``tests/verify/test_speed_rates.py``, how close the result comes to real runs is
``scripts/bench_speed.py``'s job.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.core.errors import UsageError
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.detect.kernel_rates import DeviceRates, KernelRates, TypeRate
from bootstrap.plan import speed
from bootstrap.plan.gguf_header import read_header
from bootstrap.plan.memory import LaunchSettings, ModelProfile, model_profile
from bootstrap.plan.model_facts import scale_profile
from tests.support.header_only import qwen36_35b_a3b_header
from tests.support.paths import TEST_DATA
from tests.support.tiny_gguf import write_model

HARDWARE = TEST_DATA / "hardware"
REPO_ROOT = Path(__file__).resolve().parents[2]
CPU_ONLY = LaunchSettings(ctx=4096)

pytestmark = pytest.mark.usefixtures("english")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> ModelProfile:
    """A llama whose FFN matrices are Q4_0 and attention and output Q8_0 (``tiny_gguf`` dtype ``q4_0+q8_0``)."""
    path = write_model("llama", tmp_path_factory.mktemp("mixed") / "mixed.gguf", dtype="q4_0+q8_0", n_layer=4,
                       n_embd=256, n_ff=1024)
    return model_profile(read_header(path))


def rates(cpu_brand: str, threads: int = 1, **per_type: tuple[float, float]) -> KernelRates:
    """A measurement record: per type (decode GB/s, prompt GFLOP/s) on the CPU with ``threads`` threads."""
    found = tuple(TypeRate(k, int(d * 1e9), int(f * 1e9)) for k, (d, f) in per_type.items())
    return KernelRates("b11434 ubuntu-x64", cpu_brand, "2026-12-02T08:00:00Z", 3100,
                       (DeviceRates("cpu", threads, found),))


def machine(name: str = "no_gpu_16gb", ram_gbps: float | None = 200.0) -> HardwareProfile:
    """A recorded profile, with a RAM probe reading fast enough not to bind unless a test says otherwise."""
    hw = load_profile(HARDWARE / f"{name}.json")
    if ram_gbps is None:
        return hw
    return dataclasses.replace(hw, memory=dataclasses.replace(hw.memory, bandwidth_bytes_per_s=int(ram_gbps * 1e9),
                                                              bandwidth_threads=1))


def test_the_profile_knows_its_tensor_types_and_a_scaled_one_does_not(mixed: ModelProfile) -> None:
    parts = {(part, kind) for part, kind, _n in mixed.weight_types}
    assert ("dense", "Q4_0") in parts and ("dense", "Q8_0") in parts and ("output", "Q8_0") in parts
    total = sum(n for _p, _k, n in mixed.weight_types)
    layers = sum(lw.dense_bytes for lw in mixed.layers)
    assert total == layers + (mixed.output_bytes or mixed.token_embd_bytes)  # output_norm is in neither
    assert scale_profile(mixed, 2000, 1000).weight_types == ()  # another quant: its own types are unknown


def test_the_quant_name_gives_the_main_type() -> None:
    assert speed.quant_rate_type("UD-Q4_K_XL") == "Q4_K"
    assert speed.quant_rate_type("Q8_0") == "Q8_0"
    assert speed.quant_rate_type("UD-Q2_K_XL") == "Q4_K"  # K-quants run K-quant kernels
    assert speed.quant_rate_type("IQ4_NL") == "Q4_0" and speed.quant_rate_type("Q5_0") == "Q4_0"
    assert speed.quant_rate_type("Q6_K") == "Q6_K" and speed.quant_rate_type("BF16") == "Q8_0"
    assert speed.quant_rate_type(None) == "Q4_K" and speed.quant_rate_type("file") == "Q4_K"


def test_measured_rates_decide_and_each_type_goes_at_its_own(mixed: ModelProfile) -> None:
    """Seconds per token = the overheads + each type's bytes over its measured rate: redone here from the
    prediction's own inputs."""
    hw = machine()
    measured = dataclasses.replace(hw, kernel_rates=rates(hw.cpu.brand, Q4_0=(4.0, 50.0), Q8_0=(8.0, 60.0)))
    pred = speed.predict(mixed, CPU_ONLY, measured, 1, context_fill=64)
    constants = speed.predict(mixed, CPU_ONLY, hw, 1, context_fill=64)
    assert (pred.source, constants.source) == ("measured", "published")
    by_type = pred.inputs["weights_by_type"]["cpu"]
    assert set(by_type) == {"Q4_0", "Q8_0"}
    kv = pred.inputs["kv_bytes_per_token"]["cpu"]
    seconds = (speed.CPU_TOKEN_OVERHEAD_S + mixed.n_layer * speed.CPU_LAYER_OVERHEAD_S
               + by_type["Q4_0"] / 4e9 + by_type["Q8_0"] / 8e9 + kv / 8e9)
    assert pred.decode_tps == pytest.approx(1 / seconds, rel=1e-3)
    assert pred.decode_tps != pytest.approx(constants.decode_tps, rel=0.05)
    # twice the measured rates: faster, and by almost twice (the overheads stay)
    doubled = dataclasses.replace(hw, kernel_rates=rates(hw.cpu.brand, Q4_0=(8.0, 100.0), Q8_0=(16.0, 120.0)))
    faster = speed.predict(mixed, CPU_ONLY, doubled, 1, context_fill=64)
    assert pred.decode_tps < faster.decode_tps < 2 * pred.decode_tps
    assert faster.prompt_tps > pred.prompt_tps


def test_a_type_not_measured_takes_the_mean_of_the_others(mixed: ModelProfile) -> None:
    hw = machine()
    only_q8 = dataclasses.replace(hw, kernel_rates=rates(hw.cpu.brand, Q8_0=(8.0, 60.0)))
    both = dataclasses.replace(hw, kernel_rates=rates(hw.cpu.brand, Q4_0=(8.0, 60.0), Q8_0=(8.0, 60.0)))
    a = speed.predict(mixed, CPU_ONLY, only_q8, 1)
    b = speed.predict(mixed, CPU_ONLY, both, 1)
    assert a.decode_tps == pytest.approx(b.decode_tps) and a.source == "measured"


def test_the_ram_probe_still_bounds_a_measured_rate(mixed: ModelProfile) -> None:
    """The measurement's models are read from cache; a model streams from RAM: the probe's side of the roofline."""
    fast_kernels = rates("x", Q4_0=(50.0, 50.0), Q8_0=(50.0, 60.0))
    slow_ram = machine(ram_gbps=10.0)
    slow_ram = dataclasses.replace(slow_ram, kernel_rates=dataclasses.replace(fast_kernels,
                                                                              cpu_brand=slow_ram.cpu.brand))
    pred = speed.predict(mixed, CPU_ONLY, slow_ram, 1)
    cpu = pred.inputs["devices"]["cpu"]
    assert cpu["bound"] == "bandwidth"
    assert cpu["measured"]["decode_bytes_per_s"]["Q4_0"] == int(10e9 * speed.CPU_BW_EFFICIENCY)


def test_more_threads_scale_the_measured_rate_until_ram_binds(mixed: ModelProfile) -> None:
    hw = machine(ram_gbps=40.0)
    one = dataclasses.replace(hw, kernel_rates=rates(hw.cpu.brand, 1, Q4_0=(5.0, 50.0), Q8_0=(5.0, 50.0)))
    by_threads = {n: speed.predict(mixed, CPU_ONLY, one, n).inputs["devices"]["cpu"] for n in (1, 2, 16)}
    assert by_threads[2]["measured"]["decode_bytes_per_s"]["Q4_0"] == 2 * by_threads[1]["measured"][
        "decode_bytes_per_s"]["Q4_0"]
    assert by_threads[2]["measured"]["thread_scale"] == 2
    assert by_threads[16]["bound"] == "bandwidth"
    assert by_threads[16]["measured"]["decode_bytes_per_s"]["Q4_0"] == int(40e9 * speed.CPU_BW_EFFICIENCY)


def test_rates_of_another_cpu_are_not_used(mixed: ModelProfile) -> None:
    hw = machine()
    other = dataclasses.replace(hw, kernel_rates=rates("Some Other CPU", Q4_0=(4.0, 50.0)))
    pred = speed.predict(mixed, CPU_ONLY, other, 1)
    assert pred.source == "published" and pred.measured_on is None
    assert pred.decode_tps == pytest.approx(speed.predict(mixed, CPU_ONLY, hw, 1).decode_tps)


def test_a_gpu_placement_is_measured_only_when_every_device_used_is(tmp_path: Path) -> None:
    """Experts in RAM, the rest on the GPU: CPU rates alone do not make it "measured"; with the GPU's too, they
    replace its peak bandwidth."""
    moe = model_profile(read_header(qwen36_35b_a3b_header(tmp_path)))
    hw = machine("rtx3070_8gb_32gb")
    hybrid = LaunchSettings(ctx=32768, n_gpu_layers=99, n_cpu_moe=30)
    cpu_only = dataclasses.replace(hw, kernel_rates=rates(hw.cpu.brand, 12, Q4_K=(60.0, 500.0)))
    pred = speed.predict(moe, hybrid, cpu_only, 12, gpu_vendor="nvidia", gpu_bandwidth=448_000_000_000,
                         quant="UD-Q4_K_XL")
    assert pred.source == "published"
    gpu = DeviceRates("gpu", 12, (TypeRate("Q4_K", 300_000_000_000, 20_000_000_000_000),), "CUDA0: RTX 3070")
    both = dataclasses.replace(cpu_only, kernel_rates=dataclasses.replace(
        cpu_only.kernel_rates, devices=(*cpu_only.kernel_rates.devices, gpu)))
    measured = speed.predict(moe, hybrid, both, 12, gpu_vendor="nvidia", gpu_bandwidth=448_000_000_000,
                             quant="UD-Q4_K_XL")
    assert measured.source == "measured"
    assert measured.inputs["devices"]["gpu"]["measured"]["name"] == "CUDA0: RTX 3070"
    assert measured.inputs["devices"]["gpu"]["measured"]["decode_bytes_per_s"]["Q4_K"] == 300_000_000_000


def test_the_profile_document_carries_the_rates_and_refuses_bad_ones(tmp_path: Path) -> None:
    hw = machine()
    doc = dataclasses.replace(hw, kernel_rates=rates(hw.cpu.brand, Q4_K=(12.3, 90.0))).to_json()
    back = HardwareProfile.from_json(json.loads(json.dumps(doc)))
    assert back.kernel_rates == rates(hw.cpu.brand, Q4_K=(12.3, 90.0))
    assert "kernel_rates" not in hw.to_json()  # a profile without a measurement reads as before
    doc["kernel_rates"]["devices"][0]["threads"] = 0
    with pytest.raises(UsageError, match=r"kernel_rates\.devices\[0\]\.threads"):
        HardwareProfile.from_json(doc)


def _plan(hardware: Path, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QWENKIT_LANG": "en", "QWENKIT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "bootstrap", "plan", "--hardware", str(hardware), *extra],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO_ROOT)


def test_plan_says_where_its_number_comes_from(tmp_path: Path) -> None:
    """``plan --hardware`` with a profile that carries a measurement (as ``doctor --json`` prints it on a machine
    an install measured) predicts from it and says so; the same profile without one says "published runs"."""
    hw = load_profile(HARDWARE / "no_gpu_16gb.json")
    with_rates = tmp_path / "measured.json"
    with_rates.write_text(json.dumps(dataclasses.replace(hw, kernel_rates=rates(
        hw.cpu.brand, 4, Q4_K=(30.0, 200.0), Q6_K=(35.0, 200.0))).to_json()), encoding="utf-8")
    plain = HARDWARE / "no_gpu_16gb.json"
    docs = {}
    for name, path in (("measured", with_rates), ("published", plain)):
        proc = _plan(path, tmp_path / "home", "--json")
        assert proc.returncode == 0, proc.stderr
        docs[name] = json.loads(proc.stdout)["speed"]
        text = _plan(path, tmp_path / "home")
        assert text.returncode == 0, text.stderr
        line = ("Predicted from the engine's own measurement on the machine" if name == "measured"
                else "Estimated from published runs")
        assert line in text.stdout and line not in text.stderr  # the plan is the command's primary output
    assert docs["measured"]["source"] == "measured" and docs["measured"]["measured_on"] == "2026-12-02T08:00:00Z"
    assert docs["measured"]["kernel_rates"]["devices"][0]["rates"][0]["type"] == "Q4_K"
    assert docs["measured"]["inputs"]["devices"]["cpu"]["measured"]["threads"] == 4
    assert docs["published"]["source"] == "published" and docs["published"]["kernel_rates"] is None
    assert docs["measured"]["decode_tps"] != docs["published"]["decode_tps"]
