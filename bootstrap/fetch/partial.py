"""Resumable partial downloads: ``<sha256>.part`` plus a small JSON state file, and the running prefix hash.

The part file is keyed by the *expected* sha256, never by name or URL: bytes of another version can never be
resumed into it (an upstream change gets another key). The file is cut into fixed segments; the state file
lists the segments that are complete and how far each unfinished one got, all of it durable (a flusher thread
fdatasyncs the part file, then writes the state), so a killed process loses at most what arrived since the last
flush (a few seconds), and a small file that is one segment resumes as well as a large one.
SHA-256 state cannot be saved (docs/hubs.md, "Throughput and hashing"), so a resumed download re-hashes its
complete prefix from disk, then keeps hashing as new bytes land.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from pathlib import Path

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.file_formats import read_record

STATE_VERSION = 1
MIB = 1 << 20
MIN_SEGMENT = 1 * MIB
MAX_SEGMENT = 64 * MIB
SINGLE_STREAM_BELOW = 4 * MIB  # small files: one connection (segment overhead outweighs any gain)
SEGMENTS_PER_CONNECTION = 8  # more segments than workers: short tail, small loss on a kill
HASH_BLOCK = 4 * MIB
SYNC_EVERY = 64 * MIB  # writeback pace of the flusher, between segment completions
FLUSH_AFTER_S = 2.0  # and at least this often while bytes arrive: a slow link loses little to a kill


def plan_segment_size(size: int, connections: int) -> int:
    """Segment length for a new part file: whole file when small or single-connection, else 1–64 MiB."""
    if connections <= 1 or size < SINGLE_STREAM_BELOW:
        return max(size, 1)
    target = -(-size // (connections * SEGMENTS_PER_CONNECTION))
    target = -(-target // MIB) * MIB  # whole MiB
    return max(MIN_SEGMENT, min(MAX_SEGMENT, target))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write, fsync, rename: a reader sees the old or the new content, never a torn one."""
    write_atomic(path, data)


