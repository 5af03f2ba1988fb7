"""Atomic file writes (write to a temp file in the same folder, fsync, rename, fsync the folder).

A reader — or a rerun after ``kill -9`` — sees the old content or the new one, never a torn file. Every file that
matters (state, profiles, scripts, unit files, the API key) is written through here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make a rename durable (POSIX); directories cannot be opened for fsync on Windows."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


PUBLIC = 0o644  # what other users and programs (a web server serving a bundle, ``sha256sum -c``) may read


def write_atomic(path: Path, data: bytes, *, mode: int = PUBLIC) -> None:
    """Replace ``path`` with ``data`` (its folder made when missing); ``mode`` is applied to the temp file before the
    rename.

    The temp file is created by ``mkstemp`` (mode 0600), so a secret (``mode=0o600``) is never readable by others,
    even briefly. Everything else gets ``mode`` (0644 unless asked): ``mkstemp``'s 0600 would make a published file
    (a bundle's manifest served by nginx as another user) unreadable to everyone else.
    """
    path = Path(path)
    # The folder is made when missing, as every other writer here does: one a user removed (``rm -r cache``)
    # is made again by the next run that needs it rather than failing it.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def copy_atomic(source: Path, target: Path, *, mode: int | None = None) -> None:
    """Copy ``source`` over ``target`` as ``write_atomic`` writes, keeping its modification time (and its mode
    unless ``mode`` is given). Streamed with plain reads and writes: Python 3.12+ copies with ``CopyFile2`` on
    Windows, which Wine 8 lacks (the process aborts: "unimplemented function KERNEL32.dll.CopyFile2")."""
    import shutil

    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    stat = os.stat(source)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, (stat.st_mode & 0o777) if mode is None else mode)
        os.utime(tmp, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
