"""Download progress: on a terminal one tqdm bar per file (bytes, rate, ETA) and one for the total; off a terminal
(a pipe, a log file, CI) plain lines at a readable rate; nothing in quiet mode.

Everything goes to stderr: progress is not a command's output (``console``). A bar redraws with ``\\r`` and
cursor moves, which a log file keeps as noise (dozens of redraws for a few seconds of download), so off a terminal a
file gets a line when it starts, one at each tenth done when ``LINE_EVERY`` seconds have passed since the last (and
one every ``ALIVE_EVERY`` seconds for a slow file), each with its rate and time left, and a last line with size, rate
and time. Workers report from several threads; tqdm's own lock keeps the bars from tearing, ours keeps the counters
exact.

One unit system: every size is ``sizes.human_size`` (KiB, MiB, GiB), as in the plan; tqdm's own ``unit_scale``
would print SI prefixes (its rate ignores ``unit_divisor``), so the bar formats its numbers itself. A file is named
by what happens to it: downloaded, copied (from a bundle folder) or checked (hashed against a manifest), and a
resumed download says what is left of what total. A terminal that reports no size (``stty size`` 0 0, a serial
console) gets bars drawn for ``FALLBACK_SIZE``, not tqdm's blank lines.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import unicodedata
from collections.abc import Callable
from typing import Any, Protocol

from tqdm import tqdm

from bootstrap.core.console import info, t
from bootstrap.core.sizes import human_size

LINE_EVERY = 10.0  # seconds between two plain lines of one file, at most one per tenth done
ALIVE_EVERY = 60.0  # a slow file still gets a line this often, so a log shows it is moving
FALLBACK_SIZE = (80, 24)  # a terminal that states no size: the size of the consoles that state none
VERBS = ("download", "copy", "check")  # what happens to a file's bytes: its lines say so


def on_terminal() -> bool:
    """Whether stderr is a terminal (bars) rather than a pipe or a file (plain lines)."""
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def terminal_size() -> tuple[int, int] | None:
    """(columns, lines) of stderr's terminal; ``None`` when it states no size (``stty size`` says 0 0: tqdm then
    computes -1 rows and draws nothing but the newlines around its bars) unless ``COLUMNS``/``LINES`` say one."""
    try:
        columns, lines = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        columns = lines = 0
    if columns > 0 and lines > 0:
        return columns, lines
    try:
        columns, lines = int(os.environ.get("COLUMNS", "")), int(os.environ.get("LINES", ""))
    except ValueError:
        return None
    return (columns, lines) if columns > 0 and lines > 0 else None


def fit_line(text: str, columns: int) -> str:
    """``text`` cut to ``columns - 1`` terminal columns (CJK characters take two), so a line rewritten with ``\\r``
    never wraps: a wrapped line leaves its first rows behind at every rewrite."""
    room, out = columns - 1, []
    for ch in text:
        width = 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
        if width > room:
            return "".join(out[:-1]) + "…" if out else ""
        room -= width
        out.append(ch)
    return text


def duration_text(seconds: float) -> str:
    """``45 s``, ``3 min 20 s``, ``2 h 5 min``: a time left, as people say it (no clock digits in a log)."""
    whole = max(0, round(seconds))
    if whole < 60:
        return t("progress.seconds", n=whole)
    minutes, sec = divmod(whole, 60)
    if minutes < 60:
        return t("progress.minutes", m=minutes, s=sec)
    hours, minutes = divmod(minutes, 60)
    return t("progress.hours", h=hours, m=minutes)


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


class _ByteBar(tqdm):  # type: ignore[type-arg]
    """tqdm with sizes in ``human_size``'s binary units (``bar_format`` reads the fields added here)."""

    @property
    def format_dict(self) -> dict[str, Any]:
        fields: dict[str, Any] = super().format_dict
        rate = fields.get("rate")
        if not rate and fields.get("elapsed"):  # the last redraw (close): the average, as tqdm's own format does
            rate = ((fields.get("n") or 0) - (fields.get("initial") or 0)) / fields["elapsed"]
        fields["done"] = human_size(int(fields.get("n") or 0))
        fields["size"] = human_size(int(fields.get("total") or 0))
        fields["speed"] = human_size(int(rate)) + "/s" if rate else "?"
        return fields


BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {done} / {size} [{elapsed}<{remaining}, {speed}]"


