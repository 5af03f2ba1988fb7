"""Download progress: on a terminal one tqdm bar per file (bytes, rate, ETA) and one for the total; off a terminal
(a pipe, a log file, CI) plain lines at a readable rate; nothing in quiet mode.

Everything goes to stderr (stdout is reserved for ``--json``). A bar redraws with ``\\r`` and cursor moves, which a
log file keeps as noise (dozens of redraws for a few seconds of download), so off a terminal a file gets a line when
it starts, one at each tenth done when ``LINE_EVERY`` seconds have passed since the last (and one every
``ALIVE_EVERY`` seconds for a slow file), and a last line with size,
rate and time. Workers report from several threads; tqdm's own lock keeps the bars from tearing, ours keeps the
counters exact.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from tqdm import tqdm

from bootstrap.core.console import info, t
from bootstrap.core.sizes import human_size

LINE_EVERY = 10.0  # seconds between two plain lines of one file, at most one per tenth done
ALIVE_EVERY = 60.0  # a slow file still gets a line this often, so a log shows it is moving


def on_terminal() -> bool:
    """Whether stderr is a terminal (bars) rather than a pipe or a file (plain lines)."""
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class _Counter(Protocol):
    def update(self, n: int) -> None: ...
    def rewind(self, n: int) -> None: ...
    def close(self) -> None: ...


class _Silent:
    """Quiet mode: counts nothing, says nothing."""

    def update(self, n: int) -> None:
        pass

    def rewind(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Bar:
    """A tqdm bar (terminal only)."""

    def __init__(self, **kwargs: Any) -> None:
        self._bar = tqdm(unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, dynamic_ncols=True,
                         leave=True, mininterval=0.25, **kwargs)

    def update(self, n: int) -> None:
        if n:
            self._bar.update(n)

    def rewind(self, n: int) -> None:
        """Take back bytes that were thrown away (a hash mismatch)."""
        if n:
            self._bar.update(-n)

    def close(self) -> None:
        self._bar.close()


class _Lines:
    """Plain lines for one file (off a terminal): start, a few in between, done."""

    def __init__(self, name: str, size: int, initial: int) -> None:
        self._name, self._size, self._done, self._initial = name, size, initial, initial
        self._started = self._last = time.monotonic()
        self._tenth = self._tenths(initial)
        info(t("progress.start", name=name, size=human_size(size)))

    def _tenths(self, done: int) -> int:
        return done * 10 // self._size if self._size > 0 else 10

    def update(self, n: int) -> None:
        self._done += n
        tenth, now = self._tenths(self._done), time.monotonic()
        quiet_for = now - self._last
        if self._done < self._size and (quiet_for >= ALIVE_EVERY or (tenth > self._tenth and quiet_for >= LINE_EVERY)):
            self._tenth, self._last = tenth, now
            info(t("progress.line", name=self._name, done=human_size(self._done), size=human_size(self._size),
                   percent=self._done * 100 // max(self._size, 1)))

    def rewind(self, n: int) -> None:
        self._done -= n
        self._tenth = self._tenths(self._done)

    def close(self) -> None:
        elapsed = max(time.monotonic() - self._started, 1e-3)
        fetched = max(self._done - self._initial, 0)
        key = "progress.done" if self._done >= self._size else "progress.stopped"
        info(t(key, name=self._name, done=human_size(self._done), size=human_size(self._size),
               rate=human_size(int(fetched / elapsed)), seconds=f"{elapsed:.1f}"))


class Progress:
    """Progress of one ``fetch_files`` (or ``bundle verify``) call."""

    def __init__(self, total_bytes: int, *, quiet: bool, terminal: bool | None = None) -> None:
        self.quiet = quiet
        self.terminal = on_terminal() if terminal is None else terminal
        self._lock = threading.Lock()
        self._total: _Counter = (_Silent() if quiet or not self.terminal
                                 else _Bar(total=total_bytes, desc=t("fetch.bar_total"), position=0))

    def file(self, name: str, size: int, initial: int) -> FileProgress:
        bar: _Counter
        if self.quiet:
            bar = _Silent()
        elif self.terminal:
            bar = _Bar(total=size, initial=initial, desc=name, position=1)
        else:
            bar = _Lines(name, size, initial)
        self._total.update(initial)
        return FileProgress(self, bar)

    def note(self, text: str) -> None:
        """A line among the bars (above them on a terminal, so they are not torn); nothing when quiet."""
        if self.quiet:
            return
        if self.terminal:
            tqdm.write(text, file=sys.stderr)
        else:
            info(text)

    def _update_total(self, n: int) -> None:
        with self._lock:
            self._total.update(n)

    def skip(self, size: int) -> None:
        """A file that needs no download (reused) still counts toward the total."""
        self._update_total(size)

    def close(self) -> None:
        self._total.close()


class FileProgress:
    """One file's bar or lines; ``update`` is safe from any worker thread."""

    def __init__(self, owner: Progress, bar: _Counter) -> None:
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


class Ticker:
    """One line about a wait with no byte count (a model loading): on a terminal it is rewritten in place once a
    second (elapsed seconds, what the program last said); off a terminal a new line every ``LINE_EVERY`` seconds,
    the first one ``LINE_EVERY`` seconds after the start (the caller has said that the wait began).

    ``close`` ends a terminal line so the next message starts on its own.
    """

    def __init__(self, *, terminal: bool | None = None, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.terminal = on_terminal() if terminal is None else terminal
        self._every = 1.0 if self.terminal else LINE_EVERY if every is None else every
        self._clock = clock
        self._last: float | None = None if self.terminal else clock()
        self._open = False  # a terminal line was written and not yet ended

    def tick(self, line: Callable[[], str]) -> None:
        """Show ``line()`` if it is time (it is built only then)."""
        now = self._clock()
        if self._last is not None and now - self._last < self._every:
            return
        self._last = now
        if self.terminal:
            sys.stderr.write(f"\r{line()}\x1b[K")
            sys.stderr.flush()
            self._open = True
        else:
            info(line())

    def close(self) -> None:
        if self._open:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._open = False
