"""Reads a remote GGUF file's header with HTTP Range requests for its first megabytes only, never the weights.

So the plan is made before a 20 GB download: ``read_remote_header`` asks for 1 MiB, then for what the parser says
is missing, until ``gguf_header.parse_header`` succeeds. Protocol care (docs/hubs.md): a ranged request must
come back ``206`` with a ``Content-Range`` that matches what was asked; a server that ignores Range (``200`` and the
whole body) is read only as far as needed and then closed; redirects (HF ``resolve`` → CDN) are followed by hand
so the caller's auth headers reach the original host only, and https → http is refused.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import urllib3

from bootstrap.core.console import t
from bootstrap.core.errors import SourceError
from bootstrap.core.input_checks import decimal_int
from bootstrap.fetch.http_session import BudgetExceeded, bounded, download_budget, make_session, read_some, why_cut
from bootstrap.fetch.records import cause_text
from bootstrap.plan.gguf_header import GGUFHeader, GGUFHeaderError, NeedMoreData, parse_header

# Remote reads
INITIAL_FETCH = 1 << 20
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
MAX_REDIRECTS = 10
_CHUNK = 1 << 16
_REDIRECTS = (301, 302, 303, 307, 308)
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
# What a failed request or body read raises: requests wraps the request, the body is read from urllib3 directly.
_NETWORK_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)

def _short(exc: BaseException) -> str:
    """A one-line description of a requests/urllib3 failure (their messages nest several lines of causes), named
    as the resolvers name it (``records.cause_text``: DNS, timeout, refused, TLS interception, HTTP status)."""
    return cause_text(exc, CONNECT_TIMEOUT_S)[0]


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def _no_auth(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """An auth hook that adds nothing: overrides a session's auth and .netrc on hops to another host."""
    return request


