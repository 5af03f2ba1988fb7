"""The installer: one run of the whole pipeline (DESIGN.md §1), which is also how reruns upgrade in place.

    lock → recover → [up to date? keep serving] → detect → plan → (confirm) → engine (fetch, place, self-test,
    next build if it cannot run) → measure → fetch → place → tune → render → register → verify → record → clean

- **lock**: one installer per home (``home_lock``); a kill drops it with the process.
- **recover**: a swap journal left by a killed upgrade is undone (or, when ``state.json`` already records the new
  files, finished), so the home is again exactly the last verified install.
- **up to date**: same request, kit, engine and files (stat only, no byte read) → no stage runs; the server is
  started if it is not answering. ``--verify`` skips this and hashes every file.
- **detect → plan → engine → fetch**: here. The engine comes first and is run once on a tiny quantized model
  (``working_engine``): a build that cannot run here is found in seconds, before any model byte and before the live
  server is stopped, and the next build this machine can run replaces it (the plan follows). Then it measures
  this machine's speed in a few seconds and the plan predicts from that (``measure``). Fetch downloads only
  what changed, into staging when the live install uses the path. **place … record**: ``deploy.deploy``, which
  swaps, verifies (a first start that runs out of memory is replanned once, ``_oom_replanner``) and rolls back.
- A failure with a named cause (``engine_failure``) is kept in ``logs/last-failure.json`` for ``status``.
Every step is a named checkpoint (``checkpoints.POINTS``) so the crash harness can kill the run there.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bootstrap.catalog.model_ref import ModelRef, Wanted, wanted_model
from bootstrap.catalog.source_names import is_hub_source
from bootstrap.core import settings
from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.console import info, out, t, warn
from bootstrap.core.errors import QwenKitError, ServerError, UsageError
from bootstrap.core.home import Home
from bootstrap.core.home_lock import home_lock
from bootstrap.install import cleanup, file_swap, freshness
from bootstrap.plan.launch_spec import DEFAULT_HOST, DEFAULT_PORT
from bootstrap.plan.presets import Preset
from bootstrap.record.state import InstallState, LibraryModel, RequestRecord, launch_spec, load_state

# The stages past the up-to-date check are imported when they run: a rerun with nothing to do must not pay for
# the network, planner and deploy code (about a second of imports on a slow machine, scripts/bench_rerun.py).
if TYPE_CHECKING:
    from bootstrap.detect.hardware import HardwareProfile
    from bootstrap.install.deploy import DeployOptions, DeployResult
    from bootstrap.install.fetch_plan import FetchPlan
    from bootstrap.install.from_bundle import OpenedBundle
    from bootstrap.install.proposal import Proposal
    from bootstrap.place.engine_failure import EngineFailure
    from bootstrap.place.working_engine import WorkingEngine
    from bootstrap.plan.engine_variant import VariantChoice
    from bootstrap.plan.planner import Candidate, Plan
    from bootstrap.register.managers import ManagerChoice
    from bootstrap.register.shell_command import CommandOnPath


@dataclass(frozen=True)
class InstallRequest:
    """Everything ``qwenkit install`` was asked (command line or answers file)."""

    model: str | None = None
    source: str | None = None  # None: the recorded source of this home, else "auto"
    host: str = DEFAULT_HOST
    port: int | None = None  # None: the recorded port, else 8080 (or the next free one)
    service: bool = True
    venv: bool = True
    verify_files: bool = False  # hash every file instead of trusting size + mtime + inode
    admin: bool = False
    wheels_dir: Path | None = None
    pip_index_url: str | None = None
    verify_timeout: float = 300.0
    hardware_file: Path | None = None  # plan for the memory, GPUs and CPU this profile states (install --hardware)
    thinking: bool | None = None  # install --thinking on|off; None: as recorded, else the catalog's default
    ctx: int | None = None  # install --ctx N; None: as recorded, else the plan's; CTX_AUTO: the plan's again
    make_default: bool = False  # install --default MODEL: MODEL becomes the default, the old one is kept beside it
    rpc: tuple[str, ...] | None = None  # install --rpc: RPC workers' endpoints; None: as recorded; (): none
    keep_alive: int | None = None  # install --keep-alive, seconds (-1: never); None: as recorded, else the default
    preset: Preset | None = None  # install --system/--temperature/…/--preset: over the recorded one (plan/presets)
    clear_preset: bool = False  # install --clear-preset: the recorded preset is forgotten first


CTX_AUTO = 0  # install --ctx auto: forget a recorded --ctx, the plan chooses


@dataclass(frozen=True)
class InstallOutcome:
    kind: str  # "installed" | "upgraded" | "switched" | "relaunched" | "verified" | "unchanged" | "restarted" |
    # "cancelled"
    state: InstallState | None
    result: DeployResult | None = None
    on_path: CommandOnPath | None = None  # the qwenkit command (None: left as it was, or cancelled)
    previous: InstallState | None = None  # what the home held before this run (the closing line says what changed)


Confirm = Callable[["Proposal"], bool]


def install(home: Home, request: InstallRequest, confirm: Confirm | None = None) -> InstallOutcome:
    """Run the pipeline into ``home``; ``confirm`` (interactive runs) sees the plan before anything changes."""
    with home_lock(home, "install"):
        checkpoint("locked")
        recovered = recover(home)
        checkpoint("recovered")
        previous = load_state(home)
        request = replace(request, source=request.source or _recorded_source(previous))
        bundle = None
        if not is_hub_source(request.source):  # an offline bundle (or a mirror URL): its catalog and pins in force
            from bootstrap.install.from_bundle import open_bundle

            bundle = open_bundle(request.source, home)
            if bundle is not None and bundle.root is not None:  # recorded as found: absolute, no trailing "/"
                request = replace(request, source=bundle.root)
        try:
            with settings.overridden(bundle.env() if bundle is not None else {}):
                outcome = _install(home, request, confirm, previous, recovered, bundle)
        except BaseException as exc:
            if isinstance(exc, QwenKitError):
                _record_failure(home, exc)
            if bundle is not None:  # refused or failed: the new bundle's records go, the home's stay
                _settle_records(bundle, home, keep=False)
            raise
        if bundle is not None:  # every check passed: its records are the home's (not when cancelled)
            _settle_records(bundle, home, keep=outcome.kind != "cancelled")
        return _put_on_path(home, outcome)


def _put_on_path(home: Home, outcome: InstallOutcome) -> InstallOutcome:
    """After a successful run: the ``qwenkit`` command on the user's PATH (``register.shell_command``), said once,
    and recorded. A rerun that changed nothing leaves an intact launcher alone (no template engine is loaded)."""
    from bootstrap.register.launcher_record import launcher_intact

    state = outcome.state
    if state is None or outcome.kind == "cancelled":
        return outcome
    if outcome.kind in ("unchanged", "restarted") and launcher_intact(state.launcher):
        return outcome
    from bootstrap.record.state import save_state
    from bootstrap.register.shell_command import put_on_path

    done = put_on_path(home, state.system, prior=state.launcher)
    if done.line:  # pipx's own qwenkit, which finds this home: nothing to say
        info(done.line)
    if done.record is not None and done.record != state.launcher:
        state = replace(state, launcher=done.record)
        save_state(home, state)
    return replace(outcome, state=state, on_path=done)


def _settle_records(bundle: OpenedBundle, home: Home, *, keep: bool) -> None:
    from bootstrap.install.from_bundle import commit_records, discard_records

    (commit_records if keep else discard_records)(bundle, home)


def _record_failure(home: Home, exc: QwenKitError) -> None:
    """A failure with a named engine cause (itself, or the cause of a rollback) goes to logs/last-failure.json."""
    from bootstrap.place.engine_failure import EngineFailed
    from bootstrap.record.failure_record import save_failure

    for err in (exc, exc.__cause__):
        if isinstance(err, EngineFailed) and home.root.is_dir():
            save_failure(home, err, int(exc.exit_code))
            return


def _install(home: Home, request: InstallRequest, confirm: Confirm | None, previous: InstallState | None,
             recovered: bool, bundle: OpenedBundle | None) -> InstallOutcome:
    import platform

    from bootstrap.render.start_scripts import check_home

    check_home(home.root, platform.system())  # a home the start script cannot name: refused before any request
    source = request.source or "auto"
    wanted = wanted_model(request.model, previous.request.model if previous and previous.request else None)
    if request.thinking is None and previous is not None and previous.request is not None:
        request = replace(request, thinking=previous.request.thinking)  # a rerun keeps --thinking
    if request.ctx is None and previous is not None and previous.request is not None:
        request = replace(request, ctx=previous.request.ctx)  # and --ctx
    if request.keep_alive is None and previous is not None and previous.request is not None:
        request = replace(request, keep_alive=previous.request.keep_alive)  # and --keep-alive
    request = replace(request, ctx=request.ctx or None)  # CTX_AUTO: the plan's choice, recorded as no choice
    if request.rpc is None:  # and --rpc
        request = replace(request, rpc=previous.request.rpc if previous and previous.request else ())
    rpc = request.rpc or ()
    request = replace(request, preset=_kept_preset(request, previous, wanted))
    switch = _default_switch(previous, wanted) if request.make_default else None
    fetch_previous = previous if switch is None else switch.fetch_previous
    reasons: tuple[str, ...] = ()
    relaunch = False  # only how the server starts changes: no network check, no speed measurement
    if previous is not None and not recovered and not request.verify_files and _same_server(previous, request):
        fresh = freshness.check(home, previous, wanted, source, request.thinking, request.ctx, rpc,
                                keep_alive=request.keep_alive, preset=request.preset)
        for note in fresh.notes:
            warn(note)
        if fresh.up_to_date:
            return _keep_serving(home, previous, request)
        _refuse_ctx_first(home, previous, wanted.text, request.ctx)  # before a change is announced
        reasons = fresh.reasons
        relaunch = fresh.launch_only and switch is None
        for reason in reasons:
            info(t("install.change", reason=reason))
    if bundle is not None and bundle.root is None:  # the bundle is gone and the install needs its files
        raise UsageError(t("bundle.err_gone", where=source), t("bundle.hint_gone"))

    from bootstrap.install.candidates import candidates_for
    from bootstrap.install.deploy import deploy
    from bootstrap.install.fetch_plan import fetch, plan_fetch
    from bootstrap.install.proposal import make_proposal
    from bootstrap.plan.planner import choose

    # detect (with whether any source answers, for the check shown before the question; not for a bundle; and the
    # speed this machine measured at its last install: install/measure.py)
    hardware = _hardware(home, request, reach=bundle is None and is_hub_source(source) and not relaunch)
    if request.hardware_file is None:
        from bootstrap.install.measure import rates_in_state

        hardware = replace(hardware, kernel_rates=rates_in_state(previous, hardware.cpu.brand))
    if rpc:  # the workers' memory, as this PC's installed engine sees it
        from bootstrap.install.rpc_head import with_workers

        hardware = with_workers(home, hardware, rpc, previous)
    # plan (from a bundle: only what it carries)
    candidates, fallbacks = candidates_for(wanted.ref, home.models_dir, source, request.thinking)
    _refuse_embedding_default(wanted.ref, candidates)
    # the catalog's default on a first install with no MODEL: a model that answers in time before one that fits
    usable = request.model is None and previous is None and not request.make_default
    plan = choose(candidates, hardware, requested_ctx=request.ctx, fallbacks=fallbacks, usable_first=usable,
                  variants=None if bundle is None else bundle.variants)
    checkpoint("planned")
    port_asked = _port_asked(request, previous)
    port = _port_before_download(home, request, previous)
    service = _manager_choice(home, request, hardware, bundle)  # one answer for the screen and the register stage
    # confirm: the screen is made from the plan, the home and recorded sizes — no network yet
    proposal = make_proposal(home, plan, wanted.ref, hardware, previous, ctx=request.ctx, port=port,
                             port_asked=port_asked,
                             manager=service.name, venv=request.venv,
                             wheels_dir=request.wheels_dir, reasons=reasons,
                             measures_speed=request.hardware_file is None,
                             bundle_wheels=None if bundle is None else sum(
                                 f.size for f in bundle.wheels_for(hardware.os.system, hardware.os.machine)),
                             python_versions=() if bundle is None else bundle.manifest.python_versions,
                             keep_alive=request.keep_alive)
    if confirm is not None and not confirm(proposal):
        return InstallOutcome("cancelled", previous)
    # fetch: resolve on the sources (metadata only), then download only what changed
    fetch_plan = plan_fetch(wanted, plan, source, home, fetch_previous, rehash=request.verify_files)
    _refused_before(home, fetch_plan, upgrade=previous is not None)
    archives, wheels, winsw = _fetch_bundle_parts(bundle, home, plan, hardware, request,
                                                  winsw=service.name == "winsw")
    # From a bundle every file is held until all are verified, so one bad file leaves nothing placed (the engine
    # included). Online the engine comes first: a build that cannot run here is found in seconds, before any
    # model byte is downloaded. Either way the next build this machine can run takes the place of one that cannot,
    # and the plan follows (a CPU build plans for RAM only).
    hold = home.staging_dir / "held" if bundle is not None else None
    placed = fetch(fetch_plan, hold=hold) if bundle is not None else None
    working = _place_engine(home, plan, hardware, bundle, previous, archives)
    hardware, seen_changed = _engine_devices(hardware, plan, working, previous)
    if working.variant != plan.variant.name or seen_changed:
        variant = _fallback_choice(working) if working.variant != plan.variant.name else plan.variant
        replanned = choose(candidates, hardware, requested_ctx=request.ctx, fallbacks=fallbacks, variant=variant,
                           usable_first=usable)
        if (replanned.model_id, replanned.quant, replanned.file) != (plan.model_id, plan.quant, plan.file):
            fetch_plan = plan_fetch(wanted, replanned, source, home, fetch_previous, rehash=request.verify_files)
            _refused_before(home, fetch_plan, upgrade=previous is not None)
            placed = None
        plan = replanned
    # measure: this machine's kernel rates with the engine just placed, and the prediction from them
    from bootstrap.install.measure import measure_and_predict

    relaunch = relaunch and not fetch_plan.changed  # a context the installed quant cannot hold takes another
    if not relaunch:  # a relaunch predicts from the rates the last install measured (rates_in_state above)
        plan, hardware = measure_and_predict(home, plan, hardware, working, lambda measured: choose(
            candidates, measured, fallbacks=fallbacks, variant=plan.variant, usable_first=usable),
            elsewhere=request.hardware_file is not None)
    if placed is None:
        placed = fetch(fetch_plan, hold=hold)
    checkpoint("fetched")

    # place → tune → render → register → verify → record (→ clean)
    # a model taken for its speed is recorded as asked for: a rerun keeps it (``install MODEL`` changes it)
    options = _deploy_options(plan, request, previous, plan.model_id if plan.slower else wanted.text, port)
    options = replace(options, replan=_oom_replanner(candidates + fallbacks, hardware, keep_ctx=request.ctx),
                      manager=service, measure_speed=not relaunch)
    if switch is not None:  # the old default joins the others; how many load at once, for the new set
        from bootstrap.install.library import models_max_for

        planned = [plan.estimate.host_total, *(m.planned_ram or 0 for m in switch.library)]
        options = replace(options, library=switch.library,
                          models_max=models_max_for(planned, hardware.memory.total_bytes))
    if bundle is not None:  # no index at all: the bundle's wheels, or no venv
        options = replace(options, wheels_dir=wheels, venv=wheels is not None,
                          python_versions=bundle.manifest.python_versions, winsw=winsw)
    result = deploy(home, plan, placed, hardware, options, previous=previous, working=working)
    if bundle is not None:
        _tidy_after_bundle(home, winsw)
    if previous is None:
        kind = "installed"
    elif switch is not None:
        kind = "switched"  # another default; the old one stays installed beside it
    elif relaunch:
        kind = "relaunched"  # the same files, started with new settings
    elif reasons or fetch_plan.changed or recovered:
        kind = "upgraded"
    else:
        kind = "verified"  # --verify (or another host/port) with the same files and engine
    return InstallOutcome(kind, result.state, result, previous=previous)


def _kept_preset(request: InstallRequest, previous: InstallState | None, wanted: Wanted) -> Preset | None:
    """The default model's preset after this run: the options given over the recorded one (unless
    ``--clear-preset``, or MODEL is another model than the recorded default); None when nothing is left."""
    from bootstrap.install.library import names_default, names_entry

    recorded = previous.request.preset if previous is not None and previous.request is not None else None
    if previous is not None and previous.request is not None and not names_default(previous, wanted.text):
        # another model becomes the default (``--default``): its own preset, when it was installed beside
        recorded = next((m.preset for m in previous.library if names_entry(m, wanted)), None)
    if request.clear_preset:
        recorded = None
    preset = recorded if request.preset is None else request.preset.over(recorded)
    return None if preset is None or preset.empty else preset


@dataclass(frozen=True)
class DefaultSwitch:
    """``install --default MODEL`` with another model as the default: the set after the switch."""

    library: tuple[LibraryModel, ...]  # the others: the old default added, MODEL's own entry (if any) gone
    fetch_previous: InstallState  # what the fetch stage may reuse without a byte read: both models' files


def _default_switch(previous: InstallState | None, wanted: Wanted) -> DefaultSwitch | None:
    """The set after MODEL becomes the default (None when MODEL already is, or nothing is installed): the old
    default stays installed and served beside it, so switching back downloads nothing."""
    from bootstrap.install.library import names_default, names_entry

    if previous is None or previous.request is None or names_default(previous, wanted.text):
        return None
    entry = next((m for m in previous.library if names_entry(m, wanted)), None)
    old = LibraryModel(name=previous.server.alias, model_id=previous.model_id, quant=previous.quant, role="chat",
                       files=previous.files, args=previous.server.args, request=previous.request.model,
                       source=previous.request.source, planned_ram=previous.server.planned_ram,
                       chat_template=previous.server.chat_template, tools=previous.server.tools,
                       preset=previous.request.preset)
    library = (*(m for m in previous.library if m is not entry), old)
    reusable = previous.files + (entry.files if entry is not None else ())
    return DefaultSwitch(library, replace(previous, files=reusable))


def _refuse_ctx_first(home: Home, previous: InstallState, wanted: str, ctx: int | None) -> None:
    """``--ctx N`` above the installed model's trained context: refused (exit 2) before the run says "the context
    changes" — the same check the planner makes, on the model file already in the home (its header)."""
    if ctx is None or previous.request is None or previous.request.model != wanted:
        return
    from bootstrap.catalog.model_ref import CatalogRef, parse_model_ref
    from bootstrap.catalog.models import load_catalog
    from bootstrap.plan.context import check_trained
    from bootstrap.plan.gguf_header import read_header
    from bootstrap.plan.model_profile import model_profile
    from bootstrap.record.state import resolve_in_home

    model = previous.file("model")
    if model is None:
        return
    try:
        profile = model_profile(read_header(resolve_in_home(home, model.path)))
        title = load_catalog().model(previous.model_id).title \
            if isinstance(parse_model_ref(wanted), CatalogRef) else previous.model_id
    except (QwenKitError, OSError):
        return  # the planner checks it as before
    check_trained(ctx, title, profile.n_ctx_train)


