"""Filesystem failures as the error kinds of DESIGN.md §2, so exit 1 stays for real bugs.

The mapping, by ``errno`` (POSIX; Windows sets the same numbers on the ``OSError`` it raises for these):

| errno | writing (the home, a bundle folder) | reading (an input the user named) |
|---|---|---|
| ENOSPC, EDQUOT | 3: not enough space, with the bytes needed when known | — |
| EACCES, EPERM, EROFS | 3: this machine cannot take files there | 2: that input cannot be read |
| ENAMETOOLONG | 2: the path is too long | 2 |
| ENOENT, ENOTDIR, EISDIR, ELOOP | 2: the path names no usable folder or file | 2 |

Anything else (EIO, EBADF…) is not guessed at: ``os_error`` returns ``None`` and the caller re-raises, so a
genuine bug keeps its traceback under ``--debug``. Call sites that know more (the bytes an extraction needs, that
a failing read is a USB stick pulled out) map there with ``mapped(…)`` or ``os_error(…)``; the entry point maps
whatever still escapes with the same table (``cli.main``).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath

from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError, UnsupportedMachine, UsageError
from bootstrap.core.sizes import human_size

NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})  # a full disk, or a full quota
_DENIED = {errno.EACCES, errno.EPERM, errno.EROFS}
_NOT_THERE = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP}


# The operating system's reasons the kit meets, said in the UI language (strerror is English whatever the locale).
_REASONS = {errno.ENOENT: "enoent", errno.EACCES: "eacces", errno.EPERM: "eacces", errno.EROFS: "erofs",
            errno.ENOSPC: "enospc", errno.EISDIR: "eisdir", errno.ENOTDIR: "enotdir", errno.EEXIST: "eexist",
            errno.EBUSY: "ebusy", errno.ENAMETOOLONG: "enametoolong", errno.ELOOP: "eloop", errno.EIO: "eio",
            getattr(errno, "ETXTBSY", -1): "etxtbsy", errno.ENOTEMPTY: "enotempty"}


def os_reason(exc: OSError) -> str:
    """Why an OS call failed, in the UI language for the common errno values, else the OS's own words."""
    key = _REASONS.get(exc.errno) if exc.errno is not None else None
    return t(f"fs.reason_{key}") if key else (exc.strerror or str(exc) or type(exc).__name__)


def _where(exc: OSError, path: str | PurePath | None) -> str:
    named = path if path is not None else exc.filename
    return str(named) if named is not None else "?"


def os_error(exc: OSError, path: str | PurePath | None = None, *, writing: bool = True,
             needed: int | None = None) -> QwenKitError | None:
    """The ``QwenKitError`` for a filesystem failure at ``path`` (else the path the OSError names), or ``None``
    for an errno this table does not cover. ``needed``: bytes the write still needed (for the message)."""
    where = _where(exc, path)
    detail = os_reason(exc)
    code = exc.errno
    if code in NO_SPACE:
        if needed is not None:
            return UnsupportedMachine(t("fs.no_space_needed", path=where, needed=human_size(needed),
                                        needed_bytes=needed), t("fs.hint_no_space"))
        return UnsupportedMachine(t("fs.no_space", path=where, detail=detail), t("fs.hint_no_space"))
    if code == errno.ENAMETOOLONG:
        return UsageError(t("fs.name_too_long", path=where), t("fs.hint_name_too_long"))
    if code in _DENIED:
        if writing:
            return UnsupportedMachine(t("fs.cannot_write", path=where, detail=detail), t("fs.hint_cannot_write"))
        return UsageError(t("fs.cannot_read", path=where, detail=detail), t("fs.hint_cannot_read"))
    if code in _NOT_THERE:
        return UsageError(t("fs.not_there", path=where, detail=detail), t("fs.hint_not_there"))
    return None


@contextmanager
def mapped(path: str | PurePath | None = None, *, writing: bool = True, needed: int | None = None) -> Iterator[None]:
    """Turn filesystem failures inside the block into ``os_error``'s kinds (unmapped ones pass through)."""
    try:
        yield
    except OSError as exc:
        error = os_error(exc, path, writing=writing, needed=needed)
        if error is None:
            raise
        raise error from exc
