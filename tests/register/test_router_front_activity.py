"""The front's count of requests per model, which ``qwenkit ps`` reads for busy, idle for and unloads in.

The front's own bookkeeping, so the upstream here is a loopback HTTP server that holds its answer until the test
lets it go (a request in flight, on demand); the path through the real router is in tests/e2e/test_loaded_models.py.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from bootstrap.register.router_front import ACTIVITY_PATH, _Front, body_model

KEY = "k-123"


class _Held(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    release = threading.Event()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        _Held.release.wait(30)
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def front() -> Iterator[str]:
    _Held.release.clear()
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Held)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    server = _Front(("127.0.0.1", 0), socket.AF_INET, "default-model", upstream.server_address[1], KEY)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        _Held.release.set()
        server.shutdown()
        server.server_close()
        upstream.shutdown()
        upstream.server_close()


def _activity(url: str, key: str | None = KEY) -> requests.Response:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    with requests.Session() as session:
        session.trust_env = False
        return session.get(url + ACTIVITY_PATH, headers=headers, timeout=10)


def _post(url: str, body: dict[str, Any]) -> int:
    with requests.Session() as session:
        session.trust_env = False
        return session.post(url + "/v1/chat/completions", json=body, timeout=30,
                            headers={"Authorization": f"Bearer {KEY}"}).status_code


def test_ps_command_figures_count_requests_in_flight_per_model_and_when_the_last_ended(front: str) -> None:
    empty = _activity(front).json()
    assert empty["models"] == {} and empty["started"] <= time.time()
    results: list[int] = []
    threads = [threading.Thread(target=lambda b=body: results.append(_post(front, b)))  # type: ignore[misc]
               for body in ({"model": "a", "messages": []}, {"model": "a", "messages": []}, {"messages": []})]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        models = _activity(front).json()["models"]
        if models.get("a", {}).get("busy") == 2 and models.get("default-model", {}).get("busy") == 1:
            break
        time.sleep(0.05)
    assert models["a"] == {"busy": 2, "last_end": None}  # a request naming no model is the default's
    assert models["default-model"]["busy"] == 1
    before = time.time()
    _Held.release.set()
    for thread in threads:
        thread.join(30)
    assert results == [200, 200, 200]
    done = _activity(front).json()["models"]
    assert done["a"]["busy"] == 0 and done["a"]["last_end"] >= before
    assert done["default-model"]["busy"] == 0


def test_ps_command_figures_want_the_key(front: str) -> None:
    assert _activity(front, key=None).status_code == 401
    assert _activity(front, key="wrong").status_code == 401
    assert json.loads(_activity(front).text)["models"] == {}


def test_ps_command_figures_count_only_a_named_model() -> None:
    assert body_model(b'{"model": "x", "messages": []}') == "x"
    assert body_model(b'{"model": ""}') is None
    assert body_model(b'[1]') is None
    assert body_model(b"not json") is None
