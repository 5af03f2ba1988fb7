"""``qwenkit uninstall [--keep-models] [--yes] [--home DIR] [--json]``: stop the service and delete what the installer
put in the home.

What is deleted, and what never is, is decided in ``bootstrap/install/uninstall.py``; this command asks first
(default No; ``--yes`` without a terminal) and reports what went and how many bytes were freed. A home that is also
a team gateway or an RPC worker (``qwenkit team``) has its team room taken first (``bootstrap/team/teardown.py``:
the gateway and the worker stopped, ``team/`` with every key deleted), so nothing the kit started outlives it; and
what ``qwenkit launch --config`` wrote into the agents' own config files is taken back before its record goes with
``agents/`` (``bootstrap/agents/launch.take_back_all``), so no agent is left pointed at a server that is gone.
"""

from __future__ import annotations

import argparse

from bootstrap.agents.launch import take_back_all
from bootstrap.core import console
from bootstrap.core.console import join_items, join_names, t
from bootstrap.core.errors import UsageError
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.processes import run_command
from bootstrap.core.prompts import ask_yes_no, stdin_is_terminal
from bootstrap.core.sizes import human_size
from bootstrap.detect.privileges import is_admin
from bootstrap.install.uninstall import (
    HomeLeft,
    Removal,
    UninstallIncomplete,
    is_ours,
    our_entries,
    tidy_home,
    tree_size,
    uninstall,
)
from bootstrap.register.base import Runner
from bootstrap.register.managers import HostProbe
from bootstrap.team import teardown


def run(args: argparse.Namespace, *, probe: HostProbe | None = None, runner: Runner = run_command) -> int:
    """Uninstall from the home; ``probe``/``runner`` reach the service managers (tests)."""
    home = resolve_home(getattr(args, "home", None))
    keep_models = bool(getattr(args, "keep_models", False))
    team = home.root.is_dir() and teardown.present(home)
    if getattr(args, "json", False):
        return _run_json(home, keep_models, bool(getattr(args, "yes", False)), team, probe, runner)
    if not home.root.is_dir() or not (is_ours(home) or team):
        console.out(t("uninstall.nothing", home=home.root))
        if home.root.is_dir() and our_entries(home, keep_models=False):
            console.out(t("uninstall.not_ours", home=home.root))
        return 0
    if team:
        _say_team(home)
    # Ask before locking: an open prompt must not block an install, and a refusal leaves the home untouched.
    if ((our_entries(home, keep_models) or team)
            and not _confirm(home, keep_models, bool(getattr(args, "yes", False)))):
        console.info(t("uninstall.cancelled"))
        return 0
    if team:
        _remove_team(home)
    if not is_ours(home):  # a gateway PC with no install of its own
        _report_home(home, tidy_home(home))
        console.out_ok(t("uninstall.done"))
        return 0
    if home.agents_dir.is_dir():
        take_back_all(home)
    removal = uninstall(home, keep_models, admin=is_admin(), probe=probe, runner=runner)
    if removal is None:
        console.out(t("uninstall.nothing", home=home.root))
    else:
        _report(home, removal, keep_models)
    _report_home(home, tidy_home(home, removal))
    if removal is not None:
        console.out_ok(t("uninstall.done"))
    return 0


def _run_json(home: Home, keep_models: bool, assume_yes: bool, team: bool, probe: HostProbe | None,
              runner: Runner) -> int:
    """``--json``: no question (``--yes`` is required), one document on stdout: what went, the bytes freed, what
    waits for this program to exit (Windows), whether a team room was taken down and whether the home itself is
    gone; exit 6 as without it."""
    if not assume_yes:
        raise UsageError(t("uninstall.err_need_yes"), t("uninstall.hint_need_yes"))
    if team:
        teardown.remove(home)
    removal = uninstall(home, keep_models, admin=is_admin(), probe=probe, runner=runner) \
        if home.root.is_dir() and is_ours(home) else None
    left = tidy_home(home, removal) if home.root.is_dir() else HomeLeft(False, ())
    console.emit_json({"home": str(home.root), "uninstalled": removal is not None, "team_removed": team,
                       "removed": [] if removal is None else list(removal.removed),
                       "freed_bytes": 0 if removal is None else removal.freed,
                       "deferred": [] if removal is None else list(removal.deferred),
                       "failed": 0 if removal is None else removal.failed,
                       "home_removed": left.removed, "kept": list(left.foreign)})
    if removal is not None and removal.failed:
        raise UninstallIncomplete(t("uninstall.err_incomplete", count=removal.failed, home=home.root),
                                  t("uninstall.hint_incomplete"))
    return 0


def _say_team(home: Home) -> None:
    """What the team room holds, said before the question (stderr)."""
    room = teardown.look(home)
    what = [t("team.uninstall_gateway", pid=room.gateway)] if room.gateway else []
    what += [t("team.uninstall_worker", pid=room.worker)] if room.worker else []
    console.info(t("team.uninstall_found", what=join_items(what) or t("team.uninstall_idle"),
                   folder=home.team_dir))


def _remove_team(home: Home) -> None:
    """Stop the gateway and the worker, delete ``team/`` (exit 6 when something still runs: nothing deleted)."""
    removed = teardown.remove(home)
    what = [t("team.uninstall_stopped_gateway", pid=removed.gateway)] if removed.gateway else []
    what += [t("team.uninstall_stopped_worker", pid=removed.worker)] if removed.worker else []
    what += [t("team.uninstall_unit")] if removed.unit else []
    console.out(t("team.uninstall_done", what=join_items(what) or t("team.uninstall_nothing_ran"),
                  folder=home.team_dir))


def _confirm(home: Home, keep_models: bool, assume_yes: bool) -> bool:
    """``--yes``, else ask on a terminal (default No: this deletes); without a terminal insist on ``--yes``."""
    if assume_yes:
        return True
    if not stdin_is_terminal():
        raise UsageError(t("uninstall.err_need_yes"), t("uninstall.hint_need_yes"))
    size = human_size(tree_size(home.models_dir)) if home.models_dir.exists() else human_size(0)
    key = "uninstall.confirm_keep" if keep_models else "uninstall.confirm"
    return ask_yes_no(t(key, home=home.root, size=size), default=False)


def _report(home: Home, removal: Removal, keep_models: bool) -> None:
    """What went, the bytes freed, the models kept; exit 6 when some entry could not be deleted."""
    if removal.removed:
        console.out(t("uninstall.removed", home=home.root, entries=join_names(removal.removed)))
    console.out(t("uninstall.freed", size=human_size(removal.freed), count=f"{removal.freed:,}"))
    if removal.deferred:
        console.out(t("uninstall.deferred", entries=join_names(removal.deferred)))
    if keep_models and home.models_dir.exists():
        console.out(t("uninstall.models_kept", path=home.models_dir, size=human_size(tree_size(home.models_dir))))
    if removal.failed:
        raise UninstallIncomplete(t("uninstall.err_incomplete", count=removal.failed, home=home.root),
                                  t("uninstall.hint_incomplete"))


def _report_home(home: Home, left: HomeLeft) -> None:
    """The home itself: gone, or kept for entries that are not ours (kept models were reported with their path)."""
    if left.foreign:
        console.out(t("uninstall.home_kept", home=home.root, entries=join_names(left.foreign)))
    if left.removed:
        console.out(t("uninstall.home_removed", home=home.root))