def load_state(part_path: Path, state_path: Path, sha256: str, size: int) -> tuple[int, dict[int, int]] | None:
    """(segment_size, {segment: bytes held from its start}) from a valid state file whose part file is intact,
    else None. Complete segments come from ``done``; unfinished ones from ``partial`` (a state written by an
    older kit has none: those restart)."""
    state = read_record(state_path)
    try:
        if not isinstance(state, dict) or (
            state.get("version") != STATE_VERSION
            or state.get("sha256") != sha256
            or state.get("size") != size
            or part_path.stat().st_size != size
        ):
            return None
        seg = int(state["segment_size"])
        if seg <= 0:
            return None
        count = max(1, -(-size // seg))
        have = {int(i): n for i, n in state.get("partial", {}).items()
                if 0 <= int(i) < count and isinstance(n, int) and n > 0}
        have.update({int(i): seg for i in state["done"] if 0 <= int(i) < count})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return seg, {i: min(n, seg, size - i * seg) for i, n in have.items()}


def resumable_bytes(partial_dir: Path, sha256: str, size: int) -> int:
    """Bytes a rerun would not fetch again (complete segments of a valid part file); no side effects."""
    loaded = load_state(partial_dir / f"{sha256}.part", partial_dir / f"{sha256}.json", sha256, size)
    if loaded is None:
        return 0
    return sum(loaded[1].values())


class PartFile:
    """One partial download: its segments, which are complete, and how many bytes each in-flight one holds."""

    def __init__(self, partial_dir: Path, sha256: str, size: int, connections: int) -> None:
        self.sha256 = sha256
        self.size = size
        self.part_path = partial_dir / f"{sha256}.part"
        self.state_path = partial_dir / f"{sha256}.json"
        self._cond = threading.Condition()
        self._state_lock = threading.Lock()
        partial_dir.mkdir(parents=True, exist_ok=True)
        loaded = self._load()
        if loaded is None:
            self.segment_size = plan_segment_size(size, connections)
            self._reset_files()
            have: dict[int, int] = {}
        else:
            self.segment_size, have = loaded
        self.count = max(1, -(-size // self.segment_size))
        self.got = [have.get(i, 0) for i in range(self.count)]
        self.resumed_bytes = self.have_bytes()

    # ---- geometry ---------------------------------------------------------------------------------
    def start(self, i: int) -> int:
        return i * self.segment_size

    def length(self, i: int) -> int:
        return max(0, min(self.segment_size, self.size - self.start(i)))

    def is_done(self, i: int) -> bool:
        return self.got[i] >= self.length(i)

    def done_bytes(self) -> int:
        return sum(self.length(i) for i in range(self.count) if self.is_done(i))

    def have_bytes(self) -> int:
        return sum(self.got)

    def complete(self) -> bool:
        return all(self.is_done(i) for i in range(self.count))

    def frontier(self) -> int:
        """End of the contiguous prefix on disk: what the hasher may read."""
        pos = 0
        for i in range(self.count):
            pos = self.start(i) + self.got[i]
            if not self.is_done(i):
                break
        return min(pos, self.size)

    def first_missing(self) -> int | None:
        """Absolute offset of the first byte not yet on disk (None when complete)."""
        for i in range(self.count):
            if not self.is_done(i):
                return self.start(i) + self.got[i]
        return None

    # ---- progress (called by the one worker owning a segment) ----------------------------------------
    def advance(self, i: int, n: int) -> None:
        with self._cond:
            self.got[i] += n
            self._cond.notify_all()

    def wait_frontier(self, beyond: int, timeout: float) -> int:
        """Block until the contiguous prefix passes ``beyond`` (or timeout); returns the frontier."""
        with self._cond:
            self._cond.wait_for(lambda: self.frontier() > beyond, timeout)
            return self.frontier()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # ---- files ------------------------------------------------------------------------------------
    def _load(self) -> tuple[int, dict[int, int]] | None:
        return load_state(self.part_path, self.state_path, self.sha256, self.size)

    def _reset_files(self) -> None:
        """A fresh sparse part file of the full size, and a state file saying nothing is done."""
        with self.part_path.open("wb") as fh:
            fh.truncate(self.size)
        with contextlib.suppress(OSError):
            self.state_path.unlink()

    def restart(self) -> None:
        """Throw every byte away (a hash mismatch): same geometry, nothing done."""
        with self._cond:
            self._reset_files()
            self.got = [0] * self.count
            self._cond.notify_all()

    def write_state(self, held: tuple[int, ...]) -> None:
        """Atomically record ``held`` (bytes from each segment's start; they must already be durable)."""
        done = [i for i, n in enumerate(held) if n >= self.length(i)]
        partial = {str(i): n for i, n in enumerate(held) if 0 < n < self.length(i)}
        doc = {"version": STATE_VERSION, "sha256": self.sha256, "size": self.size,
               "segment_size": self.segment_size, "done": done, "partial": partial}  # fmt: skip
        atomic_write_bytes(self.state_path, json.dumps(doc).encode())

    def held(self) -> tuple[int, ...]:
        """Bytes on disk from each segment's start (written, maybe not yet durable)."""
        with self._cond:
            return tuple(self.got)

    def remove(self) -> None:
        for p in (self.part_path, self.state_path):
            with contextlib.suppress(OSError):
                p.unlink()


class StateFlusher:
    """Records complete segments from a thread: fdatasync the part file, then rewrite the state file.

    Why a thread: an fsync waits for the disk, and a worker doing it would stall its connection; here the disk
    write overlaps the download (so the final fsync before the rename has little left to flush) and the state
    never lists a segment whose bytes a power cut could lose.
    """

    def __init__(self, part: PartFile) -> None:
        self.part = part
        self._recorded = part.held()
        self._unsynced = 0  # approximate (updated without a lock): it only paces writeback
        self._flushed_at = time.monotonic()
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._fd = os.open(part.part_path, os.O_RDWR | getattr(os, "O_BINARY", 0))
        self._sync = getattr(os, "fdatasync", os.fsync)  # macOS and Windows have only fsync
        self._thread = threading.Thread(target=self._run, name=f"flush-{part.sha256[:8]}", daemon=True)
        self._thread.start()

    def notify(self) -> None:
        """A segment completed: record it soon."""
        self._dirty.set()

    def wrote(self, n: int) -> None:
        """Bytes written: start writeback every ``SYNC_EVERY`` so the disk keeps pace with the network."""
        self._unsynced += n
        if self._unsynced >= SYNC_EVERY:
            self._unsynced = 0
            self._dirty.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            due = self._unsynced > 0 and time.monotonic() - self._flushed_at >= FLUSH_AFTER_S
            if self._dirty.wait(0.5) or due:
                self._dirty.clear()
                with contextlib.suppress(OSError):  # a full disk surfaces on the workers' writes
                    self.flush()

    def flush(self) -> None:
        with self._lock:
            held = self.part.held()  # taken before the sync: every byte it counts is on disk after it
            self._unsynced = 0
            self._flushed_at = time.monotonic()
            self._sync(self._fd)
            if held != self._recorded:
                self.part.write_state(held)
                self._recorded = held

    def close(self) -> None:
        """Stop the thread and record everything complete now (also on errors and Ctrl-C)."""
        self._stop.set()
        self._dirty.set()
        self._thread.join(30)
        try:
            self.flush()
        finally:
            os.close(self._fd)


class PrefixHasher:
    """SHA-256 of the part file's contiguous prefix, computed in a thread while segments land.

    The hasher reads bytes the workers have just written (still in the page cache), so the common case costs
    no second pass over the file after it completes; hashlib releases the GIL on large buffers, so hashing
    overlaps the network. On a resume it starts by re-hashing the prefix already on disk.
    """

    def __init__(self, part: PartFile) -> None:
        self.part = part
        self.position = 0
        self._digest = hashlib.sha256()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"hash-{part.sha256[:8]}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            # Unbuffered: a buffered reader would read ahead into bytes not written yet and serve them stale.
            with self.part.part_path.open("rb", buffering=0) as fh:
                while not self._stop.is_set() and self.position < self.part.size:
                    end = self.part.wait_frontier(self.position, 0.2)
                    while self.position < end and not self._stop.is_set():
                        fh.seek(self.position)
                        block = fh.read(min(HASH_BLOCK, end - self.position))  # raw read: may be short
                        if not block:
                            raise OSError(f"{self.part.part_path} is shorter than {end} bytes")
                        self._digest.update(block)
                        self.position += len(block)
        except BaseException as exc:  # surfaced by result(); a dead hasher must not look like a hang
            self._error = exc

    def result(self, timeout: float | None = None) -> str:
        """The hex digest once the whole file is hashed (call after the last segment landed)."""
        self._thread.join(timeout)
        if self._error is not None:
            raise self._error
        if self._thread.is_alive() or self.position != self.part.size:
            raise RuntimeError("hashing did not reach the end of the file")
        return self._digest.hexdigest()

    def stop(self) -> None:
        self._stop.set()
        self.part.wake()
        self._thread.join(5)
