"""Download progress bars: one per file (bytes, rate, ETA) and one for the total, or nothing in quiet mode.

Bars go to stderr (stdout is reserved for ``--json``). Workers report from several threads; tqdm's own lock
keeps the lines from tearing, ours keeps the counters exact.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from tqdm import tqdm

from bootstrap.core.console import t


class _Bar:
    """A tqdm bar, or a counter only when quiet."""

    def __init__(self, quiet: bool, **kwargs: Any) -> None:
        self._bar = None if quiet else tqdm(
            unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, dynamic_ncols=True, leave=True,
            mininterval=0.25, **kwargs,
        )  # fmt: skip

    def update(self, n: int) -> None:
        if self._bar is not None and n:
            self._bar.update(n)

    def rewind(self, n: int) -> None:
        """Take back bytes that were thrown away (a hash mismatch)."""
        if self._bar is not None and n:
            self._bar.update(-n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class Progress:
    """Bars for one ``fetch_files`` call."""

    def __init__(self, total_bytes: int, *, quiet: bool) -> None:
        self.quiet = quiet
        self._lock = threading.Lock()
        self._total = _Bar(quiet, total=total_bytes, desc=t("fetch.bar_total"), position=0)

    def file(self, name: str, size: int, initial: int) -> FileProgress:
        bar = _Bar(self.quiet, total=size, initial=initial, desc=name, position=1)
        self._total.update(initial)
        return FileProgress(self, bar)

    def _update_total(self, n: int) -> None:
        with self._lock:
            self._total.update(n)

    def skip(self, size: int) -> None:
        """A file that needs no download (reused) still counts toward the total."""
        self._update_total(size)

    def close(self) -> None:
        self._total.close()


class FileProgress:
    """One file's bar; ``update`` is safe from any worker thread."""

    def __init__(self, owner: Progress, bar: _Bar) -> None:
        self._owner = owner
        self._bar = bar
        self._lock = threading.Lock()

    def update(self, n: int) -> None:
        with self._lock:
            self._bar.update(n)
        self._owner._update_total(n)

    def rewind(self, n: int) -> None:
        with self._lock:
            self._bar.rewind(n)
        with self._owner._lock:
            self._owner._total.rewind(n)

    def close(self) -> None:
        with self._lock:
            self._bar.close()
