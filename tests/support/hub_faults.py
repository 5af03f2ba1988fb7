"""Fault injection for the loopback hub.

A fault is armed from Python (``hub.inject``) or over HTTP (``POST /_control/faults``) and consumed by the
next matching requests, so a test can make exactly one response misbehave and see the client's reaction,
then see the following request served cleanly.
"""

from __future__ import annotations

import fnmatch
import itertools
import threading
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
    "mutate": {"after": 0, "cut": True},  # after `after` bytes of the file, commit new same-size bytes
}

# Kinds that only make sense on a request carrying a Range header; they are not consumed otherwise.
RANGE_ONLY = frozenset({"ignore_range", "range_200", "wrong_offset"})
# Kinds that act on the bytes of a file and so only match byte routes.
BYTE_KINDS = frozenset(FAULT_KINDS) - {"status", "stall", "no_commit_header"}
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
        if self.kind in BYTE_KINDS and method != "GET":
            return False
        if self.kind == "no_commit_header" and origin != "hub":
            return False
        if key is not None and self.scope in ("file", "any"):
            return fnmatch.fnmatchcase(key, self.path_glob)
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
        scope: str = "file",
        method: str | None = None,
        origin: str | None = None,
        **params: Any,
    ) -> FaultHandle:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {sorted(FAULT_KINDS)}")
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
        ``body=False`` (a redirect, an error) leaves byte faults armed for the response carrying the bytes.
        """
        out: dict[str, Fault] = {}
        with self._lock:
            for f in self._faults:
                if f.kind in out or (not body and f.kind in BYTE_KINDS):
                    continue
                if f.matches(key=key, api_path=api_path, method=method, origin=origin, ranged=ranged):
                    out[f.kind] = f
                    if f.kind != "mutate":
                        f.hits += 1
        return out

    def note_served(self, fault: Fault, nbytes: int) -> bool:
        """Add served bytes to a mutate fault; True exactly once, when its threshold is reached."""
        with self._lock:
            if fault.exhausted:
                return False
            fault.served += nbytes
            if fault.served >= int(fault.params["after"]):
                fault.hits += 1
                return True
            return False
