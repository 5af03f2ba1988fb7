"""Free space where files will land, and the one exit-3 error for "not enough disk".

Shared by the doctor's disk check and the fetch stage's pre-check (a download that dies at 67 % with ENOSPC is a
top failure of peers: docs/field-failures.md, failure mode 6). Paths may not exist yet (the home is created by
install): every function asks the nearest existing ancestor.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bootstrap.core.console import t
from bootstrap.core.errors import UnsupportedMachine
from bootstrap.core.sizes import gib_text


def existing_parent(path: Path) -> Path:
    """``path`` itself, or its closest ancestor that exists."""
    current = Path(path).absolute()
    while not current.exists() and current.parent != current:
        current = current.parent
    return current


def free_bytes(path: Path) -> int:
    """Free bytes on the filesystem that holds (or would hold) ``path``."""
    return shutil.disk_usage(existing_parent(path)).free


def device_of(path: Path) -> int:
    """The filesystem (``st_dev``) that holds (or would hold) ``path``."""
    return existing_parent(path).stat().st_dev


def ensure_space(needed: int, free: int, where: Path) -> None:
    """UnsupportedMachine (exit 3) naming the bytes needed when ``free`` cannot hold ``needed``."""
    if needed > free:
        raise UnsupportedMachine(
            t("fetch.disk", path=where, needed=needed, needed_gib=gib_text(needed, 2), free=free),
            hint=t("fetch.hint.disk", missing=needed - free),
        )
