"""A stranger on the install's port: a separate real process that answers as a healthy llama-server would.

Issue 24's attacker: while an install's server is down, any local program can listen on its port and answer
``/health`` (200, or 503 "Loading model" as llama-server does while it loads), ``/v1/models`` (listing whatever
alias is asked for) and ``/props``. It writes every request it receives — method, path and ``Authorization``
header — as one JSON line to a record file, so a test can prove the key never reached it (or that nothing did).

Run as a script: ``python stranger.py PORT RECORD [HEALTH_STATUS] [ALIAS]``; it prints ``ready`` once listening.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LOADING = b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}'


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record(self) -> None:
        line = json.dumps({"method": self.command, "path": self.path,
                           "authorization": self.headers.get("Authorization")})
        with open(self.server.record, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def _serve(self) -> None:
        self._record()
        if self.server.health != 200:
            self._answer(self.server.health, LOADING)
        elif self.path == "/health":
            self._answer(200, b'{"status":"ok"}')
        elif self.path.startswith("/v1/models"):
            self._answer(200, json.dumps({"object": "list", "data": [{"id": self.server.alias, "object": "model"}]})
                         .encode())
        elif self.path.startswith("/props"):
            self._answer(200, json.dumps({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1})
                         .encode())
        else:
            self._answer(200, b"{}")

    do_GET = _serve
    do_POST = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, record: str, health: int, alias: str) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.record, self.health, self.alias = record, health, alias


class Stranger:
    """The stranger as a child process: ``with Stranger(port, record) as s: s.pid, s.requests()``."""

    def __init__(self, port: int, record: Path, *, health: int = 200, alias: str = "tiny-chat") -> None:
        self.port, self.record, self.health, self.alias = port, record, health, alias
        self.proc: subprocess.Popen[str] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> Stranger:
        self.record.write_text("", encoding="utf-8")
        self.proc = subprocess.Popen([sys.executable, __file__, str(self.port), str(self.record), str(self.health),
                                      self.alias], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line == "ready", f"the stranger did not start: {line!r}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def requests(self) -> list[dict[str, Any]]:
        """Every request the stranger received, in order."""
        text = self.record.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(argv: list[str]) -> None:
    port, record = int(argv[0]), argv[1]
    health = int(argv[2]) if len(argv) > 2 else 200
    alias = argv[3] if len(argv) > 3 else "tiny-chat"
    server = _Server(port, record, health, alias)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print("ready", flush=True)
    server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main(sys.argv[1:])
