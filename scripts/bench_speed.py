"""Predicted vs measured tokens/s on this CPU per test-bed model, thread count and context fill: one JSON line.

For every model (the real Gemma 3 270M and synthetic models large enough for bandwidth to dominate, written with
``tests/support/tiny_gguf.py`` into the test-bed cache) and every thread count, the test bed's real llama-server
(``-ngl 0``, flash attention, ``-t N``) answers a warm-up and one ``/completion`` per context fill with a fixed
token prompt, ``cache_prompt: false``, ``ignore_eos`` and fixed ``n_predict``; its ``timings``
(``prompt_per_second``, ``predicted_per_second``) are compared with ``bootstrap.plan.speed.predict`` twice, side
by side in each row:

- ``pred``: from this machine's kernel rates, measured the way an install measures them before its download
  (``bootstrap.verify.speed_rates.measure_rates`` with the same threads: the product's own measurement);
- ``pred_constants``: from the constants fitted on published runs, the prediction without a measurement (what
  main predicted before rates were measured; ``--hardware`` plans still get it).

Each point runs ``--repeats`` times; before each repeat the rates are measured and, before each run, the RAM probe
(1 s, median of 5 rounds); the medians are compared: on a shared machine, load then weighs on the measurement and
the server alike. ``--busy-neighbour`` runs it all beside one spinning process pinned to the last CPU. ``--fit``
also solves the CPU constants of the speed model from these rows (least squares) and prints them. Output::

    {"bench": "speed", "engine": …, "busy_neighbour": false, "load_before": […], "load_after": […],
     "rows": [{"model": …, "threads": n, "prompt_tokens": n, "bandwidth_gbps": …, "source": "measured",
               "decode": {"pred": …, "meas": …, "err": …, "pred_constants": …, "err_constants": …},
               "prompt": {…}, "rates": {"Q4_K": [bytes/s, FLOP/s], …}}, …],
     "max_abs_err": {"decode": …, "decode_constants": …, "prompt": …, …}, "fit": {…}}

``--verbose`` prints one human line per row on stderr. ``--replay LINE.json`` predicts again for an earlier line's
measurements (its rows' rates included). ``--published`` runs nothing: it prints the model's predictions for the
published hybrid runs that set ``CPU_BW_EFFICIENCY`` (docs/speed.md), one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests

from bootstrap.detect.hardware import HardwareProfile
from bootstrap.detect.kernel_rates import DeviceRates, KernelRates, TypeRate
from bootstrap.detect.probes import probe_all, read_all
from bootstrap.detect.probes.bandwidth import read_bandwidth
from bootstrap.install.measure import main_types
from bootstrap.plan import speed
from bootstrap.plan.gguf_header import read_header
from bootstrap.plan.memory import LaunchSettings, ModelProfile, model_profile
from bootstrap.verify.speed_rates import RateRequest, measure_rates, model_bytes
from tests.support import testbed
from tests.support.llama import LlamaServer
from tests.support.tiny_gguf import write_model

# Synthetic models where bytes per token, not per-token overhead, set the pace (0.4–0.6 GB).
SYNTHETIC: dict[str, tuple[str, dict[str, Any]]] = {
    "llama-q8-0.4g": ("llama", {"n_layer": 8, "n_embd": 2048, "n_head": 16, "n_head_kv": 4, "head_dim": 128,
                                "n_ff": 5632, "dtype": "q8_0"}),
    "llama-q4-0.6g": ("llama", {"n_layer": 20, "n_embd": 2048, "n_head": 16, "n_head_kv": 4, "head_dim": 128,
                                "n_ff": 5632, "dtype": "q4_0+q8_0"}),
    "qwen35moe-q4-0.5g": ("qwen35moe", {"n_layer": 8, "n_embd": 1024, "n_head": 8, "n_head_kv": 2, "head_dim": 128,
                                        "n_ff": 2048, "n_expert": 16, "n_expert_used": 4, "n_ff_exp": 2048,
                                        "n_ff_shexp": 512, "full_attention_interval": 4, "ssm_state_size": 128,
                                        "ssm_group_count": 4, "ssm_time_step_rank": 8, "dtype": "q4_0+q8_0"}),
}
CTX = 4096
TINY = frozenset({"gemma3-270m-q4_k_m"})  # per-token overheads, not bytes, set its pace
N_PREDICT = 48
PROMPTS = (128, 512)  # context fills: a short prompt and a longer one
CPU_BRAND_REPLAYED = "replayed"  # a replayed line's rates are taken as this machine's
TOKEN_IDS = range(300, 400)  # words or word pieces in every test-bed vocabulary (512-token SPM and Gemma's)


# Published hybrid runs of Qwen3.6-35B-A3B (docs/speed.md has the sources): label, t/s, --n-cpu-moe, KV type,
# context fill, recorded profile whose CPU stands in (None: keep its cores), threads, GPU bytes/s, RAM read bytes/s
# (None: the profile's, i.e. the DDR4-3200 default). The i3-8100 has 4 cores and DDR4-2400 dual channel (0.7 × 38.4).
PUBLISHED: tuple[tuple[str, float, int, str, int, str, int, float, float | None], ...] = (
    ("article 8 GB GPU + 32 GB, Q4_K_M", 42.3, 32, "f16", 1024, "rtx3070_8gb_32gb", 12, 448.064e9, None),
    ("RTX 4060 Ti 8 GB, Q4_K_S, q8_0 KV, 16k", 41.6, 32, "q8_0", 16384, "rtx4060_8gb_16gb", 6, 288.0e9, None),
    ("RTX 3070 Ti 8 GB, -ncmoe", 40.9, 32, "f16", 1024, "rtx3070_8gb_32gb", 12, 608.3e9, None),
    ("GTX 1060 6 GB + i3-8100, ncmoe 41", 13.5, 41, "f16", 1024, "rtx4060_8gb_16gb", 4, 192.2e9, 0.7 * 38.4e9),
    ("GTX 1060 6 GB + i3-8100, ncmoe 35", 17.0, 35, "f16", 1024, "rtx4060_8gb_16gb", 4, 192.2e9, 0.7 * 38.4e9),
)


def published() -> dict[str, Any]:
    """The speed model on the published hybrid runs (no llama-server runs): the table that sets CPU_BW_EFFICIENCY,
    with Qwen3.6-35B-A3B's Q4_K_M shapes from the header-only writer."""
    from bootstrap.detect.hardware import load_profile
    from tests.support.header_only import QWEN36_35B_A3B, cached_header
    from tests.support.paths import TEST_DATA

    spec = dataclasses.replace(QWEN36_35B_A3B, label="Qwen3.6-35B-A3B-Q4_K_M", quant="Q4_K_M")
    profile = model_profile(read_header(cached_header(spec)))
    rows = []
    for label, tps, ncmoe, kv, fill, machine, threads, gpu_bw, ram in PUBLISHED:
        hw = load_profile(TEST_DATA / "hardware" / f"{machine}.json")
        if ram:
            hw = dataclasses.replace(hw, memory=dataclasses.replace(hw.memory, bandwidth_bytes_per_s=int(ram)))
        settings = LaunchSettings(ctx=32768, n_gpu_layers=99, n_cpu_moe=ncmoe, cache_type_k=kv, cache_type_v=kv)
        pred = speed.predict(profile, settings, hw, threads, gpu_vendor="nvidia", gpu_bandwidth=int(gpu_bw),
                             context_fill=fill)
        cpu = pred.inputs["devices"]["cpu"]
        rows.append({"run": label, "published": tps, "pred": round(pred.decode_tps, 1),
                     "err": err(pred.decode_tps, tps), "ram_gbps": round(cpu["bandwidth_bytes_per_s"] / 1e9, 1),
                     "threads": threads, "bound": cpu["bound"]})
    return {"bench": "speed-published", "cpu_bw_efficiency": speed.CPU_BW_EFFICIENCY,
            "cpu_core_rate": speed.CPU_CORE_RATE, "rows": rows}


