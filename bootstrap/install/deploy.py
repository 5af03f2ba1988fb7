"""Place → tune → render → register → verify → record, for a plan whose model files are already fetched and verified.

This is the second half of the pipeline (DESIGN.md §1); the installer runs detect → plan → fetch and then this.
Each stage is its own module; ``deploy`` only passes records from one step to the next, in pipeline order, so a
reader finds a stage by its name:

    _place (engine, API key, venv) → validate (check_files) → _tune → validate (check_tuned) → the chat template
    → switch_over (stop old, swap, render, register, start, verify) → build_state → _commit (state.json, cleanup)

Every stage is idempotent: a rerun reuses the engine and venv it finds verified, keeps the API key, re-renders the
scripts, and restarts the server.

An upgrade does everything it can while the previous install keeps serving (engine into its own folder, venv,
tune on the staged files), and refuses a model file that cannot serve before it stops anything (``validate``).
Only then it stops the old server, swaps the changed files (``file_swap``), starts and
verifies the new one (``switch_over``). If that fails, the old files go back, the old scripts and service are
restored and restarted, and the error says so. ``state.json`` is written only after a verified start (the commit
point, ``_commit``), and the old files are deleted only after that (``cleanup``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.console import detail, info, t, warn
from bootstrap.core.home import Home
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.fetch.download import FetchOptions
from bootstrap.fetch.records import PlacedFile
from bootstrap.install import cleanup, file_swap
from bootstrap.install.switch_over import Replanner, Serving, SwitchOver, switch_over
from bootstrap.install.validate import check_files, check_tuned, refuse
from bootstrap.place import runtime_venv
from bootstrap.place.api_key import ensure_api_key
from bootstrap.place.chat_template import place_chat_template
from bootstrap.place.engine import DEFAULT_FETCH
from bootstrap.place.working_engine import WorkingEngine, place_working_engine, request_for
from bootstrap.plan import engine_flags
from bootstrap.plan.keep_alive import effective
from bootstrap.plan.launch_spec import DEFAULT_HOST, DEFAULT_PORT, LaunchSpec
from bootstrap.plan.planner import Plan
from bootstrap.plan.prompt_cache import cache_root
from bootstrap.record.build import build_state
from bootstrap.record.failure_record import clear_failure
from bootstrap.record.state import (
    InstallState,
    LibraryModel,
    RequestRecord,
    preset_models,
    resolve_in_home,
    save_state,
    system_prompts,
)
from bootstrap.register import managers
from bootstrap.register.prompt_cache import write_budget
from bootstrap.render.start_scripts import StartScripts
from bootstrap.tune.fit import TuneResult, tune
from bootstrap.verify.chat import VerifyReport, print_report
from bootstrap.verify.speed_check import speed_lines
from bootstrap.verify.speed_records import SpeedCheck


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
    # The manager the installer chose before its confirmation screen (None: chosen here, for callers without one).
    manager: managers.ManagerChoice | None = None
    # The first start ran out of memory: a smaller plan to try once (None: none, or no replanning here).
    replan: Replanner | None = None
    # The speed prediction verify compares with (``Plan.speed.to_json()`` keys); a recorded one in tests.
    predicted_speed: Mapping[str, Any] | None = None
    # The other models served beside this one and how many load at once (None: the previous install's, kept).
    library: tuple[LibraryModel, ...] | None = None
    models_max: int = 0
    measure_speed: bool = True  # False: a restart with new settings keeps the speed the last install measured


@dataclass(frozen=True)
class DeployResult:
    state: InstallState
    spec: LaunchSpec
    report: VerifyReport
    tune: TuneResult
    venv: runtime_venv.VenvResult | None
    scripts: StartScripts
    service_manager: str
    removed: tuple[Path, ...] = ()  # the previous install's files deleted after the commit


@dataclass(frozen=True)
class _Placed:
    """What the place step leaves: the engine, and the server start complete but for the flags (tune decides)."""

    working: WorkingEngine
    untuned: LaunchSpec
    venv: runtime_venv.VenvResult | None


def deploy(home: Home, plan: Plan, files: list[PlacedFile], hardware: HardwareProfile,
           options: DeployOptions = DeployOptions(), previous: InstallState | None = None,
           working: WorkingEngine | None = None) -> DeployResult:
    """Turn verified files and a plan into a running, registered, verified server, and record it.

    ``working``: the engine the installer already placed and self-tested (with its fallbacks); without it, the
    plan's own build is placed and self-tested here, with no fallback.
    """
    placed = _place(home, plan, files, hardware, options, previous, working)
    # validate: a file that cannot serve is refused before anything that serves now is stopped
    refused = check_files(files, placed.working.installed.dir)
    if refused is not None:
        raise refuse(home, refused, files, upgrade=previous is not None,
                     engine_build=placed.working.installed.build)
    tuned = _tune(plan, files, hardware, options, placed.working)
    refused = check_tuned(files, tuned)
    if refused is not None:
        raise refuse(home, refused, files, upgrade=previous is not None,
                     engine_build=placed.working.installed.build)
    # the kit's chat template for agent clients, from the model's own in the bytes that will serve (checked above)
    template = place_chat_template(home, _model(files).bytes_at)
    keep_alive = effective(options.request.keep_alive if options.request is not None else None)
    spec = replace(placed.untuned, args=tuple(tuned.final_args), chat_template=template.path, keep_alive_s=keep_alive)
    library, models_max = _library(previous, options)
    prompts = system_prompts(spec.alias, options.request.preset if options.request is not None else None, library)
    if library or prompts:  # other models beside it (router mode), a system prompt: behind the kit's front
        from bootstrap.register.shell_command import kit_command

        spec = replace(spec, kit=kit_command(home, hardware.os.system), system_prompts=prompts)
    if library:
        spec = replace(spec, others=preset_models(home, library, models_max, keep_alive), models_max=models_max)

    # register (first half): a service when asked and possible, else the start script in the background
    manager = _choose_manager(home, hardware, options)
    how = SwitchOver(port_explicit=options.port_explicit, verify_timeout=options.verify_timeout,
                     replan=options.replan, args_for=lambda smaller: _flags(smaller, options, placed.working),
                     predicted=_predicted(plan, options), measure=options.measure_speed)
    write_budget(cache_root(home.root), plan.prompt_cache_disk_mib)  # what every later save of this home keeps to
    serving = switch_over(home, plan, spec, files, manager, how, previous)
    manager = serving.manager  # the start script where the service manager ran nothing
    if serving.retried is not None:  # the smaller plan runs as planned: llama.cpp's fit was for the first one
        tuned = replace(tuned, adopted="plan", fit_args=None)

    state = build_state(home, system=hardware.os.system, plan=serving.plan, working=placed.working, files=files,
                        spec=serving.spec, tuned=tuned, retried=serving.retried, service_manager=manager.name,
                        venv_python=None if placed.venv is None else placed.venv.python, request=options.request,
                        previous=previous, switch=serving.switch, speed=_speed(serving, previous, options),
                        library=library, models_max=models_max, chat_template=template,
                        tools=serving.report.tools)
    removed = _commit(home, state, serving.journal)
    speed, slow = speed_lines(serving.speed) if serving.speed is not None else ([], [])
    print_report(serving.report, speed)
    for warning in slow:
        warn(warning)
    if serving.switch is not None:
        info(t("switch.gap", gap=f"{serving.switch.gap_s:.1f}", load=f"{serving.switch.load_s:.1f}"))
    return DeployResult(state, serving.spec, serving.report, tuned, placed.venv, serving.scripts, manager.name,
                        tuple(removed))


def _speed(serving: Serving, previous: InstallState | None, options: DeployOptions) -> SpeedCheck | None:
    """What ``state.json`` keeps of the speed: this run's measurement, or (a restart with new settings, which
    measures nothing) the last install's, still labelled with when it was measured."""
    if serving.speed is not None or options.measure_speed or previous is None:
        return serving.speed
    return previous.speed


