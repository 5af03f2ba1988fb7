"""RAM bandwidth probe: how fast the CPU streams memory, the number that bounds decode speed for weights in RAM.

Decode reads every active weight once per token, so tokens/s on the CPU is about bandwidth ÷ bytes per token
(docs/speed.md). Memory type and channel count are not visible without administrator tools, so we measure: each
of ``threads`` threads copies its own buffer (far larger than any L3) with ``ctypes.memmove`` until a fixed time has
passed. ctypes foreign calls release the GIL, so the copies run in parallel like llama.cpp's threads do. The
result counts bytes read plus bytes written per second (the STREAM "copy" convention). Bounded: at most
``MAX_TOTAL_BYTES`` allocated and ``COPY_SECONDS`` of copying in ``ROUNDS`` rounds, the best one kept (under
1 s in all with the page touching).
"""

from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass

MIB = 1 << 20
BUFFER_BYTES = 64 * MIB  # per thread and direction: well above the L3 share of one core on any desktop CPU
MIN_BUFFER_BYTES = 16 * MIB
MAX_TOTAL_BYTES = 512 * MIB  # source + destination over all threads
COPY_SECONDS = 0.24
ROUNDS = 3  # the best round: another process's burst slows one round, not all


@dataclass(frozen=True)
class BandwidthReading:
    """One measurement: bytes read + written per second over all threads."""

    bytes_per_s: int
    threads: int
    buffer_bytes: int  # per thread and direction
    seconds: float  # copying time measured (not counting allocation)


def _buffer_bytes(threads: int) -> int:
    return max(MIN_BUFFER_BYTES, min(BUFFER_BYTES, MAX_TOTAL_BYTES // (2 * threads)))


def read_bandwidth(threads: int, copy_seconds: float = COPY_SECONDS) -> BandwidthReading | None:
    """Measure with ``threads`` copying threads; None when the buffers cannot be allocated (low memory)."""
    threads = max(1, int(threads))
    size = _buffer_bytes(threads)
    try:
        pairs = [(ctypes.create_string_buffer(size), ctypes.create_string_buffer(size)) for _ in range(threads)]
    except MemoryError:
        return None
    for src, dst in pairs:  # touch every page: untouched zero pages would be read from one cached page
        ctypes.memset(src, 1, size)
        ctypes.memset(dst, 2, size)
    rounds = [_round(pairs, size, copy_seconds / ROUNDS) for _ in range(ROUNDS)]
    best = max(rounds, key=lambda r: r[0] / r[1])
    moved, elapsed = best
    return BandwidthReading(int(moved / elapsed), threads, size, round(elapsed, 3)) if moved else None


def _round(pairs: list[tuple[ctypes.Array[ctypes.c_char], ctypes.Array[ctypes.c_char]]], size: int,
           seconds: float) -> tuple[int, float]:
    """(bytes moved, seconds) of one round: every thread copies its buffer until the round's time is up."""
    threads = len(pairs)
    copied = [0] * threads
    start = threading.Barrier(threads + 1)
    stop_at = [0.0]

    def worker(i: int) -> None:
        src, dst = pairs[i]
        start.wait()
        while time.perf_counter() < stop_at[0]:
            ctypes.memmove(dst, src, size)
            copied[i] += 1

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    began = time.perf_counter()
    stop_at[0] = began + seconds
    start.wait()
    for w in workers:
        w.join()
    return 2 * size * sum(copied), max(time.perf_counter() - began, 1e-9)  # each copy reads and writes ``size``
