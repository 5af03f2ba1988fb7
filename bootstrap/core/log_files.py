"""Log files that stay bounded for weeks: rolled by size into ``NAME.1`` … ``NAME.<keep>``, the oldest dropped.

A server that runs all day logs every request; an append-only file grows without end (the seed's own machine
ran out of disk that way). ``RotatingLog`` is the writer a long-lived process keeps open (the start-script
install's supervisor writes the server's output through it); ``roll_if_large`` is for the kit's own logs, which
are appended to once per run. Files are created owner-only and never through a link (``O_NOFOLLOW``).
``qwenkit logs -f`` follows a rolled file as ``tail -F`` does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from bootstrap.core.input_checks import decimal_int

MAX_BYTES = 10 << 20  # per file: a day of a busy server's default-verbosity log is a few MiB
KEEP = 3  # rolled files kept beside the current one: at most (KEEP + 1) × MAX_BYTES on disk
_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def max_bytes_from(env: Mapping[str, str]) -> int:
    """``QWENKIT_LOG_MAX_BYTES`` when it is a positive integer (tests shrink the bound), else ``MAX_BYTES``."""
    value = decimal_int(env.get("QWENKIT_LOG_MAX_BYTES"))
    return value if value is not None and value > 0 else MAX_BYTES


def rolled(path: Path, n: int) -> Path:
    """The ``n``-th rolled file of ``path`` (``server.log.1`` is the newest)."""
    return path.with_name(f"{path.name}.{n}")


def roll(path: Path, keep: int = KEEP) -> None:
    """Shift ``path`` → ``.1`` → ``.2`` …, dropping ``.<keep>``; a missing file is fine."""
    with contextlib.suppress(FileNotFoundError):
        rolled(path, keep).unlink()
    for n in range(keep - 1, 0, -1):
        with contextlib.suppress(FileNotFoundError):
            rolled(path, n).replace(rolled(path, n + 1))
    with contextlib.suppress(FileNotFoundError):
        if keep > 0:
            path.replace(rolled(path, 1))
        else:
            path.unlink()


def roll_if_large(path: Path, max_bytes: int = MAX_BYTES, keep: int = KEEP) -> None:
    """Before appending to one of the kit's own logs: roll it when it has reached ``max_bytes``."""
    try:
        if path.stat().st_size >= max_bytes:
            roll(path, keep)
    except FileNotFoundError:
        pass


class RotatingLog:
    """An append-only log that rolls itself when a write would take it past ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int = MAX_BYTES, keep: int = KEEP) -> None:
        self.path, self.max_bytes, self.keep = path, max_bytes, keep
        self._fd = self._open()
        self._size = os.fstat(self._fd).st_size

    def _open(self) -> int:
        return os.open(self.path, _FLAGS, 0o600)

    def write(self, data: bytes) -> None:
        if self._size and self._size + len(data) > self.max_bytes:
            os.close(self._fd)
            roll(self.path, self.keep)
            self._fd = self._open()
            self._size = 0
        while data:
            done = os.write(self._fd, data)
            data = data[done:]
            self._size += done

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def __enter__(self) -> RotatingLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