def _refuse_embedding_default(ref: ModelRef, candidates: list[Candidate]) -> None:
    """An embedding model answers no chat: it is added beside a chat model (``install/library.py``), never made the
    default one (the install's proof is a chat)."""
    from bootstrap.catalog.model_ref import CatalogRef
    from bootstrap.catalog.models import load_catalog

    catalog_says = isinstance(ref, CatalogRef) and load_catalog().model(ref.model_id).embedding
    if catalog_says or (candidates and candidates[0].profile.embedding):
        name = ref.model_id if isinstance(ref, CatalogRef) else candidates[0].model_id
        raise UsageError(t("library.err_embedding_default", name=name), t("library.hint_embedding_default", name=name))


def _tidy_after_bundle(home: Home, winsw: Path | None) -> None:
    """What an install from a bundle staged for itself: the wheels, WinSW (copied next to its service definition by
    now), the held files, and the staging folder when nothing else waits there."""
    shutil.rmtree(home.wheels_cache, ignore_errors=True)
    if winsw is not None:
        winsw.unlink(missing_ok=True)
    shutil.rmtree(home.staging_dir / "held", ignore_errors=True)
    with contextlib.suppress(OSError):
        home.staging_dir.rmdir()


def _refused_before(home: Home, fetch_plan: FetchPlan, *, upgrade: bool) -> None:
    """Bytes an earlier run refused (``install.validate``) are refused again at once: no download, no stop."""
    from bootstrap.catalog.engine_pins import load_pins
    from bootstrap.place.engine_failure import EngineFailed, EngineFailure
    from bootstrap.record.refusals import refusal_for

    found = refusal_for(home, [j.sha256 for j in fetch_plan.jobs if j.sha256 is not None], load_pins().build)
    if found is None:
        return
    message = t("switch.refused_before", file=found.file, revision=(found.revision or found.source)[:12],
                when=found.when, reason=found.reason)
    raise EngineFailed(EngineFailure(found.cause, found.reason), message,
                       t("switch.hint_refused_upgrade" if upgrade else "switch.hint_refused_first"))


