"""Copy one bundle file into place while hashing it: one pass over the bytes, a bad file never placed.

A bundle on a USB drive or a share is read here (the download engine speaks HTTP only), with the download's
guarantees: the bytes land in ``work_dir/<sha256>.copy``, are fsynced, checked against the manifest's size and
SHA-256, and only then renamed into place (IntegrityError, exit 5, otherwise).

Why it is built this way (``scripts/bench_bundle.py`` and focused A/B runs, interleaved, medians; a 2-core KVM guest
shared with other jobs, ext4 on virtio, the 253 MB Gemma file; runs vary by +-30 %, so ranges over runs):
- reading+hashing runs on the calling thread while a writer thread writes the previous block: ``hashlib`` and
  file I/O release the GIL for large buffers, so hashing overlaps the write; three reused buffers keep memory at
  12 MiB and avoid the page faults of fresh allocations. The serial loop (read, hash, write) took 0.82-1.09 s,
  the pipeline 0.55-0.80 s (1 GiB: 3.5-4.5 s vs 2.7-3.5 s);
- the final fsync dominated: without help it took 0.40-0.46 s of 0.76-0.90 s. On Linux the writer therefore asks
  the kernel to start writing each block to disk at once (``sync_file_range(SYNC_FILE_RANGE_WRITE)``), so the
  disk writes while later blocks are hashed: the fsync then took 0.01-0.38 s, the whole copy 0.654 s vs 0.781 s
  without (8 interleaved rounds; per 4 MiB beat per 16 and 64 MiB), and a 20 GB model piles up no dirty pages;
- block size did not matter (1, 2, 4, 8, 16 MiB: 0.755-0.791 s); ``posix_fadvise(SEQUENTIAL)`` doubles the
  kernel's read-ahead for a cold USB drive (man 2 posix_fadvise, Linux notes);
- on a warm cache the bound is SHA-256 itself (0.22-0.25 s for 253 MB, ~1.1 GB/s with SHA-NI) while a plain ``cp``
  takes 0.12-0.15 s: a verifying copy cannot reach 0.9x an unsynced ``cp`` there (measured 0.12-0.19x). Against
  ``cp`` + fsync (the same durability) it measured 0.54-0.75x warm and 0.67-0.82x with the source read from disk.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import queue
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from bootstrap.core.atomic_file import fsync_dir
from bootstrap.core.console import t
from bootstrap.core.disk_space import ensure_space, free_bytes
from bootstrap.core.errors import IntegrityError, SourceError, UnsupportedMachine, UsageError
from bootstrap.core.fs_errors import NO_SPACE, os_reason

BLOCK = 4 << 20  # bytes per read/write; 1-16 MiB measured alike here, 4 MiB keeps memory at 3 x 4 MiB
BUFFERS = 3  # one being hashed, one being written, one spare: reader and writer never wait on each other
# include/uapi/linux/fs.h: #define SYNC_FILE_RANGE_WRITE 2 (start writeback of dirty pages, do not wait).
SYNC_FILE_RANGE_WRITE = 2
WRITEBACK_EVERY = BLOCK  # bytes between two writeback starts

Progress = Callable[[int], None]


def copy_verified(src: Path, dest: Path, size: int, sha256: str, work_dir: Path, *,
                  progress: Progress | None = None) -> None:
    """Copy ``src`` to ``dest`` only if its bytes have ``size`` and ``sha256``; ``progress(n)`` per block copied.

    The source's size is checked before any byte is copied (a truncated file fails at once); at most ``size + 1``
    bytes are ever read, so a source that grows (or is a device) cannot fill the disk.
    """
    src, dest, work_dir = Path(src), Path(dest), Path(work_dir)
    expected = sha256.lower()
    if len(expected) != 64 or not set(expected) <= set("0123456789abcdef"):  # it names the temp file: no paths
        raise ValueError(f"copy_verified needs a sha256 hex digest, got {sha256!r}")  # a caller's bug (exit 1)
    _check_source(src, dest, size)
    work_dir.mkdir(parents=True, exist_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    ensure_space(size, free_bytes(work_dir), work_dir)
    tmp = work_dir / f"{expected}.copy"
    try:
        actual, copied = copy_hashing(src, tmp, size + 1, progress)
        if copied != size:
            raise IntegrityError(_size_text(src, copied, size), hint=t("bundle.hint_recopy"))
        if actual != expected:
            raise IntegrityError(t("sources.err_bundle_file", path=str(src), expected=expected, actual=actual),
                                 hint=t("bundle.hint_recopy"))
        os.replace(tmp, dest)
        fsync_dir(dest.parent)
    finally:
        tmp.unlink(missing_ok=True)


def _size_text(src: Path, actual: int, size: int) -> str:
    return t("bundle.err_size", path=str(src), actual=actual, expected=size)


def _check_source(src: Path, dest: Path, size: int) -> None:
    """One clear line for a missing or odd source, a copy onto itself, or a size the manifest does not say."""
    try:
        info = src.stat()
    except OSError as exc:  # a file the manifest lists is missing: the bundle is incomplete or altered
        raise IntegrityError(t("bundle.err_read", path=str(src), detail=os_reason(exc)),
                             hint=t("bundle.hint_recopy")) from exc
    if not stat.S_ISREG(info.st_mode):
        raise IntegrityError(t("bundle.err_not_file", path=str(src)), hint=t("bundle.hint_recopy"))
    same = False
    with contextlib.suppress(OSError):
        same = os.path.samefile(src, dest) if dest.exists() else src.resolve() == dest.resolve()
    if same:
        raise UsageError(t("bundle.err_same_file", path=str(src)))
    if info.st_size != size:
        raise IntegrityError(_size_text(src, info.st_size, size), hint=t("bundle.hint_recopy"))


def copy_hashing(src: Path, tmp: Path, limit: int, progress: Progress | None = None, *, block: int = BLOCK,
                 writeback: bool = True) -> tuple[str, int]:
    """Copy at most ``limit`` bytes of ``src`` to ``tmp`` (created or truncated), fsynced; (sha256 hex, bytes).

    The building block of ``copy_verified``; ``block`` and ``writeback`` exist for the benchmark's comparisons.
    """
    digest = hashlib.sha256()
    copied = 0
    try:
        source = src.open("rb", buffering=0)
    except OSError as exc:
        raise IntegrityError(t("bundle.err_read", path=str(src), detail=os_reason(exc)),
                             hint=t("bundle.hint_recopy")) from exc
    with source, tmp.open("wb", buffering=0) as out:
        if hasattr(os, "posix_fadvise"):
            with contextlib.suppress(OSError):
                os.posix_fadvise(source.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        writer = _Writer(out, block, writeback)
        writer.start()
        try:
            while copied < limit:
                buf = writer.free.get()
                if writer.error is not None:
                    break
                view = memoryview(buf)[:min(block, limit - copied)]
                try:
                    n = source.readinto(view) or 0
                except OSError as exc:  # a USB drive pulled out, a share gone: replug and rerun
                    raise SourceError(t("bundle.err_read", path=str(src), detail=os_reason(exc)),
                                      hint=t("bundle.hint_recopy")) from exc
                if not n:
                    break
                writer.work.put((buf, n))
                digest.update(view[:n])
                copied += n
                if progress is not None:
                    progress(n)
        finally:
            writer.work.put(None)
            writer.join()
        if writer.error is not None:
            raise _write_failure(writer.error, tmp)
        try:
            os.fsync(out.fileno())
        except OSError as exc:
            raise _write_failure(exc, tmp) from exc
    return digest.hexdigest(), copied


def _write_failure(exc: BaseException, tmp: Path) -> BaseException:
    """A full disk is exit 3 (as in the download engine); another write error (a read-only or vanished folder, no
    permission) is one line, exit 3 as well: this machine cannot take the file where it was asked to go."""
    if isinstance(exc, OSError) and exc.errno in NO_SPACE:
        failure = UnsupportedMachine(t("fetch.disk_full", path=str(tmp)), hint=t("fetch.hint.rerun"))
    elif isinstance(exc, OSError):
        failure = UnsupportedMachine(t("bundle.err_write", path=str(tmp), detail=os_reason(exc)),
                                     hint=t("fetch.hint.rerun"))
    else:
        return exc
    failure.__cause__ = exc
    return failure


class _Writer(threading.Thread):
    """Writes queued blocks in order and hands each buffer back; the first error is kept, later blocks dropped.

    It never stops consuming before the end marker, so the reader can never wait forever on a buffer.
    """

    def __init__(self, out: BinaryIO, block: int, writeback: bool) -> None:
        super().__init__(name="verified-copy-writer", daemon=True)
        self.out = out
        self.free: queue.Queue[bytearray] = queue.Queue()
        self.work: queue.Queue[tuple[bytearray, int] | None] = queue.Queue()
        self.error: BaseException | None = None
        self._kick = _writeback_starter() if writeback else None
        for _ in range(BUFFERS):
            self.free.put(bytearray(block))

    def run(self) -> None:
        offset = started = 0
        while (item := self.work.get()) is not None:
            buf, n = item
            if self.error is None:
                try:
                    view = memoryview(buf)[:n]
                    while view:
                        view = view[self.out.write(view) or 0:]
                    offset += n
                    if self._kick is not None and offset - started >= WRITEBACK_EVERY:
                        self._kick(self.out.fileno(), started, offset - started)
                        started = offset
                except BaseException as exc:  # handed to the reader thread, which raises it
                    self.error = exc
            self.free.put(buf)


def _writeback_starter() -> Callable[[int, int, int], None] | None:
    """Linux's ``sync_file_range(fd, offset, n, SYNC_FILE_RANGE_WRITE)``, or None where it does not exist.

    Starting writeback per block lets the disk write while the next blocks are hashed; a failure only means the
    final fsync does all the work, so errors are ignored.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
    call.restype = ctypes.c_int

    def start(fd: int, offset: int, n: int) -> None:
        call(fd, offset, n, SYNC_FILE_RANGE_WRITE)

    return start
