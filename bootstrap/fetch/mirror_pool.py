"""The mirrors of one file during a download: which one is in use, and why each dropped one was dropped.

A mirror that fails mid-file is dropped for the rest of that file and the next one continues from the bytes
already verified (the part file is shared); when none is left, the most telling reason becomes the SourceError
(exit 4): "the source changed" when a mirror started serving another version, else every mirror's last failure.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bootstrap.core.console import t, warn
from bootstrap.core.errors import SourceError

if TYPE_CHECKING:
    from bootstrap.fetch.records import Mirror


Target = tuple[str, Mapping[str, str]]  # where a redirect chain ended (a CDN URL) and the headers it takes


@dataclass
class MirrorState:
    """One mirror of the file: whether it was dropped and why, and the redirect target its workers share.

    The target is a cache the workers share: requests go straight to it until one fails, and then every request
    resolves again through the mirror's own URL (a signed URL may have expired, the hub may have moved on, and
    the hub's answer states the sha256 it now serves). ``generation`` makes that rule hold under concurrency: a
    request that set out before the failure cannot put the old target back when it succeeds.
    """

    mirror: Mirror
    dead: bool = False
    reason: str = ""
    changed: bool = False
    target: Target | None = None
    generation: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def route(self) -> tuple[Target | None, int]:
        """The cached target (None: resolve through the mirror's URL) and the generation it belongs to."""
        with self._lock:
            return self.target, self.generation

    def forget_target(self) -> None:
        """A request failed: every request from now on resolves again, until one of them succeeds."""
        with self._lock:
            self.target = None
            self.generation += 1

    def remember_target(self, target: Target, generation: int) -> None:
        """Cache where a successful request's redirects ended, unless a failure since it set out said to
        resolve again (``generation`` is what ``route`` returned when it started)."""
        with self._lock:
            if generation == self.generation:
                self.target = target


class MirrorPool:
    """The file's mirrors in preference order; a failed one is dropped for the rest of the file."""

    def __init__(self, name: str, mirrors: Sequence[Mirror]) -> None:
        self.name = name
        self.states = [MirrorState(m) for m in mirrors]
        self._lock = threading.Lock()

    def current(self) -> MirrorState:
        with self._lock:
            for st in self.states:
                if not st.dead:
                    return st
        raise self.exhausted()

    def drop(self, st: MirrorState, reason: str, *, changed: bool = False) -> None:
        with self._lock:
            if st.dead:
                return
            st.dead, st.reason, st.changed = True, reason, changed
            nxt = next((s for s in self.states if not s.dead), None)
        if nxt is not None:
            warn(t("fetch.mirror_dropped", name=self.name, source=st.mirror.source, reason=reason,
                   next=nxt.mirror.source))  # fmt: skip

    def exhausted(self) -> SourceError:
        changed = next((s for s in self.states if s.changed), None)
        if changed is not None:
            return SourceError(t("fetch.changed", name=self.name, source=changed.mirror.source),
                               hint=t("fetch.hint.rerun"))  # fmt: skip
        sources = ", ".join(s.mirror.source for s in self.states)
        reason = "; ".join(f"{s.mirror.source}: {s.reason}" for s in self.states if s.reason) or "?"
        return SourceError(t("fetch.failed", name=self.name, sources=sources, reason=reason),
                           hint=t("fetch.hint.rerun"))  # fmt: skip