def synthetic_model(name: str) -> Path:
    """The synthetic model ``name`` in the test-bed cache, written once (deterministic for its spec and seed)."""
    arch, spec = SYNTHETIC[name]
    path = testbed.cache_dir() / "speed-models" / f"{name}.gguf"
    if not path.is_file():
        tmp = path.with_name(f".{path.name}.tmp")
        write_model(arch, tmp, **spec)
        tmp.replace(path)
    return path


def models(include_synthetic: bool) -> dict[str, Path]:
    found = {"gemma3-270m-q4_k_m": testbed.gemma_model()}
    if include_synthetic:
        found.update({name: synthetic_model(name) for name in SYNTHETIC})
    return found


def completion(server: LlamaServer, n_prompt: int) -> dict[str, Any]:
    """One uncached completion of a fixed ``n_prompt``-token prompt; llama-server's ``timings``."""
    ids = [TOKEN_IDS[i % len(TOKEN_IDS)] for i in range(n_prompt)]
    body = {"prompt": ids, "n_predict": N_PREDICT, "cache_prompt": False, "ignore_eos": True, "temperature": 0}
    resp = requests.post(f"{server.base_url}/completion", json=body, timeout=600)
    resp.raise_for_status()
    return resp.json()["timings"]


def typical(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of repeated runs, decode and prompt each (the probe's rounds are taken the same way, so load on a
    shared machine weighs on both alike)."""
    return {**runs[0], "predicted_per_second": statistics.median(r["predicted_per_second"] for r in runs),
            "prompt_per_second": statistics.median(r["prompt_per_second"] for r in runs)}


def measure(binary: Path, model: Path, threads: int, repeats: int, cpu_brand: str,
            request: RateRequest) -> tuple[int, list[dict[str, Any]], KernelRates | None]:
    """(median bandwidth of the probe with ``threads``, median timings per prompt, the median of the product's own
    rate measurements): probe, rate measurement and server alternate, so a burst of load elsewhere meets all three."""
    args = ["-c", str(CTX), "-np", "1", "-fa", "on", "-t", str(threads), "-tb", str(threads), "-ngl", "0",
            "--fit", "off", "-b", "2048", "-ub", "512"]
    bandwidths: list[int] = []
    measurements: list[KernelRates] = []
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in PROMPTS}
    log = testbed.cache_dir() / "speed-models" / "speed-rates.log"
    with LlamaServer(binary, model, args, ready_timeout=300) as server:
        completion(server, 16)  # warm-up: pages in the weights, first-run allocations
        for _ in range(repeats):
            rates = measure_rates(binary, request, engine=f"b{testbed.ENGINE_BUILD} test bed", cpu_brand=cpu_brand,
                                  log=log)
            if rates is not None:
                measurements.append(rates)
            for n in PROMPTS:
                reading = read_bandwidth(threads, copy_seconds=1.0, rounds=5, median=True)
                if reading is not None:
                    bandwidths.append(reading.bytes_per_s)
                runs[n].append(completion(server, n))
    if not bandwidths:
        raise SystemExit("bandwidth probe could not allocate its buffers")
    return int(statistics.median(bandwidths)), [typical(runs[n]) for n in PROMPTS], median_rates(measurements)


def median_rates(measurements: list[KernelRates]) -> KernelRates | None:
    """Per type, the median of the repeated measurements' rates (as the probe's and the runs' medians are taken)."""
    if not measurements:
        return None
    first = measurements[0]
    cpu = [m.device("cpu") for m in measurements]
    rates = []
    for kind in speed.RATE_TYPES:
        found = [r for d in cpu if d is not None for r in d.rates if r.type == kind]
        if found:
            rates.append(TypeRate(kind, int(statistics.median(r.decode_bytes_per_s for r in found)),
                                  int(statistics.median(r.prompt_flops_per_s for r in found))))
    device = DeviceRates("cpu", first.devices[0].threads, tuple(rates))
    return dataclasses.replace(first, devices=(device,), millis=int(statistics.median(m.millis for m in measurements)))


def worst(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """The largest |error| over every row (the tiny Gemma included), measured rates and constants side by side;
    ``*_non_tiny`` as before this bench measured rates (docs/speed.md's older lines)."""
    out: dict[str, float | None] = {}
    for what in ("decode", "prompt"):
        for key, suffix in (("err", ""), ("err_constants", "_constants")):
            out[what + suffix] = max((abs(r[what][key]) for r in rows), default=None)
            out[what + suffix + "_non_tiny"] = max((abs(r[what][key]) for r in rows if r["model"] not in TINY),
                                                   default=None)
    return out


def err(pred: float, meas: float) -> float:
    return round((pred - meas) / meas, 3) if meas > 0 else 0.0


def row(name: str, profile: ModelProfile, hardware: HardwareProfile, threads: int, bandwidth: int,
        timings: dict[str, Any], rates: KernelRates | None) -> dict[str, Any]:
    """One point: the measured speed beside the product's prediction from this machine's measured rates ("pred")
    and from the constants fitted on published runs ("pred_constants": the prediction before rates were measured,
    i.e. what main predicts)."""
    hw = dataclasses.replace(hardware, memory=dataclasses.replace(hardware.memory, bandwidth_bytes_per_s=bandwidth,
                                                                  bandwidth_threads=threads), kernel_rates=None)
    n_prompt = int(timings["prompt_n"])
    settings = LaunchSettings(ctx=CTX)
    fill = n_prompt + N_PREDICT // 2
    constants = speed.predict(profile, settings, hw, threads, context_fill=fill, prompt_tokens=n_prompt)
    pred = constants if rates is None else speed.predict(profile, settings, dataclasses.replace(
        hw, kernel_rates=rates), threads, context_fill=fill, prompt_tokens=n_prompt)
    meas_d, meas_p = float(timings["predicted_per_second"]), float(timings["prompt_per_second"])
    inputs = constants.inputs
    cpu = rates.device("cpu") if rates is not None else None
    return {"model": name, "threads": threads, "prompt_tokens": n_prompt,
            "bandwidth_gbps": round(bandwidth / 1e9, 2), "source": pred.source,
            "decode": {"pred": round(pred.decode_tps, 2), "meas": round(meas_d, 2),
                       "err": err(pred.decode_tps, meas_d), "pred_constants": round(constants.decode_tps, 2),
                       "err_constants": err(constants.decode_tps, meas_d)},
            "prompt": {"pred": round(pred.prompt_tps, 1), "meas": round(meas_p, 1),
                       "err": err(pred.prompt_tps, meas_p), "pred_constants": round(constants.prompt_tps, 1),
                       "err_constants": err(constants.prompt_tps, meas_p)},
            "rates": None if cpu is None else {"threads": cpu.threads, "millis": rates.millis if rates else None,
                                               **{r.type: [r.decode_bytes_per_s, r.prompt_flops_per_s]
                                                  for r in cpu.rates}},
            "inputs": {"bytes": inputs["decode_bytes_per_token"]["cpu"], "layers": inputs["layers"]["cpu"],
                       "flops": inputs["prompt_flops_per_token"], "ubatch": inputs["ubatch"],
                       "weights": inputs["weights_bytes_per_token"]["cpu"],
                       "by_type": pred.inputs["weights_by_type"]["cpu"],
                       "effective_bandwidth": inputs["devices"]["cpu"]["effective_bandwidth_bytes_per_s"],
                       "bound": inputs["devices"]["cpu"]["bound"]}}


def fit(rows: list[dict[str, Any]], hardware: HardwareProfile) -> dict[str, Any]:
    """Least squares for the CPU's per-thread byte rate and FLOP efficiency, the overheads held at the model's
    constants (these runs cannot separate a per-token cost from a per-layer one). Decode: the 1-thread rows of the
    non-tiny models, taken as compute-bound (one core here cannot process bytes as fast as the probe reads them),
    seconds − overheads = bytes / (rate · SIMD scale); the rate is given for AVX-512 (``speed.CPU_CORE_RATE``).
    The bandwidth-bound efficiency needs many threads on a desktop: it is fitted on published runs (docs/speed.md).
    Prompt: seconds − weights / effective bandwidth / ubatch = flops / (derived FLOP/s · eff_f)."""
    import numpy as np

    flags = hardware.cpu.flags
    simd = "avx512" if flags.avx512 else "avx2" if flags.avx2 else "neon" if flags.neon else "other"
    scale = speed.FLOPS_PER_CYCLE[simd] / speed.FLOPS_PER_CYCLE["avx512"]
    one = [r for r in rows if r["threads"] == 1 and r["model"] not in TINY]
    xs = np.array([r["inputs"]["bytes"] / scale for r in one])
    ys = np.array([1.0 / r["decode"]["meas"] - speed.CPU_TOKEN_OVERHEAD_S
                   - speed.CPU_LAYER_OVERHEAD_S * r["inputs"]["layers"] for r in one])
    rate = float(np.dot(xs, xs) / np.dot(xs, ys)) if one else None
    per_thread = speed.cpu_device(hardware, 1).flops / speed.CPU_FLOP_EFFICIENCY
    fx, fy = [], []
    for r in rows:
        weights_s = r["inputs"]["weights"] / (r["inputs"]["effective_bandwidth"]) / r["inputs"]["ubatch"]
        fx.append(r["inputs"]["flops"] / (per_thread * r["threads"]))
        fy.append(1.0 / r["prompt"]["meas"] - weights_s)
    flop_eff = float(np.dot(fx, fx) / np.dot(fx, fy))
    return {"cpu_core_rate_avx512": round(rate, -8) if rate else None, "decode_rows_used": len(one),
            "cpu_flop_efficiency": round(flop_eff, 3), "rows_used": len(rows),
            "overheads_held_s": {"token": speed.CPU_TOKEN_OVERHEAD_S, "layer": speed.CPU_LAYER_OVERHEAD_S}}


# model, threads, probe bytes/s, llama-server timings, the product's rate measurement
Measurement = tuple[str, int, int, dict[str, Any], KernelRates | None]


def measured(paths: dict[str, Path], args: argparse.Namespace, binary: Path,
             threads_list: list[int], hardware: HardwareProfile) -> Iterator[Measurement]:
    for name, path in paths.items():
        if args.models and name not in args.models:
            continue
        # what an install would measure for this model: its main types, models of its bytes (install/measure.py)
        inputs = speed.predict(model_profile(read_header(path)), LaunchSettings(ctx=CTX), hardware, 1).inputs
        for threads in threads_list:
            request = RateRequest(threads, types=main_types(inputs["weights_by_type"]["cpu"]),
                                  cpu_bytes=model_bytes(inputs["weights_bytes_per_token"]["cpu"]),
                                  shape=tuple(inputs["shape"]))
            bandwidth, timings_list, rates = measure(binary, path, threads, args.repeats, hardware.cpu.brand,
                                                     request)
            for timings in timings_list:
                yield name, threads, bandwidth, timings, rates


def replayed(path: Path) -> Iterator[Measurement]:
    """The measurements of an earlier output line (to see a change of the model's constants on the same runs)."""
    doc = json.loads(path.read_text(encoding="utf-8").strip().splitlines()[-1])
    for r in doc["rows"]:
        timings = {"prompt_n": r["prompt_tokens"], "predicted_per_second": r["decode"]["meas"],
                   "prompt_per_second": r["prompt"]["meas"]}
        yield r["model"], r["threads"], int(r["bandwidth_gbps"] * 1e9), timings, _replayed_rates(r.get("rates"))


def _replayed_rates(doc: dict[str, Any] | None) -> KernelRates | None:
    """A row's recorded rates (lines written before rates were measured have none: constants only)."""
    if not doc:
        return None
    rates = tuple(TypeRate(k, int(v[0]), int(v[1])) for k, v in doc.items() if k in speed.RATE_TYPES)
    return KernelRates("replayed", CPU_BRAND_REPLAYED, "", int(doc.get("millis") or 0),
                       (DeviceRates("cpu", int(doc["threads"]), rates),))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=None, help="thread counts (default 1 … cores)")
    parser.add_argument("--no-synthetic", action="store_true", help="only the real Gemma 3 270M")
    parser.add_argument("--repeats", type=int, default=3, help="runs per point; the median is kept (default 3)")
    parser.add_argument("--models", nargs="+", default=None, help="only these models (names as in the output)")
    parser.add_argument("--fit", action="store_true", help="also fit the CPU constants from these rows")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--busy-neighbour", action="store_true",
                        help="run everything beside one busy process pinned to the last CPU (a spinning Python)")
    parser.add_argument("--replay", type=Path, default=None,
                        help="no new runs: predict again for the measurements of an earlier output line")
    parser.add_argument("--published", action="store_true",
                        help="no runs: the model on the published hybrid runs that set CPU_BW_EFFICIENCY")
    args = parser.parse_args(argv)
    if args.published:
        print(json.dumps(published(), separators=(",", ":")))
        return 0
    binary = testbed.engine_dir() / "llama-server"
    hardware = probe_all(read_all(Path.home(), os.environ), created="bench", kit_version="bench")
    threads_list = args.threads or list(range(1, hardware.cpu.physical_cores + 1))
    with busy_neighbour(args.busy_neighbour):
        return _bench(args, binary, hardware, threads_list)