def _library(previous: InstallState | None, options: DeployOptions) -> tuple[tuple[LibraryModel, ...], int]:
    """The models served beside this one: the caller's set (``install --default`` moves the old default there),
    else the previous install's."""
    if options.library is not None:
        return options.library, options.models_max
    if previous is None:
        return (), 0
    return previous.library, previous.models_max


def _predicted(plan: Plan, options: DeployOptions) -> Mapping[str, Any] | None:
    """The speed the plan predicts for this machine (``Plan.speed``), which verify's measurement is compared with.

    ``DeployOptions.predicted_speed`` overrides it (a test that needs a prediction far from what the bed delivers)."""
    if options.predicted_speed is not None:
        return options.predicted_speed
    return None if plan.speed is None else plan.speed.to_json()


def _place(home: Home, plan: Plan, files: Sequence[PlacedFile], hardware: HardwareProfile, options: DeployOptions,
           previous: InstallState | None, working: WorkingEngine | None) -> _Placed:
    """place: the engine (download, verify, safe extract, atomic rename, probe, self-test), the API key, the
    runtime venv; the live install keeps serving meanwhile."""
    model, mmproj = _model(files), _mmproj(files)
    if working is None:
        live = resolve_in_home(home, previous.engine.dir) if previous is not None else None
        working = place_working_engine(home, plan.variant.name, request_for(
            plan, hardware, allowed=(plan.variant.name,), options=options.fetch, fetched=options.engine_archives,
            live_dir=live))
    installed = working.installed
    key_file = ensure_api_key(home)
    untuned = LaunchSpec(home=home.root, system=hardware.os.system, engine_dir=installed.dir,
                         server=installed.server, model=model.path, mmproj=None if mmproj is None else mmproj.path,
                         args=(), alias=options.alias or plan.model_id, api_key_file=key_file, host=options.host,
                         port=options.port, model_sha256=model.sha256)
    library, _ = _library(previous, options)
    embed_model = next((m.name for m in library if m.role == "embedding"), None)
    venv = _venv(home, hardware, options, untuned, embed_model) if options.venv else None
    return _Placed(working, untuned, venv)


