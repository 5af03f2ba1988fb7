"""What a rerun of ``qwenkit install`` with nothing changed costs, side by side with its neighbours (one JSON line).

    python scripts/bench_rerun.py [-n 5]

On the loopback hub serving the engine release and the real Gemma 3 270M GGUF (253 MB), it installs once
(``--no-venv``, a free port), then times N interleaved runs each (after one untimed warm-up), so machine load hits
all alike:

- ``noop``: ``qwenkit install --yes --no-service --no-venv``: records checked (stat, no byte read, no request);
- ``verify``: the same with ``--verify``: every file hashed again and the pipeline run (what a no-op avoids);
- ``status``: ``qwenkit status``, a baseline CLI call that also reads ``state.json`` and asks ``/health``;
- ``import_floor``: ``python -c "import bootstrap.app.cli"``: the interpreter and import cost no CLI call can beat.

With ``--before DIR`` (another checkout of this repository, e.g. ``git worktree add /tmp/before REV``), the no-op
rerun also runs with that checkout's code, interleaved with this one's, and both are run under
``python -X importtime``: ``import_us`` is the sum of every module's own import time (microseconds, median), and
``kit_import_us`` the share of the kit's own modules; ``after_vs_before_*`` are this checkout over that one.

Then N no-op reruns in this process (``installer.install``), timed without the interpreter start, with
``sha256_file`` counted (calls and bytes) and the hub's request log cleared before: a no-op must hash nothing and
ask nothing. ``noop_vs_verify_ratio`` is noop wall over verify wall. The server is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from demo import demo_source  # noqa: E402

from bootstrap.core.home import Home  # noqa: E402
from bootstrap.fetch import download  # noqa: E402
from bootstrap.install import fetch_plan, installer  # noqa: E402
from bootstrap.record.state import load_state  # noqa: E402
from bootstrap.register.managers import FallbackManager  # noqa: E402
from tests.support import testbed  # noqa: E402
from tests.support.install_bed import InstallBed  # noqa: E402
from tests.support.llama import free_port  # noqa: E402

NOOP = ("install", "--yes", "--no-service", "--no-venv")


def _run(cmd: Sequence[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, str]:
    """Wall seconds and stderr of one run; it must succeed (timing a failure measures nothing)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL, check=False)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"bench_rerun: {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return took, proc.stderr


def timed(cmd: Sequence[str], env: dict[str, str]) -> float:
    return _run(cmd, env)[0]


def import_times(stderr: str) -> tuple[int, int]:
    """From ``-X importtime`` lines (``import time: self [us] | cumulative | name``): every module's own time
    summed, and the kit's (``bootstrap``…) share."""
    total = kit = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = (part.strip() for part in line[len("import time:"):].split("|"))
        total += int(own)
        if name.split(".")[0] == "bootstrap":
            kit += int(own)
    return total, kit


def before_after(bed: InstallBed, before: Path, runs: int) -> dict[str, float | int]:
    """The no-op rerun with this checkout's code and with ``before``'s, interleaved, under ``-X importtime``."""
    trees = {"after": ROOT, "before": before.resolve()}
    samples: dict[str, dict[str, list[float]]] = {k: {"wall": [], "import": [], "kit": []} for k in trees}
    for _ in range(runs + 1):  # the first round warms the page cache and .pyc files; not counted
        for name, tree in trees.items():
            env = {**bed.env(), "PYTHONPATH": str(tree)}
            took, err = _run([sys.executable, "-X", "importtime", "-m", "bootstrap", *NOOP], env, cwd=tree)
            total, kit = import_times(err)
            for key, value in (("wall", took), ("import", total), ("kit", kit)):
                samples[name][key].append(value)
    med = {name: {k: statistics.median(v[1:]) for k, v in s.items()} for name, s in samples.items()}
    return {
        "before_noop_wall_median_s": round(med["before"]["wall"], 3),
        "after_noop_wall_median_s": round(med["after"]["wall"], 3),
        "before_import_us": int(med["before"]["import"]), "after_import_us": int(med["after"]["import"]),
        "before_kit_import_us": int(med["before"]["kit"]), "after_kit_import_us": int(med["after"]["kit"]),
        "after_vs_before_import_ratio": round(med["after"]["import"] / med["before"]["import"], 3),
        "after_vs_before_wall_ratio": round(med["after"]["wall"] / med["before"]["wall"], 3),
    }


