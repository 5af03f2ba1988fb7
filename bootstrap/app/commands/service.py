"""``qwenkit service install|start|stop|status|uninstall``: the register stage on what is installed in the home.

Glue only: the home, the installed ``LaunchSpec`` (from ``bootstrap.record.state``), the manager (the recorded one, else
this machine's best), then one action and one localized result line. ``install`` also starts the server, after
checking that no other program holds the port (docs/field-failures.md, failure mode 8). Exit 2 when nothing is
installed, 6 when the manager refuses or the server cannot start.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import ServerError, UsageError
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.processes import run_command
from bootstrap.detect.privileges import is_admin
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.record.state import launch_spec, load_state
from bootstrap.register.base import Runner, manager_label, port_busy
from bootstrap.register.managers import (
    FallbackManager,
    HostProbe,
    ServiceManager,
    choose_manager,
    install_service,
    recorded_manager,
    this_system,
    uninstall_service,
)

SpecLoader = Callable[[Home], "LaunchSpec | None"]


def load_installed_spec(home: Home) -> LaunchSpec | None:
    """The installed server's ``LaunchSpec`` from ``state.json``; ``None`` = nothing installed (a damaged record is
    exit 2 from ``bootstrap.record.state``)."""
    state = load_state(home)
    return None if state is None else launch_spec(state, home)


def _yes_no(flag: bool) -> str:
    return t("service.yes") if flag else t("service.no")


def _nothing_installed(home: Home) -> UsageError:
    return UsageError(t("service.err_nothing_installed", home=home.root), t("service.hint_install"))


def _shown_path(manager: ServiceManager) -> Path:
    """What the user can open: the OS's copy of the definition, or the start script for the fallback."""
    return manager.home.run_sh if isinstance(manager, FallbackManager) else manager.definition_paths[0]


def _start(manager: ServiceManager, spec: LaunchSpec) -> None:
    if not manager.status().active and port_busy(spec.connect_host, spec.port):
        raise ServerError(t("service.err_port_busy", host=spec.host, port=spec.port), t("service.hint_port_busy"))
    if isinstance(manager, FallbackManager):
        console.warn(t("service.no_manager", script=manager.home.run_sh))
    manager.start()
    console.out(t("service.started", manager=manager_label(manager.name), url=spec.client_openai_url))


def run(args: argparse.Namespace, *, load_spec: SpecLoader = load_installed_spec, probe: HostProbe | None = None,
        runner: Runner = run_command, winsw: Path | None = None) -> int:
    """One service action; ``load_spec``/``probe``/``runner``/``winsw`` are for the installer and tests."""
    home = resolve_home(getattr(args, "home", None))
    spec = load_spec(home)
    manager = choose_manager(this_system(), home, admin=is_admin(), probe=probe, runner=runner, winsw=winsw,
                             health_url=f"{spec.base_url}/health" if spec else None)
    action = args.action
    if action in ("install", "start"):
        if spec is None:
            raise _nothing_installed(home)
        if action == "install":
            install_service(manager, spec)
            console.out(t("service.installed", manager=manager_label(manager.name), path=_shown_path(manager)))
        _start(manager, spec)
    elif action == "stop":
        manager.stop()
        console.out(t("service.stopped", manager=manager_label(manager.name)))
    elif action == "status":
        if spec is None and recorded_manager(home) is None:
            raise _nothing_installed(home)
        status = manager.status()
        console.out(t("service.status_line", manager=manager_label(status.manager),
                       installed=_yes_no(status.installed), active=_yes_no(status.active),
                       enabled=_yes_no(status.enabled),
                       detail=console.aside(status.detail) if status.detail else ""))
    elif action == "uninstall":
        uninstall_service(manager)
        console.out(t("service.uninstalled", manager=manager_label(manager.name)))
    return 0