def _hardware(home: Home, request: InstallRequest, *, reach: bool = False) -> HardwareProfile:
    """This machine; with ``--hardware``, its memory, GPUs and CPU as the file states them (the OS, Pythons, disk
    and network stay this machine's: the engine and venv are installed here). ``reach``: also whether each hub
    answers (bounded: ``detect.probes.network.REACH_BUDGET``)."""
    from bootstrap.detect.hardware import load_profile
    from bootstrap.detect.profile import detect
    from bootstrap.plan.engine_variant import check_engine

    found = detect(home.root, engine=check_engine, reach=reach)
    if request.hardware_file is None:
        return found
    given = load_profile(request.hardware_file)
    if (given.os.system, given.cpu.arch) != (found.os.system, found.cpu.arch):
        raise UsageError(t("install.err_hardware_other", system=given.os.system, arch=given.cpu.arch,
                           here=f"{found.os.system} {found.cpu.arch}"), t("install.hint_hardware_other"))
    return replace(found, cpu=given.cpu, memory=given.memory, gpus=given.gpus)


def _place_engine(home: Home, plan: Plan, hardware: HardwareProfile, bundle: OpenedBundle | None,
                  previous: InstallState | None, archives: tuple[Path, ...] | None) -> WorkingEngine:
    """The planned engine build, self-tested, or the next one this machine can run (``working_engine``).
    Builds recorded as failing here with this same engine release are not downloaded again."""
    from bootstrap.place.working_engine import place_working_engine, request_for
    from bootstrap.record.state import resolve_in_home

    skip: tuple[str, ...] = ()
    live = None
    if previous is not None:
        live = resolve_in_home(home, previous.engine.dir)
        from bootstrap.catalog.engine_pins import load_pins

        if previous.engine.build == load_pins().build:
            skip = tuple(g.variant for g in previous.engine.given_up)
    return place_working_engine(home, plan.variant.name, request_for(
        plan, hardware, allowed=None if bundle is None else bundle.variants, skip=skip, live_dir=live,
        fetched=archives))


