"""RAM probe: total and available bytes (psutil), the planner's budget for weights kept on the CPU."""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from bootstrap.detect.hardware import MemoryInfo


@dataclass(frozen=True)
class MemoryReadings:
    total: int
    available: int


def probe_memory(r: MemoryReadings) -> MemoryInfo:
    total = max(0, int(r.total))
    return MemoryInfo(total_bytes=total, available_bytes=min(max(0, int(r.available)), total))


def read_memory() -> MemoryReadings:
    vm = psutil.virtual_memory()
    return MemoryReadings(total=int(vm.total), available=int(vm.available))
