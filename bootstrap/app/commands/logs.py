"""``qwenkit logs [-f] [-n N]``: the server's own log, from wherever the service manager keeps it.

The log file under ``<home>/logs/`` (``server.log`` for the start script, launchd and Task Scheduler;
``qwenclientkit.err.log`` for WinSW), or the systemd journal through ``journalctl`` (the unit's output goes there,
not to a file). The last ``N`` lines (50 unless ``-n``) go to stdout byte for byte, so ``| grep`` and ``> file``
work; ``-f`` then follows as ``tail -F`` does: a file that is truncated is read again from its start, one replaced
by a new file (rotated: WinSW rolls its log by size) is finished and the new one followed; Ctrl-C ends it (exit 0).
On Windows the file is opened afresh at each look, so following never keeps WinSW from rolling it (what the server
wrote in the last quarter second before a roll may then be missed).

Neither ``logs/`` nor the file may be a link (``register/base.safe_logs_dir``); nothing is created by reading.
Exit 2 when there is no log yet (and not ``-f``, which waits for it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

from bootstrap.core.console import t, warn
from bootstrap.core.errors import UsageError
from bootstrap.core.home import Home, resolve_home
from bootstrap.register.base import SERVER_LOG, ServiceManager

DEFAULT_LINES = 50
POLL_S = 0.25  # how often -f looks for more
_BLOCK = 64 << 10  # read backwards in blocks this size to find the last lines
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
KEEP_OPEN = os.name != "nt"  # POSIX: a rotated file is drained through the open descriptor


def run(args: argparse.Namespace) -> int:
    home = resolve_home(getattr(args, "home", None))
    lines = DEFAULT_LINES if args.lines is None else int(args.lines)
    if lines < 0:
        raise UsageError(t("logs.err_lines", value=lines), t("hint.usage"))
    manager = _manager(home)
    command = manager.log_command(lines, bool(args.follow))
    try:
        if command is not None:
            return _viewer(command)
        log = manager.log_file or home.logs_dir / SERVER_LOG
        _refuse_links(home, log)
        sink = sys.stdout.buffer
        if not log.is_file():
            if not args.follow:
                raise UsageError(t("logs.err_none", path=log), t("logs.hint_none"))
            warn(t("logs.waiting", path=log))
        else:
            sink.write(last_lines(log, lines))
            sink.flush()
        if args.follow:
            with contextlib.suppress(KeyboardInterrupt):
                follow(home, log, sink)
    except BrokenPipeError:  # the reader went away (``| head``): done, as other CLIs are
        _quiet_stdout()
    return 0


def _manager(home: Home) -> ServiceManager:
    """The manager recorded at install (its log is where that manager puts it), else the start script's."""
    from bootstrap.register.managers import FallbackManager, manager_named, recorded_manager

    name = recorded_manager(home)
    return manager_named(name, home) if name else FallbackManager(home)


def _viewer(argv: list[str]) -> int:
    """Run the manager's own log viewer (journalctl) on this terminal: its output is the output."""
    try:
        return subprocess.run(argv, check=False).returncode
    except FileNotFoundError as exc:
        raise UsageError(t("logs.err_viewer", command=argv[0]), t("logs.hint_viewer")) from exc
    except KeyboardInterrupt:
        return 0


def _refuse_links(home: Home, log: Path) -> None:
    for path in (home.logs_dir, log):
        if path.is_symlink():
            raise UsageError(t("logs.err_link", path=path), t("logs.hint_link"))


def _open(path: Path) -> int:
    """A read-only descriptor of the regular file ``path``, never through a link."""
    fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_BINARY)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(t("logs.err_none", path=path), t("logs.hint_none"))
    return fd


def last_lines(path: Path, count: int) -> bytes:
    """The last ``count`` lines of ``path`` as bytes, read backwards from its end (a log may be gigabytes)."""
    if count == 0:
        return b""
    fd = _open(path)
    try:
        end = os.fstat(fd).st_size
        data = b""
        pos = end
        while pos > 0 and data.count(b"\n") <= count:
            step = min(_BLOCK, pos)
            pos -= step
            data = _read_at(fd, pos, step) + data
    finally:
        os.close(fd)
    body = data[:-1] if data.endswith(b"\n") else data
    kept = body.split(b"\n")[-count:]
    return b"\n".join(kept) + (b"\n" if data.endswith(b"\n") else b"")


def _read_at(fd: int, offset: int, size: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


def follow(home: Home, path: Path, sink: BinaryIO, *, poll: float = POLL_S, stop: float | None = None) -> None:
    """Write what is appended to ``path`` as it comes, ``tail -F`` style (module docstring); ``stop``: a
    ``time.monotonic`` deadline (tests), else until Ctrl-C."""
    fd: int | None = None
    identity: tuple[int, int] | None = None
    pos = _size(path)  # the last lines were already written: only what comes after them
    while stop is None or time.monotonic() < stop:
        _refuse_links(home, path)
        current = _identity(path)
        if current != identity:  # rotated, removed or (re)created
            if fd is not None:  # finish the old file first
                pos = _drain(fd, pos, sink)
                os.close(fd)
                fd = None
            if identity is not None:  # a file after the one followed so far: from its start
                pos = 0
            identity = current
        if current is not None:
            if fd is None:
                with contextlib.suppress(OSError, UsageError):
                    fd = _open(path)
            if fd is not None:
                if os.fstat(fd).st_size < pos:  # truncated in place: start again at the top
                    pos = 0
                pos = _drain(fd, pos, sink)
                if not KEEP_OPEN:
                    os.close(fd)
                    fd = None
        time.sleep(poll)
    if fd is not None:
        os.close(fd)


def _drain(fd: int, pos: int, sink: BinaryIO) -> int:
    """Write from ``pos`` to the current end of ``fd``; the new position."""
    while True:
        chunk = _read_at(fd, pos, _BLOCK)
        if not chunk:
            return pos
        sink.write(chunk)
        sink.flush()
        pos += len(chunk)


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file now at ``path``; None when there is none."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _quiet_stdout() -> None:
    """After a broken pipe, point stdout at the null device so the interpreter's last flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
