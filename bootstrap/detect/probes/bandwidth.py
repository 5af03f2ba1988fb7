"""RAM bandwidth probe: how fast the CPU streams memory, the number that bounds decode speed for weights in RAM.

Decode reads every active weight once per token, so tokens/s on the CPU is about bandwidth ÷ bytes per token
(docs/speed.md). Memory type and channel count are not visible without administrator tools, so we measure: each
of ``threads`` threads reads its own pair of equal buffers (far larger than any L3) with the C library's ``memcmp``
(equal buffers are read to the end, nothing is written: a read stream, as decode is) until a fixed time has passed.
ctypes foreign calls release the GIL, so the reads run in parallel like llama.cpp's threads do. Where no C library
answers, ``memmove`` copies instead and bytes read plus written are counted. Bounded: at most
``MAX_TOTAL_BYTES`` allocated and ``COPY_SECONDS`` of copying in ``ROUNDS`` rounds, the best one kept (under
1 s in all with the page touching).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

MIB = 1 << 20
BUFFER_BYTES = 32 * MIB  # per thread and buffer (two per thread): above the L3 share of one core on any desktop CPU
MIN_BUFFER_BYTES = 16 * MIB
MAX_TOTAL_BYTES = 256 * MIB  # both buffers over all threads
COPY_SECONDS = 0.24
ROUNDS = 3  # the best round: another process's burst slows one round, not all


@dataclass(frozen=True)
class BandwidthReading:
    """One measurement: bytes read per second over all threads (``method`` "read"; "copy": read + written)."""

    bytes_per_s: int
    threads: int
    buffer_bytes: int  # per thread and direction
    seconds: float  # streaming time of the best round (not counting allocation)
    method: str = "read"


def _buffer_bytes(threads: int) -> int:
    return max(MIN_BUFFER_BYTES, min(BUFFER_BYTES, MAX_TOTAL_BYTES // (2 * threads)))


def _memcmp() -> Callable[..., int] | None:
    """The C library's memcmp as a ctypes function (which releases the GIL), or None."""
    try:
        lib = ctypes.cdll.msvcrt if sys.platform == "win32" else ctypes.CDLL(ctypes.util.find_library("c"))
        fn = lib.memcmp
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


def read_bandwidth(threads: int, copy_seconds: float = COPY_SECONDS, rounds: int = ROUNDS,
                   median: bool = False) -> BandwidthReading | None:
    """Measure with ``threads`` streaming threads: the best of ``rounds`` rounds (``median``: their median, which a
    benchmark compares with runs as long as its own); None when the buffers cannot be allocated (low memory)."""
    threads = max(1, int(threads))
    size = _buffer_bytes(threads)
    try:
        pairs = [(ctypes.create_string_buffer(size), ctypes.create_string_buffer(size)) for _ in range(threads)]
    except MemoryError:
        return None
    for src, dst in pairs:  # touch every page (untouched zero pages would all be one cached page), equal bytes
        ctypes.memset(src, 1, size)
        ctypes.memset(dst, 1, size)
    memcmp = _memcmp()
    if memcmp is not None:
        def step(a: ctypes.Array[ctypes.c_char], b: ctypes.Array[ctypes.c_char]) -> None:
            memcmp(a, b, size)
    else:
        def step(a: ctypes.Array[ctypes.c_char], b: ctypes.Array[ctypes.c_char]) -> None:
            ctypes.memmove(b, a, size)
    results = sorted((_round(pairs, step, copy_seconds / rounds) for _ in range(rounds)), key=lambda r: r[0] / r[1])
    count, elapsed = results[len(results) // 2] if median else results[-1]
    moved = 2 * size * count  # memcmp reads both buffers; a copy reads one and writes the other
    method = "read" if memcmp is not None else "copy"
    return BandwidthReading(int(moved / elapsed), threads, size, round(elapsed, 3), method) if count else None


Step = Callable[["ctypes.Array[ctypes.c_char]", "ctypes.Array[ctypes.c_char]"], None]


def _round(pairs: list[tuple[ctypes.Array[ctypes.c_char], ctypes.Array[ctypes.c_char]]], step: Step,
           seconds: float) -> tuple[int, float]:
    """(passes over a pair, seconds) of one round: every thread streams its pair until the round's time is up."""
    threads = len(pairs)
    done = [0] * threads
    start = threading.Barrier(threads + 1)
    stop_at = [0.0]

    def worker(i: int) -> None:
        a, b = pairs[i]
        start.wait()
        while time.perf_counter() < stop_at[0]:
            step(a, b)
            done[i] += 1

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    began = time.perf_counter()
    stop_at[0] = began + seconds
    start.wait()
    for w in workers:
        w.join()
    return sum(done), max(time.perf_counter() - began, 1e-9)
