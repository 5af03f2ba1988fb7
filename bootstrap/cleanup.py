"""After a successful install or upgrade: delete what the previous install used and nothing uses any more.

Runs only after ``state.json`` records the new install (the commit point), so a kill before it leaves the old files
for a rollback, and a kill during it leaves only files a rerun deletes again. Only paths inside the home's own
folders are ever removed; a local ``.gguf`` the user pointed at is never touched.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from . import file_swap
from .home import Home
from .state import InstallState, resolve_in_home


def _inside(path: Path, folder: Path) -> bool:
    return folder in path.parents


def _remove_empty_parents(path: Path, stop: Path) -> None:
    parent = path.parent
    while parent != stop and _inside(parent, stop):
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def after_success(home: Home, previous: InstallState | None, current: InstallState) -> list[Path]:
    """Remove the previous install's leftovers; returns what was removed (for the log line)."""
    removed: list[Path] = []
    file_swap.finish(home)  # old versions of swapped files, and the journal
    keep = {resolve_in_home(home, f.path) for f in current.files}
    if previous is not None:
        for record in previous.files:
            old = resolve_in_home(home, record.path)
            if old not in keep and _inside(old, home.models_dir) and old.is_file():
                old.unlink()
                removed.append(old)
                _remove_empty_parents(old, home.models_dir)
        old_engine = resolve_in_home(home, previous.engine.dir)
        if old_engine != resolve_in_home(home, current.engine.dir) and _inside(old_engine, home.engines_dir):
            shutil.rmtree(old_engine, ignore_errors=True)
            removed.append(old_engine)
    # Staged downloads that were not used (an upgrade abandoned for another), and partial downloads of files that
    # are now complete: nothing would ever resume them.
    shutil.rmtree(file_swap.staged_root(home), ignore_errors=True)
    done = {f.sha256 for f in current.files} | ({f.sha256 for f in previous.files} if previous else set())
    if home.partial_dir.is_dir():
        for part in home.partial_dir.iterdir():
            if part.stem in done and part.suffix in (".part", ".json"):
                with contextlib.suppress(OSError):
                    part.unlink()
                    removed.append(part)
    return removed
