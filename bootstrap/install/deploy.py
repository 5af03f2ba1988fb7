"""Place → tune → render → register → verify → record, for a plan whose model files are already fetched and verified.

This is the second half of the pipeline (DESIGN.md §1); the installer runs detect → plan → fetch and then this.
Each stage is its own module; this file only passes records from one to the next, in pipeline order, so a reader
finds a stage by its name. Every stage is idempotent: a rerun reuses the engine and venv it finds verified, keeps
the API key, re-renders the scripts, and restarts the server.

An upgrade does everything it can while the previous install keeps serving (engine into its own folder, venv,
tune on the staged files). Only then it stops the old server, swaps the changed files (``file_swap``), starts and
verifies the new one. If that fails, the old files go back, the old scripts and service are restored and
restarted, and the error says so; ``state.json`` is written only after a verified start, and the old files are
deleted only after that (``cleanup``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn

from bootstrap import register
from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.console import info, t, warn
from bootstrap.core.errors import QwenKitError, ServerError
from bootstrap.core.home import Home
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.fetch.download import FetchOptions
from bootstrap.fetch.records import PlacedFile
from bootstrap.install import cleanup, file_swap
from bootstrap.place import runtime_venv
from bootstrap.place.api_key import ensure_api_key, read_api_key
from bootstrap.place.engine import DEFAULT_FETCH
from bootstrap.place.engine_failure import OUT_OF_MEMORY, EngineFailed, EngineFailure, mib_text
from bootstrap.place.working_engine import WorkingEngine, place_working_engine, request_for
from bootstrap.plan import engine_flags
from bootstrap.plan.launch_spec import DEFAULT_HOST, DEFAULT_PORT, LaunchSpec
from bootstrap.plan.planner import Plan
from bootstrap.record.failure_record import clear_failure
from bootstrap.record.state import (
    AssetRecord,
    EngineRecord,
    FileRecord,
    GivenUpRecord,
    InstallState,
    RequestRecord,
    ServerRecord,
    ServiceRecord,
    launch_spec,
    relative_to_home,
    resolve_in_home,
    save_state,
)
from bootstrap.register.base import port_busy
from bootstrap.render import start_scripts
from bootstrap.tune import fit as tune
from bootstrap.verify import chat as verify

PORT_SEARCH = 100  # how far past a taken default port to look for a free one


@dataclass(frozen=True)
class DeployOptions:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    port_explicit: bool = True  # False: the default port, so another free one is used when it is taken
    alias: str | None = None  # default: the plan's model id
    register_service: bool = True  # False: start with the script (no autostart, no supervision)
    admin: bool = False  # elevated: a system-wide service (systemd system unit, WinSW)
    venv: bool = True
    pip_index_url: str | None = None
    wheels_dir: Path | None = None  # offline: install the venv from these wheels only
    extra_args: tuple[str, ...] = ()  # appended after the plan's flags (tests, a user's additions)
    verify_timeout: float = 300.0
    fetch: FetchOptions = DEFAULT_FETCH
    request: RequestRecord | None = None  # what the user asked for, recorded for reruns
    engine_archives: tuple[Path, ...] | None = None  # the engine's assets, verified by the fetch stage
    python_versions: tuple[str, ...] = ()  # only these Pythons (an offline bundle's wheels are built for them)
    winsw: Path | None = None  # WinSW's exe (from a bundle): a Windows service when running as administrator
    # The first start ran out of memory: a smaller plan to try once (None: none, or no replanning here).
    replan: Callable[[EngineFailure, Plan], Plan | None] | None = None


@dataclass(frozen=True)
class DeployResult:
    state: InstallState
    spec: LaunchSpec
    report: verify.VerifyReport
    tune: tune.TuneResult
    venv: runtime_venv.VenvResult | None
    scripts: start_scripts.StartScripts
    service_manager: str


def deploy(home: Home, plan: Plan, files: list[PlacedFile], hardware: HardwareProfile,
           options: DeployOptions = DeployOptions(), previous: InstallState | None = None,
           working: WorkingEngine | None = None) -> DeployResult:
    """Turn verified files and a plan into a running, registered, verified server, and record it.

    ``working``: the engine the installer already placed and self-tested (with its fallbacks); without it, the
    plan's own build is placed and self-tested here, with no fallback.
    """
    model = next(f for f in files if f.role == "model")
    mmproj = next((f for f in files if f.role == "mmproj"), None)

    # place: the engine (download, verify, safe extract, atomic rename, probe, self-test), the runtime venv
    if working is None:
        live = resolve_in_home(home, previous.engine.dir) if previous is not None else None
        working = place_working_engine(home, plan.variant.name, request_for(
            plan, hardware, allowed=(plan.variant.name,), options=options.fetch, fetched=options.engine_archives,
            live_dir=live))
    installed = working.installed
    key_file = ensure_api_key(home)
    alias = options.alias or plan.model_id
    # The server start, complete but for the flags (tune decides them below).
    untuned = LaunchSpec(home=home.root, system=hardware.os.system, engine_dir=installed.dir,
                         server=installed.server, model=model.path, mmproj=None if mmproj is None else mmproj.path,
                         args=(), alias=alias, api_key_file=key_file, host=options.host, port=options.port)
    venv_result = None
    if options.venv:
        pythons = [p for p in hardware.pythons
                   if not options.python_versions or p.version.rpartition(".")[0] in options.python_versions]
        venv_result = runtime_venv.ensure_venv(home, python=runtime_venv.find_python(pythons),
                                        endpoint=untuned.openai_base_url,
                                        api_key_file=key_file, model=alias, index_url=options.pip_index_url,
                                        find_links=options.wheels_dir)
        if venv_result.skipped_reason:
            warn(venv_result.skipped_reason)

    # tune: llama.cpp's own fit on this machine, compared with the plan (on the staged bytes during an upgrade)
    flags = _flags(plan, options, working)
    tuned = tune.tune(installed.fit_params, model.bytes_at, flags, hardware,
                      mmproj=None if mmproj is None else mmproj.bytes_at)
    info(tuned.reason)
    checkpoint("tuned")
    spec = replace(untuned, args=tuple(tuned.final_args))

    # register (first half): a service when asked and possible, else the start script in the background
    manager = _choose_manager(home, hardware, options)
    _stop_previous(home, manager)
    checkpoint("old-stopped")

    journal = _journal(home, previous, files, installed.dir)
    moves = journal.moves if journal is not None else ()
    retried: str | None = None
    try:
        if journal is not None:
            file_swap.begin(home, journal)
            checkpoint("swap-journaled")
            file_swap.apply(moves)
            checkpoint("swapped")
        spec = _with_free_port(spec, explicit=options.port_explicit)
        try:
            report, scripts = _start_and_verify(home, spec, manager, options)
        except EngineFailed as exc:
            smaller = _smaller_plan(exc.failure, plan, options)
            if smaller is None:
                raise
            plan, retried = smaller
            spec = replace(spec, args=tuple(_flags(plan, options, working)))
            report, scripts = _start_and_verify(home, spec, manager, options)
            tuned = replace(tuned, adopted="plan", fit_args=None)
    except (QwenKitError, KeyboardInterrupt) as exc:  # Ctrl-C during the switch-over also brings the old one back
        _roll_back(home, previous, moves, manager, exc, options.verify_timeout)

    # record: the commit point of an install or upgrade
    given_up, selftest_s = _engine_history(working, previous)
    state = InstallState(
        system=hardware.os.system, model_id=plan.model_id, quant=plan.quant,
        engine=EngineRecord(build=installed.build, variant=installed.variant,
                            dir=relative_to_home(home, installed.dir), server=relative_to_home(home, installed.server),
                            version=working.probed.version_line,
                            assets=tuple(AssetRecord(n, s, z) for n, s, z in installed.assets),
                            given_up=given_up, selftest_s=selftest_s),
        files=tuple(_record(home, f) for f in files),
        server=ServerRecord(host=spec.host, port=spec.port, alias=alias, args=spec.args,
                            plan_args=tuple(plan.args), tuned_by=tuned.adopted,
                            fit_args=tuned.fit_args, retried=retried),
        service=ServiceRecord(manager.name, True),
        venv_python=None if venv_result is None or venv_result.python is None
        else relative_to_home(home, venv_result.python),
        request=options.request,
    )
    save_state(home, state)
    clear_failure(home)
    checkpoint("recorded")
    cleanup.after_success(home, state, journal)
    checkpoint("cleaned")
    verify.print_report(report)
    return DeployResult(state, spec, report, tuned, venv_result, scripts, manager.name)


def _flags(plan: Plan, options: DeployOptions, working: WorkingEngine) -> list[str]:
    """The plan's flags with the catalog's and the caller's overrides, minus what this build does not accept."""
    flags = engine_flags.filter_by_help(engine_flags.with_overrides(list(plan.args), list(options.extra_args)),
                                        working.probed.flags)
    for dropped in flags.dropped:
        warn(t("deploy.flag_dropped", flag=dropped))
    return flags.kept


