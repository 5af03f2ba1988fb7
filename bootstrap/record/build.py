"""The record of a verified install, built from what the stages returned (``state.py`` writes and reads it).

Kept apart from ``state.py``: a rerun with nothing to do reads ``state.json`` and must not import the place and tune
stages this module names.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bootstrap.core.home import Home
from bootstrap.fetch.records import PlacedFile
from bootstrap.place.chat_template import PlacedTemplate
from bootstrap.place.working_engine import WorkingEngine
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.plan.planner import Plan
from bootstrap.record.state import (
    AssetRecord,
    ChatTemplateRecord,
    EngineRecord,
    FileRecord,
    GivenUpRecord,
    InstallState,
    LibraryModel,
    RequestRecord,
    RpcDeviceRecord,
    ServerRecord,
    ServiceRecord,
    SwitchRecord,
    relative_to_home,
)
from bootstrap.tune.fit import TuneResult
from bootstrap.verify.speed_records import SpeedCheck
from bootstrap.verify.tools_record import ToolsCheck


def build_state(home: Home, *, system: str, plan: Plan, working: WorkingEngine, files: Sequence[PlacedFile],
                spec: LaunchSpec, tuned: TuneResult, retried: str | None, service_manager: str,
                venv_python: Path | None, request: RequestRecord | None,
                previous: InstallState | None, switch: SwitchRecord | None = None,
                speed: SpeedCheck | None = None, library: tuple[LibraryModel, ...] = (),
                models_max: int = 0, chat_template: PlacedTemplate | None = None,
                tools: ToolsCheck | None = None) -> InstallState:
    """The install record: the plan that runs (``retried``: why it is a smaller one), the engine with the builds given
    up on the way, the files in place, the server as started (``spec``), the service manager and the venv, and its
    speed measured against the prediction, the chat template it serves with and whether it takes tools."""
    installed = working.installed
    given_up, selftest_s = _engine_history(working, previous)
    return InstallState(
        system=system, model_id=plan.model_id, quant=plan.quant,
        engine=EngineRecord(build=installed.build, variant=installed.variant,
                            dir=relative_to_home(home, installed.dir), server=relative_to_home(home, installed.server),
                            version=working.probed.version_line,
                            assets=tuple(AssetRecord(n, s, z) for n, s, z in installed.assets),
                            given_up=given_up, selftest_s=selftest_s),
        files=tuple(_file_record(home, f) for f in files),
        server=ServerRecord(host=spec.host, port=spec.port, alias=spec.alias, args=spec.args,
                            plan_args=tuple(plan.args), tuned_by=tuned.adopted,
                            fit_args=tuned.fit_args, retried=retried, switch_over=switch,
                            planned_ram=plan.estimate.host_total,
                            rpc_devices=tuple(RpcDeviceRecord(g.engine_device or "", g.name, g.vram_total_bytes >> 20,
                                                              g.vram_free_bytes >> 20)
                                              for g in plan.budget.rpc_devices if "--rpc" in spec.args),
                            chat_template=template_record(home, chat_template), tools=tools),
        service=ServiceRecord(service_manager, True),
        venv_python=None if venv_python is None else relative_to_home(home, venv_python),
        request=request,
        speed=speed,
        library=library,
        models_max=models_max if library else 0,
    )


def template_record(home: Home, placed: PlacedTemplate | None) -> ChatTemplateRecord | None:
    """What ``state.json`` keeps of the chat template placed for a model: the kit's file and its fixes, or why the
    model's own serves; None for a model the kit serves with its own template as a matter of course."""
    if placed is None:
        return None
    if placed.derived is not None and placed.path is not None:
        d = placed.derived
        return ChatTemplateRecord(relative_to_home(home, placed.path), d.family, d.fixes, d.source_sha256)
    if placed.problem is not None:
        from bootstrap.plan.chat_template import FAMILY

        return ChatTemplateRecord(None, FAMILY, problem=placed.problem)
    return None


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


def _file_record(home: Home, placed: PlacedFile) -> FileRecord:
    """The record of a file in place, with the stat identity a rerun trusts instead of hashing."""
    st = placed.path.stat()
    return FileRecord(placed.role, relative_to_home(home, placed.path), placed.size, placed.sha256, placed.source,
                      placed.revision, mtime_ns=st.st_mtime_ns, inode=st.st_ino)