class HashCounter:
    """Wraps ``sha256_file`` where the installer looks it up, counting calls and the bytes they read."""

    def __init__(self) -> None:
        self.calls = 0
        self.bytes = 0
        self._saved: list[tuple[object, Callable[[Path], str]]] = []

    def __enter__(self) -> HashCounter:
        for module in (fetch_plan, download):
            original = module.sha256_file
            self._saved.append((module, original))
            module.sha256_file = self._wrap(original)  # type: ignore[assignment]
        return self

    def _wrap(self, original: Callable[[Path], str]) -> Callable[[Path], str]:
        def counted(path: Path, *args: object, **kwargs: object) -> str:
            self.calls += 1
            self.bytes += Path(path).stat().st_size
            return original(path, *args, **kwargs)  # type: ignore[call-arg]
        return counted

    def __exit__(self, *exc: object) -> None:
        for module, original in self._saved:
            module.sha256_file = original  # type: ignore[attr-defined]


def in_process_noop(bed: InstallBed, port: int, runs: int) -> dict[str, float | int]:
    """N no-op reruns in this process: work time without the interpreter start, hashing and hub requests."""
    os.environ.clear()
    os.environ.update(bed.env())
    request = installer.InstallRequest(service=False, venv=False, port=port)
    installer.install(bed.home, request)  # warm-up: lazy imports, page cache
    bed.hub.clear_log()
    seconds: list[float] = []
    with HashCounter() as counter:
        for _ in range(runs):
            start = time.perf_counter()
            outcome = installer.install(bed.home, request)
            seconds.append(time.perf_counter() - start)
            if outcome.kind != "unchanged":
                sys.exit(f"bench_rerun: the in-process rerun was {outcome.kind!r}, not a no-op")
    return {"noop_work_median_s": round(statistics.median(seconds), 4), "noop_hashed_bytes": counter.bytes,
            "noop_hash_calls": counter.calls, "noop_hub_requests": len(bed.hub.requests())}


def measure(bed: InstallBed, runs: int, before: Path | None = None) -> dict[str, float | int]:
    env = bed.env()
    port = free_port()
    timed([*bed.command(), *NOOP, "--port", str(port)], env)  # the first install (downloads, not counted)
    state = load_state(bed.home)
    if state is None or state.server.port != port:
        sys.exit("bench_rerun: the first install recorded no state")
    cli = bed.command()
    commands = {
        "noop": [*cli, *NOOP],
        "verify": [*cli, *NOOP, "--verify"],
        "status": [*cli, "status"],
        "import_floor": [sys.executable, "-c", "import bootstrap.app.cli"],
    }
    for cmd in commands.values():
        timed(cmd, env)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            samples[name].append(timed(cmd, env))
    wall = {name: statistics.median(values) for name, values in samples.items()}
    bed.hub.clear_log()
    timed(commands["noop"], env)
    cli_requests = len(bed.hub.requests())
    compared = before_after(bed, before, runs) if before is not None else {}
    work = in_process_noop(bed, port, runs)
    return {**compared,
        "noop_wall_median_s": round(wall["noop"], 3),
        "noop_work_median_s": work["noop_work_median_s"],
        "verify_wall_median_s": round(wall["verify"], 3),
        "status_wall_median_s": round(wall["status"], 3),
        "import_floor_median_s": round(wall["import_floor"], 3),
        "noop_vs_verify_ratio": round(wall["noop"] / wall["verify"], 3),
        "noop_vs_status_ratio": round(wall["noop"] / wall["status"], 3),
        "noop_hashed_bytes": work["noop_hashed_bytes"],
        "noop_hash_calls": work["noop_hash_calls"],
        "noop_hub_requests": work["noop_hub_requests"] + cli_requests,
        "model_bytes": testbed.GEMMA_SIZE,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=5, help="timed runs per command (default 5)")
    parser.add_argument("--before", type=Path, default=None,
                        help="another checkout: compare its no-op rerun (wall, -X importtime) with this one's")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rerun-") as tmp, demo_source(Path(tmp), wheels=None) as bed:
        try:
            result = measure(bed, max(1, opts.runs), opts.before)
        finally:
            FallbackManager(Home(bed.home.root)).stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
