"""``qwenkit logs -n N`` on large logs: the time to print every line grows with the log's size, not its square.

    python scripts/bench_logs.py [--sizes 8,16,32,64] [--before DIR]

For each size (MiB) a ``logs/server.log`` of short llama-server-like lines is written and ``qwenkit logs -n
1000000000`` (more lines than there are: the whole file) is run through the real CLI, output to a file
(``*_command_s``), and the backwards read alone timed in a process of its own (``*_read_s``). A linear read
doubles its time when the size doubles (``*_read_growth``: the time per MiB of the largest over the smallest, ~1);
the backwards read that prepended every 64 KiB block to what it had and counted it all again grew with the square
(61-106 s for 64 MiB, issue 41). ``--before DIR``: another checkout (e.g. ``git archive main``) timed on the same
files, side by side. One JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = b"0.00.302.813 I srv  log_server_r: done request: POST /v1/chat/completions 127.0.0.1 200\n"


def _time(checkout: Path, home: Path, out: Path, timeout: float) -> float | None:
    """Seconds of the whole command (its start included), output to ``out``; None past ``timeout``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    env.update({"QWENKIT_HOME": str(home), "PYTHONPATH": str(checkout), "QWENKIT_LANG": "en"})
    start = time.monotonic()
    with open(out, "wb") as sink:
        try:
            proc = subprocess.run([sys.executable, "-m", "bootstrap", "logs", "-n", "1000000000"], cwd=checkout,
                                  env=env, stdout=sink, stderr=subprocess.PIPE, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return None
    if proc.returncode != 0:
        raise SystemExit(f"logs failed in {checkout}: {proc.stderr.decode(errors='replace')[-500:]}")
    return time.monotonic() - start


_READ = ("import sys, time; from pathlib import Path; from bootstrap.app.commands.logs import last_lines; "
         "t = time.perf_counter(); n = len(last_lines(Path(sys.argv[1]), 10**9)); "
         "print(time.perf_counter() - t, n)")


def _read(checkout: Path, log: Path, timeout: float) -> float | None:
    """Seconds of ``last_lines`` alone (the backwards read), in a process of that checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    env["PYTHONPATH"] = str(checkout)
    try:
        proc = subprocess.run([sys.executable, "-c", _READ, str(log)], cwd=checkout, env=env, capture_output=True,
                              text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    seconds, size = proc.stdout.split()
    if int(size) != log.stat().st_size:
        raise SystemExit("the read is not the whole log")
    return float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="8,16,32,64")
    parser.add_argument("--before", type=Path)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    result: dict[str, object] = {"bench": "logs", "sizes_mib": sizes, "line_bytes": len(LINE)}
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as tmp:
        home = Path(tmp) / "home"
        (home / "logs").mkdir(parents=True)
        checkouts = {"after": ROOT, **({"before": args.before} if args.before is not None else {})}
        command: dict[str, list[float | None]] = {kind: [] for kind in checkouts}
        read: dict[str, list[float | None]] = {kind: [] for kind in checkouts}
        for mib in sizes:
            log = home / "logs" / "server.log"
            log.write_bytes(LINE * (mib * 2**20 // len(LINE)))
            out = Path(tmp) / "out.log"
            for kind, checkout in checkouts.items():
                command[kind].append(_time(checkout, home, out, args.timeout))
                if kind == "after" and out.read_bytes() != log.read_bytes():
                    raise SystemExit("the output is not the log byte for byte")
                read[kind].append(_read(checkout, log, args.timeout))
        for kind in checkouts:
            result[f"{kind}_command_s"] = [None if x is None else round(x, 2) for x in command[kind]]
            result[f"{kind}_read_s"] = [None if x is None else round(x, 3) for x in read[kind]]
            done = [(m, x) for m, x in zip(sizes, read[kind], strict=True) if x]
            if len(done) >= 2:  # seconds per MiB of the largest over the smallest: ~1 linear, ~size ratio square
                (m0, t0), (m1, t1) = done[0], done[-1]
                result[f"{kind}_read_growth"] = round((t1 / m1) / (t0 / m0), 2)
        if args.before is not None and command["before"][-1] and command["after"][-1]:
            result["before_over_after_command_largest"] = round(command["before"][-1] / command["after"][-1], 1)
    result["timeout_s"] = args.timeout
    print(json.dumps(result))


if __name__ == "__main__":
    main()