def _engine_devices(hardware: HardwareProfile, plan: Plan, working: WorkingEngine,
                    previous: InstallState | None) -> tuple[HardwareProfile, bool]:
    """The GPUs as the placed engine lists them (``tune.devices``): the profile to plan with from here, and whether
    the plan's GPU budget changed. On an upgrade the running server holds its own GPU memory, so only totals count."""
    from bootstrap.tune.devices import engine_view

    view = engine_view(hardware, working.probed.devices, plan.variant, trust_free=previous is None)
    for note in view.notes:
        info(note)
    return view.hardware, view.changed


def _fallback_choice(working: WorkingEngine) -> VariantChoice:
    """The plan's engine line when a preferred build could not run here: which one runs, and why."""
    from bootstrap.place.working_engine import who
    from bootstrap.plan.engine_variant import VariantChoice

    last = working.given_up[-1] if working.given_up else None
    if last is None:  # skipped from the record: say what was recorded
        return VariantChoice(working.variant, t("failure.fallback", used=working.variant, failed="-", reason="-"))
    return VariantChoice(working.variant, t("failure.fallback", used=working.variant, failed=last.variant,
                                             reason=last.failure.message(who(last.variant))))


def _oom_replanner(candidates: list[Candidate], hardware: HardwareProfile, keep_ctx: int | None = None
                   ) -> Callable[[EngineFailure, Plan], Plan | None]:
    """A smaller plan for a first start that ran out of memory: a smaller context when RAM ran out; less on the
    GPU (more experts or layers in RAM) when VRAM did. Same model file and quant: it is already in place.
    ``keep_ctx``: the context the user asked for (``--ctx``), never shrunk: the failure is reported instead."""
    from bootstrap.plan.planner import CTX_LADDER, GPU_MARGIN, choose

    def replan(failure: EngineFailure, plan: Plan) -> Plan | None:
        # The file is in place: a file taken for its MTP head may now run without drafting if that is what fits.
        same = [replace(c, requires_mtp=False) for c in candidates
                if (c.model_id, c.quant, c.file) == (plan.model_id, plan.quant, plan.file)]
        if not same:
            return None
        profile, ctx = hardware, plan.settings.ctx
        if failure.on_gpu and plan.estimate.gpu_total > 0:
            wanted = failure.wanted_bytes or plan.estimate.gpu_total // 4
            fits = max(0, plan.estimate.gpu_total - wanted) + GPU_MARGIN
            profile = replace(hardware, gpus=tuple(replace(g, vram_free_bytes=min(g.vram_free_bytes or fits, fits))
                                                   for g in hardware.gpus))
        else:
            smaller = [c for c in CTX_LADDER if c < ctx]
            if not smaller or keep_ctx is not None:
                return None
            ctx = smaller[0]
        try:
            return choose(same, profile, requested_ctx=ctx, variant=plan.variant)
        except QwenKitError:
            return None

    return replan