def _start_and_verify(home: Home, spec: LaunchSpec, manager: register.ServiceManager,
                      options: DeployOptions) -> tuple[verify.VerifyReport, start_scripts.StartScripts]:
    """render → register → start → verify; an ``EngineFailed`` names why the server did not come up."""
    # render: the start scripts (the service definitions are rendered by register)
    scripts = start_scripts.render_start_scripts(spec, home)
    checkpoint("rendered")
    # register (second half), then verify: a real chat request, non-stream and stream
    register.install_service(manager, spec)
    checkpoint("registered")
    manager.start()
    checkpoint("started")
    report = verify.verify_server(spec, read_api_key(home), timeout=options.verify_timeout,
                                  log_path=manager.log_file, alive=lambda: manager.status().active,
                                  evidence=manager.evidence)
    checkpoint("verified")
    return report, scripts


def _smaller_plan(failure: EngineFailure, plan: Plan, options: DeployOptions) -> tuple[Plan, str] | None:
    """Out of memory at the first start: the caller's smaller plan (once), and the note that says why."""
    if failure.cause != OUT_OF_MEMORY or options.replan is None:
        return None
    smaller = options.replan(failure, plan)
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


def _engine_history(working: WorkingEngine, previous: InstallState | None
                    ) -> tuple[tuple[GivenUpRecord, ...], float | None]:
    """The builds that could not run here and the self-test's time: found in this run, or (the live engine kept)
    as recorded before, so an unchanged engine keeps an unchanged record."""
    given_up = tuple(GivenUpRecord(g.variant, g.failure.cause, g.failure.detail) for g in working.given_up)
    kept = previous is not None and previous.engine.build == working.installed.build \
        and previous.engine.variant == working.variant
    if kept and working.selftest_s is None:
        assert previous is not None
        return previous.engine.given_up, previous.engine.selftest_s
    if kept and not given_up:
        assert previous is not None
        given_up = previous.engine.given_up
    return given_up, working.selftest_s


