"""The team endpoint over "machines" on this one (issue 28), measured: one member directly vs two behind the gateway.

    python scripts/bench_team.py [--clients 1,2,4,8] [--seconds 20] [--no-rpc | --only-rpc]

Hosts are network namespaces on one bridge (tests/support/lan.py): ``m1`` and ``m2`` each run the test bed's
llama-server with Gemma 3 270M (two slots, one thread, a key of its own) on their LAN address; ``gateway`` runs the
kit's ``qwenkit team`` with nginx; ``client`` runs ``tests/support/stream_clients.py`` (48-token streamed answers).

Lines (one JSON document each):
- ``direct`` and ``gateway``: per client count, aggregate tokens/s over the window, P50/P95 time to first token,
  failed requests; ``ratio_tok_s`` is gateway over direct at each count;
- ``failover``: four clients through the gateway, ``m2`` SIGKILLed 6 s in: requests failed before their answer
  began (what the gateway must retry elsewhere) and after (streams cut with their member), and
  ``first_token_after_kill_s`` (from the kill to the first token of a request begun after it);
- ``rpc`` (unless ``--no-rpc``): one client, 48 tokens, Gemma on ``m1`` alone vs ``m1`` as the head with
  ``m2``'s ``ggml-rpc-server`` holding every layer (``--rpc``, ``-ngl 99``), and holding the last half of them
  (``-ngl 10`` of 19: what ``install --rpc`` plans for a head that holds half the model): tokens/s and the ratios
  to local. ``--only-rpc`` runs this line alone.

Caveat printed with the figures: every "machine" shares this VM's cores, so two members do not bring a second
PC's compute; the figures compare the paths, not a real office.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from soak import percentile  # noqa: E402

from tests.support import lan, testbed  # noqa: E402
from tests.support.team_bed import (  # noqa: E402
    PORT,
    kit,
    member_url,
    records,
    start_gateway,
    start_member,
    stream,
    wait_ready,
)

KEYS = {"m1": "member-one-key-0123456789", "m2": "member-two-key-0123456789"}
MAX_TOKENS = 48
RPC_PORT = 50052
HALF_LAYERS = 10  # of Gemma 3 270M's 18 blocks and its output layer (-ngl counts 19)
SINGLE_SLOT = ("-c", "2048", "-np", "1", "-t", "1", "--no-jinja", "--chat-template", "gemma", "--cache-ram", "0")


def _summary(done: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    ok = [r for r in done if r["error"] is None]
    firsts = [r["first"] for r in ok if r["first"] is not None]
    p50, p95 = percentile(firsts, 50), percentile(firsts, 95)
    errors = Counter(str(r["error"]) for r in done if r["error"] is not None)
    return {"requests": len(done), "failed": len(done) - len(ok), "errors": dict(errors),
            "tok_s": round(sum(r["tokens"] for r in ok) / seconds, 1),
            "ttft_p50_s": None if p50 is None else round(p50, 3), "ttft_p95_s": None if p95 is None else round(p95, 3)}


def _levels(client: lan.Host, url: str, key: str, counts: list[int], seconds: float) -> dict[str, Any]:
    return {str(n): _summary(records(stream(client, url, key, n, seconds, MAX_TOKENS)), seconds) for n in counts}


def _failover(client: lan.Host, url: str, key: str, victim: Any) -> dict[str, Any]:
    run = stream(client, url, key, 4, 20, MAX_TOKENS)
    time.sleep(6)
    victim.send_signal(signal.SIGKILL)
    kill_at = 6.0  # the clients' own clock started with the program, about when stream() returned
    done = records(run)
    after = sorted(r["start"] + r["first"] for r in done if r["start"] >= kill_at and r["first"] is not None)
    return {"requests": len(done),
            # Before the answer began (no status, or an error status): what a gateway can and must retry elsewhere.
            "failed_before_answer": sum(1 for r in done if r["error"] and r["status"] != 200),
            # After the member had begun its answer (200 sent): a stream cut when its member died.
            "failed_mid_stream": sum(1 for r in done if r["error"] and r["status"] == 200),
            "errors": dict(Counter(str(r["error"]) for r in done if r["error"] is not None)),
            "first_token_after_kill_s": round(after[0] - kill_at, 3) if after else None}


def _rpc(net: lan.Lan, binary: Path, model: Path, work: Path, seconds: float) -> dict[str, Any]:
    head, worker, client = net.hosts["m1"], net.hosts["m2"], net.hosts["client"]
    rpc_server = binary.parent / testbed.RPC_TARGET
    if not rpc_server.is_file():
        return {"skipped": f"no {testbed.RPC_TARGET} in the test bed's engine"}
    figures: dict[str, Any] = {}
    rpc = ("--rpc", f"{worker.address}:{RPC_PORT}")
    for label, extra in (("local", ()), ("head_plus_worker", (*rpc, "-ngl", "99")),
                         ("half_on_worker", (*rpc, "-ngl", str(HALF_LAYERS)))):
        procs = []
        if extra:
            with (work / "rpc.log").open("ab") as sink:
                procs.append(worker.popen([str(rpc_server), "-H", worker.address, "-p", str(RPC_PORT), "-t", "1"],
                                          stdout=sink, stderr=subprocess.STDOUT))
            time.sleep(1)
        args = (*SINGLE_SLOT, *extra)
        procs.append(start_member(head, binary, model, KEYS["m1"], work / f"head-{label}.log", args))
        wait_ready(client, f"{member_url(head)}/health", timeout=300)
        done = records(stream(client, f"{member_url(head)}/v1", KEYS["m1"], 1, seconds, MAX_TOKENS))
        figures[label] = _summary(done, seconds)
        for proc in reversed(procs):
            proc.kill()
            proc.wait(10)
    local = figures["local"]["tok_s"]
    figures["ratio_tok_s"] = round(figures["head_plus_worker"]["tok_s"] / local, 2) if local else None
    figures["ratio_half_tok_s"] = round(figures["half_on_worker"]["tok_s"] / local, 2) if local else None
    return figures


def _only_rpc(seconds: float) -> int:
    binary, model = testbed.engine_dir() / "llama-server", testbed.gemma_model()
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp, lan.lan("m1", "m2", "client") as net:
        print(json.dumps({"bench": "team", "rpc": _rpc(net, binary, model, Path(tmp), seconds)}), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="1,2,4,8")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--no-rpc", action="store_true")
    parser.add_argument("--only-rpc", action="store_true")
    args = parser.parse_args()
    if args.only_rpc:
        return _only_rpc(args.seconds)
    counts = [int(n) for n in args.clients.split(",")]
    binary, model = testbed.engine_dir() / "llama-server", testbed.gemma_model()
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp, lan.lan("m1", "m2", "gateway", "client") as net:
        work = Path(tmp)
        m1, m2, gw, client = (net.hosts[n] for n in ("m1", "m2", "gateway", "client"))
        procs = {n: start_member(net.hosts[n], binary, model, KEYS[n], work / f"{n}.log") for n in KEYS}
        for n in KEYS:
            wait_ready(client, f"{member_url(net.hosts[n])}/health")
        direct = _levels(client, f"{member_url(m1)}/v1", KEYS["m1"], counts, args.seconds)
        home = work / "gateway-home"
        url, key = start_gateway(gw, home, {"m1": (m1, KEYS["m1"]), "m2": (m2, KEYS["m2"])}, work)
        gateway = _levels(client, url, key, counts, args.seconds)
        ratios = {n: round(gateway[n]["tok_s"] / direct[n]["tok_s"], 2) if direct[n]["tok_s"] else None
                  for n in direct}
        print(json.dumps({"bench": "team", "path": "direct", "members": 1, "levels": direct}), flush=True)
        print(json.dumps({"bench": "team", "path": "gateway", "members": 2, "levels": gateway,
                          "ratio_tok_s": ratios}), flush=True)
        print(json.dumps({"bench": "team", "failover": _failover(client, url, key, procs["m2"])}), flush=True)
        kit(gw, home, "team", "stop")
        procs["m1"].kill()
        procs["m1"].wait(10)
        if not args.no_rpc:
            print(json.dumps({"bench": "team", "rpc": _rpc(net, binary, model, work, args.seconds)}), flush=True)
    print(json.dumps({"bench": "team", "note": "every host shares this VM's cores; member port "
                      f"{PORT}, {MAX_TOKENS}-token answers"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
