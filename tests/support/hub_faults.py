"""Fault injection for the loopback hub.

A fault is armed from Python (``hub.inject``) or over HTTP (``POST /_control/faults``) and consumed by the
next matching requests, so a test can make exactly one response misbehave and see the client's reaction,
then see the following request served cleanly.
"""

from __future__ import annotations

import fnmatch
import itertools
import threading
import zlib
from dataclasses import dataclass, field
from typing import Any

# Kinds and the parameters each takes (with defaults).
FAULT_KINDS: dict[str, dict[str, Any]] = {
    "status": {"code": 503, "retry_after": None},  # error status before any body (HEAD, GET, listings)
    "reset": {"after": 0},  # TCP RST after `after` body bytes (SO_LINGER 0, close)
    "close": {"after": 0},  # FIN after `after` body bytes, before Content-Length is reached
    "stall": {"seconds": 5.0},  # sleep before sending headers
    "throttle": {"rate": 1 << 20},  # body bytes per second on this connection
    "corrupt": {"offset": 0},  # flip (XOR 0xFF) the byte at this absolute file offset
    "ignore_range": {},  # answer a Range request with 200 and the whole body
    "range_200": {},  # answer a Range request with 200 + Content-Range and the partial body
    "wrong_offset": {"delta": 1000},  # 206 whose Content-Range and body start `delta` bytes off
    "short_length": {"missing": 1},  # Content-Length `missing` bytes short; body truncated to it
    "no_commit_header": {},  # drop X-Repo-Commit from resolve responses
    # After `after` bytes of the file, commit new same-size bytes (and with `cut`, cut that response). A cut must
    # lose bytes, or the client never has to come back and see the change: a threshold met by a response's last
    # byte fires on the next matching response, before its first byte.
    "mutate": {"after": 0, "cut": True},
    # Hostile sources (issue 24): a body that trickles `bytes` every `every` seconds from `offset` on (the file
    # offset on byte routes, the body offset on listings), so no read ever times out and yet nothing arrives.
    "trickle": {"bytes": 1, "every": 5.0, "offset": 0},
    # A listing answered ``Content-Encoding: gzip`` whose body inflates to `inflated` bytes: whitespace, then the
    # real answer (valid JSON: a client that inflates it whole gets its listing, after holding all of it).
    "gzip_bomb": {"inflated": 300 << 20},
    # A listing with fields replaced (`set`: {"a.b.*.c": value}, `*` = every element) or removed (`drop`).
    "malformed": {"set": {}, "drop": []},
}

# Kinds that only make sense on a request carrying a Range header; they are not consumed otherwise.
RANGE_ONLY = frozenset({"ignore_range", "range_200", "wrong_offset"})
# Kinds that act on any response body, a file's or a listing's.
BODY_KINDS = frozenset({"trickle"})
# Kinds that rewrite a listing (a 200 JSON answer of an API route) and so only match API routes.
API_KINDS = frozenset({"gzip_bomb", "malformed"})
# Kinds that act on the bytes of a file and so only match byte routes.
BYTE_KINDS = frozenset(FAULT_KINDS) - {"status", "stall", "no_commit_header"} - BODY_KINDS - API_KINDS
SCOPES = ("file", "api", "any")
ORIGINS = ("hub", "cdn")


@dataclass
class Fault:
    """One armed fault; ``hits`` counts the requests it acted on."""

    id: int
    kind: str
    path_glob: str = "*"
    times: int | None = 1
    scope: str = "file"
    method: str | None = None
    origin: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    hits: int = 0
    served: int = 0  # bytes of matching files served so far (mutate)

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def matches(self, *, key: str | None, api_path: str, method: str, origin: str, ranged: bool) -> bool:
        if self.exhausted:
            return False
        if self.method and self.method.upper() != method:
            return False
        if self.origin and self.origin != origin:
            return False
        if self.kind in RANGE_ONLY and not ranged:
            return False
        if self.kind in BYTE_KINDS | BODY_KINDS and method != "GET":
            return False
        if self.kind == "no_commit_header" and origin != "hub":
            return False
        if key is not None and self.scope in ("file", "any"):
            return self.kind not in API_KINDS and fnmatch.fnmatchcase(key, self.path_glob)
        if key is None and self.scope in ("api", "any") and self.kind not in BYTE_KINDS:
            return fnmatch.fnmatchcase(api_path, self.path_glob)
        return False

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "path_glob": self.path_glob,
            "times": self.times,
            "scope": self.scope,
            "method": self.method,
            "origin": self.origin,
            "params": self.params,
            "hits": self.hits,
        }


class FaultHandle:
    """What ``inject`` returns: a live view of one fault (hit counter) and a way to disarm it."""

    def __init__(self, registry: FaultRegistry, fault: Fault) -> None:
        self._registry = registry
        self._fault = fault

    @property
    def id(self) -> int:
        return self._fault.id

    @property
    def hits(self) -> int:
        return self._fault.hits

    @property
    def exhausted(self) -> bool:
        return self._fault.exhausted

    def remove(self) -> None:
        self._registry.remove(self._fault.id)

    def __repr__(self) -> str:
        return f"FaultHandle({self._fault.describe()!r})"


