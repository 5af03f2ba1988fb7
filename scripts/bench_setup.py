"""Size and start time of the frozen setup, side by side with the source checkout (one JSON line).

    python scripts/bench_setup.py [--exe PATH] [-n 5]
    python scripts/bench_setup.py --windows [-n 5]

Without ``--exe`` it builds a onefile setup into a temporary folder first (``build_installer.build``). Then, in one
run and interleaved so machine load hits all alike, it times N runs each of ``<exe> --version``,
``<exe> selfcheck`` and ``python -m bootstrap --version`` from this checkout. A onefile build unpacks itself to a
``_MEI*`` folder on every start, which is what the first two pay; the targets are ≤ 35 MB and ≤ 1 s.

``--windows`` builds ``QwenClientKit-Setup-windows-x64.exe`` with the test bed's Windows CPython under Wine
(tests/support/windows_python.py) and times the same two commands under Wine beside that CPython running the
checkout's ``--version``: Wine's own start cost is in all three, so the ratio is the one to read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one run (it must succeed: timing a failure would measure nothing)."""
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, timeout=120, cwd=ROOT, env=env)
    return time.perf_counter() - start


def measure(exe: Path, runs: int, commands: dict[str, list[str]] | None = None,
            env: dict[str, str] | None = None) -> dict[str, float | int]:
    commands = commands or {
        "start": [str(exe), "--version"],
        "selfcheck": [str(exe), "selfcheck"],
        "python_start": [sys.executable, "-m", "bootstrap", "--version"],
    }
    for cmd in commands.values():  # warm the page cache and the file system once; not counted
        timed(cmd, env)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            samples[name].append(timed(cmd, env))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    size = exe.stat().st_size
    return {
        "size_bytes": size,
        "size_mb": round(size / 1e6, 2),
        "start_median_s": round(medians["start"], 3),
        "selfcheck_median_s": round(medians["selfcheck"], 3),
        "python_start_median_s": round(medians["python_start"], 3),
        "ratio": round(medians["start"] / medians["python_start"], 2),
        "runs": runs,
    }


def measure_windows(runs: int) -> dict[str, float | int]:
    """Build the Windows setup under Wine and time it there (a prefix of its own, removed afterwards)."""
    sys.path.insert(0, str(ROOT))
    from tests.support import wine
    from tests.support.windows_python import build_setup_exe, windows_python

    python = windows_python()
    if python is None:
        sys.exit(f"needs {', '.join(wine.missing_tools())} (scripts/setup_env.sh installs them)")
    with tempfile.TemporaryDirectory(prefix="bench-setup-win-") as tmp:
        prefix = wine.make_prefix(Path(tmp) / "prefix")
        start = time.perf_counter()
        exe = build_setup_exe(python, ROOT, Path(tmp) / "out", prefix)
        build_s = time.perf_counter() - start
        here = str(wine.windows_path(ROOT))
        cli = (f"import runpy, sys; sys.path.insert(0, {here!r}); sys.argv[1:] = ['--version']; "
               "runpy.run_module('bootstrap', run_name='__main__')")
        commands = {
            "start": ["wine", str(exe), "--version"],
            "selfcheck": ["wine", str(exe), "selfcheck"],
            "python_start": ["wine", str(python), "-c", cli],
        }
        result = measure(exe, runs, commands, wine.wine_env(prefix))
        subprocess.run(["wineserver", "-k"], env=wine.wine_env(prefix), capture_output=True, timeout=60)
    return {"exe": exe.name, "build_s": round(build_s, 1), **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", type=Path, help="an existing build (default: build one into a temporary folder)")
    parser.add_argument("-n", "--runs", type=int, default=5, help="timed runs per command (default 5)")
    parser.add_argument("--windows", action="store_true", help="the Windows setup, built and run under Wine")
    opts = parser.parse_args()
    if opts.windows:
        print(json.dumps(measure_windows(max(1, opts.runs))))
        return
    if opts.exe:
        print(json.dumps(measure(opts.exe.resolve(), max(1, opts.runs))))
        return
    sys.path.insert(0, str(ROOT))
    from build_installer import build

    with tempfile.TemporaryDirectory(prefix="bench-setup-") as tmp:
        exe = build(dist=Path(tmp) / "dist", work=Path(tmp) / "work")
        print(json.dumps(measure(exe, max(1, opts.runs))))


if __name__ == "__main__":
    main()
