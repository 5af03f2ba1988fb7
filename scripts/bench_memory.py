"""Predicted vs llama-server-reported memory over a grid of settings, per architecture: one JSON line.

Runs the test bed's real llama-server (CPU only, ``-lv 4 --fit off -ngl 0``) on the four tiny architectures and,
unless ``--no-gemma``, the real Gemma 3 270M file, at each grid point; compares every buffer with
``bootstrap.plan.memory.estimate``. Output (stdout, one line)::

    {"bench": "memory", "engine": …, "points": N, "archs": {arch: {"points": n,
     "max_rel_err": {"weights": …, "kv": …, "recurrent": …, "compute": …, "output_mib_abs": …, "repack": …},
     "rows": [{"point": label, "pred_mib": {…}, "real_mib": {…}}, …]}}}

``--verbose`` also prints one human line per point on stderr. GPU buffers are not measurable here.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bootstrap.plan.gguf_header import read_header
from bootstrap.plan.memory import LaunchSettings, MemoryEstimate, estimate, model_profile
from tests.support import testbed
from tests.support.memory_grid import Reported, label, run_point
from tests.support.tiny_gguf import ARCHES, write_model

MIB = 1024 * 1024

TINY_GRID = (
    LaunchSettings(ctx=2048),
    LaunchSettings(ctx=4096, ubatch=128),
    LaunchSettings(ctx=8192, ubatch=1024, batch=1024),
    LaunchSettings(ctx=16384, ubatch=2048),
    LaunchSettings(ctx=4096, flash_attn=False),
    LaunchSettings(ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0"),
    LaunchSettings(ctx=8192, cache_type_k="q4_0", cache_type_v="q4_0"),
    LaunchSettings(ctx=4096, cache_type_k="f32", cache_type_v="bf16"),
    LaunchSettings(ctx=8192, n_parallel=4),
    LaunchSettings(ctx=8192, n_parallel=3, kv_unified=False),
    LaunchSettings(ctx=1000, ubatch=256),
)
GEMMA_GRID = (
    LaunchSettings(ctx=4096, cpu_repack=True),
    LaunchSettings(ctx=32768, ubatch=2048),
    LaunchSettings(ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0"),
    LaunchSettings(ctx=16384, n_parallel=4, kv_unified=False),
    LaunchSettings(ctx=8192, flash_attn=False),
    LaunchSettings(ctx=8192, ubatch=256, n_parallel=2),
)


def components(pred: MemoryEstimate, real: Reported) -> dict[str, tuple[int, int]]:
    """(predicted, reported) bytes per component of a CPU-only run."""
    return {
        "weights": (pred.weights_cpu, real.weights_mapped),
        "kv": (pred.kv_cpu, real.kv_total),
        "recurrent": (pred.recurrent_cpu, real.recurrent),
        "compute": (pred.compute_cpu, sum(real.compute.values())),
        "output": (pred.output, sum(real.output.values())),
        "repack": (pred.repack, real.repack),
    }


def rel_err(pred: int, real: int) -> float:
    """Relative error; two values below llama.cpp's print resolution (0.01 MiB) count as equal."""
    if abs(pred - real) <= 0.006 * MIB:
        return 0.0
    return abs(pred - real) / max(real, 1)


def run(binary: Path, models: dict[str, Path], grids: dict[str, tuple[LaunchSettings, ...]],
        verbose: bool) -> dict[str, object]:
    archs: dict[str, object] = {}
    points = 0
    for name, model in models.items():
        profile = model_profile(read_header(model))
        worst: dict[str, float] = {}
        rows = []
        for point in grids[name]:
            real = run_point(binary, model, point)
            pred = estimate(profile, point)
            comp = components(pred, real)
            points += 1
            for key, (p, r) in comp.items():
                if key == "output":  # bytes too small to print as MiB for tiny vocabularies: absolute error
                    worst["output_mib_abs"] = max(worst.get("output_mib_abs", 0.0), abs(p - r) / MIB)
                else:
                    worst[key] = max(worst.get(key, 0.0), rel_err(p, r))
            rows.append({"point": label(point),
                         "pred_mib": {k: round(p / MIB, 2) for k, (p, _) in comp.items()},
                         "real_mib": {k: round(r / MIB, 2) for k, (_, r) in comp.items()}})
            if verbose:
                cells = "  ".join(f"{k} {p / MIB:7.2f}/{r / MIB:7.2f}" for k, (p, r) in comp.items())
                print(f"{name:10s} {label(point):34s} {cells}", file=sys.stderr)
        archs[name] = {"points": len(rows), "max_rel_err": {k: round(v, 4) for k, v in worst.items()},
                       "rows": rows}
    return {"bench": "memory", "engine": str(binary), "points": points, "archs": archs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-gemma", action="store_true", help="tiny models only (no 253 MB model)")
    parser.add_argument("--verbose", action="store_true", help="one line per point on stderr")
    args = parser.parse_args(argv)
    binary = testbed.engine_dir() / "llama-server"
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        models = {arch: write_model(arch, Path(tmp) / f"tiny-{arch}.gguf") for arch in ARCHES}
        grids = {arch: TINY_GRID for arch in ARCHES}
        if not args.no_gemma:
            models["gemma3-270m"] = testbed.gemma_model()
            grids["gemma3-270m"] = GEMMA_GRID
        result = run(binary, models, grids, args.verbose)
    print(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