def _venv(home: Home, hardware: HardwareProfile, options: DeployOptions, spec: LaunchSpec,
          embed_model: str | None) -> runtime_venv.VenvResult:
    """The runtime venv (openai SDK, this kit, the examples) for one of this machine's Pythons, set up for ``spec``
    (and ``embed_model``, the home's embedding model, for rag.py)."""
    python = runtime_venv.venv_python_for(hardware.pythons, options.python_versions)
    result = runtime_venv.ensure_venv(home, python=python, endpoint=spec.openai_base_url,
                                      api_key_file=spec.api_key_file, model=spec.alias, embed_model=embed_model,
                                      index_url=options.pip_index_url, find_links=options.wheels_dir)
    if result.skipped_reason:
        warn(result.skipped_reason)
    return result


def _tune(plan: Plan, files: Sequence[PlacedFile], hardware: HardwareProfile, options: DeployOptions,
          working: WorkingEngine) -> TuneResult:
    """tune: llama.cpp's own fit on this machine, compared with the plan (on the staged bytes during an upgrade)."""
    mmproj = _mmproj(files)
    tuned = tune(working.installed.fit_params, _model(files).bytes_at, _flags(plan, options, working), hardware,
                 mmproj=None if mmproj is None else mmproj.bytes_at)
    detail(tuned.reason)  # "kept the plan: …": how llama.cpp's fit compared, for --verbose
    checkpoint("tuned")
    return tuned


def _commit(home: Home, state: InstallState, journal: file_swap.Journal | None) -> list[Path]:
    """record: the commit point of an install or upgrade. A run killed before it is recovered to the previous
    install (the swap journal is undone); after it, the new install is the one on record, and the previous one's
    files go (``cleanup``; a kill there is finished by the next run)."""
    save_state(home, state)
    clear_failure(home)
    checkpoint("recorded")
    removed = cleanup.after_success(home, state, journal)
    checkpoint("cleaned")
    return removed


def _model(files: Sequence[PlacedFile]) -> PlacedFile:
    return next(f for f in files if f.role == "model")


def _mmproj(files: Sequence[PlacedFile]) -> PlacedFile | None:
    return next((f for f in files if f.role == "mmproj"), None)


def _flags(plan: Plan, options: DeployOptions, working: WorkingEngine) -> list[str]:
    """The plan's flags with the catalog's and the caller's overrides, minus what this build does not accept."""
    flags = engine_flags.filter_by_help(engine_flags.with_overrides(list(plan.args), list(options.extra_args)),
                                        working.probed.flags)
    for dropped in flags.dropped:
        warn(t("deploy.flag_dropped", flag=dropped))
    return flags.kept


def _choose_manager(home: Home, hardware: HardwareProfile, options: DeployOptions) -> managers.ServiceManager:
    """The manager chosen before the confirmation screen (``managers.choose_for_install``), built with WinSW's
    exe when that is the one; the start script's line said where it runs the server instead of a service."""
    choice = options.manager or managers.choose_for_install(
        hardware.os.system, home, service=options.register_service, admin=options.admin, winsw=options.winsw)
    if choice.fallback:
        warn(choice.fallback)
    manager = managers.manager_named(choice.name, home, winsw=options.winsw)
    if isinstance(manager, managers.FallbackManager) and choice.asked:
        warn(t("service.no_manager", script=manager.start_script))
    return manager
