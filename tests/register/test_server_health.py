"""``check_health``: one look at an install's server, answered by real sockets on 127.0.0.1.

The states a server really goes through (ok, loading, auth refused, another model) are checked against the test
bed's llama-server; the ones a healthy llama-server will not produce on demand (a 503 while loading, a broken
``/v1/models`` answer, a hang) against a small HTTP server that answers as llama-server does, through
``ask_server`` (the HTTP half). ``check_health`` itself asks the OS first who holds the port: to it, that small
server is a stranger (it is this Python process, not the home's engine), which is named and gets nothing.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bootstrap.core.console import t
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.server_health import HEALTH_STATES, Health, ask_server, check_health
from tests.support.llama import LlamaServer

KEY = "sk-local-0123456789"
ALIAS = "qwen3.6-35b-a3b"


def spec_for(tmp_path: Path, port: int, *, alias: str = ALIAS, host: str = "127.0.0.1",
             server: Path | None = None) -> LaunchSpec:
    """A launch spec whose only parts ``check_health`` reads are the address, the alias and the engine (``server``:
    the binary whose process counts as this install's server)."""
    engine = tmp_path / "engine"
    return LaunchSpec(home=tmp_path, system="Linux", engine_dir=engine, server=server or engine / "llama-server",
                      model=tmp_path / "m.gguf", mmproj=None, args=(), alias=alias,
                      api_key_file=tmp_path / "secrets" / "api-key", host=host, port=port)


@dataclass
class Script:
    """What the stand-in answers; tests change it between calls. ``seen`` records (path, Authorization)."""

    health: int = 200
    models: int | None = None  # None: 200 when the key matches, else 401 (llama-server's rule)
    body: bytes | None = None  # the /v1/models body; None: llama-server's shape listing ``ids``
    ids: tuple[str, ...] = (ALIAS,)
    hang: threading.Event | None = None  # set: /health waits on it (a server that accepted and froze)
    seen: list[tuple[str, str | None]] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: _StandIn

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        script = self.server.script
        script.seen.append((self.path, self.headers.get("Authorization")))
        if self.path == "/health":
            if script.hang is not None:
                script.hang.wait(10)
            if script.health == 503:
                self._answer(503, b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}')
            else:
                self._answer(script.health, b'{"status":"ok"}')
        elif self.path == "/v1/models":
            status = script.models
            if status is None:
                status = 200 if self.headers.get("Authorization") == f"Bearer {KEY}" else 401
            if status != 200:
                self._answer(status, b'{"error":{"code":401,"message":"Invalid API Key"}}')
                return
            body = script.body
            if body is None:
                body = json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in script.ids]}
                                  ).encode()
            self._answer(200, body)
        else:
            self._answer(404, b'{"error":"not found"}')


class _StandIn(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that gave up (the frozen-server test) closes its socket: nothing to report; anything else is."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@pytest.fixture
def stand_in() -> Iterator[tuple[Script, int]]:
    """A llama-server-like HTTP server on a free loopback port, and the script it follows."""
    script = Script()
    server = _StandIn(script)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield script, server.server_address[1]
    finally:
        if script.hang is not None:
            script.hang.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ok_sends_the_key_only_where_it_is_needed(stand_in: tuple[Script, int], tmp_path: Path) -> None:
    """Healthy and listing the alias is "ok"; ``/health`` is public and gets no key, ``/v1/models`` gets it."""
    script, port = stand_in
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("ok", "", (ALIAS,))
    assert script.seen == [("/health", None), ("/v1/models", f"Bearer {KEY}")]


def test_loading_is_a_503_on_health(stand_in: tuple[Script, int], tmp_path: Path) -> None:
    """llama-server answers 503 while it loads the model: "loading", and the key is not tried yet."""
    script, port = stand_in
    script.health = 503
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("loading", "503")
    assert [path for path, _ in script.seen] == ["/health"]


@pytest.mark.parametrize("models", [401, 403])
def test_a_refused_key_is_auth(stand_in: tuple[Script, int], tmp_path: Path, models: int) -> None:
    """The server is up but refuses the key on record (a key file replaced by hand): "auth", not "down"."""
    script, port = stand_in
    script.models = models
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("auth", f"HTTP {models}")


def test_a_wrong_key_is_auth(stand_in: tuple[Script, int], tmp_path: Path) -> None:
    _, port = stand_in
    assert ask_server(spec_for(tmp_path, port), "sk-wrong").state == "auth"


def test_another_model_is_no_model_and_lists_what_is_served(stand_in: tuple[Script, int], tmp_path: Path) -> None:
    """Something else answers on our port (another llama-server): "no_model", naming what it serves."""
    script, port = stand_in
    script.ids = ("gemma-3-270m", "other")
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("no_model", "gemma-3-270m, other",
                                                                 ("gemma-3-270m", "other"))
    script.ids = ()
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("no_model", "", ())


@pytest.mark.parametrize("ask", [ask_server, check_health])
def test_nothing_listening_is_down(tmp_path: Path, ask: object) -> None:
    health = ask(spec_for(tmp_path, closed_port()), KEY)  # type: ignore[operator]
    assert (health.state, health.detail) == ("down", t("health.down_refused"))  # in the UI language


@pytest.mark.parametrize(("where", "status"), [("health", 500), ("health", 404), ("models", 500)])
def test_other_statuses_are_down_with_the_status(stand_in: tuple[Script, int], tmp_path: Path, where: str,
                                                 status: int) -> None:
    script, port = stand_in
    setattr(script, where, status)
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("down", f"HTTP {status}")


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'"text"'])
def test_a_broken_models_answer_is_down(stand_in: tuple[Script, int], tmp_path: Path, body: bytes) -> None:
    """A 200 that is not llama-server's object (a proxy's page, another program) is "down", never a crash."""
    script, port = stand_in
    script.body = body
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("down", "bad /v1/models answer")