def _recorded_source(previous: InstallState | None) -> str:
    """A rerun that names no source uses the one the install came from (a bundle stays the source)."""
    return previous.request.source if previous is not None and previous.request is not None else "auto"


def _fetch_bundle_parts(bundle: OpenedBundle | None, home: Home, plan: Plan, hardware: HardwareProfile,
                        request: InstallRequest, *, winsw: bool
                        ) -> tuple[tuple[Path, ...] | None, Path | None, Path | None]:
    """From a bundle, the engine's assets, this machine's wheels and WinSW (``winsw``: the chosen manager), each
    verified, before any model file is placed."""
    if bundle is None:
        return None, None, None
    from bootstrap.install.from_bundle import fetch_wheels
    from bootstrap.place import engine

    fetched = engine.fetch_engine(home, plan.variant.name)
    wheels = fetch_wheels(bundle, home, hardware.os.system, hardware.os.machine) if request.venv else None
    return fetched, wheels, engine.fetch_winsw(home) if winsw else None


def recover(home: Home) -> bool:
    """Finish or undo what a killed upgrade left (its journal); True when the home had to be rolled back.

    When ``state.json`` already records the new install, the kill came after the commit: only the previous
    install's leftovers remain to be deleted. Otherwise the swapped files go back, and the home is again exactly
    the last verified install (whose server the rerun then starts again).
    """
    journal = file_swap.read_journal(home)
    if journal is None:
        return False
    state = load_state(home)
    if state is not None and {(f.path, f.sha256) for f in state.files} == set(journal.new_files) \
            and state.engine.dir == journal.new_engine:
        cleanup.after_success(home, state, journal)
        return False
    warn(t("install.recovering"))
    file_swap.undo(journal.moves)
    file_swap.discard(home)
    return True


