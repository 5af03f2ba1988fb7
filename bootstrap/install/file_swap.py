"""Swapping model files of a live install for their upgraded versions, with a journal so a kill can be undone.

An upgrade that changes a file at the same path (a new revision of ``Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf``) downloads
the new bytes into staging while the old file keeps serving. The swap then moves each old file aside and the new one
into place, two renames per file on one filesystem. Before the first rename a journal (``cache/swap.json``) lists
every move, so whatever the moment of a kill, ``undo`` finds each file in one of three states and puts the old file
back; ``state.json`` is the commit point (written only after the new install answered a chat request), and only
after it are the old files deleted (``cleanup``). The journal also lists what the previous install leaves behind
(files at other paths, an older engine folder), so a kill right after the commit still gets them deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from bootstrap.core.atomic_file import fsync_dir, write_atomic
from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.file_formats import read_record
from bootstrap.core.home import Home

JOURNAL_SCHEMA = 1


@dataclass(frozen=True)
class Move:
    """One file of the live install replaced by a verified new version."""

    final: Path  # where the install uses the file
    staged: Path  # the verified new bytes, until swapped
    backup: Path  # where the old file waits until the upgrade is committed
    sha256: str  # of the new bytes: how a committed swap is recognised in state.json

    def to_json(self) -> dict[str, str]:
        return {"final": str(self.final), "staged": str(self.staged), "backup": str(self.backup),
                "sha256": self.sha256}


def journal_path(home: Home) -> Path:
    return home.root / "cache" / "swap.json"


def backup_dir(home: Home) -> Path:
    """Old files during a swap, keyed by nothing but their final name inside a per-swap folder."""
    return home.root / "cache" / "previous"


def staged_root(home: Home) -> Path:
    return home.staging_dir / "files"


def staged_path(home: Home, sha256: str, name: str) -> Path:
    """Where the new version of a live file is downloaded: one folder per content hash."""
    return staged_root(home) / sha256 / name


def plan_move(home: Home, final: Path, sha256: str) -> Move:
    return Move(final, staged_path(home, sha256, final.name), backup_dir(home) / sha256 / final.name, sha256)


@dataclass(frozen=True)
class Journal:
    """An upgrade in progress: the file moves, what the previous install leaves behind, and how to recognise
    that ``state.json`` already records the new install (then only the deletions remain to be done)."""

    moves: tuple[Move, ...]
    obsolete: tuple[Path, ...]  # the previous install's files and engine folder that the new one does not use
    new_files: tuple[tuple[str, str], ...]  # (path as state.json records it, sha256) of every new file
    new_engine: str  # the new engine folder as state.json records it

    def to_json(self) -> dict[str, object]:
        return {"schema": JOURNAL_SCHEMA, "moves": [m.to_json() for m in self.moves],
                "obsolete": [str(p) for p in self.obsolete], "new_files": [list(f) for f in self.new_files],
                "new_engine": self.new_engine}


def begin(home: Home, journal: Journal) -> None:
    """Record the upgrade (atomically) before anything of the live install changes."""
    data = json.dumps(journal.to_json(), ensure_ascii=False, indent=2) + "\n"
    write_atomic(journal_path(home), data.encode("utf-8"))


def read_journal(home: Home) -> Journal | None:
    """The journal of an unfinished upgrade, or None. It is written atomically, so a half-written one cannot
    exist; one that does not parse (disk damage) is reported as none, and its backups stay untouched on disk."""
    doc = read_record(journal_path(home))
    if doc is None:
        return None
    try:
        return Journal(
            moves=tuple(Move(Path(m["final"]), Path(m["staged"]), Path(m["backup"]), str(m["sha256"]))
                        for m in doc["moves"]),
            obsolete=tuple(Path(p) for p in doc["obsolete"]),
            new_files=tuple((str(a), str(b)) for a, b in doc["new_files"]),
            new_engine=str(doc["new_engine"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _replace(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dst)
    fsync_dir(dst.parent)
    if src.parent != dst.parent:
        fsync_dir(src.parent)


def apply(moves: tuple[Move, ...]) -> None:
    """Old file aside, new file in. Idempotent: a rerun after a kill skips what is done."""
    for i, move in enumerate(moves):
        if move.final.exists() and not move.backup.exists() and move.staged.exists():
            _replace(move.final, move.backup)
        if i == 0:
            checkpoint("swap-half")
        if move.staged.exists():
            _replace(move.staged, move.final)


def undo(moves: tuple[Move, ...]) -> None:
    """Put every old file back and the new one back in staging (kept, so a retry does not download it again).

    Each file is in one of three states: nothing moved; old file aside and new still staged; both moved. The
    backup's existence tells them apart, so this is safe after a kill at any point, and safe to run twice.
    """
    for move in reversed(moves):
        if not move.backup.exists():
            continue  # nothing moved for this file, or already undone
        if move.final.exists() and not move.staged.exists():
            _replace(move.final, move.staged)
        _replace(move.backup, move.final)


def finish(home: Home) -> None:
    """After the commit: the old files and the journal go."""
    shutil.rmtree(backup_dir(home), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        journal_path(home).unlink()


def discard(home: Home) -> None:
    """After a complete undo: the journal goes; the staged files stay for a retry, and the (now empty) backup
    folders are removed without ever deleting a file in them."""
    with contextlib.suppress(FileNotFoundError):
        journal_path(home).unlink()
    root = backup_dir(home)
    if root.is_dir():
        for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()
        with contextlib.suppress(OSError):
            root.rmdir()
