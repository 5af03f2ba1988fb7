"""Predicted vs measured tokens/s on this CPU per test-bed model, thread count and context fill: one JSON line.

For every model (the real Gemma 3 270M and synthetic models large enough for bandwidth to dominate, written with
``tests/support/tiny_gguf.py`` into the test-bed cache) and every thread count, the RAM bandwidth probe runs first
with that thread count (side by side: other load on the machine hits both), then the test bed's real llama-server
(``-ngl 0``, flash attention, ``-t N``) answers a warm-up and one ``/completion`` per context fill with a fixed
token prompt, ``cache_prompt: false``, ``ignore_eos`` and fixed ``n_predict``; its ``timings``
(``prompt_per_second``, ``predicted_per_second``) are compared with ``bootstrap.plan.speed.predict``. Each point
runs ``--repeats`` times with a probe (1 s, median of 5 rounds) before each run, and the medians are compared:
on a shared machine, load then weighs on the probe and the server alike. ``--fit``
also solves the CPU constants of the speed model from these rows (least squares) and prints them. Output::

    {"bench": "speed", "engine": …, "load_before": […], "load_after": […], "rows": [{"model": …, "threads": n,
     "prompt_tokens": n, "bandwidth_gbps": …, "decode": {"pred": …, "meas": …, "err": …}, "prompt": {…}}, …],
     "max_abs_err": {"decode": …, "prompt": …}, "fit": {…}}

``--verbose`` prints one human line per row on stderr. ``--published`` runs nothing: it prints the model's
predictions for the published hybrid runs that set ``CPU_BW_EFFICIENCY`` (docs/speed.md), one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests

from bootstrap.detect.hardware import HardwareProfile
from bootstrap.detect.probes import probe_all, read_all
from bootstrap.detect.probes.bandwidth import read_bandwidth
from bootstrap.plan import speed
from bootstrap.plan.gguf_header import read_header
from bootstrap.plan.memory import LaunchSettings, ModelProfile, model_profile
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


def measure(binary: Path, model: Path, threads: int, repeats: int) -> tuple[int, list[dict[str, Any]]]:
    """(median bandwidth of the probe with ``threads``, median timings per prompt): probe and server alternate, so
    a burst of load elsewhere meets both."""
    args = ["-c", str(CTX), "-np", "1", "-fa", "on", "-t", str(threads), "-tb", str(threads), "-ngl", "0",
            "--fit", "off", "-b", "2048", "-ub", "512"]
    bandwidths: list[int] = []
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in PROMPTS}
    with LlamaServer(binary, model, args, ready_timeout=300) as server:
        completion(server, 16)  # warm-up: pages in the weights, first-run allocations
        for _ in range(repeats):
            for n in PROMPTS:
                reading = read_bandwidth(threads, copy_seconds=1.0, rounds=5, median=True)
                if reading is not None:
                    bandwidths.append(reading.bytes_per_s)
                runs[n].append(completion(server, n))
    if not bandwidths:
        raise SystemExit("bandwidth probe could not allocate its buffers")
    return int(statistics.median(bandwidths)), [typical(runs[n]) for n in PROMPTS]


def err(pred: float, meas: float) -> float:
    return round((pred - meas) / meas, 3) if meas > 0 else 0.0


def row(name: str, profile: ModelProfile, hardware: HardwareProfile, threads: int, bandwidth: int,
        timings: dict[str, Any]) -> dict[str, Any]:
    hw = dataclasses.replace(hardware, memory=dataclasses.replace(hardware.memory, bandwidth_bytes_per_s=bandwidth,
                                                                  bandwidth_threads=threads))
    n_prompt = int(timings["prompt_n"])
    pred = speed.predict(profile, LaunchSettings(ctx=CTX), hw, threads, context_fill=n_prompt + N_PREDICT // 2,
                         prompt_tokens=n_prompt)
    meas_d, meas_p = float(timings["predicted_per_second"]), float(timings["prompt_per_second"])
    inputs = pred.inputs
    return {"model": name, "threads": threads, "prompt_tokens": n_prompt,
            "bandwidth_gbps": round(bandwidth / 1e9, 2),
            "decode": {"pred": round(pred.decode_tps, 2), "meas": round(meas_d, 2),
                       "err": err(pred.decode_tps, meas_d)},
            "prompt": {"pred": round(pred.prompt_tps, 1), "meas": round(meas_p, 1),
                       "err": err(pred.prompt_tps, meas_p)},
            "inputs": {"bytes": inputs["decode_bytes_per_token"]["cpu"], "layers": inputs["layers"]["cpu"],
                       "flops": inputs["prompt_flops_per_token"], "ubatch": inputs["ubatch"],
                       "weights": inputs["weights_bytes_per_token"]["cpu"],
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


Measurement = tuple[str, int, int, dict[str, Any]]  # model, threads, probe bytes/s, llama-server timings


def measured(paths: dict[str, Path], args: argparse.Namespace, binary: Path,
             threads_list: list[int]) -> Iterator[Measurement]:
    for name, path in paths.items():
        if args.models and name not in args.models:
            continue
        for threads in threads_list:
            bandwidth, timings_list = measure(binary, path, threads, args.repeats)
            for timings in timings_list:
                yield name, threads, bandwidth, timings


def replayed(path: Path) -> Iterator[Measurement]:
    """The measurements of an earlier output line (to see a change of the model's constants on the same runs)."""
    doc = json.loads(path.read_text(encoding="utf-8").strip().splitlines()[-1])
    for r in doc["rows"]:
        timings = {"prompt_n": r["prompt_tokens"], "predicted_per_second": r["decode"]["meas"],
                   "prompt_per_second": r["prompt"]["meas"]}
        yield r["model"], r["threads"], int(r["bandwidth_gbps"] * 1e9), timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=None, help="thread counts (default 1 … cores)")
    parser.add_argument("--no-synthetic", action="store_true", help="only the real Gemma 3 270M")
    parser.add_argument("--repeats", type=int, default=3, help="runs per point; the median is kept (default 3)")
    parser.add_argument("--models", nargs="+", default=None, help="only these models (names as in the output)")
    parser.add_argument("--fit", action="store_true", help="also fit the CPU constants from these rows")
    parser.add_argument("--verbose", action="store_true")
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
    load_before = [round(x, 2) for x in os.getloadavg()]
    rows = []
    paths = models(not args.no_synthetic)
    for name, threads, bandwidth, timings in (replayed(args.replay) if args.replay else
                                              measured(paths, args, binary, threads_list)):
        if args.models and name not in args.models:
            continue
        r = row(name, model_profile(read_header(paths[name])), hardware, threads, bandwidth, timings)
        rows.append(r)
        if args.verbose:
            print(f"{name:20} t={threads} p={r['prompt_tokens']:4} bw={r['bandwidth_gbps']:5.1f} "
                  f"decode {r['decode']['pred']:7.1f} vs {r['decode']['meas']:7.1f} ({r['decode']['err']:+.0%})"
                  f"  prompt {r['prompt']['pred']:7.1f} vs {r['prompt']['meas']:7.1f} ({r['prompt']['err']:+.0%})",
                  file=sys.stderr)
    tiny = TINY
    big = [r for r in rows if r["model"] not in tiny]
    result: dict[str, Any] = {
        "bench": "speed", "engine": str(binary), "cpu": hardware.cpu.brand, "replayed": str(args.replay or ""),
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()], "rows": rows,
        "max_abs_err": {"decode": max((abs(r["decode"]["err"]) for r in big), default=None),
                        "prompt": max((abs(r["prompt"]["err"]) for r in rows), default=None),
                        "decode_tiny": max((abs(r["decode"]["err"]) for r in rows if r["model"] in tiny),
                                           default=None)},
    }
    if args.fit:
        result["fit"] = fit(rows, hardware)
    print(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
