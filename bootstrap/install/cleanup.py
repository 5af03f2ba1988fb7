"""After a successful install or upgrade: delete what the previous install used and nothing uses any more.

Runs only after ``state.json`` records the new install (the commit point), so a kill before it leaves the old files
for a rollback. What to delete was written into the upgrade journal before anything changed (``obsolete``), so a kill
during the deletions, or right after the commit, is finished by the next run (``installer.recover``). Only paths
inside the home's own ``models/`` and ``engine/`` folders are ever removed; a local ``.gguf`` the user pointed at is
never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from bootstrap.core.home import Home
from bootstrap.install import file_swap
from bootstrap.record.state import InstallState, resolve_in_home


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies under ``folder`` once ``..`` and links among its parents are resolved (``state.json``
    stores paths as text, and a damaged or hand-edited record must never aim a deletion outside the home). The
    last part may itself be a link: it is removed, never followed."""
    if path.name in ("", ".", ".."):
        return False
    real = Path(os.path.realpath(path.parent)) / path.name
    return Path(os.path.realpath(folder)) in real.parents


def obsolete_paths(home: Home, previous: InstallState, new_files: Iterable[Path], new_engine: Path) -> list[Path]:
    """The previous install's model files and engine folder that the new install does not use."""
    keep = set(new_files) | {resolve_in_home(home, f.path) for m in previous.library for f in m.files}
    out = [p for p in (resolve_in_home(home, f.path) for f in previous.files)
           if p not in keep and _inside(p, home.models_dir)]
    old_engine = resolve_in_home(home, previous.engine.dir)
    if old_engine != new_engine and _inside(old_engine, home.engines_dir):
        out.append(old_engine)
    return out


def remove_empty_parents(path: Path, stop: Path) -> None:
    """Remove the folders ``path`` leaves empty, up to (not including) ``stop``."""
    parent = path.parent
    while parent != stop and _inside(parent, stop):
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def remove_obsolete(home: Home, paths: Iterable[Path]) -> list[Path]:
    """Delete the listed leftovers (a rerun after a kill deletes the rest); returns what went."""
    removed = []
    for path in paths:
        if _inside(path, home.engines_dir) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif _inside(path, home.models_dir) and (path.is_file() or path.is_symlink()):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            remove_empty_parents(path, home.models_dir)
        else:
            continue
        removed.append(path)
    return removed


def after_success(home: Home, current: InstallState, journal: file_swap.Journal | None) -> list[Path]:
    """Finish a committed install: leftovers of the previous one, the journal, unused staging and partials."""
    removed = remove_obsolete(home, journal.obsolete) if journal is not None else []
    file_swap.finish(home)  # old versions of swapped files, and the journal
    # Staged downloads that were not used (an upgrade abandoned for another), and partial downloads of files that
    # are now complete: nothing would ever resume them.
    shutil.rmtree(file_swap.staged_root(home), ignore_errors=True)
    with contextlib.suppress(OSError):  # the staging folder itself, when nothing else waits there
        home.staging_dir.rmdir()
    removed += _unused_templates(home, current)
    done = {f.sha256 for f in current.files}
    if home.partial_dir.is_dir():
        for part in home.partial_dir.iterdir():
            if part.stem in done and part.suffix in (".part", ".json"):
                with contextlib.suppress(OSError):
                    part.unlink()
                    removed.append(part)
    return removed


def _unused_templates(home: Home, current: InstallState) -> list[Path]:
    """The kit's chat templates (``place/chat_template.py``) that no installed model is served with any more: an
    upgrade writes its model's next to the previous one's, which a rollback would still have needed."""
    folder = home.chat_templates_dir
    if not folder.is_dir():
        return []
    records = [current.server.chat_template, *(m.chat_template for m in current.library)]
    keep = {resolve_in_home(home, r.path) for r in records if r is not None and r.path is not None}
    removed = []
    for path in folder.iterdir():
        if path.suffix == ".jinja" and path not in keep and _inside(path, folder) and path.is_file():
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed
