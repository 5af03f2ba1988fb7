"""How coarsely prompt reading and streaming interleave: P95 inter-token gap vs prompt throughput per batch size.

    python scripts/bench_batch.py [--seconds 60] [--batches 2048/512,512/512,256/256,128/128] [--neighbour]

The test bed's llama-server and Gemma 3 270M, started as the plan starts it on this machine (``-c 32768 -np 4
-kvu``, one thread per core), once per ``-b/-ub`` pair. Per pair and per client count (1, 2, 4): one client sends
long prompts nobody sent before (about 1,500 tokens each) for ``--seconds``, the others stream short chats
(``scripts/soak.py``'s jobs). Reported per cell: prompt tokens read per second (all clients), P50/P95/P99 gap
between two streamed tokens. llama-server puts up to ``-b`` tokens of prompt into the same decode call as the
streams' next tokens, so a stream waits for that whole batch (``tools/server/server-context.cpp``
``update_slots``). ``--neighbour`` runs a busy process (one core spinning) beside it, as a user's other programs
do. One JSON line; a benchmark: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from soak import Client, Tally, percentile  # noqa: E402

from tests.support import testbed  # noqa: E402
from tests.support.llama import LlamaServer  # noqa: E402


def _spin(stop: Any) -> None:
    while not stop.is_set():
        sum(range(10000))


def cell(binary: Path, model: Path, batch: str, clients: int, seconds: float, threads: int) -> dict[str, Any]:
    b, ub = batch.split("/")
    args = ["-c", "32768", "-np", "4", "-kvu", "-fa", "on", "-t", str(threads), "-b", b, "-ub", ub,
            "--cache-ram", "0", "--jinja"]
    with LlamaServer(binary, model, args) as server:
        tally, stop = Tally(), threading.Event()
        workers = []
        for n in range(clients):
            client = Client(n, server.base_url, "none", tally, stop)
            jobs = ("long_prompt",) if n == 0 else ("stream",)
            workers.append(threading.Thread(target=client.run, args=(jobs,), daemon=True))
        start = time.monotonic()
        for w in workers:
            w.start()
        time.sleep(seconds)
        stop.set()
        for w in workers:
            w.join(timeout=300)
        took = time.monotonic() - start
    gaps = [g * 1000 for g in tally.gaps]
    return {"batch": batch, "clients": clients, "prompt_tps": round(tally.prompt_tokens / took, 1),
            "gaps": len(gaps), "gap_p50_ms": _r(percentile(gaps, 50)), "gap_p95_ms": _r(percentile(gaps, 95)),
            "gap_p99_ms": _r(percentile(gaps, 99)), "failed": len(tally.failed)}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--batches", default="2048/512,512/512,256/256,128/128")
    parser.add_argument("--clients", default="1,2,4")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--neighbour", action="store_true", help="a process spinning on one core beside it")
    opts = parser.parse_args()
    binary = testbed.engine_dir() / "llama-server"
    model = testbed.gemma_model()
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=_spin, args=(stop,), daemon=True) if opts.neighbour else None
    if spinner:
        spinner.start()
    cells = []
    load = []
    try:
        for batch in opts.batches.split(","):
            for clients in (int(c) for c in opts.clients.split(",")):
                cells.append(cell(binary, model, batch, clients, opts.seconds, opts.threads))
                load.append(os.getloadavg()[0])
                print(json.dumps(cells[-1]), file=sys.stderr, flush=True)
    finally:
        stop.set()
    print(json.dumps({"threads": opts.threads, "neighbour": opts.neighbour, "cpus": os.cpu_count(),
                      "load1_mean": round(sum(load) / len(load), 2), "cells": cells}), flush=True)


if __name__ == "__main__":
    main()