class FaultRegistry:
    """Thread-safe list of armed faults; a request claims each matching fault atomically."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def add(
        self,
        kind: str,
        *,
        path_glob: str = "*",
        times: int | None = 1,
        scope: str | None = None,
        method: str | None = None,
        origin: str | None = None,
        **params: Any,
    ) -> FaultHandle:
        """``scope`` defaults to "api" for the kinds that rewrite listings, else "file"."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {sorted(FAULT_KINDS)}")
        if scope is None:
            scope = "api" if kind in API_KINDS else "file"
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}")
        if origin is not None and origin not in ORIGINS:
            raise ValueError(f"origin must be one of {ORIGINS}")
        unknown = set(params) - set(FAULT_KINDS[kind])
        if unknown:
            raise ValueError(f"fault {kind!r} takes {sorted(FAULT_KINDS[kind])}, not {sorted(unknown)}")
        if times is not None and times < 1:
            raise ValueError("times must be >= 1 or None (unlimited)")
        fault = Fault(
            id=next(self._ids),
            kind=kind,
            path_glob=path_glob,
            times=times,
            scope=scope,
            method=method,
            origin=origin,
            params={**FAULT_KINDS[kind], **params},
        )
        with self._lock:
            self._faults.append(fault)
        return FaultHandle(self, fault)

    def remove(self, fault_id: int) -> None:
        with self._lock:
            self._faults = [f for f in self._faults if f.id != fault_id]

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def describe(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.describe() for f in self._faults]

    def claim(
        self, *, key: str | None, api_path: str, method: str, origin: str, ranged: bool, body: bool = True
    ) -> dict[str, Fault]:
        """Faults this request gets, one per kind (first armed wins); each claimed fault's hits += 1.

        ``mutate`` is not counted here: it counts a hit only when it fires (see :meth:`note_served`).
        ``body=False`` (a redirect, an error) leaves byte and body faults armed for the response carrying the bytes.
        """
        out: dict[str, Fault] = {}
        with self._lock:
            for f in self._faults:
                if f.kind in out or (not body and f.kind in BYTE_KINDS | BODY_KINDS):
                    continue
                if f.matches(key=key, api_path=api_path, method=method, origin=origin, ranged=ranged):
                    out[f.kind] = f
                    if f.kind != "mutate":
                        f.hits += 1
        return out

    def note_served(self, fault: Fault, nbytes: int, *, more: bool) -> bool:
        """Add served bytes to a mutate fault; True exactly once, when its threshold is reached.

        ``more``: the response has bytes left to send. A cutting mutate fires only then: fired on a response's
        last byte, its cut would lose nothing (the body is whole), and a client that fetched every other range
        from a URL it cached would finish the old version without ever being told of the new one.
        """
        with self._lock:
            if fault.exhausted:
                return False
            fault.served += nbytes
            if fault.served >= int(fault.params["after"]) and (more or not fault.params.get("cut", True)):
                fault.hits += 1
                return True
            return False


# ---- listing rewrites (``malformed``, ``gzip_bomb``) ---------------------------------------------------------


def _targets(node: Any, parts: list[str]) -> list[tuple[Any, str | int]]:
    """(container, key) pairs a dotted path names in ``node``; ``*`` is every element of a list or object."""
    if not parts:
        return []
    head, rest = parts[0], parts[1:]
    if head == "*":
        keys: list[str | int] = list(range(len(node))) if isinstance(node, list) else list(node) \
            if isinstance(node, dict) else []
    elif isinstance(node, list):
        keys = [int(head)] if head.lstrip("-").isdigit() and -len(node) <= int(head) < len(node) else []
    elif isinstance(node, dict):
        keys = [head]
    else:
        keys = []
    if not rest:
        return [(node, k) for k in keys]
    found: list[tuple[Any, str | int]] = []
    for k in keys:  # a path through a missing key names nothing (an LFS field of a plain git file)
        found += _targets(node.get(k) if isinstance(node, dict) else node[k], rest)  # type: ignore[index]
    return found


def malform(answer: Any, set_fields: dict[str, Any], drop: list[str]) -> Any:
    """``answer`` (a decoded listing) with the fields of ``set`` replaced and those of ``drop`` removed; a path
    names nested keys with dots (``siblings.*.lfs.size``, ``Data.RevisionMap``), ``""`` the whole answer."""
    if "" in set_fields:
        return set_fields[""]
    for path, value in set_fields.items():
        for container, key in _targets(answer, path.split(".")):
            container[key] = value
    for path in drop:
        for container, key in _targets(answer, path.split(".")):
            if isinstance(container, dict):
                container.pop(key, None)
    return answer


_BOMBS: dict[int, tuple[Any, bytes]] = {}
_BOMBS_LOCK = threading.Lock()


def gzip_bomb(inflated: int, answer: bytes) -> bytes:
    """One gzip member that inflates to ``inflated`` spaces, then ``answer`` (JSON allows leading whitespace).

    The compressor state after the spaces is kept per size, so each answer costs a copy, not 300 MiB of
    compression (level 6: about 300 KiB on the wire for 300 MiB).
    """
    with _BOMBS_LOCK:
        if inflated not in _BOMBS:
            packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            head = bytearray()
            block = b" " * (1 << 20)
            left = inflated
            while left:
                head += packer.compress(block[: min(left, len(block))])
                left -= min(left, len(block))
            _BOMBS[inflated] = (packer, bytes(head))
        packer, head = _BOMBS[inflated]
        tail = packer.copy()
    return head + tail.compress(answer) + tail.flush()
