"""The team endpoint's bed on the LAN of network namespaces (tests/support/lan.py): members, the gateway, clients.

Shared by the e2e tests (tests/e2e/test_team_gateway.py, test_team_routing.py) and the bench (scripts/bench_team.py):
each member is the test bed's real llama-server bound to its host's LAN address with a key of its own, serving one
model or several (router mode, ``start_router_member``); the gateway host runs the kit's ``qwenkit team`` commands;
the client host runs ``stream_clients.py`` or single requests (``call``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support import lan

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "tests" / "support" / "stream_clients.py"
PORT = 8080
GATEWAY_PORT = 8090
# Two slots, one thread each: two members share this machine's two cores.
MEMBER_ARGS = ("-c", "2048", "-np", "2", "-t", "1", "--no-jinja", "--chat-template", "gemma", "--cache-ram", "0")


def kit(host: lan.Host, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``qwenkit ARGS`` run on ``host`` (this checkout's package, English messages)."""
    env = {**os.environ, "QWENKIT_HOME": str(home), "QWENKIT_LANG": "en"}
    return host.run([sys.executable, "-m", "bootstrap", *args], check=False, text=True, env=env, cwd=ROOT,
                    timeout=120)


def start_member(host: lan.Host, binary: Path, model: Path, key: str, log: Path,
                 args: tuple[str, ...] = MEMBER_ARGS) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return host.popen([str(binary), "-m", str(model), "--host", host.address, "--port", str(PORT),
                           "--api-key", key, *args], stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def start_router_member(host: lan.Host, binary: Path, sections: dict[str, dict[str, str]], key: str, log: Path,
                        work: Path) -> subprocess.Popen[bytes]:
    """A member serving several models (llama-server's router mode, ``--models-preset``): ``sections`` maps each
    model's name to its preset lines (llama.cpp ``tools/server/README.md`` "Model presets")."""
    preset = work / f"{host.name}-models.ini"
    lines = ["version = 1"]
    for name, items in sections.items():
        lines += ["", f"[{name}]", *(f"{flag} = {value}" for flag, value in items.items())]
    preset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with log.open("ab") as sink:
        return host.popen([str(binary), "--models-preset", str(preset), "--host", host.address, "--port", str(PORT),
                           "--api-key", key], stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


_CALL = """
import json, sys, urllib.error, urllib.request as u
method, url, key, body = sys.argv[1:5]
headers = {"Content-Type": "application/json"}
if key != "none":
    headers["Authorization"] = "Bearer " + key
request = u.Request(url, data=body.encode() if body else None, method=method, headers=headers)
try:
    reply = u.build_opener(u.ProxyHandler({})).open(request, timeout=120)
    status, text = reply.status, reply.read().decode("utf-8", "replace")
except urllib.error.HTTPError as exc:
    status, text = exc.code, exc.read().decode("utf-8", "replace")
print(json.dumps({"status": status, "text": text}))
"""


def call(client: lan.Host, method: str, url: str, key: str, body: dict[str, Any] | None = None) -> tuple[int, str]:
    """One request from ``client`` (``key`` "none": no Authorization header); the status and the body's text."""
    done = client.run([sys.executable, "-I", "-c", _CALL, method, url, key, json.dumps(body) if body else ""],
                      text=True, timeout=180)
    answer = json.loads(done.stdout)
    return int(answer["status"]), str(answer["text"])


def wait_ready(client: lan.Host, url: str, timeout: float = 120,
               server: subprocess.Popen[Any] | None = None) -> None:
    """Until ``url`` answers 200 from ``client`` (a member's ``/health``); ``ServerExited`` as soon as ``server``
    (the process behind it) has ended."""
    probe = "import sys, urllib.request as u; u.build_opener(u.ProxyHandler({})).open(sys.argv[1], timeout=3)"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            raise ServerExited(f"the server behind {url} exited with status {server.returncode}")
        if client.run([sys.executable, "-I", "-c", probe, url], check=False).returncode == 0:
            return
        time.sleep(0.5)
    raise TimeoutError(f"{url} did not become ready")


class ServerExited(RuntimeError):
    """The server a wait was for has ended."""


def member_url(host: lan.Host) -> str:
    return f"http://{host.address}:{PORT}"


def start_gateway(gateway: lan.Host, home: Path, members: dict[str, tuple[lan.Host, str]],
                  work: Path) -> tuple[str, str]:
    """Add ``members`` (name → host, key) and one user, start the gateway on ``gateway``'s address; the endpoint
    and the user's key."""
    for name, (host, key) in members.items():
        key_file = work / f"{name}-api-key"
        key_file.write_text(key + "\n")
        added = kit(gateway, home, "team", "add-member", member_url(host), "--key-file", str(key_file), "--name", name)
        if added.returncode != 0:
            raise RuntimeError(added.stderr)
    user = kit(gateway, home, "team", "add-user", "alice")
    started = kit(gateway, home, "team", "start", "--host", gateway.address, "--port", str(GATEWAY_PORT))
    if user.returncode != 0 or started.returncode != 0:
        raise RuntimeError(user.stderr + started.stderr)
    return f"http://{gateway.address}:{GATEWAY_PORT}/v1", user.stdout.strip()


def stream(client: lan.Host, url: str, key: str, clients: int, seconds: float,
           max_tokens: int = 32) -> subprocess.Popen[str]:
    """``clients`` streaming chat clients on ``client`` for ``seconds`` (see ``stream_clients.py``)."""
    return client.popen([sys.executable, str(CLIENTS), url, key, "--clients", str(clients), "--seconds",
                         str(seconds), "--max-tokens", str(max_tokens)], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)


def records(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """The clients' JSON lines, once they are done."""
    out, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(err)
    return [json.loads(line) for line in out.splitlines() if line.strip()]
