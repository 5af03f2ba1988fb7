"""The team room taken away with the install (``qwenkit uninstall``): nothing the kit started outlives it.

The gateway (its nginx, and the systemd user unit when one was registered) and this PC's RPC worker are stopped,
then ``<home>/team`` goes: the record with every member's and user's key, the nginx configuration and routing
script, the logs, the worker's opt-in. ``team/`` sits above ``install/`` (DESIGN.md §1), so the app's uninstall
command calls this first and then ``install.uninstall`` for the rest of the home.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from bootstrap.core.console import t
from bootstrap.core.errors import ServerError, UsageError
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.home import Home
from bootstrap.core.home_lock import home_lock
from bootstrap.team import config, rpc_worker
from bootstrap.team.gateway import running_pid, stop_gateway
from bootstrap.team.service import TeamService


@dataclass(frozen=True)
class TeamRoom:
    """What the team room holds on this PC right now."""

    gateway: int | None  # the gateway master's pid while it runs
    worker: int | None  # the RPC worker's pid while it runs
    users: int
    members: int


@dataclass(frozen=True)
class TeamRemoved:
    """What ``remove`` did."""

    gateway: int | None  # the pid of the gateway it stopped
    worker: int | None  # the pid of the worker it stopped
    unit: bool  # a systemd user unit was taken away


def present(home: Home) -> bool:
    return os.path.lexists(home.team_dir)


def look(home: Home) -> TeamRoom:
    """What runs and what is recorded, without changing anything (the uninstall says it before it asks)."""
    try:
        team = config.load(home)
        users, members = len(team.users), len(team.members)
    except UsageError:  # a damaged record is deleted all the same; its counts are not needed
        users = members = 0
    return TeamRoom(running_pid(home), rpc_worker.running_pid(home), users, members)


def remove(home: Home) -> TeamRemoved:
    """Stop the gateway and the worker, then delete ``<home>/team``. Exit 6 when either still runs afterwards or
    the folder cannot be deleted (nothing is left half-deleted silently: the keys stay where they were)."""
    service = TeamService(home)
    with home_lock(Home(home.team_dir), "uninstall"):
        gateway, worker = running_pid(home), rpc_worker.running_pid(home)
        unit = service.installed()
        stop_gateway(home, service)
        service.remove()
        rpc_worker.stop(home)
        still = [str(pid) for pid in (running_pid(home), rpc_worker.running_pid(home)) if pid is not None]
        if still:
            raise ServerError(t("team.err_teardown_running", pids=", ".join(still)), t("team.hint_teardown"))
    try:
        shutil.rmtree(home.team_dir)
    except OSError as exc:
        raise ServerError(t("team.err_teardown_files", path=home.team_dir, reason=os_reason(exc)),
                          t("team.hint_teardown")) from None
    return TeamRemoved(gateway, worker, unit)
