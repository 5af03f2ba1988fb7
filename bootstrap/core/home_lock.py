"""One installer per home at a time (DESIGN.md §3): an OS lock on ``<home>/.lock``.

The kernel drops the lock when the holder's process ends, however it ends (``kill -9``, a crash, a power cut), so a
stale lock can never block a rerun: ``flock(2)`` on POSIX, ``LockFileEx`` through ``msvcrt.locking`` on Windows. The
holder writes ``"<pid> <what>"`` into the file so a second run can say who holds it. The file itself is never deleted
on release: unlinking a locked file lets a later run lock a fresh inode while an earlier opener locks the old one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.fs_errors import mapped
from bootstrap.core.home import Home
from bootstrap.core.input_checks import decimal_int

# Windows byte-range locks are mandatory: a locked byte cannot even be read by others. Locking one byte far past the
# "<pid> <what>" text keeps that text readable for the second run's message (LockFileEx may lock beyond EOF).
_WINDOWS_LOCK_OFFSET = 1 << 20
_MAX_RECORD = 256  # bytes of the record read back; a pid and a command name fit many times over


class HomeLocked(UsageError):
    """Another qwenkit holds this home (exit 2); ``pid``/``what`` come from the lock file when it could be read."""

    def __init__(self, home: Path, pid: int | None = None, what: str | None = None) -> None:
        held = t("lock.held", home=home) if pid is None else t("lock.held_by", home=home, pid=pid, what=what or "?")
        super().__init__(held, t("lock.hint"))
        self.home = home
        self.pid = pid
        self.what = what


def _try_lock(fd: int) -> bool:
    """Take the lock without waiting; ``False`` when another process holds it."""
    if os.name == "nt":
        import msvcrt

        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    """Release explicitly (closing would do it too; Windows documents unlocking before close)."""
    with contextlib.suppress(OSError):
        if os.name == "nt":
            import msvcrt

            os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)


def _read_holder(fd: int) -> tuple[int | None, str | None]:
    """``(pid, what)`` from the holder's record; ``(None, None)`` while it is still empty or unreadable."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        words = os.read(fd, _MAX_RECORD).decode("utf-8", "replace").split()
    except OSError:
        return None, None
    pid = decimal_int(words[0]) if words else None
    if pid is None:
        return None, None
    return pid, (words[1] if len(words) > 1 else None)


def _write_holder(fd: int, what: str) -> None:
    """Replace the record with ours (only after the lock is ours, so a holder's record is never clobbered)."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()} {what}\n".encode())


def _create_home(root: Path) -> list[Path]:
    """Create the home and any missing parents; the folders created, outermost first."""
    created = []
    current = root
    while not current.exists() and current.parent != current:
        created.append(current)
        current = current.parent
    with mapped(root):  # a read-only or full disk, a name too long: exit 2/3 naming the folder, not exit 1
        root.mkdir(parents=True, exist_ok=True)
    return created[::-1]


def _remove_if_unused(lock_file: Path, created: list[Path]) -> None:
    """After a failed run that made the home and left no file in it but the lock, remove what it made: the empty
    folders, the lock (still held, so no other installer can be using that file) and the home with its parents."""
    root = lock_file.parent
    with contextlib.suppress(OSError):
        for dirpath, _dirnames, _filenames in os.walk(root, topdown=False):
            if Path(dirpath) != root and not os.listdir(dirpath):
                os.rmdir(dirpath)
        if [p.name for p in root.iterdir()] != [lock_file.name]:
            return
        lock_file.unlink()
        for folder in reversed(created):
            folder.rmdir()


@contextlib.contextmanager
def home_lock(home: Home, what: str = "install") -> Iterator[None]:
    """Hold ``<home>/.lock`` for the block, creating the home if needed; ``HomeLocked`` at once if it is taken.

    Not reentrant: a second ``home_lock`` on the same home, even in this process, is refused. A run that created
    the home and fails before writing anything else leaves no empty home behind.
    """
    created = _create_home(home.root)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(home.lock_file, flags, 0o644)
    except OSError as exc:  # a link planted as .lock (O_NOFOLLOW), a read-only home…
        raise UsageError(t("lock.err_open", path=home.lock_file, detail=exc), t("lock.hint")) from exc
    failed = False
    try:
        if not _try_lock(fd):
            pid, holder = _read_holder(fd)
            raise HomeLocked(home.root, pid, holder)
        try:
            _write_holder(fd, what)
            yield
        except BaseException:
            failed = True
            if created and os.name != "nt":
                _remove_if_unused(home.lock_file, created)
            raise
        finally:
            _unlock(fd)
    finally:
        os.close(fd)
        # Windows deletes no file that is open anywhere (seen under Wine: a refused install left the home with its
        # lock): there the cleanup waits for the close, and another installer holding the lock by then makes the
        # delete fail, which keeps the home as it should.
        if failed and created and os.name == "nt":
            _remove_if_unused(home.lock_file, created)