class _Bar:
    """A tqdm bar (terminal only)."""

    def __init__(self, **kwargs: Any) -> None:
        width: dict[str, Any] = ({"dynamic_ncols": True} if terminal_size() is not None
                                 else {"ncols": FALLBACK_SIZE[0], "nrows": FALLBACK_SIZE[1]})
        self._bar = _ByteBar(unit="B", file=sys.stderr, leave=True, mininterval=0.25, bar_format=BAR_FORMAT,
                             **width, **kwargs)

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
    """Plain lines for one file (off a terminal): start, a few in between (with rate and time left), done."""

    def __init__(self, name: str, size: int, initial: int, verb: str) -> None:
        self._name, self._size, self._done, self._initial = name, size, initial, initial
        self._started = self._last = time.monotonic()
        self._tenth = self._tenths(initial)
        info(start_line(name, size, initial, verb))

    def _tenths(self, done: int) -> int:
        return done * 10 // self._size if self._size > 0 else 10

    def update(self, n: int) -> None:
        self._done += n
        tenth, now = self._tenths(self._done), time.monotonic()
        quiet_for = now - self._last
        if self._done < self._size and (quiet_for >= ALIVE_EVERY or (tenth > self._tenth and quiet_for >= LINE_EVERY)):
            self._tenth, self._last = tenth, now
            rate = max(self._done - self._initial, 0) / max(now - self._started, 1e-3)
            left = duration_text((self._size - self._done) / rate) if rate > 0 else "?"
            info(t("progress.line", name=self._name, done=human_size(self._done), size=human_size(self._size),
                   percent=self._done * 100 // max(self._size, 1), rate=human_size(int(rate)), left=left))

    def rewind(self, n: int) -> None:
        self._done -= n
        self._tenth = self._tenths(self._done)

    def close(self) -> None:
        elapsed = max(time.monotonic() - self._started, 1e-3)
        fetched = max(self._done - self._initial, 0)
        key = "progress.done" if self._done >= self._size else "progress.stopped"
        info(t(key, name=self._name, done=human_size(self._done), size=human_size(self._size),
               rate=human_size(int(fetched / elapsed)), seconds=f"{elapsed:.1f}"))


def start_line(name: str, size: int, initial: int, verb: str = "download") -> str:
    """The line that opens a file: what happens to it and how much; a resumed download says what is left of what
    total, and what an earlier run left."""
    if initial > 0 and verb == "download":
        return t("progress.resume", name=name, left=human_size(size - initial), size=human_size(size),
                 done=human_size(initial))
    return t(f"progress.start_{verb}", name=name, size=human_size(size))


class Progress:
    """Progress of one ``fetch_files`` (or ``bundle verify``) call."""

    def __init__(self, total_bytes: int, *, quiet: bool, terminal: bool | None = None, files: int | None = None
                 ) -> None:
        """``files``: how many files will have a bar; with one, no "total" bar repeats its numbers."""
        self.quiet = quiet
        self.terminal = on_terminal() if terminal is None else terminal
        self._lock = threading.Lock()
        with_total = self.terminal and not quiet and (files is None or files > 1)
        self._total: _Counter = (_Bar(total=total_bytes, desc=t("fetch.bar_total"), position=0) if with_total
                                 else _Silent())
        self._file_position = 1 if with_total else 0

    def file(self, name: str, size: int, initial: int, verb: str = "download") -> FileProgress:
        """A file's bar or lines; ``verb`` (``VERBS``): downloaded, copied or checked; ``initial``: bytes an
        earlier run left (a resumed download)."""
        assert verb in VERBS, verb
        bar: _Counter
        if self.quiet:
            bar = _Silent()
        elif self.terminal:
            if initial > 0 or verb != "download":  # the bar alone would not say it resumes, or copies
                tqdm.write(start_line(name, size, initial, verb), file=sys.stderr)
            bar = _Bar(total=size, initial=initial, desc=name, position=self._file_position)
        else:
            bar = _Lines(name, size, initial, verb)
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
            size = terminal_size()
            text = line() if size is None else fit_line(line(), size[0])
            sys.stderr.write(f"\r{text}\x1b[K")
            sys.stderr.flush()
            self._open = True
        else:
            info(line())

    def close(self, *, clear: bool = False) -> None:
        """End the terminal line; ``clear``: wipe it instead (a wait whose result the next line says)."""
        if self._open:
            sys.stderr.write("\r\x1b[K" if clear else "\n")
            sys.stderr.flush()
            self._open = False