def _same_server(previous: InstallState, request: InstallRequest) -> bool:
    """A rerun that asks for another host, port or service kind is a change, not a no-op."""
    if request.port is not None and request.port != previous.server.port:
        return False
    if request.host != previous.server.host:
        return False
    wants_script = not request.service
    has_script = previous.service is not None and previous.service.manager == "script"
    return not wants_script or has_script


def _port_asked(request: InstallRequest, previous: InstallState | None) -> int:
    return request.port or (previous.server.port if previous is not None else DEFAULT_PORT)


def _manager_choice(home: Home, request: InstallRequest, hardware: HardwareProfile,
                    bundle: OpenedBundle | None) -> ManagerChoice:
    """Which manager will run the server (``managers.choose_for_install``): the confirmation screen says it, the
    bundle's WinSW is fetched for it, and the deploy stage registers it. WinSW counts when the bundle carries it
    (its pins name it); it is fetched, verified, after the confirmation."""
    from bootstrap.catalog.engine_pins import load_pins
    from bootstrap.register import managers

    offered = bundle is not None and load_pins().winsw is not None
    return managers.choose_for_install(hardware.os.system, home, service=request.service, admin=request.admin,
                                       winsw_offered=offered)


def _port_before_download(home: Home, request: InstallRequest, previous: InstallState | None) -> int:
    """The port the server will use, checked now rather than after gigabytes of download: a taken default port
    moves to the next free one (said once), a taken ``--port`` ends the run (exit 6). This home's own server
    holding it is no conflict: the switch-over stops it first. The switch-over looks again (a race)."""
    from bootstrap.install.switch_over import free_port
    from bootstrap.plan.launch_spec import connect_host

    port = _port_asked(request, previous)
    return free_port(connect_host(request.host), port, explicit=request.port is not None, shown_host=request.host,
                     ours=lambda: _ours(home, previous, port))


