"""Place → tune → render → register → verify → record, for a plan whose model files are already fetched and verified.

This is the second half of the pipeline (DESIGN.md §1); the installer runs detect → plan → fetch and then this.
Each stage is its own module; this file only passes records from one to the next, in pipeline order, so a reader
finds a stage by its name. Every stage is idempotent: a rerun reuses the engine and venv it finds verified, keeps
the API key, re-renders the scripts, and restarts the server.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from . import engine, engine_flags, engine_probe, pyenv, service, start_scripts, tune, verify
from .api_key import ensure_api_key, read_api_key
from .console import info, t, warn
from .download import FetchOptions
from .engine import DEFAULT_FETCH
from .errors import ServerError
from .hardware import HardwareProfile
from .home import Home
from .launch_spec import DEFAULT_HOST, DEFAULT_PORT, LaunchSpec
from .planner import Plan
from .service.base import port_busy
from .state import (
    AssetRecord,
    EngineRecord,
    FileRecord,
    InstallState,
    ServerRecord,
    ServiceRecord,
    relative_to_home,
    save_state,
)


@dataclass(frozen=True)
class PlacedFile:
    """A verified model file in the home, with where it came from (for the record)."""

    role: str  # "model" | "mmproj"
    path: Path
    size: int
    sha256: str
    source: str
    revision: str | None = None


@dataclass(frozen=True)
class DeployOptions:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    alias: str | None = None  # default: the plan's model id
    register_service: bool = True  # False: start with the script (no autostart, no supervision)
    admin: bool = False  # elevated: a system-wide service (systemd system unit, WinSW)
    venv: bool = True
    pip_index_url: str | None = None
    wheels_dir: Path | None = None  # offline: install the venv from these wheels only
    extra_args: tuple[str, ...] = ()  # appended after the plan's flags (tests, a user's additions)
    verify_timeout: float = 300.0
    fetch: FetchOptions = DEFAULT_FETCH


@dataclass(frozen=True)
class DeployResult:
    state: InstallState
    spec: LaunchSpec
    report: verify.VerifyReport
    tune: tune.TuneResult
    venv: pyenv.VenvResult | None
    scripts: start_scripts.StartScripts
    service_manager: str


def deploy(home: Home, plan: Plan, files: list[PlacedFile], hardware: HardwareProfile,
           options: DeployOptions = DeployOptions()) -> DeployResult:
    """Turn verified files and a plan into a running, registered, verified server, and record it."""
    model = next(f for f in files if f.role == "model")
    mmproj = next((f for f in files if f.role == "mmproj"), None)

    # place: the engine (download, verify, safe extract, atomic rename), its probe, the runtime venv
    installed = engine.install_engine(home, plan.variant.name, options=options.fetch)
    probed = engine_probe.probe_engine(installed.server)
    flags = engine_flags.filter_by_help(list(plan.args) + list(options.extra_args), probed.flags)
    for dropped in flags.dropped:
        warn(t("deploy.flag_dropped", flag=dropped))
    key_file = ensure_api_key(home)
    alias = options.alias or plan.model_id
    # The server start, complete but for the flags (tune decides them below).
    untuned = LaunchSpec(home=home.root, system=hardware.os.system, engine_dir=installed.dir,
                         server=installed.server, model=model.path, mmproj=None if mmproj is None else mmproj.path,
                         args=(), alias=alias, api_key_file=key_file, host=options.host, port=options.port)
    venv_result = None
    if options.venv:
        venv_result = pyenv.ensure_venv(home, python=pyenv.find_python(hardware.pythons),
                                        endpoint=untuned.openai_base_url,
                                        api_key_file=key_file, model=alias, index_url=options.pip_index_url,
                                        find_links=options.wheels_dir)
        if venv_result.skipped_reason:
            warn(venv_result.skipped_reason)

    # tune: llama.cpp's own fit on this machine, compared with the plan
    tuned = tune.tune(installed.fit_params, model.path, flags.kept, hardware, mmproj=untuned.mmproj)
    info(tuned.reason)

    # render: the start scripts (the service definitions are rendered by register)
    spec = replace(untuned, args=tuple(tuned.final_args))
    scripts = start_scripts.render_start_scripts(spec, home)

    # register: a service when asked and possible, else the start script in the background
    manager = service.choose_manager(hardware.os.system, home, admin=options.admin) if options.register_service \
        else service.FallbackManager(home)
    available, why = manager.available()
    if not available:
        warn(why)
        manager = service.FallbackManager(home)
    if isinstance(manager, service.FallbackManager):
        warn(t("service.no_manager", script=home.run_sh))
    manager.stop()  # an older instance of this install, so the port is ours again
    if port_busy(spec.connect_host, spec.port):
        raise ServerError(t("service.err_port_busy", host=spec.host, port=spec.port), t("service.hint_port_busy"))
    service.install_service(manager, spec)
    manager.start()

    # verify: a real chat request, non-stream and stream
    report = verify.verify_server(spec, read_api_key(home), timeout=options.verify_timeout)

    # record
    state = InstallState(
        system=hardware.os.system, model_id=plan.model_id, quant=plan.quant,
        engine=EngineRecord(build=installed.build, variant=installed.variant,
                            dir=relative_to_home(home, installed.dir), server=relative_to_home(home, installed.server),
                            version=probed.version_line,
                            assets=tuple(AssetRecord(n, s, z) for n, s, z in installed.assets)),
        files=tuple(FileRecord(f.role, relative_to_home(home, f.path), f.size, f.sha256, f.source, f.revision)
                    for f in files),
        server=ServerRecord(host=spec.host, port=spec.port, alias=alias, args=spec.args,
                            plan_args=tuple(plan.args), tuned_by=tuned.adopted,
                            fit_args=tuned.fit_args),
        service=ServiceRecord(manager.name, True),
        venv_python=None if venv_result is None or venv_result.python is None
        else relative_to_home(home, venv_result.python),
    )
    save_state(home, state)
    verify.print_report(report)
    return DeployResult(state, spec, report, tuned, venv_result, scripts, manager.name)
