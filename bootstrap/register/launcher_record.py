"""What ``state.json`` keeps of the ``qwenkit`` launcher (``register.shell_command``), apart from the code that writes
it so reading a record (every ``status``, every no-op rerun) imports no template engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bootstrap.core.hashing import sha256_bytes


@dataclass(frozen=True)
class LauncherRecord:
    """Enough for uninstall to remove exactly what was written, and for a rerun to see nothing changed."""

    path: str  # the launcher (absolute)
    sha256: str  # of the bytes written
    target: str  # the program it runs
    path_entry: str | None = None  # the folder this install added to the Windows user PATH (None: none added)


def launcher_intact(record: LauncherRecord | None) -> bool:
    """The launcher is still exactly as written and what it runs still exists (a no-op rerun then leaves it)."""
    if record is None:
        return False
    try:
        return Path(record.target).is_file() and sha256_bytes(Path(record.path).read_bytes()) == record.sha256
    except OSError:
        return False
