"""``qwenkit service install|start|stop|restart|status|uninstall``: the register stage on what is installed in the home.

Glue only: the home, the installed ``LaunchSpec`` (from ``bootstrap.record.state``), the manager (the recorded one, else
this machine's best), then one action and a localized result. ``install`` also starts the server.

``start`` first asks the OS who holds the port (``register/server_identity.py``): another program there is named by
its PID and the start stops (docs/field-failures.md, failure mode 8). It then waits, up to ``START_WAIT_S``, until
``/health`` answers 200 (the elapsed time shown while the model loads) and the socket is this home's server; a
server still loading at the bound is said with the time waited (exit 6: not ready yet, and scripts must not go on
as if it were). ``restart`` stops the server (whatever runs it) and starts it the same way. ``stop`` says whether
there was anything to stop. ``status`` is one plain sentence (and ``--json`` for scripts): who runs the server,
whether it answers, and whether it starts by itself. Exit 2 when nothing is installed, 6 when the manager refuses,
the server cannot start, is not ready in time, or a stranger holds the port.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import ExitCode, ServerError, UsageError
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.processes import run_command
from bootstrap.detect.privileges import is_admin
from bootstrap.place.engine_failure import EngineFailed
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.record.state import launch_spec, load_state
from bootstrap.register import prompt_cache
from bootstrap.register.base import Runner, ServiceStatus, manager_label
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
from bootstrap.register.rendered_check import render_again
from bootstrap.register.server_health import public_health
from bootstrap.register.server_identity import PortHolder, foreign_hint, port_holder, require_ours

START_WAIT_S = 300.0  # as long as an install's verify waits for the model to load

SpecLoader = Callable[[Home], "LaunchSpec | None"]


def load_installed_spec(home: Home) -> LaunchSpec | None:
    """The installed server's ``LaunchSpec`` from ``state.json``; ``None`` = nothing installed (a damaged record is
    exit 2 from ``bootstrap.record.state``)."""
    state = load_state(home)
    return None if state is None else launch_spec(state, home)


def _nothing_installed(home: Home) -> UsageError:
    return UsageError(t("service.err_nothing_installed", home=home.root), t("service.hint_install"))


def _shown_path(manager: ServiceManager) -> Path:
    """What the user can open: the OS's copy of the definition, or the start script for the fallback."""
    return manager.start_script if isinstance(manager, FallbackManager) else manager.definition_paths[0]


def _start(manager: ServiceManager, spec: LaunchSpec, *, wait_s: float = START_WAIT_S) -> None:
    """Start (only when the port is free or already ours), then wait for the model, bounded by ``wait_s``."""
    if not manager.status().active:
        holder = port_holder(spec)
        if holder.foreign:
            raise ServerError(holder.describe(), foreign_hint(spec))
        if holder.ours and not isinstance(manager, FallbackManager):  # ours, started by hand: the port is taken
            raise ServerError(t("service.err_port_busy", host=spec.host, port=spec.port), t("service.hint_port_busy"))
    manager.prepare_logs()  # a planted logs link is refused before anything is said to start
    if isinstance(manager, FallbackManager):
        console.warn(t("service.no_manager", script=manager.start_script))
    label = manager_label(manager.name)
    started = time.monotonic()
    prompt_cache.announce_restore(spec)  # a cache keeper started with the server leaves the restore to us
    manager.start()
    from bootstrap.verify.chat import wait_healthy  # late: the verify stage's HTTP code, only for a start

    try:
        wait_healthy(spec.base_url, timeout=wait_s, log_path=manager.log_file, alive=lambda: manager.status().active,
                     evidence=manager.evidence)
    except EngineFailed:
        raise
    except ServerError as exc:  # the bound, with the server still running: it is loading, said as such
        if not manager.status().active:
            raise
        raise ServerError(t("service.still_loading", manager=label, seconds=int(time.monotonic() - started)),
                          t("service.hint_still_loading")) from exc
    require_ours(spec)  # what answered is this home's server, not a program that took the port meanwhile
    prompt_cache.restore_after_start(spec)  # before the user is told it is ready
    console.out(t("service.ready", manager=label, seconds=f"{time.monotonic() - started:.1f}",
                   url=spec.client_openai_url))


