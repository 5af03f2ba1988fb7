"""HTTP for downloads: one ``requests`` session (OS trust store, env proxies, our User-Agent) and protocol parsing.

Why a session of our own: TLS goes through ``truststore`` so corporate CAs installed in the OS store work (the
certifi bundle does not know them), injected into *our* SSLContext only (``truststore.inject_into_ssl`` would
change every library in the process). Verification is never disabled. Proxies come from ``HTTPS_PROXY`` /
``NO_PROXY`` through requests' own environment handling (``trust_env``).
"""

from __future__ import annotations

import email.utils
import re
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
import truststore
from requests.adapters import HTTPAdapter

from bootstrap import __version__
from bootstrap.core.hashing import is_sha256

USER_AGENT = f"qwenclientkit/{__version__}"
CONNECT_TIMEOUT = 15.0
# RFC 9110 §14.4: Content-Range: bytes first-last/complete-length (or */complete-length on a 416).
_CONTENT_RANGE_RE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)


class _TrustStoreAdapter(HTTPAdapter):
    """An adapter whose pools (direct and through a proxy) verify TLS with the OS trust store."""

    def __init__(self, ssl_context: ssl.SSLContext, pool_size: int) -> None:
        self._ssl_context = ssl_context
        super().__init__(pool_connections=4, pool_maxsize=pool_size, max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._ssl_context
        super().init_poolmanager(*args, **kwargs)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        proxy_kwargs["ssl_context"] = self._ssl_context
        return super().proxy_manager_for(proxy, **proxy_kwargs)


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
    if value.isdigit():
        return float(value)
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
    raw = headers.get("X-Linked-Size")
    if raw and raw.strip().isdigit():
        return int(raw.strip())
    return None


def local_session() -> requests.Session:
    """A session for this machine's own llama-server: no proxies, no netrc, no environment CA overrides.

    ``HTTPS_PROXY``/``HTTP_PROXY`` are for the hubs; a corporate proxy would otherwise receive (and fail) calls to
    127.0.0.1 whenever ``NO_PROXY`` does not list it.
    """
    session = requests.Session()
    session.trust_env = False
    return session
