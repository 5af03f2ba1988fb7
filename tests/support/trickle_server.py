"""A plain static web server over a folder (how an intranet serves a bundle: nginx, IIS, ``python -m http.server``)
that can turn hostile on chosen paths: it trickles their header block or their body, a few bytes every few seconds.

Either way no socket read ever times out, and yet no answer ever completes: only a bound on the whole request ends
the client's wait. The loopback hub (``hub_faults``' ``trickle``) does the same to a hub's bodies; a served bundle
is no hub, so it gets this server. Headers matter separately: a client that only looks at the status (a probe)
never reads a body, but it does wait for the header block.
"""

from __future__ import annotations

import fnmatch
import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Trickle:
    """What to trickle: requests whose path matches ``glob`` get their ``part`` ("headers" or "body") sent
    ``step`` bytes every ``every`` seconds (the first ``lead`` bytes at once). ``hits`` counts them."""

    glob: str
    part: str = "body"
    step: int = 1
    every: float = 5.0
    lead: int = 0
    hits: int = 0


@dataclass
class _State:
    trickles: list[Trickle] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def claim(self, path: str) -> Trickle | None:
        with self.lock:
            for t in self.trickles:
                if fnmatch.fnmatchcase(path, t.glob):
                    t.hits += 1
                    return t
        return None


class _Handler(SimpleHTTPRequestHandler):
    state: _State

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        trickle = self.state.claim(self.path.split("?", 1)[0])
        if trickle is None:
            super().do_GET()
            return
        body = self._body()
        if body is None:
            return
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {len(body)}\r\n"
                "X-Padding: " + "x" * 4096 + "\r\n\r\n").encode()  # room to trickle before the block ends
        try:
            if trickle.part == "headers":
                self._slowly(head, trickle)
                self.wfile.write(body)
            else:
                self.wfile.write(head)
                self._slowly(body, trickle)
        except OSError:  # the client gave up: that is the point
            pass
        self.close_connection = True

    def _body(self) -> bytes | None:
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return None
        return path.read_bytes()

    def _slowly(self, data: bytes, trickle: Trickle) -> None:
        at = min(trickle.lead, len(data))
        self.wfile.write(data[:at])
        while at < len(data):
            self.wfile.flush()
            if self.state.stopping.wait(trickle.every):
                return
            self.wfile.write(data[at:at + trickle.step])
            at += trickle.step


@dataclass
class TrickleServer:
    """The running server: ``url`` is its base (``http://127.0.0.1:PORT``); ``trickle`` arms a path."""

    url: str
    root: Path
    _state: _State

    def trickle(self, glob: str, part: str = "body", *, step: int = 1, every: float = 5.0, lead: int = 0
                ) -> Trickle:
        if part not in ("headers", "body"):
            raise ValueError("part is 'headers' or 'body'")
        t = Trickle(glob, part, step, every, lead)
        with self._state.lock:
            self._state.trickles.append(t)
        return t


@contextmanager
def trickle_server(root: Path) -> Iterator[TrickleServer]:
    """Serve ``root`` on 127.0.0.1 until the block ends (trickling responses are woken and end then)."""
    state = _State()
    handler = functools.partial(type("Handler", (_Handler,), {"state": state}), directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield TrickleServer(f"http://127.0.0.1:{server.server_address[1]}", root, state)
    finally:
        state.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
