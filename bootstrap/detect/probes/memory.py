"""RAM probe: total and available bytes (psutil), the planner's budget for weights kept on the CPU, and the measured
bandwidth (``bandwidth.py``), the speed model's bound for those weights."""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from bootstrap.detect.hardware import MemoryInfo
from bootstrap.detect.probes.bandwidth import read_bandwidth


@dataclass(frozen=True)
class MemoryReadings:
    total: int
    available: int
    bandwidth: int | None = None  # bytes read per second (probes/bandwidth.py); None: not measured
    bandwidth_threads: int | None = None


def probe_memory(r: MemoryReadings) -> MemoryInfo:
    total = max(0, int(r.total))
    measured = r.bandwidth is not None and r.bandwidth > 0 and (r.bandwidth_threads or 0) > 0
    return MemoryInfo(total_bytes=total, available_bytes=min(max(0, int(r.available)), total),
                      bandwidth_bytes_per_s=int(r.bandwidth) if measured and r.bandwidth else None,
                      bandwidth_threads=r.bandwidth_threads if measured else None)


def read_memory(threads: int | None = None) -> MemoryReadings:
    """Totals, and with ``threads`` (the plan's thread count) the bandwidth those threads reach (< 1 s)."""
    vm = psutil.virtual_memory()
    reading = read_bandwidth(threads) if threads else None
    return MemoryReadings(total=int(vm.total), available=int(vm.available),
                          bandwidth=reading.bytes_per_s if reading else None,
                          bandwidth_threads=reading.threads if reading else None)