class _PrefixFetcher:
    """Fetches a growing prefix of a remote file: Range requests for each missing piece, or one streamed 200.

    Hugging Face ``resolve`` URLs redirect to a CDN on another host; redirects are followed here (not by requests)
    so the caller's headers (tokens) go only to the original host and an https → http downgrade is refused.
    """

    def __init__(self, url: str, session: requests.Session, headers: Mapping[str, str]) -> None:
        self.url = url
        self.session = session
        self.headers = dict(headers)
        self.file_size: int | None = None
        self._stream: requests.Response | None = None
        self._pending = b""

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()  # not fully read: urllib3 drops the connection instead of draining the body
            self._stream = None

    def _fail(self, key: str, **fields: Any) -> SourceError:
        return SourceError(t(key, url=self.url, **fields), t("gguf.hint_rerun"))

    def _get(self, first: int, last: int) -> requests.Response:
        url, origin = self.url, _origin(self.url)
        for _ in range(MAX_REDIRECTS + 1):
            same = _origin(url) == origin
            headers: dict[str, str | None] = dict(self.headers) if same else dict.fromkeys(self.headers)
            if not same:
                headers["Authorization"] = None
                headers["Cookie"] = None
            headers["Range"] = f"bytes={first}-{last}"
            headers["Accept-Encoding"] = "identity"  # byte offsets must be file offsets
            try:
                resp = self.session.get(url, headers=headers, stream=True, allow_redirects=False,
                                        timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                                        auth=None if same else _no_auth)
            except _NETWORK_ERRORS as exc:
                raise self._fail("gguf.http_failed", error=_short(why_cut(exc))) from None
            location = resp.headers.get("Location")
            if resp.status_code not in _REDIRECTS or not location:
                return resp
            resp.close()
            nxt = urljoin(url, location)
            if urlsplit(url).scheme == "https" and urlsplit(nxt).scheme != "https":
                raise self._fail("gguf.redirect_downgrade", location=nxt.split("?")[0])
            url = nxt
        raise self._fail("gguf.too_many_redirects", limit=MAX_REDIRECTS)

    def _read(self, data: bytearray, want: int) -> None:
        """Append body bytes from the open response until ``len(data) == want`` or the body ends."""
        try:
            while len(data) < want:
                chunk = self._pending or (read_some(self._stream, _CHUNK) if self._stream is not None else b"")
                if not chunk:
                    break
                take = want - len(data)
                data += chunk[:take]
                self._pending = chunk[take:]
        except _NETWORK_ERRORS as exc:
            raise self._fail("gguf.http_failed", error=_short(why_cut(exc))) from None
        cut = why_cut(EOFError()) if len(data) < want else None
        if isinstance(cut, BudgetExceeded):  # the body ended early because the watchdog cut it
            raise self._fail("gguf.http_failed", error=_short(cut))

    def _open(self, resp: requests.Response) -> None:
        self.close()
        self._stream, self._pending = resp, b""

    def fill(self, data: bytearray, want: int) -> None:
        """Extend ``data`` (a prefix of the file) to ``want`` bytes, or to the end of a shorter file."""
        if self.file_size is not None:
            want = min(want, self.file_size)
        if len(data) >= want:
            return
        if self._stream is not None:  # a server that ignored Range: keep reading the same body
            self._read(data, want)
            self._ended(data, want)
            return
        first, last = len(data), want - 1
        resp = self._get(first, last)
        status = resp.status_code
        if status == 206:
            self._partial(resp, data, first, last)
        elif status == 200 and "Content-Range" not in resp.headers:
            self._whole(resp, data, want)
        elif status == 416 and first == 0:
            resp.close()
            self.file_size = 0  # an empty file: the parser reports it as truncated
        else:
            resp.close()
            if status == 200:
                raise self._fail("gguf.range_mismatch", asked=f"{first}-{last}",
                                 got=f"200 {resp.headers.get('Content-Range')}")
            raise self._fail("gguf.http_status", status=status)

    def _partial(self, resp: requests.Response, data: bytearray, first: int, last: int) -> None:
        """A 206: its Content-Range must start where asked and end there or at the end of the file."""
        m = _CONTENT_RANGE.fullmatch(resp.headers.get("Content-Range", "").strip())
        got = resp.headers.get("Content-Range", "-")
        if not m:
            resp.close()
            raise self._fail("gguf.range_mismatch", asked=f"{first}-{last}", got=got)
        r_first, r_last = int(m.group(1)), int(m.group(2))
        total = int(m.group(3)) if m.group(3) != "*" else None
        ends_file = total is not None and r_last == total - 1 and r_last < last
        if r_first != first or not (r_last == last or ends_file) or (
                total is not None and self.file_size is not None and total != self.file_size):
            resp.close()
            raise self._fail("gguf.range_mismatch", asked=f"{first}-{last}", got=got)
        if total is not None:
            self.file_size = total
        self._open(resp)
        target = first + (r_last - r_first + 1)
        self._read(data, target)
        self.close()
        if len(data) < target:
            raise self._fail("gguf.short_body", got=len(data) - first, expected=target - first)

    def _whole(self, resp: requests.Response, data: bytearray, want: int) -> None:
        """A 200 to a Range request: the body is the whole file; stream only the prefix and keep the rest unread."""
        length = decimal_int(resp.headers.get("Content-Length"))
        if length is not None:
            self.file_size = length
            want = min(want, self.file_size)
        del data[:]  # the body starts at byte 0 again
        self._open(resp)
        self._read(data, want)
        self._ended(data, want)

    def _ended(self, data: bytearray, want: int) -> None:
        """A streamed body stopped short of ``want``: the file's end when its size is unknown, else an error."""
        if len(data) < want:
            if self.file_size is not None:
                raise self._fail("gguf.short_body", got=len(data), expected=want)
            self.file_size = len(data)


def read_remote_header(url: str, *, session: requests.Session | None = None,
                       headers: Mapping[str, str] | None = None,
                       max_header_bytes: int = 128 * 2**20) -> GGUFHeader:
    """The header of a remote GGUF file, from HTTP Range reads of its first bytes only.

    Asks for 1 MiB, then twice as much (or what the parser says it needs) until the header parses; never more than
    ``max_header_bytes``. HTTP failures raise SourceError (exit 4); a bad or oversized header GGUFHeaderError.
    Without ``session``, one from ``http_session.make_session`` is used and closed.
    """
    own = session is None
    sess = session if session is not None else make_session(pool_size=1)  # OS trust store, env proxies, our UA
    fetcher = _PrefixFetcher(url, sess, headers or {})
    data = bytearray()
    want = min(INITIAL_FETCH, max_header_bytes)
    try:
        with bounded(download_budget()):  # every request of the read, together: a trickle never keeps a plan waiting
            return _read_header(fetcher, data, want, url, max_header_bytes)
    finally:
        fetcher.close()
        if own:
            sess.close()


def _read_header(fetcher: _PrefixFetcher, data: bytearray, want: int, url: str, max_header_bytes: int) -> GGUFHeader:
    """Grow the prefix until the header parses (see ``read_remote_header``)."""
    while True:
        fetcher.fill(data, want)
        try:
            return parse_header(data, file_size=fetcher.file_size, source=url)
        except NeedMoreData as more:
            if more.needed > max_header_bytes:
                raise GGUFHeaderError(t("gguf.header_too_large", source=url, needed=more.needed,
                                        limit=max_header_bytes)) from None
            want = min(max(2 * want, more.needed), max_header_bytes)
