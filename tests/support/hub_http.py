"""HTTP plumbing of the loopback hub: servers, request log, Range, byte serving with faults, the CDN.

Split from ``hub.py`` so each file stays readable; the protocol routes are in ``hub_routes.py``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hmac
import json
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.support.hub_faults import Fault, gzip_bomb, malform

if TYPE_CHECKING:
    from tests.support.hub import LoopbackHub

SEND_CHUNK = 256 * 1024


@dataclass(frozen=True)
class LogRecord:
    """One request as the hub saw it; ``bytes`` counts body bytes actually written."""

    origin: str
    method: str
    path: str
    range: str | None
    status: int
    bytes: int
    file: str | None
    time: float  # when the answer was complete (a cut response: after the cut)
    started: float = 0.0  # when the request arrived: causal order between requests of one client


def parse_range(header: str | None, size: int) -> tuple[str, int, int]:
    """RFC 9110 single byte range -> ("full"|"partial"|"unsatisfiable", first, last).

    Multi-range and malformed headers fall back to the full body (200), as servers may.
    """
    if not header or not header.strip().lower().startswith("bytes="):
        return "full", 0, size - 1
    spec = header.strip()[6:].strip()
    if "," in spec:
        return "full", 0, size - 1
    m = re.fullmatch(r"(\d*)\s*-\s*(\d*)", spec)
    if not m or (not m.group(1) and not m.group(2)):
        return "full", 0, size - 1
    a, b = m.group(1), m.group(2)
    if not a:  # suffix range: last n bytes
        n = int(b)
        if n == 0 or size == 0:
            return "unsatisfiable", 0, 0
        return "partial", max(0, size - n), size - 1
    first = int(a)
    last = int(b) if b else size - 1
    if b and last < first:
        return "full", 0, size - 1
    if first >= size:
        return "unsatisfiable", 0, 0
    return "partial", first, min(last, size - 1)


def iso_time(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class Server(ThreadingHTTPServer):
    """One origin; tracks open connections so ``stop`` can cut idle keep-alive sockets."""

    daemon_threads = True
    block_on_close = False  # stop() cuts connections itself; never wait on a handler thread
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self, addr: tuple[str, int], hub: LoopbackHub, origin: str, handler: type[BaseHTTPRequestHandler]
    ) -> None:
        self.hub = hub
        self.origin = origin
        self.conns: set[socket.socket] = set()
        self.conns_lock = threading.Lock()
        super().__init__(addr, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that reset or drop a connection are what fault tests do on purpose: not worth a traceback."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return
        super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.conns_lock:
            self.conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.conns_lock:
            self.conns.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        with self.conns_lock:
            conns = list(self.conns)
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)


class Aborted(Exception):
    """The response was cut on purpose (reset/close/mutate fault); the connection is gone."""


class BaseHandler(BaseHTTPRequestHandler):
    """Plumbing shared by both origins: request bookkeeping, fault claiming, byte serving, the CDN."""

    protocol_version = "HTTP/1.1"
    server_version = "LoopbackHub/1"
    timeout = 60  # idle keep-alive connections end on their own
    server: Server

    # ---- plumbing ---------------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:  # silence stderr noise
        return

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    @property
    def hub(self) -> LoopbackHub:
        return self.server.hub

    def _dispatch(self, method: str) -> None:
        started = time.time()
        self.method = method
        self.sent = 0
        self.status = 0
        self.file_key: str | None = None
        self.faults: dict[str, Fault] = {}
        n = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(n) if n else b""
        split = urlsplit(self.path)
        self.url_path = split.path
        self.query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        self.segs = [unquote(s) for s in split.path.split("/")[1:]]
        control = self.url_path.startswith("/_control/")
        self.hub._busy(+1)
        try:
            self._route(control)
        except Aborted:
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        except Exception as exc:  # a hub bug must show up as a 500, not a hung client
            if not self.status:
                self._json(500, {"error": f"hub error: {exc!r}"})
            else:
                self.close_connection = True
        finally:
            if not control:
                self.hub._record(
                    LogRecord(
                        self.server.origin,
                        method,
                        self.path,
                        self.headers.get("Range"),
                        self.status,
                        self.sent,
                        self.file_key,
                        time.time(),
                        started,
                    )
                )
            self.hub._busy(-1)

    def _route(self, control: bool) -> None:
        raise NotImplementedError

    def _start(self, status: int, headers: Mapping[str, str | int]) -> None:
        self.status = status
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.end_headers()

    def _send(self, status: int, headers: Mapping[str, str | int], body: bytes = b"") -> None:
        self._start(status, {**headers, "Content-Length": len(body)})
        if self.method != "HEAD" and body:
            trickle = self.faults.get("trickle")
            if trickle is not None:
                self._trickle(body, 0, trickle)
                return
            self.wfile.write(body)
            self.sent += len(body)

    def _json(self, status: int, obj: Any, headers: Mapping[str, str | int] | None = None) -> None:
        headers = {"Content-Type": "application/json", **(headers or {})}
        malformed = self.faults.get("malformed") if status == 200 else None
        if malformed is not None:
            obj = malform(obj, dict(malformed.params["set"]), list(malformed.params["drop"]))
        body = json.dumps(obj).encode()
        bomb = self.faults.get("gzip_bomb") if status == 200 else None
        if bomb is not None:
            body = gzip_bomb(int(bomb.params["inflated"]), body)
            headers["Content-Encoding"] = "gzip"
        self._send(status, headers, body)

    def _trickle(self, body: bytes, start: int, fault: Fault) -> None:
        """Send ``body`` (its first byte is at offset ``start`` of what the fault counts) at once up to the fault's
        ``offset``, then ``bytes`` every ``every`` seconds, until done or the hub stops."""
        step, every = max(1, int(fault.params["bytes"])), float(fault.params["every"])
        at = max(0, min(len(body), int(fault.params["offset"]) - start))
        if at:
            self.wfile.write(body[:at])
            self.sent += at
        while at < len(body):
            self.wfile.flush()
            if self.hub._stopping.wait(every):
                raise Aborted
            self.wfile.write(body[at : at + step])
            self.sent += len(body[at : at + step])
            at += step

    def _claim(self, key: str | None, *, body: bool = True) -> bool:
        """Take this request's faults; answer stall/status here. False when the request is answered.

        ``body`` says whether this response will carry the file's bytes (not a redirect or an error).
        """
        self.file_key = key
        self.faults = self.hub.faults.claim(
            key=key,
            api_path=self.url_path,
            method=self.method,
            origin=self.server.origin,
            ranged=bool(self.headers.get("Range")),
            body=body,
        )
        stall = self.faults.get("stall")
        if stall:
            self.hub._stopping.wait(float(stall.params["seconds"]))
        status = self.faults.get("status")
        if status:
            code = int(status.params["code"])
            headers: dict[str, str | int] = {}
            if status.params.get("retry_after") is not None:
                headers["Retry-After"] = int(status.params["retry_after"])
            msg = f"injected status {code}"
            self._json(code, {"error": msg, "Code": code, "Message": msg, "Success": False}, headers)
            return False
        return True

    # ---- routing ----------------------------------------------------------------------------------
    # ---- release assets and CDN -------------------------------------------------------------------
    def _release(self, owner_repo: str, tag: str, name: str) -> None:
        if not self._claim(name, body=False):
            return
        asset = self.hub.store.assets.get((owner_repo, tag, name))
        if asset is None:
            self._json(404, {"error": "Not Found"})
            return
        location = self.hub.cdn_url(asset.sha256, kind="assets", name=name)
        self._send(302, {"Location": location})

    def _cdn(self) -> None:
        s = self.segs
        if len(s) != 2 or s[0] not in ("lfs", "assets") or self.method not in ("GET", "HEAD"):
            if self._claim(None):
                self._json(404, {"error": "Not Found"})
            return
        sha = s[1]
        store = self.hub.store
        repo_id, path = self.query.get("repo"), self.query.get("path")
        if s[0] == "assets":
            key: str | None = self.query.get("name")
        else:
            if not path:
                located = store.locate_sha256(sha)
                repo_id, path = located if located else (None, None)
            key = path
        if not self._claim(key, body=store.blob_path(sha).is_file()):
            return
        sig = self.query.get("sig")
        if sig is not None and not hmac.compare_digest(sig, self.hub.sign(sha)):
            self._send(403, {"Content-Type": "text/plain"}, b"AccessDenied: bad signature")
            return
        blob = store.blob_path(sha)
        if not re.fullmatch(r"[0-9a-f]{64}", sha) or not blob.is_file():
            self._send(404, {"Content-Type": "text/plain"}, b"NoSuchKey")
            return
        headers: dict[str, str | int] = {"Accept-Ranges": "bytes", "ETag": f'"{sha}"'}
        if self.hub.ms_linked_etag and s[0] == "lfs":
            headers["X-Linked-ETag"] = f'"{sha}"'
        if key:
            headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(key.rsplit('/', 1)[-1])}"
        self._serve_blob(sha, blob.stat().st_size, headers, repo_id, path)

    # ---- bytes ------------------------------------------------------------------------------------
    def _serve_blob(
        self, sha256: str, size: int, headers: dict[str, str | int], repo_id: str | None, path: str | None
    ) -> None:
        """Answer a byte route with Range semantics and this request's body faults."""
        f = self.faults
        mode, first, last = parse_range(self.headers.get("Range"), size)
        headers = {"Content-Type": "application/octet-stream", **headers}
        if mode == "unsatisfiable":
            self._send(416, {**headers, "Content-Range": f"bytes */{size}"})
            return
        status = 206 if mode == "partial" else 200
        if "ignore_range" in f:
            status, first, last = 200, 0, size - 1
        elif "wrong_offset" in f and mode == "partial":
            delta = int(f["wrong_offset"].params["delta"])
            length = last - first + 1
            new_first = first - delta if first >= delta else first + delta
            new_first = max(0, min(new_first, size - 1))
            first, last = new_first, min(size - 1, new_first + length - 1)
        if status == 206:
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
            if "range_200" in f:
                status = 200
        length = max(0, last - first + 1)
        if "short_length" in f:
            length = max(0, length - int(f["short_length"].params["missing"]))
        self._start(status, {**headers, "Content-Length": length})
        if self.method == "HEAD" or length == 0:
            return
        self._write_body(self.hub.store.blob_path(sha256), first, length, repo_id, path)

    def _abort(self, *, rst: bool) -> None:
        """Cut the connection now: RST (SO_LINGER 0) or FIN, never a clean end of body."""
        sock = self.connection
        try:
            if rst:
                time.sleep(0.05)  # let written bytes reach the peer before the reset discards our queue
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                sock.shutdown(socket.SHUT_WR)
            sock.close()
        except OSError:
            pass
        raise Aborted

    def _write_body(self, blob: Path, first: int, length: int, repo_id: str | None, path: str | None) -> None:
        f = self.faults
        corrupt = int(f["corrupt"].params["offset"]) if "corrupt" in f else None
        rate = float(f["throttle"].params["rate"]) if "throttle" in f else None
        cut_at, rst = None, False
        for kind in ("reset", "close"):
            if kind in f:
                cut_at, rst = min(int(f[kind].params["after"]), length - 1), kind == "reset"
                break
        mutate = f.get("mutate")
        if "trickle" in f:  # a hostile source: no other fault applies
            with blob.open("rb") as fh:
                fh.seek(first)
                self._trickle(fh.read(length), first, f["trickle"])
            return
        with blob.open("rb") as fh:
            if corrupt is None and rate is None and cut_at is None and mutate is None:
                self.sent += self.connection.sendfile(fh, first, length)
                if self.sent < length:
                    raise BrokenPipeError("sendfile ended early")
                return
            fh.seek(first)
            t0 = time.monotonic()
            pos, end = first, first + length
            while pos < end:
                n = min(SEND_CHUNK, end - pos)
                if rate:
                    n = min(n, max(1024, int(rate / 20)))
                if cut_at is not None:
                    n = min(n, first + cut_at - pos)
                if mutate is not None and not mutate.exhausted:
                    remaining = int(mutate.params["after"]) - mutate.served
                    if remaining <= 0:
                        self._fire_mutate(mutate, repo_id, path, 0, more=True)
                    else:
                        n = min(n, remaining)
                if n <= 0:
                    self._abort(rst=rst)
                chunk = fh.read(n)
                if not chunk:
                    raise BrokenPipeError("blob shorter than expected")
                if corrupt is not None and pos <= corrupt < pos + len(chunk):
                    b = bytearray(chunk)
                    b[corrupt - pos] ^= 0xFF
                    chunk = bytes(b)
                self.wfile.write(chunk)
                self.sent += len(chunk)
                pos += len(chunk)
                if mutate is not None and not mutate.exhausted:
                    self._fire_mutate(mutate, repo_id, path, len(chunk), more=pos < end)
                if rate:
                    ahead = self.sent / rate - (time.monotonic() - t0)
                    if ahead > 0 and self.hub._stopping.wait(ahead):
                        raise Aborted
                if cut_at is not None and pos >= first + cut_at:
                    self._abort(rst=rst)

    def _fire_mutate(self, fault: Fault, repo_id: str | None, path: str | None, nbytes: int, *, more: bool) -> None:
        if not self.hub.faults.note_served(fault, nbytes, more=more):
            return
        if repo_id and path:
            self.hub.store.mutate_file(repo_id, path)
        if fault.params.get("cut", True):
            self._abort(rst=False)
