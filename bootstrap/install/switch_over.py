"""The switch-over: stop the live server, swap in the new files, start and verify the new one, or roll back.

Everything before this ran while the previous install kept serving (``deploy``). Here, in order:
1. the server that serves this home now is stopped (and a registration by another manager removed);
2. for an upgrade, the swap journal (``file_swap``) is written before any live file changes, then each changed
   file is moved aside and the verified new one moved in;
3. render → register → start → verify (a real chat request); a first start that runs out of memory is retried
   once with the caller's smaller plan.
If any of that fails, or the user presses Ctrl-C, the old files go back, the old scripts and service are restored
and restarted, and the error says so (``_roll_back``). Nothing here writes ``state.json``: that is the commit point,
after a verified start (``deploy``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.console import t, warn
from bootstrap.core.errors import QwenKitError, ServerError
from bootstrap.core.home import Home
from bootstrap.fetch.records import PlacedFile
from bootstrap.install import cleanup, file_swap
from bootstrap.place.api_key import read_api_key
from bootstrap.place.engine_failure import NOT_STARTED, OUT_OF_MEMORY, EngineFailed, EngineFailure, mib_text
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.plan.planner import Plan
from bootstrap.record.state import InstallState, SwitchRecord, launch_spec, relative_to_home
from bootstrap.register import managers, prompt_cache
from bootstrap.register.base import manager_label, port_busy
from bootstrap.register.server_identity import require_ours
from bootstrap.render.start_scripts import StartScripts, render_start_scripts
from bootstrap.verify import chat
from bootstrap.verify.chat import VerifyReport
from bootstrap.verify.speed_check import Checked, check_speed
from bootstrap.verify.speed_records import SpeedCheck

PORT_SEARCH = 100  # how far past a taken default port to look for a free one

# The first start ran out of memory: a smaller plan to try once (None: none).
Replanner = Callable[[EngineFailure, Plan], Plan | None]


@dataclass(frozen=True)
class SwitchOver:
    """How the new server is started and what a failed start falls back to."""

    port_explicit: bool  # False: the default port, so another free one is used when it is taken
    verify_timeout: float
    replan: Replanner | None  # None: no smaller plan is tried after running out of memory
    args_for: Callable[[Plan], Sequence[str]]  # a (smaller) plan's flags as this engine accepts them
    predicted: Mapping[str, Any] | None = None  # the plan's speed prediction (``Plan.speed.to_json()``)
    measure: bool = True  # False: no speed measurement (a restart with new settings only)


@dataclass(frozen=True)
class Serving:
    """The new server, started and verified."""

    plan: Plan  # the plan it runs: the caller's, or the smaller one tried after running out of memory
    spec: LaunchSpec  # as started (the port may have moved, the flags may be the smaller plan's)
    report: VerifyReport
    scripts: StartScripts
    journal: file_swap.Journal | None  # the upgrade's moves and leftovers (None for a first install)
    retried: str | None  # why the smaller plan was used, or None
    switch: SwitchRecord | None  # an upgrade's gap: old server stopped → new one answering (None: first install)
    manager: managers.ServiceManager  # what runs it: the caller's, or the start script's where that ran nothing
    speed: SpeedCheck | None = None  # measured vs predicted, with the A/B of speculative decoding when it ran


def switch_over(home: Home, plan: Plan, spec: LaunchSpec, files: Sequence[PlacedFile], manager: managers.ServiceManager,
                how: SwitchOver, previous: InstallState | None) -> Serving:
    """Stop the old server, swap the changed files, start and verify the new server; on any failure (or Ctrl-C) put
    the previous install back and raise."""
    if previous is not None:  # the prompt cache, saved while the old server still answers (docs/prompt-cache.md)
        _save_cache(home, previous)
    stopping = time.monotonic()
    _stop_previous(home, manager)
    checkpoint("old-stopped")

    journal = _journal(home, previous, files, spec)
    moves = journal.moves if journal is not None else ()
    retried: str | None = None
    try:
        if journal is not None:
            file_swap.begin(home, journal)
            checkpoint("swap-journaled")
            file_swap.apply(moves)
            checkpoint("swapped")
        spec = _with_free_port(spec, explicit=how.port_explicit)
        prompt_cache.announce_restore(spec)  # a cache keeper started with the server leaves the restore to us
        try:
            report, scripts, started, healthy = _start_and_verify(home, spec, manager, how.verify_timeout)
        except EngineFailed as exc:
            if exc.failure.cause == NOT_STARTED and not isinstance(manager, managers.FallbackManager):
                manager = _script_instead(home, manager, exc)
            else:
                smaller = _smaller_plan(exc.failure, plan, how.replan)
                if smaller is None:
                    raise
                plan, retried = smaller
                spec = replace(spec, args=tuple(how.args_for(plan)))
            report, scripts, started, healthy = _start_and_verify(home, spec, manager, how.verify_timeout)
        checked, rendered = _measure(home, spec, manager, how) if how.measure else (Checked(None, spec), None)
        spec, scripts = checked.spec, rendered or scripts  # the A/B may have kept the server without speculation
    except (QwenKitError, KeyboardInterrupt) as exc:  # Ctrl-C during the switch-over also brings the old one back
        _roll_back(home, previous, moves, manager, exc, how.verify_timeout)
    switch = None if previous is None else SwitchRecord(round(healthy - stopping, 2), round(healthy - started, 2))
    prompt_cache.restore_after_start(spec)  # before the switch-over is declared done
    return Serving(plan, spec, report, scripts, journal, retried, switch, manager, checked.check)


def _save_cache(home: Home, previous: InstallState) -> None:
    """The old server's slots saved in its own folder before it stops; only when this home's server answers on
    its port (``require_ours``: the key goes nowhere else). A failure here never stops an upgrade."""
    try:
        spec = launch_spec(previous, home)
        if not require_ours(spec).ours:
            return
    except QwenKitError:
        return
    prompt_cache.save_before_stop(spec)


def _script_instead(home: Home, service: managers.ServiceManager, failed: EngineFailed) -> managers.ServiceManager:
    """The service manager registered the server but never ran it (``NOT_STARTED``: WinSW under Wine, which runs no
    service): say so, remove that registration, and run the server with the start script under the kit's
    supervisor, as where no service manager runs (DESIGN.md §5)."""
    warn(failed.message)
    with contextlib.suppress(QwenKitError):
        service.stop()
        managers.uninstall_service(service)
    script = managers.FallbackManager(home)
    warn(t("service.not_run_fallback", manager=manager_label(service.name), script=script.start_script))
    return script


def _stop_previous(home: Home, manager: managers.ServiceManager) -> None:
    """Stop whatever serves this home now, so its port and (on Windows) its open files are free.

    When the previous install used another manager (a service then, ``--no-service`` now), that registration is
    removed, or it would start the old server again at the next logon.
    """
    recorded = managers.recorded_manager(home)
    if recorded is not None and recorded != manager.name:
        old = managers.manager_named(recorded, home)
        try:
            managers.uninstall_service(old)
        except QwenKitError as exc:
            warn(exc.message)
    manager.stop()
    if not isinstance(manager, managers.FallbackManager):
        managers.FallbackManager(home).stop()


def _journal(home: Home, previous: InstallState | None, files: Sequence[PlacedFile],
             spec: LaunchSpec) -> file_swap.Journal | None:
    """What an upgrade will change, written before it changes anything (None for a first install). The files of
    the other models the server keeps offering (``spec.others``) are the new install's too."""
    if previous is None:
        return None
    engine_dir = spec.engine_dir
    kept = [p for o in spec.others for p in (o.model, o.mmproj) if p is not None]
    return file_swap.Journal(
        moves=tuple(file_swap.plan_move(home, f.path, f.sha256) for f in files if f.staged is not None),
        obsolete=tuple(cleanup.obsolete_paths(home, previous, [*(f.path for f in files), *kept], engine_dir)),
        new_files=tuple((relative_to_home(home, f.path), f.sha256) for f in files),
        new_engine=relative_to_home(home, engine_dir),
    )


def _with_free_port(spec: LaunchSpec, *, explicit: bool) -> LaunchSpec:
    """The spec's port when free; a port the user did not ask for moves to the next free one (and says so).

    The installer already chose a free port before downloading (``free_port``); this second look, right before the
    start, catches a program that took the port in the meantime."""
    port = free_port(spec.connect_host, spec.port, explicit=explicit, shown_host=spec.host)
    return spec if port == spec.port else replace(spec, port=port)


def free_port(connect_host: str, port: int, *, explicit: bool, shown_host: str | None = None,
              ours: Callable[[], bool] = lambda: False) -> int:
    """``port`` when nothing accepts connections there (or what does is ``ours``: this home's running server, which
    the switch-over stops); else the next free one when the port is the default (said once), else a ServerError
    (exit 6) naming the port: an explicit port is the user's word, not moved behind their back."""
    if not port_busy(connect_host, port) or ours():
        return port
    if not explicit:
        for candidate in range(port + 1, min(port + PORT_SEARCH, 65536)):
            if not port_busy(connect_host, candidate):
                warn(t("deploy.port_moved", port=port, new=candidate))
                return candidate
    raise ServerError(t("service.err_port_busy", host=shown_host or connect_host, port=port),
                      t("service.hint_port_busy"))


def _start_and_verify(home: Home, spec: LaunchSpec, manager: managers.ServiceManager,
                      timeout: float) -> tuple[VerifyReport, StartScripts, float, float]:
    """render → register → start → verify; an ``EngineFailed`` names why the server did not come up. Also when the
    server was started and when it first answered ``/health`` (``time.monotonic``)."""
    # render: the start scripts (the service definitions are rendered by register)
    scripts = render_start_scripts(spec, home)
    checkpoint("rendered")
    # register (second half), then verify: a real chat request, non-stream and stream
    managers.install_service(manager, spec)
    checkpoint("registered")
    started = time.monotonic()
    manager.start()
    checkpoint("started")
    waiting = time.monotonic()
    report = chat.verify_server(spec, read_api_key(home), timeout=timeout, log_path=manager.log_file,
                                alive=lambda: manager.status().active, evidence=manager.evidence)
    checkpoint("verified")
    return report, scripts, started, waiting + report.health_wait_s


