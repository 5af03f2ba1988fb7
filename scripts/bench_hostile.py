"""Hostile sources (issue 24): how each run of ``qwenkit download`` ends, how long it takes, and its peak memory.

    python scripts/bench_hostile.py [--before DIR] [--defaults] [--kill S] [--case NAME ...]

The cases are ``tests/support/hostile_sources.py``'s (a trickled body or listing, a gzip bomb, malformed
listings), each run as a user runs it (``python -m bootstrap download tiny --source …``, a fresh home) against the
loopback hub with that one fault armed. By default the bounds are shrunk as the tests shrink them
(``QWENKIT_RATE_WINDOW=2``, ``QWENKIT_META_DEADLINE=3``); ``--defaults`` runs with the shipped values instead.
A run still going after ``--kill`` seconds is killed and reported with ``rc: null``.

With ``--before DIR`` (a plain copy of another revision, e.g. ``git archive REV | tar -x -C DIR``) every case is run
with that tree's ``bootstrap`` too. One JSON line: per tree and case, the exit code, the ``error:`` line (or the last
line said), seconds to exit, and the peak RSS in MiB (``getrusage`` of that child alone).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.hostile_sources import (  # noqa: E402
    BY_NAME,
    CASES,
    FAST_BOUNDS,
    FILE,
    MODEL,
    REPO,
    arm,
    catalog_toml,
    cli_env,
    matches,
    run_cli,
)
from tests.support.hub import LoopbackHub  # noqa: E402


def _one(work: Path, code: Path, name: str, bounds: dict[str, str], kill: float) -> dict[str, Any]:
    case = BY_NAME[name]
    with LoopbackHub(work / "hub") as hub:
        hub.create_repo(REPO, {FILE: MODEL})
        catalog = work / "catalog.toml"
        catalog.write_text(catalog_toml(), encoding="utf-8")
        arm(hub, case)
        run = run_cli(["download", "tiny", "--source", case.source], cli_env(hub, work / "home", catalog, code,
                                                                              **bounds), kill, code)
    return {"rc": run.rc, "line": run.first_line[:200], "seconds": round(run.seconds, 2),
            "peak_rss_mib": round(run.max_rss_kib / 1024, 1), "as_expected": matches(case, run)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="another revision's tree, run side by side")
    ap.add_argument("--defaults", action="store_true", help="the shipped bounds, not the tests' shrunk ones")
    ap.add_argument("--kill", type=float, default=90.0, help="seconds before a run counts as hanging")
    ap.add_argument("--case", action="append", choices=sorted(BY_NAME), help="only these cases")
    args = ap.parse_args()
    trees = {"this": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    bounds = {} if args.defaults else dict(FAST_BOUNDS)
    names = args.case or [c.name for c in CASES]
    result: dict[str, Any] = {"bench": "hostile", "bounds": bounds or "defaults", "kill_s": args.kill,
                              "trees": {t: {} for t in trees}}
    for name in names:
        for tree, code in trees.items():
            with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
                result["trees"][tree][name] = _one(Path(tmp), code, name, bounds, args.kill)
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
