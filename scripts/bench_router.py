"""Which existing router to put in front of several llama-server installs (issue 28): measured side by side.

    python scripts/bench_router.py [--routers haproxy,nginx,litellm] [--clients 1,2,4,8] [--per-client 2]

Two members, each a real llama-server of the test bed with Gemma 3 270M (``-np 2``: two slots each, one thread) and
its own key, on this machine's loopback. In front of them, one router at a time, each configured for what a team
endpoint needs (least-busy routing by free slots, streams passed through, a member that fails before the first
token retried on another, health checks, the team's key checked and the member's key sent on):

- ``haproxy`` (Debian's package): ``balance leastconn``, ``retry-on conn-failure empty-response 503`` with
  ``option redispatch``, ``option httpchk GET /health``. (With ``maxconn 2`` per member, its slots, the requests
  queued on a member that died were answered 503 by HAProxy 2.6: 1,166 of 1,194 failed in one run; so no maxconn);
- ``nginx`` (Debian's package): ``least_conn``, ``proxy_buffering off``, ``proxy_next_upstream error timeout
  http_503``, passive health only (active checks are in the commercial nginx);
- ``litellm`` (PyPI's ``litellm[proxy]`` in a venv of its own, ``--litellm-venv``): two deployments of one model
  name, ``routing_strategy: least-busy``, ``num_retries``, cooldowns.

Per router, beside one member answering directly (``direct``): the router's resident memory and installed size;
aggregate tokens/s and P95 time to first token for 1, 2, 4 and 8 concurrent streaming clients; how a stream
arrives (the share of content events that came in a read of their own: 1.0 is passed through, a buffered stream
arrives in one piece); and, with 4 clients streaming, one member SIGKILLed: requests failed before and after their
first token, and the time from the kill to the last failure. One JSON line per router, then a summary line.
A benchmark: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from soak import percentile  # noqa: E402

from tests.support import testbed  # noqa: E402
from tests.support.llama import LlamaServer, free_port  # noqa: E402

TEAM_KEY = "sk-team-alice-0123456789"  # LiteLLM's master key must start with "sk-"
MEMBER_KEYS = ("member-one-key", "member-two-key")
MEMBER_ARGS = ["-c", "4096", "-np", "2", "-t", "1", "--no-jinja", "--chat-template", "gemma", "--cache-ram", "0"]
MAX_TOKENS = 48
PROMPT = "Write a short story about a lighthouse keeper and a storm."


@dataclass
class Result:
    ok: bool
    ttft_s: float | None
    tokens: int
    own_reads: int
    started: float
    ended: float
    error: str = ""


def stream_chat(url: str, key: str, timeout: float = 300) -> Result:
    """One streaming chat; counts content events and how many arrived in a read of their own."""
    started = time.monotonic()
    first = None
    tokens = own = 0
    try:
        with requests.post(f"{url}/v1/chat/completions", stream=True, timeout=timeout,
                           headers={"Authorization": f"Bearer {key}"},
                           json={"model": "team", "stream": True, "max_tokens": MAX_TOKENS, "temperature": 0.8,
                                 "messages": [{"role": "user", "content": PROMPT}]}) as resp:
            if resp.status_code != 200:
                return Result(False, None, 0, 0, started, time.monotonic(), f"HTTP {resp.status_code}")
            for chunk in resp.iter_content(chunk_size=None):
                events = [line for line in chunk.split(b"\n") if line.startswith(b"data: {")
                          and b'"content":"' in line]
                if events and first is None:
                    first = time.monotonic() - started
                tokens += len(events)
                own += 1 if len(events) == 1 else 0
    except requests.RequestException as exc:
        return Result(False, first, tokens, own, started, time.monotonic(), type(exc).__name__)
    ok = tokens > 0
    return Result(ok, first, tokens, own, started, time.monotonic(), "" if ok else "no tokens")


def load(url: str, key: str, clients: int, per_client: int) -> dict[str, Any]:
    results: list[Result] = []
    lock = threading.Lock()

    def client() -> None:
        for _ in range(per_client):
            r = stream_chat(url, key)
            with lock:
                results.append(r)

    start = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.monotonic() - start
    ok = [r for r in results if r.ok]
    ttfts = [r.ttft_s for r in ok if r.ttft_s is not None]
    tokens = sum(r.tokens for r in ok)
    return {"clients": clients, "requests": len(results), "failed": len(results) - len(ok),
            "tokens_per_s": round(tokens / wall, 1), "ttft_p50_s": _round(percentile(ttfts, 50)),
            "ttft_p95_s": _round(percentile(ttfts, 95)),
            "own_read_share": round(sum(r.own_reads for r in ok) / tokens, 3) if tokens else None}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def failover(url: str, key: str, victim: LlamaServer, seconds: float = 30.0, clients: int = 4) -> dict[str, Any]:
    """Clients stream without pause; one member is SIGKILLed a third of the way in."""
    results: list[Result] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            r = stream_chat(url, key, timeout=60)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for th in threads:
        th.start()
    time.sleep(seconds / 3)
    killed_at = time.monotonic()
    assert victim.proc is not None
    victim.proc.kill()
    time.sleep(seconds * 2 / 3)
    stop.set()
    for th in threads:
        th.join(timeout=120)
    failed = [r for r in results if not r.ok]
    after = [r for r in results if r.started >= killed_at]
    return {"requests": len(results), "failed": len(failed),
            "failed_before_first_token": sum(1 for r in failed if r.tokens == 0),
            "failed_mid_stream": sum(1 for r in failed if r.tokens > 0),
            "errors": sorted({r.error for r in failed}),
            "last_failure_after_kill_s": _round(max((r.ended - killed_at for r in failed), default=0.0)),
            "ok_after_kill": sum(1 for r in after if r.ok)}


# ----------------------------------------------------------------------------------------------------- routers


@dataclass
class Router:
    name: str
    port: int
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    installed_kib: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_mib(self) -> float:
        total = 0
        for proc in self.procs:
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(proc.pid)
                total += sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
        return round(total / 2**20, 1)


def _deb_kib(*packages: str) -> int | None:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Installed-Size}\n", *packages], capture_output=True, text=True,
                          check=False)
    return sum(int(x) for x in done.stdout.split()) if done.returncode == 0 else None


def _tree_kib(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) // 1024


def _haproxy(work: Path, members: list[str]) -> list[str]:
    servers = "\n".join(f"  server m{n} {m} check inter 1s fall 2 rise 2" for n, m in enumerate(members))
    cfg = work / "haproxy.cfg"
    cfg.write_text(f"""global
  maxconn 256
