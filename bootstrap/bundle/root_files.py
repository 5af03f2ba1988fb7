"""The files at a bundle's root, where people look first: the setup executables (``README.txt`` and the launchers
that run the kit without a setup: ``bundle.launchers``).

A setup is what a person double-clicks on the target machine (it finds ``payload/`` beside itself), so each is
copied with a hash check, marked executable where that means something, and listed with the OS it runs on. Root
files an earlier bundle listed and this one does not are removed; nothing else at the root is touched (the folder
may be a USB drive's root holding the owner's files).
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from pathlib import Path

from bootstrap.bundle.selection import Want
from bootstrap.catalog.bundle_manifest import read_dir
from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError, UsageError
from bootstrap.core.hashing import sha256_file
from bootstrap.fetch.source_bundle import place_from_bundle

README = "README.txt"


def setup_platform(head: bytes) -> str | None:
    """The OS an executable is for, from its first bytes: PE ("MZ", PE/COFF spec), ELF (``\\x7fELF``), Mach-O
    (``feedface``/``feedfacf`` either byte order, or a fat binary ``cafebabe``; ``<mach-o/loader.h>``)."""
    if head.startswith(b"MZ"):
        return "Windows"
    if head.startswith(b"\x7fELF"):
        return "Linux"
    if head[:4] in (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe",
                    b"\xca\xfe\xba\xbe"):
        return "Darwin"
    return None


def setup_system(path: Path) -> str | None:
    """The OS a setup executable runs on, from its first bytes (or a ``.exe`` name)."""
    with path.open("rb") as fh:
        return setup_platform(fh.read(4)) or ("Windows" if path.suffix.lower() == ".exe" else None)


def setups(paths: Sequence[Path], reserved: Collection[str]) -> list[Path]:
    """The setup executables to bundle: this one when it is the frozen setup, then ``paths`` (``--setup``).

    UsageError (exit 2) for a missing file or a name taken twice or by one of the bundle's own root names.
    """
    found = [Path(sys.executable)] if getattr(sys, "frozen", False) else []
    for path in paths:
        if not Path(path).is_file():
            raise UsageError(t("bcreate.err_setup", path=str(path)))
        found.append(Path(path))
    names = [p.name for p in found]
    for name in names:
        if name in (README, *reserved) or names.count(name) > 1:
            raise UsageError(t("bcreate.err_setup_name", name=name))
    return found


def place_setups(out: Path, paths: Sequence[Path], work: Path) -> list[Want]:
    """Setup executables at the bundle root (copied with a hash check; executable where that means something)."""
    placed = []
    for path in paths:
        size, sha = path.stat().st_size, sha256_file(path)
        system = setup_system(path)
        dest = out / path.name
        if dest.is_symlink():  # a link would be copied as a link (or not at all) with the drive
            dest.unlink()
        place_from_bundle(path, dest, size, sha, work)
        if system != "Windows":
            dest.chmod(0o755)  # an executable people run from the drive
        placed.append(Want(path.name, "setup", size, sha, platform=system))
    return placed


def old_root_files(out: Path) -> set[str]:
    """Setup and README files an earlier bundle in ``out`` listed (rewritten or removed by this one)."""
    try:
        return {f.path for f in read_dir(out).files if f.kind in ("setup", "doc") and "/" not in f.path}
    except QwenKitError:
        return set()


def remove_old_root(out: Path, old: Collection[str], keep: Collection[str]) -> None:
    """Remove the root files an earlier bundle listed (``old``) that this one does not (``keep``)."""
    for name in sorted(set(old) - set(keep)):
        path = out / name
        if path.is_file() or path.is_symlink():
            path.unlink()
