"""``<home>/venv/examples/agent.py`` (issue 24): the report offers "an agent example (tools, streaming)", so it streams,
bounds each reply (``max_tokens``) and each request (a client timeout), and ends.

Real parts: the runtime venv built offline from the wheelhouse (the pinned OpenAI SDK), the test bed's llama-server
serving the real Gemma 3 270M with Jinja on (llama.cpp's Gemma template file: the server refuses ``tools`` without
Jinja, tests/e2e/test_browser.py), and between them a recording pass-through proxy on loopback that keeps each
request body and counts the server-sent events of each answer. Gemma 270M is a base model that may or may not call
the tool, so what is asserted is what the example promises: every request streams and carries the tools and
``max_tokens``, the answer arrives in many events and is printed, and the run ends with exit 0 inside its bounds.
The timeout is shown against a server that accepts the request and never answers.
"""

from __future__ import annotations

import http.server
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.core.templating import render_template
from bootstrap.detect.hardware import PythonInfo
from bootstrap.place.runtime_venv import ensure_venv
from tests.support import testbed
from tests.support.llama import LlamaServer
from tests.support.wheelhouse import kit_wheel

KEY = "sk-agent-example-test"
MAX_TOKENS = 48  # the example's 1024 take minutes for a base model on two shared cores; the bound is what counts
TIMEOUT_S = 3.0  # the example's 120 s, shortened for the stalled-server case


@dataclass
class Recorded:
    """What went through the proxy."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    content_types: list[str] = field(default_factory=list)
    events: list[int] = field(default_factory=list)  # "data:" lines per answer


class _Proxy(http.server.ThreadingHTTPServer):
    upstream: str
    record: Recorded


class _Handler(http.server.BaseHTTPRequestHandler):
    """POST passed through to the upstream server, the answer streamed back as it arrives."""

    server: _Proxy

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.record.bodies.append(json.loads(body))
        with requests.Session() as session:
            session.trust_env = False
            upstream = session.post(self.server.upstream + self.path, data=body, stream=True, timeout=300,
                                    headers={k: v for k, v in self.headers.items()
                                             if k.lower() in ("authorization", "content-type")})
            kind = upstream.headers.get("Content-Type", "")
            self.server.record.content_types.append(kind)
            self.send_response(upstream.status_code)
            self.send_header("Content-Type", kind)
            self.send_header("Connection", "close")
            self.end_headers()
            events = 0
            for line in upstream.iter_lines():
                events += line.startswith(b"data:")
                self.wfile.write(line + b"\n")
                self.wfile.flush()
            self.server.record.events.append(events)
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Path:
    """A runtime venv made offline from the wheelhouse, as an install makes it (the pinned OpenAI SDK)."""
    home = Home(tmp_path_factory.mktemp("agent") / "home")
    result = ensure_venv(home, python=PythonInfo(path=sys.executable, version=platform.python_version()),
                         endpoint="http://127.0.0.1:9/v1", api_key_file=home.api_key_file, model="qwen",
                         find_links=wheelhouse, kit_source=kit_wheel(wheelhouse))
    assert result.python is not None, result.skipped_reason
    return Path(result.python)


def example(tmp_path: Path, endpoint: str, key_file: Path, *, short_timeout: bool = False) -> Path:
    """The example as an install renders it, with its bounds shortened for the test (and checked to be there)."""
    text = render_template("agent.py.j2", endpoint=endpoint, api_key_file=str(key_file), model="qwen")
    changes = [("MAX_TOKENS = 1024", f"MAX_TOKENS = {MAX_TOKENS}")]
    if short_timeout:
        changes.append(("TIMEOUT_S = 120.0", f"TIMEOUT_S = {TIMEOUT_S}"))
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "agent.py"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    server = _Proxy(("127.0.0.1", 0), _Handler)
    server.record = Recorded()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("QWENKIT_", "OPENAI_"))}


def test_the_agent_example_streams_and_ends_within_its_bounds(venv_python: Path, llama_server: Path,
                                                               gemma_gguf: Path, proxy: _Proxy,
                                                               tmp_path: Path) -> None:
    key_file = tmp_path / "api-key"
    key_file.write_text(KEY + "\n", encoding="utf-8")
    template = testbed.engine_sources() / "models" / "templates" / "google-gemma-2-2b-it.jinja"
    args = ["--jinja", "--chat-template-file", str(template), "-c", "2048", "-t", "2", "--api-key-file",
            str(key_file)]
    with LlamaServer(llama_server, gemma_gguf, args) as server:
        proxy.upstream = server.base_url
        agent = example(tmp_path, f"http://127.0.0.1:{proxy.server_address[1]}/v1", key_file)
        started = time.monotonic()
        proc = subprocess.run([str(venv_python), str(agent)], capture_output=True, text=True, timeout=900,
                              env=_env(), check=False)
        elapsed = time.monotonic() - started
    print(json.dumps({"seconds": round(elapsed, 1), "requests": len(proxy.record.bodies),
                      "events": proxy.record.events, "stdout": proc.stdout[-400:]}, ensure_ascii=False))
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = proxy.record
    assert 1 <= len(record.bodies) <= 4  # MAX_ROUNDS replies with tools, then one without
    for body in record.bodies:
        assert body["stream"] is True and body["max_tokens"] == MAX_TOKENS
    assert record.bodies[0]["tools"][0]["function"]["name"] == "add"
    assert all(kind.startswith("text/event-stream") for kind in record.content_types)
    assert record.events[0] > 2  # the answer came in pieces, not as one body
    assert proc.stdout.strip()  # and was printed


def test_a_server_that_never_answers_ends_the_example_at_its_timeout(venv_python: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "api-key"
    key_file.write_text(KEY + "\n", encoding="utf-8")
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts (the kernel's backlog), never answers
        agent = example(tmp_path, f"http://127.0.0.1:{silent.getsockname()[1]}/v1", key_file, short_timeout=True)
        started = time.monotonic()
        proc = subprocess.run([str(venv_python), str(agent)], capture_output=True, text=True, timeout=120,
                              env=_env(), check=False)
        elapsed = time.monotonic() - started
    print(json.dumps({"seconds": round(elapsed, 1), "last": proc.stderr.strip().splitlines()[-1:]}))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == ["agent.py: APITimeoutError: Request timed out."]
    assert elapsed < 4 * TIMEOUT_S + 10  # one try and one retry (max_retries=1), each bounded
