"""The speed measurement with the test bed's real llama-server: models of known bytes (``verify/speed_models.py``),
every type measured within its bound, and nothing measured (never a hang) when the engine cannot run or time is up.

The numbers themselves depend on this shared machine's load: asserted here are the structure and the bound; how
well they predict real models is ``scripts/bench_speed.py``'s job.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bootstrap.plan import speed
from bootstrap.plan.gguf_header import read_header
from bootstrap.verify import speed_rates
from bootstrap.verify.speed_models import write_rate_model
from bootstrap.verify.speed_rates import MEASURE_BUDGET_S, RateRequest, measure_rates, rate_model, rates_from_timings


@pytest.mark.parametrize("type_name", speed.RATE_TYPES)
def test_a_rate_model_holds_the_bytes_it_says(type_name: str, tmp_path: Path) -> None:
    """The planned model's row lengths (rounded to whole blocks), layers until the size is reached."""
    model = rate_model(tmp_path, type_name, 24 << 20, shape=(1000, 2816))
    header = read_header(model.path)
    matrices = [t for t in header.tensors if t.name.startswith("blk.") and t.type_name != "F32"]
    assert {t.type_name for t in matrices} == {type_name}
    width = 1024 if type_name.endswith("_K") else 992  # K-quant rows hold 256-weight blocks, the others 32
    assert {t.shape[0] for t in matrices} == {width, 2816}
    output = next(t for t in header.tensors if t.name == "output.weight")
    assert model.weight_bytes == sum(t.nbytes for t in matrices) + output.nbytes
    per_layer = sum(t.nbytes for t in matrices) / model.n_layer
    assert abs(model.weight_bytes - (24 << 20)) <= per_layer / 2 + output.nbytes
    assert model.path.stat().st_size >= header.data_offset + sum(t.nbytes for t in header.tensors)


def test_the_models_are_as_large_as_what_the_planned_model_reads() -> None:
    """From cache for a tiny model, streamed from RAM for a large one (bounded: writing stays under a second)."""
    assert speed_rates.model_bytes(1_400_000) == speed_rates.MIN_MODEL_BYTES
    assert speed_rates.model_bytes(250_000_000) == 250_000_000
    assert speed_rates.model_bytes(3_000_000_000) == speed_rates.MAX_MODEL_BYTES


def test_a_rate_model_is_the_same_file_every_time(tmp_path: Path) -> None:
    a = write_rate_model(tmp_path / "a", "Q4_K", n_embd=256, n_ff=512)
    b = write_rate_model(tmp_path / "b", "Q4_K", n_embd=256, n_ff=512)
    assert a.path.read_bytes() == b.path.read_bytes()


def test_rates_come_from_the_timings_less_the_overheads(tmp_path: Path) -> None:
    """Timings recorded on the test bed for a 69 MB Q4_K model (1 thread): 208.6 t/s decode, 337.3 t/s over a
    64-token prompt. Decode rate = bytes ÷ (1/208.6 − the token and per-layer overheads); FLOP/s = 2·params·64 ÷
    (prompt seconds − one read of the weights at that rate). The median decode run counts (a typical token)."""
    model = rate_model(tmp_path, "Q4_K", 69 << 20)
    slow = {"predicted_per_second": 150.0, "prompt_per_second": 240.0, "prompt_n": 4}
    typical = {"predicted_per_second": 208.6, "prompt_per_second": 250.0, "prompt_n": 4}
    fast = {"predicted_per_second": 260.0, "prompt_per_second": 260.0, "prompt_n": 4}
    prompt = {"predicted_per_second": 0.0, "prompt_per_second": 337.3, "prompt_n": 64}
    got = rates_from_timings(model, [slow, fast, typical], prompt)
    weights_s = 1 / 208.6 - speed.CPU_TOKEN_OVERHEAD_S - model.n_layer * speed.CPU_LAYER_OVERHEAD_S
    assert got.decode_bytes_per_s == pytest.approx(model.weight_bytes / weights_s, rel=1e-6)
    flop_s = 64 / 337.3 - model.weight_bytes / got.decode_bytes_per_s
    assert got.prompt_flops_per_s == pytest.approx(2 * model.params * 64 / flop_s, rel=1e-6)


def test_the_engine_measures_each_type_within_the_bound(engine_bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "speed-rates.log"
    start = time.monotonic()
    rates = measure_rates(engine_bin_dir / "llama-server", RateRequest(threads=1, cpu_bytes=64 << 20),
                          engine="b11434 test", cpu_brand="test CPU", log=log)
    took = time.monotonic() - start
    assert rates is not None, log.read_text(errors="replace")[-2000:]
    assert took < MEASURE_BUDGET_S + 10  # the bound, plus stopping the last server
    assert rates.millis <= took * 1000 and rates.cpu_brand == "test CPU"
    cpu = rates.device("cpu")
    assert cpu is not None and cpu.threads == 1 and rates.device("gpu") is None
    measured = {r.type for r in cpu.rates}
    assert measured and measured <= set(speed.RATE_TYPES)
    for r in cpu.rates:
        assert 1e8 < r.decode_bytes_per_s < 1e12 and 1e8 < r.prompt_flops_per_s < 1e14
    assert "load_model" in log.read_text(errors="replace")  # the server's own log is kept for the user


def test_an_engine_that_does_not_start_measures_nothing_quickly(tmp_path: Path) -> None:
    broken = tmp_path / "llama-server"
    broken.write_text("#!/bin/sh\necho 'error while loading shared libraries: libvulkan.so.1' >&2\nexit 127\n")
    broken.chmod(0o755)
    start = time.monotonic()
    rates = measure_rates(broken, RateRequest(threads=1, types=("Q8_0",)), engine="x", cpu_brand="x",
                          log=tmp_path / "rates.log")
    assert rates is None and time.monotonic() - start < 10
    assert "libvulkan" in (tmp_path / "rates.log").read_text()


def test_no_time_left_measures_nothing(engine_bin_dir: Path, tmp_path: Path) -> None:
    rates = measure_rates(engine_bin_dir / "llama-server", RateRequest(threads=1, types=("Q8_0",)), engine="x",
                          cpu_brand="x", log=tmp_path / "rates.log", budget_s=0.2)
    assert rates is None
