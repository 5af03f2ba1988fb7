"""Whether this process runs elevated: the install then registers the system-wide service flavour (DESIGN.md §5)."""

from __future__ import annotations

import ctypes
import os


def is_admin() -> bool:
    """Elevated (root / Administrator): the install asks for the system-wide flavour."""
    if hasattr(os, "geteuid"):
        return os.geteuid() == 0
    try:
        return bool(ctypes.windll.shell32.IsUserAnAdmin())  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return False
