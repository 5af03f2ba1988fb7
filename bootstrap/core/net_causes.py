"""Why a network request failed, as one word a person can act on: the only place network exceptions are classified.

Clients wrap the operating system's error several layers deep: requests' ``ConnectionError`` holds urllib3's
``MaxRetryError``, whose ``reason`` is a ``NameResolutionError`` whose ``__cause__`` is the ``socket.gaierror``
(urllib3 ``exceptions.py``, ``connection.py``); httpx (huggingface_hub >= 1.0) chains ``ConnectError`` to the same
``OSError``. ``cause_of`` walks that chain (``__cause__``, ``__context__``, ``reason``, exception ``args``) and names
the first cause it recognises, so the message never shows ``HTTPSConnectionPool(host=…)`` text. Standard library
only: the detect stage's reachability probe (plain sockets) and the fetch stage's resolvers share it.
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass

# The causes, in the order a message names them (``sources.cause_<name>`` in ``messages/sources.py``).
CAUSES = ("dns", "timeout", "refused", "unreachable", "tls", "http", "other")

_HTTP_STATUS = re.compile(r"\b(?:HTTP|status(?: code)?)\D{0,3}([1-5]\d\d)\b", re.IGNORECASE)
# getaddrinfo's texts on glibc, musl, macOS and Windows (gai_strerror / WSA messages).
_DNS_TEXT = ("name resolution", "name or service not known", "nodename nor servname", "getaddrinfo failed",
             "no address associated", "failed to resolve", "name does not resolve")


@dataclass(frozen=True)
class NetCause:
    """``kind`` is one of ``CAUSES``; ``status`` the HTTP status for ``http``."""

    kind: str
    status: int | None = None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        cur = todo.pop(0)
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        yield cur
        linked = [cur.__cause__, cur.__context__, getattr(cur, "reason", None)]
        linked += [a for a in getattr(cur, "args", ()) if isinstance(a, BaseException)]
        todo += [e for e in linked if isinstance(e, BaseException)]


def _status_of(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and status >= 400:
        return status
    found = _HTTP_STATUS.search(str(exc))
    return int(found.group(1)) if found else None


def _by_type(exc: BaseException) -> str | None:
    name = type(exc).__name__
    if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
        return "tls"
    if isinstance(exc, socket.gaierror) or name == "NameResolutionError":
        return "dns"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, TimeoutError) or "Timeout" in name:
        return "timeout"
    if isinstance(exc, OSError) and exc.errno in (101, 113, 10051, 10065):  # ENETUNREACH, EHOSTUNREACH (+WSA)
        return "unreachable"
    return None


def _by_text(text: str) -> str | None:
    low = text.lower()
    if "certificate verify failed" in low:
        return "tls"
    if any(s in low for s in _DNS_TEXT):
        return "dns"
    if "connection refused" in low or "actively refused" in low:
        return "refused"
    if "timed out" in low or "timeout" in low:
        return "timeout"
    if "network is unreachable" in low or "no route to host" in low:
        return "unreachable"
    return None


def cause_of(exc: BaseException) -> NetCause:
    """The most specific cause found anywhere in ``exc``'s chain; an HTTP status only when nothing lower failed."""
    chain = list(_chain(exc))
    for kind in (_by_type(e) for e in chain):
        if kind:
            return NetCause(kind)
    for kind in (_by_text(str(e)) for e in chain):
        if kind:
            return NetCause(kind)
    for status in (_status_of(e) for e in chain):
        if status:
            return NetCause("http", status)
    return NetCause("other")
