"""Finds the ``templates/`` and ``payload/`` folders the same way installed, editable and frozen.

Where they are:
- frozen (PyInstaller): unpacked beside the code under ``sys._MEIPASS``;
- installed wheel: ``bootstrap/_data/<name>`` (``pyproject.toml`` force-includes them there);
- source checkout or editable install: ``<repo>/<name>``, next to the package (the design card's layout).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from bootstrap.core.errors import QwenKitError

ResourceName = Literal["templates", "payload"]
_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # bootstrap/, two levels up from core/resources.py


def candidates(name: ResourceName) -> list[Path]:
    """Places ``name`` may be, most specific first."""
    found: list[Path] = []
    meipass = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and meipass:
        found.append(Path(meipass) / name)
    found.append(_PACKAGE_DIR / "_data" / name)
    # Only a real checkout (pyproject.toml beside the package) counts: a stray "templates" folder next to
    # site-packages must never be picked up.
    if (_PACKAGE_DIR.parent / "pyproject.toml").is_file():
        found.append(_PACKAGE_DIR.parent / name)
    return found


def resource_dir(name: ResourceName) -> Path:
    """The folder ``name``; a missing one means a broken installation (exit 1, reinstall)."""
    for path in candidates(name):
        if (path / "README.md").is_file():
            return path
    raise QwenKitError(
        f"'{name}' not found (looked in: {', '.join(str(p) for p in candidates(name))})",
        "The installation is incomplete: reinstall QwenClientKit.",
    )