def test_entries_that_are_not_objects_are_skipped(stand_in: tuple[Script, int], tmp_path: Path) -> None:
    script, port = stand_in
    script.body = json.dumps({"data": ["x", None, 7, {"id": ALIAS}]}).encode()
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("ok", "", (ALIAS,))


@pytest.mark.parametrize("data", [None, 5])
def test_a_models_answer_whose_data_is_not_a_list_is_down(stand_in: tuple[Script, int], tmp_path: Path,
                                                          data: object) -> None:
    """``{"data": null}`` from something on our port must read as "down" like any other broken answer; today
    ``check_health`` catches only ValueError/AttributeError, so iterating ``None`` raises TypeError out of
    ``qwenkit status`` (exit 1, a traceback under --debug)."""
    script, port = stand_in
    script.body = json.dumps({"object": "list", "data": data}).encode()
    assert ask_server(spec_for(tmp_path, port), KEY) == Health("down", "bad /v1/models answer")


def test_a_frozen_server_is_down_after_the_timeout(stand_in: tuple[Script, int], tmp_path: Path) -> None:
    """A server that accepts and never answers costs ``timeout``, then reads as "down" (status never hangs)."""
    script, port = stand_in
    script.hang = threading.Event()
    health = ask_server(spec_for(tmp_path, port), KEY, timeout=0.3)
    assert (health.state, health.detail) == ("down", t("health.down_silent", seconds="0.3"))


def test_proxy_variables_are_ignored(stand_in: tuple[Script, int], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A corporate proxy set for the hubs must not receive the call to our own server."""
    _, port = stand_in
    dead_proxy = f"http://127.0.0.1:{closed_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, dead_proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert ask_server(spec_for(tmp_path, port), KEY).state == "ok"


def test_a_wildcard_bind_is_checked_through_loopback(stand_in: tuple[Script, int], tmp_path: Path) -> None:
    """``--host 0.0.0.0`` is reached on 127.0.0.1: the installer's own check does not need the LAN address."""
    _, port = stand_in
    assert ask_server(spec_for(tmp_path, port, host="0.0.0.0"), KEY).state == "ok"


def test_a_stand_in_on_the_port_is_a_stranger_and_gets_nothing(stand_in: tuple[Script, int],
                                                               tmp_path: Path) -> None:
    """The stand-in answers exactly as a healthy llama-server would, but the OS says the socket belongs to this
    Python process, not to the home's engine: "stranger", named by PID, and not one request reaches it."""
    script, port = stand_in
    health = check_health(spec_for(tmp_path, port), KEY)
    assert health.state == "stranger" and health.holder is not None
    assert health.holder.pid == os.getpid() and health.detail.startswith(f"port {port} is held by PID {os.getpid()}")
    assert script.seen == []


def test_the_real_llama_server(llama_server: Path, tiny_models: dict[str, Path], tmp_path: Path) -> None:
    """The test bed's llama-server with an API key, as this install's engine: ok with the key, auth without it,
    no_model for another alias, down once stopped; to a spec naming another engine it is a stranger. Every state the
    function returns is one of HEALTH_STATES."""
    seen = []
    with LlamaServer(llama_server, tiny_models["llama"], ["-c", "256", "-np", "1", "-t", "1", "--alias", ALIAS],
                     api_key=KEY) as server:
        spec = spec_for(tmp_path, server.port, server=llama_server)
        seen.append(check_health(spec, KEY))
        assert (seen[-1].state, seen[-1].models) == ("ok", (ALIAS,))
        assert seen[-1].holder is not None and seen[-1].holder.ours
        seen.append(check_health(spec, "sk-wrong"))
        assert (seen[-1].state, seen[-1].detail) == ("auth", "HTTP 401")
        seen.append(check_health(spec_for(tmp_path, server.port, alias="other", server=llama_server), KEY))
        assert seen[-1].state == "no_model" and seen[-1].models == (ALIAS,)
        seen.append(check_health(spec_for(tmp_path, server.port), KEY))  # another home's engine: not ours
        assert seen[-1].state == "stranger" and "llama-server" in seen[-1].detail
    seen.append(check_health(spec, KEY))
    assert seen[-1].state == "down"
    assert {h.state for h in seen} <= set(HEALTH_STATES)
