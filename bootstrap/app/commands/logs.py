"""``qwenkit logs [-f] [-n N] [--model NAME] [--home DIR]``: the server's own log, from wherever the service manager
keeps it.

The log file under ``<home>/logs/`` (``server.log`` for the start script, launchd and Task Scheduler;
``qwenclientkit.err.log`` for WinSW), or the systemd journal through ``journalctl`` (the unit's output goes there,
not to a file; shown with journald's time of day, ``-o short-iso``). The last ``N`` lines (50 unless ``-n``) go to
stdout byte for byte, so ``| grep`` and ``> file`` work; under the kit's supervisor each line starts with the time of
day it was written (``register/supervisor.wall_clock``), where llama-server's own stamp counts from its start.
``-f`` then follows as ``tail -F`` does: a file that is truncated is read again from its start, one replaced by a
new file (rotated: WinSW rolls its log by size) is finished and the new one followed; Ctrl-C ends it (exit 0). On
Windows the file is opened afresh at each look, so following never keeps WinSW from rolling it (what the server
wrote in the last quarter second before a roll may then be missed).

``--model NAME``: only that model's lines (several models: what the router says of it and its child's output,
``register/router_log.py``; the rolled files are read first, oldest to newest, so a port's model is known).

The last lines are found by reading backwards in blocks from the end, each block read and counted once: linear in
what is read, however many lines are asked for (``scripts/bench_logs.py``).

Neither ``logs/`` nor the file may be a link (``register/base.safe_logs_dir``); nothing is created by reading.
Exit 2 when there is no log yet (and not ``-f``, which waits for it), or when nothing is installed in the home.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from bootstrap.core.console import join_names, t, warn
from bootstrap.core.errors import UsageError
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.log_files import KEEP, rolled
from bootstrap.register.base import SERVER_LOG, ServiceManager
from bootstrap.register.router_log import ModelLines, last_model_lines

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
    router, args.model = _model_filter(home, getattr(args, "model", None))
    manager = _manager(home)
    try:
        if manager.log_command(lines, False) is not None:
            return _journal(manager, lines, bool(args.follow), getattr(args, "model", None), router)
        log = manager.log_file or home.logs_dir / SERVER_LOG
        _refuse_links(home, log)
        sink = sys.stdout.buffer
        if not log.is_file():
            _no_log(home, log, bool(args.follow))
            model = None if args.model is None else ModelLines(args.model, _writer(sink), router=bool(router))
        elif args.model is not None:
            text, model = last_model_lines(_chunks(home, log), args.model, lines, router=bool(router))
            sink.write(text)
            sink.flush()
        else:
            model = None
            sink.write(last_lines(log, lines))
            sink.flush()
        if args.follow:
            with contextlib.suppress(KeyboardInterrupt):
                follow(home, log, sink if model is None else _Filtered(model, sink))
    except BrokenPipeError:  # the reader went away (``| head``): done, as other CLIs are
        _quiet_stdout()
    return 0


def _model_filter(home: Home, name: str | None) -> tuple[bool | None, str | None]:
    """For ``--model NAME``: whether the home serves several models (its log is then a router's) and the name as
    installed (``qwen3.5:4b`` → ``qwen3.5-4b``); (None, None) without ``--model``. An unknown name is exit 2 naming
    the installed ones (and the closest)."""
    if name is None:
        return None, None
    from bootstrap.catalog.model_ref import installed_name
    from bootstrap.core.suggest import did_you_mean
    from bootstrap.record.state import require_state

    state = require_state(home)
    names = [state.server.alias, *(m.name for m in state.library)]
    installed = installed_name(name, names)
    if installed not in names:
        raise UsageError(t("library.err_unknown", name=name, names=join_names(names)),
                         did_you_mean(name, names) or t("library.hint_models"))
    return bool(state.library), installed


def _no_log(home: Home, log: Path, follow: bool) -> None:
    """No log file: exit 2 (nothing installed says so, not "start the server"), or with ``-f`` wait for it."""
    from bootstrap.record.state import load_state

    if load_state(home) is None:
        raise UsageError(t("logs.err_nothing_installed", home=home.root), t("logs.hint_nothing_installed"))
    if not follow:
        raise UsageError(t("logs.err_none", path=log), t("logs.hint_none"))
    warn(t("logs.waiting", path=log))


def _chunks(home: Home, log: Path) -> Iterator[bytes]:
    """The log's bytes oldest first: the rolled files (``server.log.3`` … ``.1``), then the file itself."""
    for path in [*(rolled(log, n) for n in range(KEEP, 0, -1)), log]:
        if not path.is_file():
            continue
        _refuse_links(home, path)
        fd = _open(path)
        try:
            while chunk := os.read(fd, 1 << 20):
                yield chunk
        finally:
            os.close(fd)


class _Filtered:
    """A sink that passes on only one model's lines (``-f --model``)."""

    def __init__(self, lines: ModelLines, sink: BinaryIO) -> None:
        self.lines, self.sink = lines, sink
        lines.emit = _writer(sink)

    def write(self, data: bytes) -> int:
        self.lines.feed(data)
        return len(data)

    def flush(self) -> None:
        self.sink.flush()


def _writer(sink: BinaryIO) -> Callable[[bytes], None]:
    def emit(line: bytes) -> None:
        sink.write(line)
        sink.flush()

    return emit


def _journal(manager: ServiceManager, lines: int, follow: bool, model: str | None, router: bool | None) -> int:
    """The journal (systemd): journalctl's own output with each line's time of day; ``--model`` reads all of it
    through the filter, then follows what comes after with the same filter."""
    if model is None:
        command = manager.log_command(lines, follow, stamped=True)
        assert command is not None
        return _viewer(command)
    command = manager.log_command(None, False, stamped=True)
    assert command is not None
    try:
        done = subprocess.run(command, capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise UsageError(t("logs.err_viewer", command=command[0]), t("logs.hint_viewer")) from exc
    text, filtered = last_model_lines([done.stdout], model, lines, router=bool(router))
    sys.stdout.buffer.write(text)
    sys.stdout.buffer.flush()
    if not follow:
        return done.returncode
    after = manager.log_command(0, True, stamped=True)
    assert after is not None
    filtered.emit = _writer(sys.stdout.buffer)
    try:
        with subprocess.Popen(after, stdout=subprocess.PIPE) as viewer:
            assert viewer.stdout is not None
            for chunk in iter(lambda: viewer.stdout.read1(1 << 16), b""):  # type: ignore[union-attr]
                filtered.feed(chunk)
    except KeyboardInterrupt:
        return 0
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
    """The last ``count`` lines of ``path`` as bytes, read backwards from its end (a log may be gigabytes).

    Each block is read once and its newlines counted once; the blocks are joined once at the end. (Prepending
    each block to what was read and counting it all again made ``-n 1000000000`` on a 64 MiB log quadratic:
    61-106 s, issue 41.)"""
    if count == 0:
        return b""
    fd = _open(path)
    try:
        end = os.fstat(fd).st_size
        blocks: list[bytes] = []
        newlines = 0
        pos = end
        ends_with_newline = end > 0 and _read_at(fd, end - 1, 1) == b"\n"
        wanted = count + (1 if ends_with_newline else 0)  # the newline that ends the file starts no line
        while pos > 0 and newlines < wanted:
            step = min(_BLOCK, pos)
            pos -= step
            block = _read_at(fd, pos, step)
            blocks.append(block)
            newlines += block.count(b"\n")
    finally:
        os.close(fd)
    data = b"".join(reversed(blocks))
    body = data[:-1] if ends_with_newline else data
    if body.count(b"\n") >= count:  # cut at the count-th newline from the end, not by splitting every line
        cut = len(body)
        for _ in range(count):
            cut = body.rindex(b"\n", 0, cut)
        body = body[cut + 1:]
    return body + (b"\n" if ends_with_newline else b"")


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