def _save_cache(spec: LaunchSpec, manager: ServiceManager) -> None:
    """The prompt cache saved before a stop, only from this home's own server (the key goes nowhere else)."""
    if spec.cache_dirs() and port_holder(spec).ours:
        prompt_cache.save_before_stop(spec)


def _say_status(status: ServiceStatus, spec: LaunchSpec | None, holder: PortHolder | None) -> tuple[str, str | None]:
    """One or two sentences a person reads for ``service status``, and the server's ``/health`` state (None when it
    was not asked: nothing of ours listens)."""
    label = manager_label(status.manager)
    health: str | None = None
    if spec is not None and holder is not None and holder.ours:
        health = public_health(spec).state
        if not status.active:
            said = [t("service.say_outside", pid=holder.pid, manager=label)]
        elif health == "ok":
            said = [t("service.say_ready", manager=label, pid=holder.pid, url=spec.client_openai_url)]
        elif health == "loading":
            said = [t("service.say_loading", manager=label, pid=holder.pid)]
        else:
            said = [t("service.say_unanswering", manager=label, pid=holder.pid, detail=status.detail or health)]
    elif holder is not None and holder.foreign:
        said = [t("service.say_foreign", detail=holder.describe())]
        if status.active:
            said.append(t("service.say_active_elsewhere", manager=label, port=holder.port))
    elif status.active:
        said = [t("service.say_active_free", manager=label, port=spec.port if spec else "?")]
    elif status.installed:
        said = [t("service.say_stopped", manager=label)]
    else:
        said = [t("service.say_unregistered", manager=label)]
    if status.installed:
        said.append(t("service.say_boot_on" if status.enabled else "service.say_boot_off"))
    if not status.active and not (holder is not None and holder.ours):
        said.append(t("service.say_start"))
    return console.join_sentences(*said), health


def _status(manager: ServiceManager, spec: LaunchSpec | None, as_json: bool) -> int:
    status = manager.status()
    holder = port_holder(spec) if spec is not None else None
    sentence, health = _say_status(status, spec, holder)
    if as_json:
        console.emit_json({**asdict(status), "health": health,
                           "port_holder": None if holder is None else holder.to_json(), "said": sentence})
    else:
        console.out(sentence)
    return int(ExitCode.SERVER if holder is not None and holder.foreign else ExitCode.OK)


def run(args: argparse.Namespace, *, load_spec: SpecLoader = load_installed_spec, probe: HostProbe | None = None,
        runner: Runner = run_command, winsw: Path | None = None, wait_s: float = START_WAIT_S) -> int:
    """One service action; ``load_spec``/``probe``/``runner``/``winsw``/``wait_s`` are for the installer and tests."""
    home = resolve_home(getattr(args, "home", None))
    spec = load_spec(home)
    manager = choose_manager(this_system(), home, admin=is_admin(), probe=probe, runner=runner, winsw=winsw,
                             health_url=f"{spec.base_url}/health" if spec else None)
    action = args.action
    if action in ("install", "start", "restart"):
        if spec is None:
            raise _nothing_installed(home)
        if action == "install":
            install_service(manager, spec)
            console.out(t("service.installed", manager=manager_label(manager.name), path=_shown_path(manager)))
        if action == "restart":  # a manager's start of a running server may leave it as it is: stop it first
            _save_cache(spec, manager)
            manager.stop()
        render_again(spec, home, manager)  # what starts is what this install renders (register/rendered_check.py)
        _start(manager, spec, wait_s=wait_s)
    elif action == "stop":
        running = manager.status().active or (spec is not None and port_holder(spec).ours)
        if running and spec is not None:
            _save_cache(spec, manager)
        manager.stop()
        console.out(t("service.stopped" if running else "service.was_stopped", manager=manager_label(manager.name)))
    elif action == "status":
        if spec is None and recorded_manager(home) is None:
            raise _nothing_installed(home)
        return _status(manager, spec, bool(getattr(args, "json", False)))
    elif action == "uninstall":
        uninstall_service(manager)
        console.out(t("service.uninstalled", manager=manager_label(manager.name)))
    return 0
