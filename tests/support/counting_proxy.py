"""A counting pass-through proxy on 127.0.0.1: every request a client sends reaches the real server unchanged and
its answer comes back as the server streams it, and each exchange is recorded (method, path, status, whether it
carried the key, request size, time to the answer's first byte, and the request body).

The agent-client tests point a client at the proxy instead of the server, so "every request the client sent was
answered 2xx with the key, none 4xx/5xx" is counted from what crossed the wire, whatever the client prints.
"""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

MAX_ANSWER = 4 << 20
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
               "transfer-encoding", "upgrade", "host", "content-length"}


@dataclass
class Exchange:
    method: str
    path: str
    agent: str  # the User-Agent: the client's requests told apart from the kit's own checks (python-requests)
    status: int
    with_key: bool
    request_bytes: int
    first_byte_s: float
    total_s: float
    body: bytes
    answer: bytes  # the first MAX_ANSWER bytes of the answer (usage figures are read from it)
    marks: list[tuple[float, int]] = field(default_factory=list)  # (seconds since the request, answer bytes so far)

    def time_to(self, marker: bytes) -> float | None:
        """Seconds from the request to the chunk that brought the first ``marker`` of the answer (a text delta:
        the first token)."""
        at = self.answer.find(marker)
        if at < 0:
            return None
        return next((seconds for seconds, size in self.marks if size > at), None)


class CountingProxy:
    """``with CountingProxy("http://127.0.0.1:8080", key) as proxy:`` … ``proxy.url``, ``proxy.exchanges``;
    ``port``: listen there (an install's own port, the server moved behind the proxy), else on a free one."""

    def __init__(self, upstream: str, key: str, port: int = 0) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.key = key
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def since(self, count: int, *, kit: bool = False) -> list[Exchange]:
        """The exchanges recorded after the first ``count``: the client's (``kit``: also the kit's own checks,
        which ``qwenkit launch`` makes with python-requests before it starts the client)."""
        with self._lock:
            return [e for e in self.exchanges[count:] if kit or not e.agent.startswith("python-requests/")]

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                start = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                auth = self.headers.get("Authorization", "")
                with_key = auth == f"Bearer {proxy.key}" or self.headers.get("x-api-key") == proxy.key
                upstream = http.client.HTTPConnection(proxy.host, proxy.port, timeout=900)
                status, first, answer, marks, size = 502, 0.0, bytearray(), [], 0
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    reply = upstream.getresponse()
                    status = reply.status
                    self.send_response(reply.status, reply.reason)
                    for name, value in reply.getheaders():
                        if name.lower() not in _HOP_BY_HOP:
                            self.send_header(name, value)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    while True:
                        chunk = reply.read1(65536)
                        if not chunk:
                            break
                        if not first:
                            first = time.monotonic() - start
                        if len(answer) < MAX_ANSWER:
                            answer += chunk[:MAX_ANSWER - len(answer)]
                        size += len(chunk)
                        marks.append((time.monotonic() - start, size))
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError:
                    pass  # the client went away, or the server did: the status recorded says what was answered
                finally:
                    upstream.close()
                    self.close_connection = True
                    proxy.record(Exchange(self.command, self.path, self.headers.get("User-Agent", ""), status,
                                          with_key, len(body), first, time.monotonic() - start, body,
                                          bytes(answer), marks))

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        return Handler
