"""HTTP for downloads: one ``requests`` session (OS trust store, env proxies, our User-Agent), protocol parsing,
and the bounds every network read is held to.

Why a session of our own: TLS goes through ``truststore`` so corporate CAs installed in the OS store work (the
certifi bundle does not know them), injected into *our* SSLContext only (``truststore.inject_into_ssl`` would
change every library in the process). Verification is never disabled. Proxies come from ``HTTPS_PROXY`` /
``NO_PROXY`` through requests' own environment handling (``trust_env``).

Why a watchdog: a socket timeout bounds each read, not a request. A source that sends one byte every few seconds
never trips it, and a 64 KiB read of such a body returns after days (``io.BufferedReader.readinto`` waits for the
whole buffer). So a request made inside ``bounded(Budget(...))`` is watched from another thread: past its deadline,
or slower than its minimum rate over a window, its socket is shut down, the blocked read returns at once, and the
caller raises ``BudgetExceeded``. Bodies are read with ``read_some`` (one ``recv`` at most), so the bytes counted
are the bytes that arrived. The values and their reasons: ``docs/hubs.md``, "Bounds on every network read".
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import re
import socket
import ssl
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
import truststore
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from bootstrap import __version__
from bootstrap.core import settings
from bootstrap.core.hashing import is_sha256
from bootstrap.core.input_checks import decimal_int

USER_AGENT = f"qwenclientkit/{__version__}"
CONNECT_TIMEOUT = 15.0
# Bounds on every network read (docs/hubs.md, "Bounds on every network read"); each has a QWENKIT_* override
# (core/settings.py) so tests can shrink them.
# A download connection that averages less than MIN_RATE over RATE_WINDOW is cut and its range asked again: 1 KiB/s
# is far below any link a 20 GB download can finish on (at 1 KiB/s per connection, 8 connections take 30 days),
# yet a source trickling a byte every few seconds is dropped within a window instead of never (a socket timeout
# only catches silence). The window is the stall timeout's, so a busy CDN gets the same grace for both.
MIN_RATE = 1024.0
RATE_WINDOW = 30.0
# One download request lasts at most SEGMENT_DEADLINE: then it is closed and the rest of its range asked for again.
# Segments are 1-64 MiB (partial.py), so a healthy connection never meets it (64 MiB in 600 s is 109 KiB/s); a
# source just above MIN_RATE delivers under 1 MiB per request, which counts as no progress, so after
# FetchOptions.max_attempts requests it is dropped: a source that pretends to work costs at most ~50 min, not days.
SEGMENT_DEADLINE = 600.0
# A metadata request (listing, manifest, release API, probe read) is small (kilobytes, capped at MAX_JSON_BYTES):
# the whole exchange, connect to last byte, gets META_DEADLINE. Twice the per-read timeout API_TIMEOUT allows, so a
# slow but answering hub is not cut, while a trickled answer ends in seconds instead of never.
META_DEADLINE = 30.0
# RFC 9110 §14.4: Content-Range: bytes first-last/complete-length (or */complete-length on a 416).
_CONTENT_RANGE_RE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)


class _TrustStoreAdapter(HTTPAdapter):
    """An adapter whose pools (direct and through a proxy) verify TLS with the OS trust store, and whose connections
    a ``bounded`` block can cut (``_WATCHED_POOLS``)."""

    def __init__(self, ssl_context: ssl.SSLContext, pool_size: int) -> None:
        self._ssl_context = ssl_context
        super().__init__(pool_connections=4, pool_maxsize=pool_size, max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._ssl_context
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        proxy_kwargs["ssl_context"] = self._ssl_context
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if type(manager) is urllib3.ProxyManager:  # a SOCKS manager has pools of its own: bounded per read only
            manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager


def make_session(pool_size: int = 8) -> requests.Session:
    """A session for ``pool_size`` parallel connections; retries are ours (requests' would hide faults)."""
    session = requests.Session()
    context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    adapter = _TrustStoreAdapter(context, max(1, pool_size))
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    session.headers["User-Agent"] = USER_AGENT
    # Bodies are hashed as sent: a gzip layer would change the bytes we count and hash. huggingface_hub sends the
    # same header on its HEAD requests (docs/hubs.md).
    session.headers["Accept-Encoding"] = "identity"
    session.trust_env = True  # HTTPS_PROXY / NO_PROXY
    session.verify = True
    return session


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with default ports filled in: the unit credentials may be sent to."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def same_origin(a: str, b: str) -> bool:
    """Whether ``b`` may receive the credentials meant for ``a``: same scheme, host and port.

    Stricter than requests (which strips only ``Authorization`` and only on a host change): ModelScope's session
    cookie would otherwise follow a redirect to another port of the same host (docs/hubs.md, "ModelScope").
    """
    return origin_of(a) == origin_of(b)


@dataclass(frozen=True)
class ContentRange:
    """A parsed ``Content-Range: bytes first-last/total`` (total None for ``*``)."""

    first: int
    last: int
    total: int | None


def parse_content_range(value: str | None) -> ContentRange | None:
    """The byte range a response claims to carry, or None when absent or malformed."""
    if not value:
        return None
    m = _CONTENT_RANGE_RE.fullmatch(value.strip())
    if not m:
        return None
    total = None if m.group(3) == "*" else int(m.group(3))
    first, last = int(m.group(1)), int(m.group(2))
    if last < first:
        return None
    return ContentRange(first, last, total)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP-date (RFC 9110 §10.2.3); None when absent/bad."""
    if not value:
        return None
    value = value.strip()
    seconds = decimal_int(value)
    if seconds is not None:
        return float(seconds)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def linked_sha256(headers: Any) -> str | None:
    """The content sha256 a hub states for the bytes behind this response, if any.

    ``X-Linked-Etag`` (HF, on the resolve 302) and ``X-Linked-ETag`` (ModelScope downloads) carry the LFS sha256.
    A plain ``ETag`` is deliberately not used: CDNs and the Xet bridge send 64-hex ETags that are not the file's
    sha256 (docs/hubs.md, "Where a file's SHA-256 comes from").
    """
    raw = headers.get("X-Linked-Etag") or headers.get("X-Linked-ETag")
    if not raw:
        return None
    tag = raw.strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    tag = tag.strip('"').lower()
    return tag if is_sha256(tag) else None


def linked_size(headers: Any) -> int | None:
    """``X-Linked-Size`` (HF: the real file size on a redirect whose own body is empty)."""
    return decimal_int(headers.get("X-Linked-Size"))


def local_session() -> requests.Session:
    """A session for this machine's own llama-server: no proxies, no netrc, no environment CA overrides.

    ``HTTPS_PROXY``/``HTTP_PROXY`` are for the hubs; a corporate proxy would otherwise receive (and fail) calls to
    127.0.0.1 whenever ``NO_PROXY`` does not list it.

    Every request asks for its own connection (``Connection: close``): llama-server's router answers
    ``Connection: close`` for what it proxies (a child's header passed on, b11434 ``server-models.cpp``), and a
    client that reuses such a socket anyway fails now and then with "Remote end closed connection without response"
    (measured: 5 of 90 sequential requests through a three-model router with keep-alive, 0 of 90 with close). A
    loopback connect costs a fraction of a millisecond.
    """
    session = requests.Session()
    session.trust_env = False
    session.headers["Connection"] = "close"
    return session


# ---- bounds on every network read --------------------------------------------------------------------------------


class BudgetExceeded(TimeoutError):
    """A bounded request ran past its deadline (``kind`` "deadline") or below its minimum rate ("slow")."""

    def __init__(self, kind: str, budget: Budget) -> None:
        super().__init__(f"{kind}: {budget}")
        self.kind = kind
        self.budget = budget


@dataclass(frozen=True)
class Budget:
    """What one request may take: ``deadline`` seconds in all (connect, headers, body; None: no limit), and at least
    ``min_rate`` bytes per second of body over any ``window`` seconds (None: no rate floor)."""

    deadline: float | None
    min_rate: float | None = None
    window: float = 30.0


class Watch:
    """One bounded block's state: the connections it used, the body bytes that arrived, and why it was cut."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.start = time.monotonic()
        self.received = 0
        self.fired: str | None = None
        self._samples: deque[tuple[float, int]] = deque([(self.start, 0)])
        self._conns: list[Any] = []
        self._lock = threading.Lock()

    def got(self, n: int) -> None:
        """``n`` more body bytes arrived (only the reading thread calls this)."""
        self.received += n

    def attach(self, conn: Any) -> None:
        with self._lock:
            if conn not in self._conns:
                self._conns.append(conn)

    def check(self, now: float) -> str | None:
        """Why this block must stop now, if it must: its deadline passed, or too few bytes in the last window."""
        b = self.budget
        if b.deadline is not None and now - self.start >= b.deadline:
            return "deadline"
        if b.min_rate is None:
            return None
        samples = self._samples
        samples.append((now, self.received))
        while len(samples) > 1 and samples[1][0] <= now - b.window:
            samples.popleft()
        then, count = samples[0]
        if now - self.start >= b.window and then <= now - b.window and self.received - count < b.min_rate * b.window:
            return "slow"
        return None

    def fire(self, kind: str) -> None:
        """Cut every connection this block still holds, so a read blocked on it returns now."""
        self.fired = kind
        with self._lock:
            conns = [c for c in self._conns if getattr(c, "_qk_watch", None) is self]
        for conn in conns:
            cut(getattr(conn, "sock", None))

    def raise_if_fired(self) -> None:
        if self.fired is not None:
            raise BudgetExceeded(self.fired, self.budget)


def cut(sock: Any) -> None:
    """Shut a socket down under whoever is blocked reading it (the thread then sees the connection end).

    ``socket.socket.shutdown`` itself, not ``SSLSocket.shutdown`` (which also unwraps TLS state another thread may
    be using); a TLS-in-TLS transport (HTTPS through an HTTPS proxy) is cut at the socket beneath it.
    """
    while sock is not None and not isinstance(sock, socket.socket):
        sock = getattr(sock, "socket", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watchdog:
    """One daemon thread for the process: every ``TICK`` seconds it checks the open bounded blocks."""

    TICK = 0.2

    def __init__(self) -> None:
        self._watches: set[Watch] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, watch: Watch) -> None:
        with self._lock:
            self._watches.add(watch)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="http-watchdog", daemon=True)
                self._thread.start()

    def remove(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)

    def _run(self) -> None:
        while True:
            time.sleep(self.TICK)
            now = time.monotonic()
            with self._lock:
                watches = [w for w in self._watches if w.fired is None]
            for watch in watches:
                kind = watch.check(now)
                if kind is not None:
                    watch.fire(kind)


_WATCHDOG = _Watchdog()
_LOCAL = threading.local()
# What a read on a connection the watchdog cut raises (requests' errors are OSErrors; a body cut mid-way can
# also end as a JSON or decoding ValueError).
_CUT_ERRORS = (OSError, ValueError, urllib3.exceptions.HTTPError, http.client.HTTPException)


def current_watch() -> Watch | None:
    """The bounded block this thread is in, if any."""
    return getattr(_LOCAL, "watch", None)


@contextlib.contextmanager
def bounded(budget: Budget) -> Iterator[Watch]:
    """Every request this thread makes inside the block is held to ``budget`` together (redirect hops included).

    Exceptions raised because the watchdog cut the connection become ``BudgetExceeded``; a read that returned
    short for the same reason is the caller's to turn into it (``Watch.raise_if_fired``).
    """
    watch = Watch(budget)
    outer = current_watch()
    _LOCAL.watch = watch
    _WATCHDOG.add(watch)
    try:
        yield watch
    except BudgetExceeded:
        raise
    except _CUT_ERRORS as exc:
        if watch.fired is not None:
            raise BudgetExceeded(watch.fired, budget) from exc
        raise
    finally:
        _WATCHDOG.remove(watch)
        _LOCAL.watch = outer


def why_cut(exc: BaseException) -> BaseException:
    """``BudgetExceeded`` when this thread's bounded block was cut (what ``exc`` really means), else ``exc``."""
    watch = current_watch()
    return BudgetExceeded(watch.fired, watch.budget) if watch is not None and watch.fired is not None else exc


def _claim(conn: Any) -> None:
    """Mark a connection as used by this thread's bounded block (or by none: a block may not cut it)."""
    watch = current_watch()
    conn._qk_watch = watch
    if watch is not None:
        watch.attach(conn)


class _WatchedHTTPConnection(urllib3.connection.HTTPConnection):
    def connect(self) -> None:
        _claim(self)
        super().connect()

    def request(self, *args: Any, **kwargs: Any) -> None:
        _claim(self)
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(urllib3.connection.HTTPSConnection):
    def connect(self) -> None:
        _claim(self)
        super().connect()

    def request(self, *args: Any, **kwargs: Any) -> None:
        _claim(self)
        super().request(*args, **kwargs)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


def read_some(response: requests.Response, n: int) -> bytes:
    """Up to ``n`` body bytes as they arrive (one ``recv`` at most), undecoded; ``b""`` at the end of the body.

    ``iter_content(n)`` would wait for ``n`` bytes, hiding from the watchdog the bytes that did arrive. Counted in
    this thread's bounded block, if any.
    """
    raw = response.raw
    watch = current_watch()
    conn = getattr(raw, "_connection", None)
    if watch is not None and conn is not None and getattr(conn, "_qk_watch", None) is not watch:
        _claim(conn)  # a session not made here (its pools do not claim): the body at least can be cut
    reader = getattr(raw, "read1", None)  # urllib3 >= 2.3
    try:  # urllib3's errors as requests' ``iter_content`` raises them, so callers catch what they always caught
        data = reader(n, decode_content=False) if reader is not None else raw.read(min(n, 16 << 10),
                                                                                   decode_content=False)
    except urllib3.exceptions.ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(exc) from exc
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise requests.exceptions.ConnectionError(exc) from exc
    except urllib3.exceptions.SSLError as exc:
        raise requests.exceptions.SSLError(exc) from exc
    if watch is not None and data:
        watch.got(len(data))
    return data or b""


class BodyRefused(ValueError):
    """A body past its cap: ``kind`` is "size" (on the wire), "inflated" (after decompression) or "encoding"."""

    def __init__(self, kind: str, limit: int, encoding: str = "") -> None:
        super().__init__(f"{kind} {limit} {encoding}".strip())
        self.kind = kind
        self.limit = limit
        self.encoding = encoding


_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def read_capped(response: requests.Response, limit: int) -> bytes:
    """A whole (small) body, at most ``limit`` bytes on the wire and ``limit`` bytes once decoded.

    We ask for ``identity``; a server that compresses anyway (gzip, deflate) is decoded here, bounded: each step
    inflates at most what is left under the cap, so a body that inflates 1000-fold is refused after ``limit``
    bytes, not after it has been held whole. An encoding we cannot bound is refused.
    """
    encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding not in ("", "identity") and encoding not in _DECODERS:
        raise BodyRefused("encoding", limit, encoding)
    try:
        length = int(response.headers.get("Content-Length") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise BodyRefused("size", limit)
    decoder = zlib.decompressobj(_DECODERS[encoding]) if encoding in _DECODERS else None
    wire = 0
    body = bytearray()
    while chunk := read_some(response, 1 << 16):
        wire += len(chunk)
        if wire > limit:
            raise BodyRefused("size", limit)
        if decoder is None:
            body += chunk
            continue
        try:
            body += decoder.decompress(chunk, limit + 1 - len(body))
            while decoder.unconsumed_tail and len(body) <= limit:
                body += decoder.decompress(decoder.unconsumed_tail, limit + 1 - len(body))
        except zlib.error as exc:
            raise BodyRefused("encoding", limit, f"{encoding} ({exc})") from exc
        if len(body) > limit:
            raise BodyRefused("inflated", limit, encoding)
    current = current_watch()
    if current is not None:
        current.raise_if_fired()  # a body cut short by the watchdog is not a complete answer
    return bytes(body)


def download_budget() -> Budget:
    """The bounds of one download request: ``SEGMENT_DEADLINE``, ``MIN_RATE`` over ``RATE_WINDOW`` (or overrides)."""
    return Budget(settings.segment_deadline() or SEGMENT_DEADLINE, settings.min_rate() or MIN_RATE,
                  settings.rate_window() or RATE_WINDOW)


def metadata_budget() -> Budget:
    """The bound of one metadata request: ``META_DEADLINE`` in all (or ``QWENKIT_META_DEADLINE``)."""
    return Budget(settings.meta_deadline() or META_DEADLINE)