defaults
  mode http
  timeout connect 2s
  timeout client 600s
  timeout server 600s
  timeout queue 600s
  retries 2
  option redispatch 1
  retry-on conn-failure empty-response response-timeout 503
frontend team
  bind 127.0.0.1:{{port}}
  http-request deny deny_status 401 unless {{ req.hdr(authorization) -m str "Bearer {TEAM_KEY}" }}
  http-request set-header Authorization "Bearer {MEMBER_KEYS[0]}"
  default_backend members
backend members
  balance leastconn
  option httpchk GET /health
  http-check expect status 200
{servers}
""")
    return ["haproxy", "-db", "-f", str(cfg)]


def _nginx(work: Path, members: list[str]) -> list[str]:
    servers = "\n".join(f"    server {m} max_fails=1 fail_timeout=5s;" for m in members)
    cfg = work / "nginx.conf"
    cfg.write_text(f"""worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log;
events {{ worker_connections 256; }}
http {{
  access_log {work}/nginx-access.log;
  client_body_temp_path {work}/body; proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fcgi; uwsgi_temp_path {work}/uwsgi; scgi_temp_path {work}/scgi;
  upstream members {{
    least_conn;
{servers}
    keepalive 8;
  }}
  map $http_authorization $team_user {{ "Bearer {TEAM_KEY}" alice; default ""; }}
  server {{
    listen 127.0.0.1:{{port}};
    location / {{
      if ($team_user = "") {{ return 401; }}
      proxy_pass http://members;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer {MEMBER_KEYS[0]}";
      proxy_buffering off;
      proxy_read_timeout 600s;
      proxy_connect_timeout 2s;
      proxy_next_upstream error timeout http_503 non_idempotent;
    }}
  }}
}}
""")
    return ["nginx", "-c", str(cfg), "-p", str(work)]


def _litellm(work: Path, members: list[str]) -> list[str]:
    deployments = "".join(f"""  - model_name: team
    litellm_params:
      model: openai/gemma
      api_base: http://{m}/v1
      api_key: {MEMBER_KEYS[0]}
""" for m in members)
    cfg = work / "litellm.yaml"
    cfg.write_text(f"""model_list:
{deployments}router_settings:
  routing_strategy: least-busy
  num_retries: 2
  allowed_fails: 1
  cooldown_time: 5
