"""The drive a bundle is written to: is there room, and can its filesystem hold every file?

Both are asked before any download (``bundle.create`` step 4): a USB stick that fills up at 90 % of a 20 GB model,
or a FAT32 stick that refuses the model's first byte past 4 GiB, would waste the whole download.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from bootstrap.core.console import t
from bootstrap.core.disk_space import existing_parent, free_bytes
from bootstrap.core.errors import UnsupportedMachine
from bootstrap.core.sizes import human_size

# FAT32 stores a file's size in 32 bits (Microsoft "FAT32 File System Specification", directory entry
# DIR_FileSize): 4 GiB − 1 byte is the largest file it can hold.
FAT32_MAX_FILE = (1 << 32) - 1
FAT_TYPES = frozenset({"vfat", "msdos", "fat", "fat32", "fat16"})


def fits(needed: int, free: int) -> bool:
    """Whether ``needed`` more bytes can be written where ``free`` bytes are left."""
    return needed <= free


def too_large_for(fstype: str | None, sizes: Mapping[str, int]) -> list[str]:
    """The files a filesystem of type ``fstype`` cannot hold (FAT32: 4 GiB − 1 byte per file)."""
    if (fstype or "").lower() not in FAT_TYPES:
        return []
    return [rel for rel, size in sizes.items() if size > FAT32_MAX_FILE]


def mount_fstype(path: Path, mounts: Sequence[tuple[str, str]]) -> str | None:
    """The type of the filesystem holding ``path``: the longest mount point (``(mountpoint, fstype)``) above it."""
    best: tuple[int, str] | None = None
    text = str(path)
    for mountpoint, fstype in mounts:
        mp = mountpoint.rstrip("/\\") or mountpoint
        inside = text == mp or text.startswith(mp if mp.endswith(("/", "\\")) else mp + os.sep) or mp in ("/", "")
        if inside and (best is None or len(mp) > best[0]):
            best = (len(mp), fstype)
    return best[1] if best else None


def _mounts() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount psutil can list; none when it cannot."""
    try:
        import psutil

        return [(p.mountpoint, p.fstype) for p in psutil.disk_partitions(all=True)]
    except (ImportError, OSError):
        return []


def check_room(out: Path, sizes: Mapping[str, int], needed: int) -> int:
    """The free bytes at ``out``; UnsupportedMachine (exit 3) when ``needed`` more bytes do not fit there or a file
    of ``sizes`` (bundle path → bytes) exceeds what its filesystem holds in one file."""
    free = free_bytes(out)
    fstype = mount_fstype(existing_parent(out).resolve(), _mounts())
    big = too_large_for(fstype, sizes)
    if big:
        raise UnsupportedMachine(t("bcreate.err_fat32", path=big[0], size=human_size(sizes[big[0]], 2),
                                   fstype=fstype or "?"), t("bcreate.hint_fat32"))
    if not fits(needed, free):
        raise UnsupportedMachine(t("bcreate.err_space", path=str(out), needed=human_size(needed, 2),
                                   free=human_size(free, 2)),
                                 t("bcreate.hint_space", missing=human_size(needed - free, 2)))
    return free
