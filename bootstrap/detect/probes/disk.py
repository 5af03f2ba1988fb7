"""Disk probe: free space where the install home lives (or will live: its nearest existing parent)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from bootstrap.core.disk_space import existing_parent
from bootstrap.detect.hardware import DiskInfo


@dataclass(frozen=True)
class DiskReadings:
    path: str
    total: int
    free: int


def probe_disk(r: DiskReadings) -> DiskInfo:
    return DiskInfo(path=r.path, free_bytes=max(0, int(r.free)), total_bytes=max(0, int(r.total)))


def read_disk(home: Path) -> DiskReadings:
    where = existing_parent(home)
    usage = shutil.disk_usage(where)
    return DiskReadings(path=str(where), total=usage.total, free=usage.free)