general_settings:
  master_key: {TEAM_KEY}
""")
    return ["litellm", "--config", str(cfg), "--host", "127.0.0.1", "--port", "{port}", "--num_workers", "1"]


@contextlib.contextmanager
def router(name: str, members: list[str], litellm_venv: Path) -> Iterator[Router]:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix=f"router-{name}-") as tmp:
        work = Path(tmp)
        if name == "haproxy":
            argv, kib = _haproxy(work, members), _deb_kib("haproxy")
        elif name == "nginx":
            argv, kib = _nginx(work, members), _deb_kib("nginx", "nginx-common")
        else:
            argv = _litellm(work, members)
            argv[0] = str(litellm_venv / "bin" / "litellm")
            kib = _tree_kib(litellm_venv)
        for cfg in work.glob("*.*"):  # the port, once it is known
            cfg.write_text(cfg.read_text().replace("{port}", str(port)))
        argv = [a.replace("{port}", str(port)) for a in argv]
        log = open(work / "router.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        r = Router(name, port, [proc], kib)
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited: {(work / 'router.log').read_text()[-2000:]}")
                with contextlib.suppress(requests.RequestException):
                    requests.get(f"{r.url}/health", timeout=2)
                    break
                time.sleep(0.5)
            yield r
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
            if proc.poll() is None:
                proc.kill()
            log.close()
            if os.environ.get("BENCH_ROUTER_LOG"):  # the router's own log, to see why a request failed
                print((work / "router.log").read_text()[-6000:], file=sys.stderr)


@contextlib.contextmanager
def members() -> Iterator[list[LlamaServer]]:
    binary, model = testbed.engine_dir() / "llama-server", testbed.gemma_model()
    # Each member has its own key and also takes the one the router sends (HAProxy and nginx send one key for
    # every member; LiteLLM could send each its own).
    servers = [LlamaServer(binary, model, [*MEMBER_ARGS, "--api-key", f"{key},{MEMBER_KEYS[0]}"])
               for key in MEMBER_KEYS]
    try:
        for s in servers:
            s.start()
        yield servers
    finally:
        for s in servers:
            s.stop()


def run_one(name: str, clients: list[int], per_client: int, litellm_venv: Path) -> dict[str, Any]:
    with members() as servers:
        addresses = [f"127.0.0.1:{s.port}" for s in servers]
        if name == "direct":
            url = servers[0].base_url
            ladder = [load(url, MEMBER_KEYS[0], c, per_client) for c in clients]
            return {"router": name, "members": 1, "ladder": ladder}
        with router(name, addresses, litellm_venv) as r:
            denied = requests.get(f"{r.url}/v1/models", timeout=30).status_code
            ladder = [load(r.url, TEAM_KEY, c, per_client) for c in clients]
            mem, kib = r.rss_mib(), r.installed_kib
            fo = failover(r.url, TEAM_KEY, servers[0])
        return {"router": name, "members": 2, "rss_mib": mem, "installed_mib": round(kib / 1024, 1) if kib else None,
                "no_key_status": denied, "ladder": ladder, "failover": fo}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routers", default="haproxy,nginx,litellm")
    parser.add_argument("--clients", default="1,2,4,8")
    parser.add_argument("--per-client", type=int, default=2)
    parser.add_argument("--litellm-venv", type=Path, default=Path("/tmp/litellm-venv"))
    opts = parser.parse_args()
    clients = [int(c) for c in opts.clients.split(",")]
    lines = []
    for name in ["direct", *opts.routers.split(",")]:
        if name in ("haproxy", "nginx") and shutil.which(name) is None:
            line = {"router": name, "skipped": f"{name} is not installed (Debian: apt-get install {name})"}
        elif name == "litellm" and not (opts.litellm_venv / "bin" / "litellm").exists():
            line = {"router": name, "skipped": f"no litellm in {opts.litellm_venv} (pip install 'litellm[proxy]')"}
        else:
            line = run_one(name, clients, opts.per_client, opts.litellm_venv)
        print(json.dumps(line), flush=True)
        lines.append(line)
    summary = {}
    for line in lines:
        if "ladder" in line:
            top = line["ladder"][-1]
            summary[line["router"]] = {"tokens_per_s_at_max": top["tokens_per_s"], "ttft_p95_s": top["ttft_p95_s"],
                                       "rss_mib": line.get("rss_mib"),
                                       "failover_failed": line.get("failover", {}).get("failed")}
    print(json.dumps({"summary": summary}))


if __name__ == "__main__":
    main()
