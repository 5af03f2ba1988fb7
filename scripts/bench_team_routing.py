"""What routing by model costs the team gateway (issue 41): nginx balancing blindly vs nginx with its njs script.

    python scripts/bench_team_routing.py [--requests 200]

One member (the test bed's llama-server with a tiny generated model, one thread, a key of its own) on a free
loopback port; in front of it, the kit's gateway (``bootstrap.team.gateway``) rendered twice from the same record:
``plain`` (no njs module: every request goes to the members as it comes, what the gateway did before) and ``njs``
(the routing script reads each body's ``"model"`` and hands the request to that model's upstream). The arms take
turns, request by request, so load on this shared machine falls on both alike. Each request is a ``POST /tokenize``
naming the model (the member answers it in well under a millisecond: what is timed is the path), padded with an
ignored field to 1 KiB, 1 MiB and 8 MiB (an image in base64 is that large). Also timed: the member directly.

One JSON line: per body size, the median and P95 milliseconds of each path and ``njs_over_plain_ms`` (the median
difference: what reading and parsing the body costs); the gateway worker's resident memory after the run, per arm;
the njs module's installed size. Every process it starts is stopped at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from soak import percentile  # noqa: E402

from bootstrap.core.home import Home  # noqa: E402
from bootstrap.team.config import Member, ServedModel, Team  # noqa: E402
from bootstrap.team.gateway import Gateway, _free_port, find_nginx, running_pid, stop_gateway  # noqa: E402
from tests.support import testbed  # noqa: E402
from tests.support.tiny_gguf import write_model  # noqa: E402

KEY = "bench-member-key-0123456789"
USER = "sk-team-bench-user-key-0123456789abcdef"
SIZES = {"1KiB": 1 << 10, "1MiB": 1 << 20, "8MiB": 8 << 20}


def _wait(port: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"nothing answers on port {port}")


def _post_ms(port: int, body: bytes, key: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    began = time.perf_counter()
    conn.request("POST", "/tokenize", body=body, headers={"Authorization": f"Bearer {key}",
                                                          "Content-Type": "application/json"})
    reply = conn.getresponse()
    reply.read()
    elapsed = (time.perf_counter() - began) * 1000
    conn.close()
    if reply.status != 200:
        raise RuntimeError(f"HTTP {reply.status} on port {port}")
    return elapsed


def _gateway(work: Path, name: str, team: Team, njs: bool) -> tuple[Home, int]:
    nginx = find_nginx()
    home = Home(work / name)
    gateway = Gateway(home, nginx if njs else replace(nginx, njs=None))
    gateway.write_config(team)
    gateway.start()
    _wait(team.port)
    return home, team.port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per path and body size")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-team-routing-"))
    model = write_model("llama", work / "tiny.gguf")
    port = _free_port()
    member = subprocess.Popen([str(testbed.engine_dir() / "llama-server"), "-m", str(model), "--alias", "tiny",
                               "--host", "127.0.0.1", "--port", str(port), "--api-key", KEY, "-t", "1", "-c", "256"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    homes: list[Home] = []
    try:
        _wait(port)
        record = Member("m1", f"http://127.0.0.1:{port}", KEY, 1, (ServedModel("tiny", 1),))
        paths: dict[str, tuple[int, str]] = {"direct": (port, KEY)}
        for arm, njs in (("plain", False), ("njs", True)):
            home, gw_port = _gateway(work, arm, Team(port=_free_port(), members=[record], users={"bench": USER}),
                                     njs)
            homes.append(home)
            paths[arm] = (gw_port, USER)
        result: dict[str, object] = {"bench": "team_routing", "requests": args.requests}
        for label, size in SIZES.items():
            doc = {"model": "tiny", "content": "hello", "pad": ""}
            doc["pad"] = "x" * (size - len(json.dumps(doc)))
            body = json.dumps(doc).encode()
            times: dict[str, list[float]] = {name: [] for name in paths}
            for _ in range(args.requests):
                for name, (target, key) in paths.items():
                    times[name].append(_post_ms(target, body, key))
            result[label] = {name: {"p50_ms": round(percentile(t, 50), 3), "p95_ms": round(percentile(t, 95), 3)}
                             for name, t in times.items()}
            result[label]["njs_over_plain_ms"] = round(percentile(times["njs"], 50) - percentile(times["plain"], 50),
                                                       3)
        result["worker_rss_kib"] = {arm: sum(c.memory_info().rss for c in psutil.Process(running_pid(h)).children())
                                    // 1024 for arm, h in zip(("plain", "njs"), homes, strict=True)}
        size = subprocess.run(["dpkg-query", "-W", "-f", "${Installed-Size}", "libnginx-mod-http-js"],
                              capture_output=True, text=True, check=False).stdout.strip()
        result["njs_installed_kib"] = int(size) if size.isdigit() else None
        print(json.dumps(result))
    finally:
        for home in homes:
            stop_gateway(home)
        member.terminate()
        member.wait(10)


if __name__ == "__main__":
    main()