def _measure(home: Home, spec: LaunchSpec, manager: managers.ServiceManager,
             how: SwitchOver) -> tuple[Checked, StartScripts | None]:
    """verify, second half: the speed measured against the prediction; when the server speculates, both arms of
    the A/B, each a start of its own (``verify.speculation``): the faster one is left running, with its scripts
    (None: no restart, the scripts rendered before stand)."""
    rendered: list[StartScripts] = []

    def restart(arm: LaunchSpec) -> None:
        manager.stop()
        rendered.append(render_start_scripts(arm, home))
        managers.install_service(manager, arm)
        manager.start()
        chat.wait_healthy(arm.base_url, timeout=how.verify_timeout, log_path=manager.log_file,
                          alive=lambda: manager.status().active, evidence=manager.evidence)
        require_ours(arm)  # the measurement sends the key: only to this home's server

    checked = check_speed(spec, read_api_key(home), how.predicted, restart, timeout=how.verify_timeout)
    return checked, rendered[-1] if rendered else None


def _smaller_plan(failure: EngineFailure, plan: Plan, replan: Replanner | None) -> tuple[Plan, str] | None:
    """Out of memory at the first start: the caller's smaller plan (once), and the note that says why."""
    if failure.cause != OUT_OF_MEMORY or replan is None:
        return None
    smaller = replan(failure, plan)
    if smaller is None or smaller.args == plan.args:
        return None
    if smaller.settings.ctx != plan.settings.ctx:
        change = t("failure.change_ctx", ctx=smaller.settings.ctx, old=plan.settings.ctx)
    else:
        placement = next((r.value for r in smaller.reasons if r.topic == "placement"), "")
        change = t("failure.change_gpu", placement=placement)
    note = t("failure.oom_replan", wanted=mib_text(failure.wanted_bytes), device=failure.device or "?",
             change=change)
    warn(note)
    return smaller, note


def _roll_back(home: Home, previous: InstallState | None, moves: tuple[file_swap.Move, ...],
               manager: managers.ServiceManager, cause: QwenKitError | KeyboardInterrupt, timeout: float) -> NoReturn:
    """The new install did not come up (or the user pressed Ctrl-C): put the previous one back and start it, then
    report why (exit 6, or 130 for Ctrl-C). A first install has nothing to go back to: its files stay for a rerun,
    its service goes."""
    reason = cause.message if isinstance(cause, QwenKitError) else t("err.interrupted")
    warn(reason)
    try:
        manager.stop()
    except QwenKitError as exc:
        warn(exc.message)
    file_swap.undo(moves)
    file_swap.discard(home)
    if previous is None:
        with contextlib.suppress(QwenKitError):
            managers.uninstall_service(manager)
        raise cause
    warn(t("deploy.rolling_back", model=previous.model_id))
    old_spec = launch_spec(previous, home)
    render_start_scripts(old_spec, home)
    old_manager = manager
    old_name = previous.service.manager if previous.service is not None else manager.name
    if old_name != manager.name:
        with contextlib.suppress(QwenKitError):
            managers.uninstall_service(manager)
        old_manager = managers.manager_named(old_name, home)
    try:
        managers.install_service(old_manager, old_spec)
        old_manager.start()
        chat.wait_healthy(old_spec.base_url, timeout=timeout, log_path=old_manager.log_file,
                          alive=lambda: old_manager.status().active, evidence=old_manager.evidence)
    except QwenKitError as exc:
        raise ServerError(t("deploy.err_rollback_failed", reason=reason, detail=exc.message),
                          t("deploy.hint_rollback_failed")) from exc
    if isinstance(cause, KeyboardInterrupt):
        warn(t("deploy.interrupted_rolled_back", model=previous.model_id, url=old_spec.openai_base_url))
        raise cause
    raise ServerError(t("deploy.err_rolled_back", reason=reason, model=previous.model_id,
                        url=old_spec.openai_base_url), t("deploy.hint_rolled_back")) from cause