@contextlib.contextmanager
def busy_neighbour(wanted: bool) -> Iterator[None]:
    """One process spinning on the last CPU while the bench runs (the "busy neighbour" case), ended after it."""
    if not wanted:
        yield
        return
    cpu = (os.cpu_count() or 1) - 1
    code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(1.0)  # the load average and the scheduler see it before the first run
        yield
    finally:
        proc.kill()
        proc.wait()


def _bench(args: argparse.Namespace, binary: Path, hardware: HardwareProfile, threads_list: list[int]) -> int:
    load_before = [round(x, 2) for x in os.getloadavg()]
    rows = []
    paths = models(not args.no_synthetic)
    if args.replay:
        hardware = dataclasses.replace(hardware, cpu=dataclasses.replace(hardware.cpu, brand=CPU_BRAND_REPLAYED))
    for name, threads, bandwidth, timings, rates in (replayed(args.replay) if args.replay else
                                                     measured(paths, args, binary, threads_list, hardware)):
        if args.models and name not in args.models:
            continue
        r = row(name, model_profile(read_header(paths[name])), hardware, threads, bandwidth, timings, rates)
        rows.append(r)
        if args.verbose:
            d, p = r["decode"], r["prompt"]
            print(f"{name:20} t={threads} p={r['prompt_tokens']:4} bw={r['bandwidth_gbps']:5.1f} "
                  f"decode {d['pred']:7.1f} ({d['pred_constants']:7.1f}) vs {d['meas']:7.1f} "
                  f"({d['err']:+.0%}, constants {d['err_constants']:+.0%})  prompt {p['pred']:7.1f} vs "
                  f"{p['meas']:7.1f} ({p['err']:+.0%}, constants {p['err_constants']:+.0%})", file=sys.stderr)
    result: dict[str, Any] = {
        "bench": "speed", "engine": str(binary), "cpu": hardware.cpu.brand, "replayed": str(args.replay or ""),
        "busy_neighbour": args.busy_neighbour,
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()], "rows": rows,
        "max_abs_err": worst(rows),
    }
    if args.fit:
        result["fit"] = fit(rows, hardware)
    print(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
