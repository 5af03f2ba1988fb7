"""Time to first output and to the end, with no network and with Hugging Face black-holed, side by side.

    python scripts/bench_network.py [-n 3] [--before DIR]

Cases (the real CLI in a fresh interpreter; stdin closed, output piped, so what a log or a CI job sees):

- ``offline-install`` / ``offline-download``: only loopback (a user + network namespace, ``tests/support/offline.py``),
  ``install --yes --no-service`` and ``download qwen3.5-4b`` of the shipped catalog: both must fail (exit 4);
- ``blackholed-download``: Hugging Face's endpoint is a loopback port that accepts connections and never answers
  (packets dropped by a firewall look like this), ModelScope's is the loopback hub serving a 3 MiB model:
  ``download tiny`` with ``--source auto`` must succeed through ModelScope.
- ``online-install`` / ``blackholed-install``: ``install --yes`` with both hubs answering (the loopback hub), and
  with Hugging Face black-holed: how long the check table's network row (``network_row_s``, with whether each
  source answers) and the proposal (``proposal_s``, what precedes the question) take to appear.

``first_s`` is when the first byte of output arrived (stdout or stderr; ``first`` is its first line), ``end_s`` when
the process exited; ``last`` is the last line on stderr.
With ``--before DIR`` (a plain copy of another revision, e.g. ``git archive REV | tar -x -C DIR``), every run is done
once with that tree's ``bootstrap`` and once with this one's, interleaved. One JSON line: per tree and case, the
samples, the medians and the exit codes.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.app.test_download_command import FILES, REPO, catalog_toml  # noqa: E402
from tests.support.hub import LoopbackHub  # noqa: E402
from tests.support.offline import Offline, netns_available  # noqa: E402

SCRUB = ("HF_", "QWENKIT_", "MODELSCOPE_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
         "all_proxy", "TZ", "LANG", "LC_")


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run ``argv``; seconds to the first output byte and to the exit, the exit code and the last error line."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    first: list[float] = []
    said: list[str] = []
    chunks: dict[str, bytes] = {"out": b"", "err": b""}
    network_row: list[float] = []  # when the check table's network row was printed (the install's, before its question)
    proposal: list[float] = []  # when the proposal's last line ("install into") was: what precedes the question

    def pump(name: str, stream: Any) -> None:
        while data := stream.read1(4096):
            now = time.monotonic() - start
            if not first:
                first.append(now)
                said.append(data.decode("utf-8", "replace").strip().splitlines()[0][:120] if data.strip() else "")
            chunks[name] += data
            if not network_row and b"\nnetwork " in b"\n" + chunks[name]:
                network_row.append(now)
            if not proposal and b"install into" in chunks[name]:
                proposal.append(now)

    threads = [threading.Thread(target=pump, args=(n, s)) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for t in threads:
        t.start()
    rc = proc.wait(timeout=180)
    end = time.monotonic() - start
    for t in threads:
        t.join()
    err = chunks["err"].decode("utf-8", "replace").splitlines()
    last = next((ln for ln in reversed(err) if ln.strip()), "")
    row = next((ln for ln in (chunks["out"] + chunks["err"]).decode("utf-8", "replace").splitlines()
                if ln.startswith("network ")), "")
    return {"first_s": round(first[0], 2) if first else None, "end_s": round(end, 2), "rc": rc,
            "network_row_s": round(network_row[0], 2) if network_row else None,
            "proposal_s": round(proposal[0], 2) if proposal else None, "network_row": row[:160],
            "first": said[0] if said else "", "last": last[:200]}


def _median(values: Any) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def _env(code: Path, home: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    return {**base, "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1", "QWENKIT_HOME": str(home),
            "QWENKIT_LANG": "en", "NO_COLOR": "1", "TZ": "UTC", **extra}


def _cases(work: Path, hub: LoopbackHub, black_hole: str) -> dict[str, tuple[list[str], dict[str, str], bool]]:
    """name → (argv after ``-m bootstrap``, extra env, whether it runs in the empty network namespace)."""
    catalog = work / "catalog.toml"
    catalog.write_text(catalog_toml(), encoding="utf-8")
    hubs = {"QWENKIT_HF_ENDPOINT": black_hole, "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint,
            "QWENKIT_CATALOG": str(catalog), "NO_PROXY": "127.0.0.1,localhost"}
    cases = {"blackholed-download": (["download", "tiny"], hubs, False)}
    # The install up to its proposal (the shipped catalog; the hub does not hold that repo, so it then ends): with
    # both hubs answering, and with Hugging Face black-holed (the reachability probe waits its whole budget for it).
    install = ["install", "--yes", "--no-service", "--no-venv"]
    reachable = {"QWENKIT_HF_ENDPOINT": hub.endpoint, "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint,
                 "QWENKIT_ENGINE_URL": black_hole, "NO_PROXY": "127.0.0.1,localhost"}
    cases["online-install"] = (install, reachable, False)
    cases["blackholed-install"] = (install, {**reachable, "QWENKIT_HF_ENDPOINT": black_hole}, False)
    if netns_available():
        cases["offline-install"] = (["install", "--yes", "--no-service"], {}, True)
        cases["offline-download"] = (["download", "qwen3.5-4b"], {}, True)
    return cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=3, help="runs per case and tree")
    ap.add_argument("--before", type=Path, help="another revision's tree, run side by side")
    args = ap.parse_args()
    trees = {"this": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    work = Path(tempfile.mkdtemp(prefix="bench-network-"))
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {t: {} for t in trees}
    with LoopbackHub(work / "hub").start() as hub, socket.create_server(("127.0.0.1", 0), backlog=64) as hole:
        hub.create_repo(REPO, FILES)
        black_hole = f"http://127.0.0.1:{hole.getsockname()[1]}"
        cases = _cases(work, hub, black_hole)
        for i in range(args.n):
            for tree, code in trees.items():
                for name, (argv, extra, netns) in cases.items():
                    run_dir = work / f"{tree}-{name}-{i}"
                    run_dir.mkdir()
                    offline = Offline(run_dir, netns=netns)
                    cmd, env = offline.wrap([sys.executable, "-m", "bootstrap", *argv],
                                            _env(code, run_dir / "home", **extra))
                    samples[tree].setdefault(name, []).append(_timed(cmd, env, run_dir))  # not ROOT: -m puts cwd first
    result: dict[str, Any] = {"bench": "network", "runs": args.n, "netns": netns_available(), "trees": {}}
    for tree, by_case in samples.items():
        result["trees"][tree] = {
            name: {"first_s_median": statistics.median(s["first_s"] for s in runs if s["first_s"] is not None),
                   "end_s_median": statistics.median(s["end_s"] for s in runs),
                   "proposal_s_median": _median(s["proposal_s"] for s in runs),
                   "network_row_s_median": _median(s["network_row_s"] for s in runs),
                   "rcs": sorted({s["rc"] for s in runs}), "first": runs[-1]["first"], "last": runs[-1]["last"],
                   "network_row": runs[-1]["network_row"], "samples": runs}
            for name, runs in by_case.items()}
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