def _journal(home: Home, previous: InstallState | None, files: list[PlacedFile],
             engine_dir: Path) -> file_swap.Journal | None:
    """What an upgrade will change, written before it changes anything (None for a first install)."""
    if previous is None:
        return None
    return file_swap.Journal(
        moves=tuple(file_swap.plan_move(home, f.path, f.sha256) for f in files if f.staged is not None),
        obsolete=tuple(cleanup.obsolete_paths(home, previous, [f.path for f in files], engine_dir)),
        new_files=tuple((relative_to_home(home, f.path), f.sha256) for f in files),
        new_engine=relative_to_home(home, engine_dir),
    )


def _record(home: Home, placed: PlacedFile) -> FileRecord:
    """The record of a file in place, with the stat identity a rerun trusts instead of hashing."""
    st = placed.path.stat()
    return FileRecord(placed.role, relative_to_home(home, placed.path), placed.size, placed.sha256, placed.source,
                      placed.revision, mtime_ns=st.st_mtime_ns, inode=st.st_ino)


def _choose_manager(home: Home, hardware: HardwareProfile, options: DeployOptions) -> register.ServiceManager:
    if not options.register_service:
        return register.FallbackManager(home)
    manager = register.choose_manager(hardware.os.system, home, admin=options.admin, winsw=options.winsw)
    available, why = manager.available()
    if not available:
        warn(why)
        manager = register.FallbackManager(home)
    if isinstance(manager, register.FallbackManager):
        warn(t("service.no_manager", script=home.run_sh))
    return manager


def _stop_previous(home: Home, manager: register.ServiceManager) -> None:
    """Stop whatever serves this home now, so its port and (on Windows) its open files are free.

    When the previous install used another manager (a service then, ``--no-service`` now), that registration is
    removed, or it would start the old server again at the next logon.
    """
    recorded = register.recorded_manager(home)
    if recorded is not None and recorded != manager.name:
        old = register.manager_named(recorded, home)
        try:
            register.uninstall_service(old)
        except QwenKitError as exc:
            warn(exc.message)
    manager.stop()
    if not isinstance(manager, register.FallbackManager):
        register.FallbackManager(home).stop()


def _with_free_port(spec: LaunchSpec, *, explicit: bool) -> LaunchSpec:
    """The spec's port when free; a port the user did not ask for moves to the next free one (and says so)."""
    if not port_busy(spec.connect_host, spec.port):
        return spec
    if not explicit:
        for port in range(spec.port + 1, min(spec.port + PORT_SEARCH, 65536)):
            if not port_busy(spec.connect_host, port):
                warn(t("deploy.port_moved", port=spec.port, new=port))
                return replace(spec, port=port)
    raise ServerError(t("service.err_port_busy", host=spec.host, port=spec.port), t("service.hint_port_busy"))


def _roll_back(home: Home, previous: InstallState | None, moves: tuple[file_swap.Move, ...],
               manager: register.ServiceManager, cause: QwenKitError | KeyboardInterrupt, timeout: float) -> NoReturn:
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
            register.uninstall_service(manager)
        raise cause
    warn(t("deploy.rolling_back", model=previous.model_id))
    old_spec = launch_spec(previous, home)
    start_scripts.render_start_scripts(old_spec, home)
    old_manager = manager
    old_name = previous.service.manager if previous.service is not None else manager.name
    if old_name != manager.name:
        with contextlib.suppress(QwenKitError):
            register.uninstall_service(manager)
        old_manager = register.manager_named(old_name, home)
    try:
        register.install_service(old_manager, old_spec)
        old_manager.start()
        verify.wait_healthy(old_spec.base_url, timeout=timeout, log_path=old_manager.log_file,
                            alive=lambda: old_manager.status().active, evidence=old_manager.evidence)
    except QwenKitError as exc:
        raise ServerError(t("deploy.err_rollback_failed", reason=reason, detail=exc.message),
                          t("deploy.hint_rollback_failed")) from exc
    if isinstance(cause, KeyboardInterrupt):
        warn(t("deploy.interrupted_rolled_back", model=previous.model_id, url=old_spec.openai_base_url))
        raise cause
    raise ServerError(t("deploy.err_rolled_back", reason=reason, model=previous.model_id,
                        url=old_spec.openai_base_url), t("deploy.hint_rolled_back")) from cause
