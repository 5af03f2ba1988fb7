"""Uninstall: stop and remove the service, then delete what the installer put in the home.

Deletes only the home's own entries (DESIGN.md §3: ``state.json``, ``engine/``, ``cache/``, ``venv/``, ``secrets/``,
the start scripts, ``logs/``, ``service/``, ``run/``, ``app/``, ``chat-templates/``, ``prompt-cache/``,
``system-prompts.json``, ``agents/`` — the command
takes back what ``qwenkit launch --config`` wrote first — and ``models/`` unless kept), and only in a folder
that carries our marker (``state.json`` or ``.lock``, ``is_ours``), so a ``QWENKIT_HOME`` pointed at the wrong folder
cannot cost the user their own ``venv/`` or ``logs/``. Links are removed, never followed out of the home. Files the
user put there stay, and then the home stays too (``tidy_home``). A service that cannot be removed is a warning: the
files still go. Outside the home only the ``qwenkit`` launcher that ``state.json`` records goes, while it is exactly
as written, and the PATH entry the install added (``register.shell_command``).
The command (``bootstrap/app/commands/uninstall.py``) asks first and reports.

Windows deletes no running program, and ``qwenkit uninstall`` usually runs from the home itself (the runtime venv's
``qwenkit.exe``, or the setup's copy in ``app\\``, through the launcher). Those folders are left to
``remove-after-exit.bat`` (``templates/``), started detached in the home: it deletes them once this program has
exited, then the home if nothing else is in it.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError, ServerError
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.home import Home
from bootstrap.core.home_lock import home_lock
from bootstrap.core.processes import NO_WINDOW, run_command
from bootstrap.core.templating import render_template, write_rendered
from bootstrap.record.state import load_state
from bootstrap.register.base import Runner, manager_label
from bootstrap.register.fallback import script_argv
from bootstrap.register.launcher_record import LauncherRecord
from bootstrap.register.managers import (
    FallbackManager,
    HostProbe,
    choose_manager,
    recorded_manager,
    this_system,
    uninstall_service,
)

# A junction's reparse tag (winnt.h, IO_REPARSE_TAG_MOUNT_POINT); ``stat`` defines it only on Windows builds.
_JUNCTION_TAG = 0xA0000003


class UninstallIncomplete(ServerError):
    """Some entries could not be deleted, almost always because a running server still holds them open (exit 6)."""


@dataclass(frozen=True)
class Removal:
    """What an uninstall deleted."""

    removed: tuple[str, ...]  # entries deleted, relative to the home (folders end in ``/``)
    freed: int  # bytes, including the part of an entry that could only be deleted in part
    failed: int  # entries that could not be deleted
    deferred: tuple[str, ...] = ()  # folders holding this running program, deleted after it exits (Windows)


@dataclass(frozen=True)
class HomeLeft:
    """The home folder after an uninstall: removed, or kept for the entries that are not ours."""

    removed: bool
    foreign: tuple[str, ...]  # names in the home that are not ours (kept models not counted)


def _our_files(home: Home) -> list[Path]:
    return [home.state_file, home.run_sh, home.run_bat, home.preset_file, home.system_prompts_file]


def our_entries(home: Home, keep_models: bool) -> list[Path]:
    """Our entries that exist, in deletion order: the record first (a half-done uninstall no longer looks installed),
    models last (the biggest, and the one ``keep_models`` spares)."""
    candidates = [*_our_files(home), home.services_dir, home.run_dir, home.engines_dir, home.venv_dir,
                  home.app_dir, home.secrets_dir, home.staging_dir.parent, home.logs_dir, home.bundle_dir,
                  home.chat_templates_dir, home.prompt_cache_dir, home.agents_dir]
    # A crash between write and rename (atomic_file) leaves ".<name>.<random>.tmp" next to our files.
    for path in _our_files(home):
        candidates += sorted(home.root.glob(f".{path.name}.*.tmp"))
    if not keep_models:
        candidates.append(home.models_dir)
    return [path for path in candidates if os.path.lexists(path)]


def is_ours(home: Home) -> bool:
    """The installer writes ``.lock`` before anything else and ``state.json`` at the end: either marks the home."""
    return os.path.lexists(home.state_file) or os.path.lexists(home.lock_file)


def uninstall(home: Home, keep_models: bool, *, admin: bool, probe: HostProbe | None = None,
              runner: Runner = run_command) -> Removal | None:
    """Under the home's lock: remove the service and delete our entries; None when there was nothing to delete.
    ``admin``: elevated, so the recorded service may be a system-wide one; ``probe``/``runner`` reach the service
    managers (tests)."""
    with home_lock(home, "uninstall"):
        if not our_entries(home, keep_models):  # the home may have changed since the caller looked
            return None
        launcher = _recorded_launcher(home)  # read before state.json, the first entry deleted, goes
        _remove_service(home, admin, probe, runner)
        from bootstrap.register.shell_command import kit_command_note, remove_launcher

        if launcher is not None:
            for line in remove_launcher(launcher, this_system()):
                console.info(line)
        note = kit_command_note()  # pipx's (uv's, pip's) qwenkit stays: the line that removes it
        if note:
            console.info(note)
        removal = _delete(home, our_entries(home, keep_models))
    if removal.deferred:  # after the lock is released: the script may find the home empty at once
        _remove_after_exit(home, removal)
    return removal


AFTER_EXIT_SCRIPT = "remove-after-exit.bat"
AFTER_EXIT_TRIES = 120  # about two minutes of one-second waits for this program to exit


def _holds_this_program(path: Path) -> bool:
    """Whether ``path`` holds the running program: the executable, or the venv it runs in (its ``.pyd`` files are
    loaded too). Only Windows refuses to delete those."""
    if os.name != "nt":
        return False
    running = [Path(sys.executable)] + ([Path(sys.prefix)] if sys.prefix != sys.base_prefix else [])
    try:
        target = path.resolve()
        return any(target == p.resolve() or target in p.resolve().parents for p in running)
    except OSError:
        return False


def _remove_after_exit(home: Home, removal: Removal) -> None:
    """Write ``remove-after-exit.bat`` into the home and start it detached, with a hidden console (the ``ping`` it
    waits with would open a window otherwise). Failing that, the folders stay and are counted as not removed."""
    script = home.root / AFTER_EXIT_SCRIPT
    names = [name.rstrip("/") for name in removal.deferred]
    try:
        write_rendered(script, render_template("remove-after-exit.bat.j2", entries=names, tries=AFTER_EXIT_TRIES,
                                               lock=home.lock_file.name), newline="\r\n")
        subprocess.Popen(script_argv(script), cwd=home.root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, close_fds=True,
                         creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) | NO_WINDOW)
    except OSError as exc:
        console.warn(t("uninstall.warn_not_removed", path=home.root / names[0], detail=os_reason(exc)))


def _recorded_launcher(home: Home) -> LauncherRecord | None:
    """The launcher ``state.json`` records; a damaged record is no reason to stop an uninstall (the file stays)."""
    try:
        state = load_state(home)
    except QwenKitError:
        return None
    return state.launcher if state is not None else None


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
    # rmtree does not follow links inside the tree (it unlinks them); onexc replaces onerror from Python 3.12.
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_retry_writable)
    else:
        shutil.rmtree(path, onerror=_retry_writable)


def _shown(home: Home, path: Path) -> str:
    name = path.relative_to(home.root).as_posix()
    return f"{name}/" if path.is_dir() and not _is_link(path) else name


def _remove_service(home: Home, admin: bool, probe: HostProbe | None, runner: Runner) -> None:
    """Uninstall the recorded service, then stop a start-script server if one still runs; failures only warn."""
    name = recorded_manager(home)
    if name:
        try:
            manager = choose_manager(this_system(), home, admin=admin, probe=probe, runner=runner)
            uninstall_service(manager)
            console.info(t("service.uninstalled", manager=manager_label(manager.name)))
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


def _delete(home: Home, entries: list[Path]) -> Removal:
    """Delete ``entries``, warning about each one that cannot be deleted."""
    removed: list[str] = []
    deferred: list[str] = []
    freed = 0
    failed = 0
    for path in entries:
        shown = _shown(home, path)
        if path.is_dir() and not _is_link(path) and _holds_this_program(path):
            deferred.append(shown)  # not even begun: a half-deleted venv would fail this program's next import
            continue
        before = tree_size(path)
        try:
            remove_entry(path)
        except OSError as exc:
            failed += 1
            freed += before - tree_size(path)
            console.warn(t("uninstall.warn_not_removed", path=path, detail=os_reason(exc)))
            continue
        freed += before
        removed.append(shown)
    return Removal(tuple(removed), freed, failed, tuple(deferred))


def tidy_home(home: Home, removal: Removal | None = None) -> HomeLeft:
    """Remove the home once only our ``.lock`` is left; otherwise name the foreign entries that keep it (kept models,
    and folders left to ``remove-after-exit.bat`` with the script itself, are not foreign)."""
    try:
        left = sorted(name for name in os.listdir(home.root) if name != home.lock_file.name)
    except OSError:
        return HomeLeft(False, ())
    pending = {home.models_dir.name}
    if removal is not None and removal.deferred:
        pending |= {name.rstrip("/") for name in removal.deferred} | {AFTER_EXIT_SCRIPT}
    foreign = tuple(name for name in left if name not in pending)
    if left:
        return HomeLeft(False, foreign)
    try:
        home.lock_file.unlink(missing_ok=True)
        home.root.rmdir()
    except OSError:
        return HomeLeft(False, foreign)
    return HomeLeft(True, foreign)
