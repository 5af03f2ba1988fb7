"""``qwenkit uninstall [--keep-models] [--yes]``: stop the service and delete what the installer put in the home.

Deletes only the home's own entries (DESIGN.md §3: ``state.json``, ``engine/``, ``cache/``, ``venv/``, ``secrets/``,
the start scripts, ``logs/``, ``service/``, ``run/``, and ``models/`` unless ``--keep-models``), and only in a folder
that carries our marker (``state.json`` or ``.lock``), so a ``QWENKIT_HOME`` pointed at the wrong folder cannot cost
the user their own ``venv/`` or ``logs/``. Links are removed, never followed out of the home. Files the user put there
stay, and then the home stays too. A service that cannot be removed is a warning: the files still go.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bootstrap.app.commands.service import is_admin
from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError, ServerError, UsageError
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.home_lock import home_lock
from bootstrap.core.processes import run_command
from bootstrap.core.sizes import human_size
from bootstrap.register import (
    FallbackManager,
    HostProbe,
    choose_manager,
    recorded_manager,
    this_system,
    uninstall_service,
)
from bootstrap.register.base import Runner

YES_ANSWERS = frozenset({"y", "yes", "是", "是的"})
# A junction's reparse tag (winnt.h, IO_REPARSE_TAG_MOUNT_POINT); ``stat`` defines it only on Windows builds.
_JUNCTION_TAG = 0xA0000003


class UninstallIncomplete(ServerError):
    """Some entries could not be deleted, almost always because a running server still holds them open (exit 6)."""


def _our_files(home: Home) -> list[Path]:
    return [home.state_file, home.run_sh, home.run_bat]


def _our_entries(home: Home, keep_models: bool) -> list[Path]:
    """Our entries that exist, in deletion order: the record first (a half-done uninstall no longer looks installed),
    models last (the biggest, and the one ``--keep-models`` spares)."""
    candidates = [*_our_files(home), home.services_dir, home.run_dir, home.engines_dir, home.venv_dir,
                  home.secrets_dir, home.staging_dir.parent, home.logs_dir, home.bundle_dir]
    # A crash between write and rename (atomic_file) leaves ".<name>.<random>.tmp" next to our files.
    for path in _our_files(home):
        candidates += sorted(home.root.glob(f".{path.name}.*.tmp"))
    if not keep_models:
        candidates.append(home.models_dir)
    return [path for path in candidates if os.path.lexists(path)]


def _is_ours(home: Home) -> bool:
    """The installer writes ``.lock`` before anything else and ``state.json`` at the end: either marks the home."""
    return os.path.lexists(home.state_file) or os.path.lexists(home.lock_file)


def _is_link(path: Path) -> bool:
    """A symlink, or a Windows junction (which ``is_symlink`` does not report before Python 3.12)."""
    if path.is_symlink():
        return True
    try:
        return getattr(path.lstat(), "st_reparse_tag", 0) == _JUNCTION_TAG
    except OSError:
        return False


def tree_size(path: Path) -> int:
    """Bytes under ``path`` without following links (a link counts as itself, not as what it points to).

    Iterative, so a hostile deeply nested tree cannot exhaust the recursion limit.
    """
    total = 0
    pending = [path]
    while pending:
        current = pending.pop()
        try:
            if _is_link(current) or not current.is_dir():
                total += current.lstat().st_size
                continue
            pending.extend(Path(entry.path) for entry in os.scandir(current))
        except OSError:
            continue
    return total


def _retry_writable(func: Callable[..., Any], path: str, *_: Any) -> None:
    """Windows refuses to delete read-only files (some wheels ship them): clear the flag and try once more."""
    os.chmod(path, stat.S_IWRITE)
    func(path)


def remove_entry(path: Path) -> None:
    """Delete one entry; a link (file, folder or junction) is unlinked, never descended into."""
    if _is_link(path) or not path.is_dir():
        path.unlink()
        return
    import shutil

    # rmtree does not follow links inside the tree (it unlinks them); onexc replaces onerror from Python 3.12.
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_retry_writable)
    else:
        shutil.rmtree(path, onerror=_retry_writable)


def _shown(home: Home, path: Path) -> str:
    name = path.relative_to(home.root).as_posix()
    return f"{name}/" if path.is_dir() and not _is_link(path) else name


def _confirm(home: Home, keep_models: bool, assume_yes: bool) -> bool:
    """``--yes``, else ask on a terminal (default No: this deletes); without a terminal insist on ``--yes``."""
    if assume_yes:
        return True
    if not sys.stdin or not sys.stdin.isatty():
        raise UsageError(t("uninstall.err_need_yes"), t("uninstall.hint_need_yes"))
    size = human_size(tree_size(home.models_dir)) if home.models_dir.exists() else human_size(0)
    key = "uninstall.confirm_keep" if keep_models else "uninstall.confirm"
    console.info(t(key, home=home.root, size=size))
    try:
        answer = sys.stdin.readline()
    except (OSError, UnicodeDecodeError):
        answer = ""
    return answer.strip().lower() in YES_ANSWERS


def _remove_service(home: Home, probe: HostProbe | None, runner: Runner) -> None:
    """Uninstall the recorded service, then stop a start-script server if one still runs; failures only warn."""
    name = recorded_manager(home)
    if name:
        try:
            manager = choose_manager(this_system(), home, admin=is_admin(), probe=probe, runner=runner)
            uninstall_service(manager)
            console.info(t("service.uninstalled", manager=manager.name))
        except (QwenKitError, OSError) as exc:
            detail = exc.message if isinstance(exc, QwenKitError) else str(exc)
            console.warn(t("uninstall.warn_service", manager=name, detail=detail))
    fallback = FallbackManager(home)
    if fallback.pid_file.exists():
        try:
            fallback.uninstall()
        except (QwenKitError, OSError) as exc:
            detail = exc.message if isinstance(exc, QwenKitError) else str(exc)
            console.warn(t("uninstall.warn_service", manager=fallback.name, detail=detail))


def _delete(home: Home, entries: list[Path]) -> tuple[list[str], int, int]:
    """Delete ``entries``: (names removed, bytes freed, how many could not be removed)."""
    removed: list[str] = []
    freed = 0
    failed = 0
    for path in entries:
        shown = _shown(home, path)
        before = tree_size(path)
        try:
            remove_entry(path)
        except OSError as exc:
            failed += 1
            freed += before - tree_size(path)
            console.warn(t("uninstall.warn_not_removed", path=path, detail=exc.strerror or exc))
            continue
        freed += before
        removed.append(shown)
    return removed, freed, failed


def _tidy_home(home: Home) -> None:
    """Remove the home once only our ``.lock`` is left; otherwise say which foreign entries keep it (kept models
    were already reported with their path)."""
    try:
        left = sorted(name for name in os.listdir(home.root) if name != home.lock_file.name)
    except OSError:
        return
    foreign = [name for name in left if name != home.models_dir.name]
    if foreign:
        console.info(t("uninstall.home_kept", home=home.root, entries=", ".join(foreign)))
    if left:
        return
    with contextlib.suppress(OSError):
        home.lock_file.unlink(missing_ok=True)
        home.root.rmdir()
        console.info(t("uninstall.home_removed", home=home.root))


def run(args: argparse.Namespace, *, probe: HostProbe | None = None, runner: Runner = run_command) -> int:
    """Uninstall from the home; ``probe``/``runner`` reach the service managers (tests)."""
    home = resolve_home(getattr(args, "home", None))
    keep_models = bool(getattr(args, "keep_models", False))
    if not home.root.is_dir() or not _is_ours(home):
        console.info(t("uninstall.nothing", home=home.root))
        if home.root.is_dir() and _our_entries(home, keep_models=False):
            console.info(t("uninstall.not_ours", home=home.root))
        return 0
    # Ask before locking: an open prompt must not block an install, and a refusal leaves the home untouched.
    if _our_entries(home, keep_models) and not _confirm(home, keep_models, bool(getattr(args, "yes", False))):
        console.info(t("uninstall.cancelled"))
        return 0
    with home_lock(home, "uninstall"):
        entries = _our_entries(home, keep_models)  # again, under the lock: the home may have changed meanwhile
        if not entries:
            console.info(t("uninstall.nothing", home=home.root))
        else:
            _remove_service(home, probe, runner)
            removed, freed, failed = _delete(home, _our_entries(home, keep_models))
            if removed:
                console.info(t("uninstall.removed", home=home.root, entries=", ".join(removed)))
            console.info(t("uninstall.freed", size=human_size(freed), count=f"{freed:,}"))
            if keep_models and home.models_dir.exists():
                console.info(t("uninstall.models_kept", path=home.models_dir,
                               size=human_size(tree_size(home.models_dir))))
            if failed:
                raise UninstallIncomplete(t("uninstall.err_incomplete", count=failed, home=home.root),
                                          t("uninstall.hint_incomplete"))
    _tidy_home(home)
    if entries:
        console.ok(t("uninstall.done"))
    return 0