def _ours(home: Home, previous: InstallState | None, port: int) -> bool:
    """Whether what holds ``port`` is this home's server: the recorded engine, as the OS tells the socket's owner
    (``register/server_identity.py``), or one a manager of this home runs — the recorded manager, or the start
    script's (a run killed after it started the server but before it recorded anything leaves that one running; the
    switch-over stops it first)."""
    from bootstrap.register import managers
    from bootstrap.register.server_identity import port_holder

    if previous is not None and previous.server.port == port:
        with contextlib.suppress(QwenKitError, OSError):
            if port_holder(launch_spec(previous, home)).ours:  # the OS's word on the socket's owner
                return True
    names = {managers.recorded_manager(home), "script"} - {None}
    for name in sorted(names, key=str):
        with contextlib.suppress(QwenKitError, OSError):
            if managers.manager_named(str(name), home).status().active:
                return True
    return False


def _deploy_options(plan: Plan, request: InstallRequest, previous: InstallState | None, wanted: str,
                    port: int) -> DeployOptions:
    from bootstrap.catalog.model_ref import CatalogRef, parse_model_ref
    from bootstrap.catalog.models import load_catalog
    from bootstrap.install.deploy import DeployOptions

    extra: tuple[str, ...] = ()
    if isinstance(parse_model_ref(wanted), CatalogRef):
        extra = load_catalog().model(plan.model_id).server_args
    if request.ctx is not None:  # the user's context wins over a catalog entry's own -c
        from bootstrap.plan.engine_flags import with_overrides

        extra = tuple(with_overrides(list(extra), ["-c", str(request.ctx)]))
    if request.preset is not None:  # the user's sampling wins over the catalog's (plan/presets.py)
        from bootstrap.plan.engine_flags import with_overrides

        extra = tuple(with_overrides(list(extra), request.preset.flags()))
    return DeployOptions(
        host=request.host, port=port, port_explicit=request.port is not None, register_service=request.service,
        admin=request.admin, venv=request.venv, pip_index_url=request.pip_index_url, wheels_dir=request.wheels_dir,
        extra_args=extra, verify_timeout=request.verify_timeout,
        request=RequestRecord(wanted, request.source or "auto", request.thinking, request.ctx, request.rpc or (),
                              keep_alive=request.keep_alive, preset=request.preset),
    )


