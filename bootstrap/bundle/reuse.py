"""Bytes a bundle need not download: files already in the folder, and the same files elsewhere on this machine.

A file is reused only once its bytes are proven: a file already in the bundle folder is hashed (or its record from
an interrupted run of this folder still matches: size, mtime and inode); a file of the install home or of another
bundle (``--reuse``) is hashed, then hard-linked (same filesystem: no bytes written) or copied with a hash check
(``verified_copy``). What an earlier bundle left in ``payload/`` and the new one does not list is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bootstrap.bundle.selection import Want
from bootstrap.catalog.bundle_manifest import read_dir, unlisted
from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import info, t, warn
from bootstrap.core.errors import QwenKitError, UsageError
from bootstrap.core.file_formats import read_record
from bootstrap.core.hashing import sha256_file
from bootstrap.core.home import Home, resolve_home
from bootstrap.fetch.records import RemoteFile
from bootstrap.record.state import file_intact, load_state, resolve_in_home

RECORD = "verified.json"  # in the create's work folder: {path: [size, mtime_ns, inode, sha256]}


# ---- where the same bytes are ----------------------------------------------------------------------------------


def _home_files(home: Home) -> dict[str, list[Path]]:
    """sha256 → model files the install home verified (and that still look untouched)."""
    try:
        state = load_state(home)
    except QwenKitError as exc:
        warn(t("bcreate.home_unreadable", home=str(home.root), detail=exc.message))
        return {}
    found: dict[str, list[Path]] = {}
    for record in state.files if state is not None else ():
        path = resolve_in_home(home, record.path)
        if file_intact(record, path):
            found.setdefault(record.sha256, []).append(path)
    return found


def _bundle_files(roots: Sequence[Path]) -> dict[str, list[Path]]:
    """sha256 → files of other bundles (their manifests must be intact; the bytes are hashed before use)."""
    found: dict[str, list[Path]] = {}
    for root in roots:
        for entry in read_dir(Path(root)).files:
            found.setdefault(entry.sha256, []).append(Path(root).joinpath(*entry.path.split("/")))
    return found


def local_sources(home_dir: Path | None, bundles: Sequence[Path]) -> dict[str, list[Path]]:
    """sha256 → files on this machine that may hold a bundle file: the install home's (``home_dir``, else the
    default home when it holds an install) and those of the ``bundles`` named with ``--reuse``."""
    found: dict[str, list[Path]] = {}
    home = Home(home_dir.resolve()) if home_dir is not None else resolve_home(None)
    if home_dir is not None or home.state_file.is_file():
        found.update(_home_files(home))
    for sha, paths in _bundle_files(bundles).items():
        found.setdefault(sha, []).extend(paths)
    return found


# ---- what this folder already holds -------------------------------------------------------------------------------


class VerifiedRecord:
    """Files of the bundle folder proven to hold their bytes, with what they looked like then.

    Saved after every file it vouches for, so a rerun after a kill trusts what was already placed without reading
    it again; it lives in the work folder, which a finished create removes (the next run hashes once more).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, list[Any]] = {}
        doc = read_record(path)
        if isinstance(doc, dict):
            self.entries = doc

    def trusted(self, dest: Path, want: Want) -> bool:
        """``dest`` holds the wanted bytes: its record still matches, else it is hashed once (and recorded)."""
        try:
            st = dest.lstat()
        except OSError:
            return False
        if not dest.is_file() or dest.is_symlink() or st.st_size != want.size:
            return False
        if self.entries.get(want.rel) == [st.st_size, st.st_mtime_ns, st.st_ino, want.sha256]:
            return True
        info(t("bcreate.checking", path=want.rel))
        if sha256_file(dest) != want.sha256:
            return False
        self.stamp(dest, want)
        return True

    def stamp(self, dest: Path, want: Want) -> None:
        """Record that ``dest`` was just proven to hold ``want``'s bytes."""
        st = dest.stat()
        self.entries[want.rel] = [st.st_size, st.st_mtime_ns, st.st_ino, want.sha256]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(self.entries, indent=0).encode("utf-8"))


# ---- sorting the wanted files ---------------------------------------------------------------------------------


@dataclass
class Sorted:
    """The wanted files that still need bytes, by where the bytes come from."""

    downloads: list[tuple[RemoteFile, Path, Want]] = field(default_factory=list)
    copies: list[tuple[Path, Path, Want]] = field(default_factory=list)  # (verified source, destination, want)
    reused: int = 0  # bytes already in place: kept or hard-linked


def _link(src: Path, dest: Path) -> bool:
    """Hard-link ``src`` at ``dest``; False when linking is impossible (other filesystem, FAT)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.link")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        return False
    os.replace(tmp, dest)
    return True


def _verified_source(want: Want, hashed: dict[Path, str]) -> Path | None:
    """The first local file holding exactly the wanted bytes (hashed: a home file may have been edited)."""
    for src in want.local:
        try:
            if src.stat().st_size != want.size:
                continue
        except OSError:
            continue
        if src not in hashed:
            info(t("bcreate.checking", path=str(src)))
            hashed[src] = sha256_file(src)
        if hashed[src] == want.sha256:
            return src
    return None


def sort_out(out: Path, wants: Sequence[Want], record: VerifiedRecord) -> Sorted:
    """Keep what the folder already holds, hard-link what is on this disk; the downloads and copies left."""
    result = Sorted()
    hashed: dict[Path, str] = {}  # local sources hashed this run
    for want in wants:
        dest = out.joinpath(*want.rel.split("/"))
        if record.trusted(dest, want):
            result.reused += want.size
            continue
        src = _verified_source(want, hashed) if want.local else None
        if src is not None and _link(src, dest):
            info(t("bcreate.linked", path=want.rel, source=str(src)))
            record.stamp(dest, want)
            result.reused += want.size
        elif src is not None:
            result.copies.append((src, dest, want))
        elif want.remote is not None:
            result.downloads.append((want.remote, dest, want))
        else:
            raise UsageError(t("bcreate.err_no_bytes", path=want.rel))
    return result


# ---- what an earlier bundle left ------------------------------------------------------------------------------


def remove_stale(out: Path, keep: Container[str]) -> int:
    """Remove files under ``out/payload`` the new manifest does not list (links are removed, never followed), and
    the folders that leaves empty."""
    stale = unlisted(out, keep)
    for rel in stale:
        (out / rel).unlink()
    for dirpath, dirnames, _files in os.walk(out / "payload", topdown=False, followlinks=False):
        for name in dirnames:
            if not (Path(dirpath) / name).is_symlink():
                with contextlib.suppress(OSError):  # not empty: it holds a kept file
                    (Path(dirpath) / name).rmdir()
    if stale:
        info(t("bcreate.stale_removed", count=len(stale)))
    return len(stale)