def _keep_serving(home: Home, state: InstallState, request: InstallRequest) -> InstallOutcome:
    """Nothing to change: make sure this home's server answers (start it when it does not, wait for it while it
    loads), and say where it is. "Serving" is said only of a server the OS shows to be ours
    (``register/server_identity.py``); a stranger on the port is named and the run ends (exit 6)."""
    from bootstrap.place.api_key import read_api_key, repair_modes
    from bootstrap.register import managers
    from bootstrap.register.rendered_check import render_again
    from bootstrap.register.server_health import check_health
    from bootstrap.register.server_identity import foreign_hint, require_ours

    repair_modes(home)  # a stat of the key and its folder: one made readable by others is private again
    spec = launch_spec(state, home)
    manager = managers.choose_manager(managers.this_system(), home, admin=request.admin)
    # The scripts, preset and service definition as this install renders them: one changed since is written again,
    # and a server that may run it is restarted (register/rendered_check.py).
    rewritten = render_again(spec, home, manager)
    health = check_health(spec, read_api_key(home))
    if health.state == "ok" and not rewritten:
        out(t("install.up_to_date", model=state.model_id, quant=state.quant, url=spec.client_openai_url))  # the result
        return InstallOutcome("unchanged", state)
    if health.state == "stranger":
        raise ServerError(health.detail, foreign_hint(spec))
    from bootstrap.verify.chat import wait_healthy

    info(t("install.restarting_rewritten") if rewritten else t("install.starting", state=health.state))
    try:
        if health.state == "loading" and health.holder is not None and health.holder.pid is not None \
                and not rewritten:
            loading = health.holder.pid  # ours, still loading its model: wait for it rather than start it over
            wait_healthy(spec.base_url, timeout=request.verify_timeout, alive=lambda: _running(loading),
                         log_path=manager.log_file)
        else:
            manager.start()
            wait_healthy(spec.base_url, timeout=request.verify_timeout, alive=lambda: manager.status().active,
                         log_path=manager.log_file, evidence=manager.evidence)
        require_ours(spec)
    except QwenKitError as exc:
        # The error as raised: its kind, exit code and named cause kept (an ``EngineFailed`` cannot be rebuilt from
        # a message alone); a named cause's own hint (what to install) says more than the generic one.
        from bootstrap.place.engine_failure import EngineFailed

        if not (isinstance(exc, EngineFailed) and exc.hint):
            exc.hint = t("install.hint_start_failed")
        raise
    out(t("install.up_to_date", model=state.model_id, quant=state.quant, url=spec.client_openai_url))
    return InstallOutcome("restarted", state)


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (not a zombie)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
