"""Several models in one home: add a model beside the default one, upgrade it in place, remove it.

The default model is the install the pipeline makes (``installer``); every other model is a ``LibraryModel`` in
``state.json``. With at least one, the server runs as llama-server's router (``render/model_preset.py``): one
endpoint, one key, each request routed by its ``"model"`` to that model's own child server.

An added model gets the same guarantees as an install:
  lock → plan (for the engine in place and the memory left) → fetch (resumable, SHA-256 verified) → self-test the
  model alone on a private port (a file that cannot serve never stops the working server) → render the router's
  preset and start script → restart → prove every model answers through the one endpoint with the key (401
  without) → record. A failure after the restart puts the previous scripts back and starts them again.
Removing a model re-renders without it, restarts, proves the rest, records, then deletes its files (never a file
another model uses, never outside ``models/``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bootstrap.catalog.model_ref import CatalogRef, Wanted, installed_name, wanted_model
from bootstrap.catalog.source_names import is_hub_source
from bootstrap.core.console import info, join_names, out, t, warn
from bootstrap.core.errors import QwenKitError, ServerError, UsageError
from bootstrap.core.home import Home
from bootstrap.core.home_lock import home_lock
from bootstrap.core.sizes import human_size
from bootstrap.install import cleanup
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.plan.planner import Plan
from bootstrap.record.state import (
    ChatTemplateRecord,
    FileRecord,
    InstallState,
    LibraryModel,
    launch_spec,
    model_kind,
    relative_to_home,
    require_state,
    resolve_in_home,
    save_state,
)
from bootstrap.render.model_preset import check_name

if TYPE_CHECKING:
    from bootstrap.detect.hardware import HardwareProfile
    from bootstrap.fetch.records import PlacedFile
    from bootstrap.plan.engine_variant import VariantChoice
    from bootstrap.plan.model_profile import ModelProfile
    from bootstrap.plan.planner import Candidate
    from bootstrap.plan.presets import Preset
    from bootstrap.register.base import ServiceManager

# How much of the machine's RAM the models loaded together may take; the rest stays for the OS and the user's
# programs (the same share the planner leaves when it sizes one model: plan/planner.py).
TOGETHER_SHARE = 0.8
EMBED_CTX = 8192  # tokens one input may have (Qwen3-Embedding's card serves 8,192)
EMBED_BATCH, EMBED_UBATCH = 2048, 512  # llama.cpp's defaults (common/common.h n_batch, n_ubatch)
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class LibraryOutcome:
    kind: str  # "added" | "upgraded" | "unchanged" | "removed" | "cancelled"
    name: str
    state: InstallState | None
    freed: int = 0  # bytes deleted ("removed")


def model_name(plan: Plan, wanted: Wanted) -> str:
    """The name requests use: the catalog id, else the file's name without ``.gguf`` (safe characters only)."""
    if isinstance(wanted.ref, CatalogRef):
        return check_name(plan.model_id)
    stem = plan.file.rpartition("/")[2].removesuffix(".gguf")
    return check_name(_NAME_UNSAFE.sub("-", stem).strip("-.") or "model")


def names_default(state: InstallState, text: str) -> bool:
    """Whether MODEL (as typed) is this home's default model: the same catalog id (any quant), hub file (any
    revision) or local file as the recorded request, or its name."""
    from bootstrap.catalog.model_ref import HubFileRef, LocalFileRef, parse_model_ref

    if text == state.server.alias:
        return True
    recorded = state.request.model if state.request is not None else None
    if recorded is None:
        return True  # a record from before requests were kept: the pipeline decides, as before
    try:
        asked = parse_model_ref(text)
        had = parse_model_ref(recorded)
    except UsageError:
        # a name the catalog in force lacks: one an offline bundle's own catalog knows (it is put in force only
        # for the install, ``installer.install``), or a model this catalog no longer has: only its text names it
        return text == recorded
    if isinstance(asked, CatalogRef) and isinstance(had, CatalogRef):
        return asked.model_id == had.model_id
    if isinstance(asked, HubFileRef) and isinstance(had, HubFileRef):
        return (asked.hub, asked.repo, asked.path) == (had.hub, had.repo, had.path)
    if isinstance(asked, LocalFileRef) and isinstance(had, LocalFileRef):
        return asked.path == had.path
    return False


def names_entry(entry: LibraryModel, wanted: Wanted) -> bool:
    """Whether MODEL (as typed) names this model of the library: its name, its request, or its catalog id."""
    if wanted.text in (entry.name, entry.request):
        return True
    return isinstance(wanted.ref, CatalogRef) and wanted.ref.model_id == entry.model_id


def is_embedding(profile: ModelProfile, extra_args: Sequence[str]) -> bool:
    """An embedding model: its header declares a pooling, or its catalog entry serves it with ``--embeddings``."""
    return profile.embedding or "--embeddings" in extra_args


def pooling_of(profile: ModelProfile, extra_args: Sequence[str]) -> str | None:
    """The pooling an embedding model is served with: the catalog's ``--pooling``, else its header's."""
    from bootstrap.plan.model_profile import POOLING_NAMES

    flags = list(extra_args)
    if "--pooling" in flags[:-1]:
        return flags[flags.index("--pooling") + 1]
    return POOLING_NAMES.get(profile.pooling)


def embedding_args(pooling: str | None, ctx: int) -> list[str]:
    """llama-server's flags for an embedding model: ``--embeddings``, its pooling, no prompt cache (nothing to
    reuse), and the batch sizes. With ``last`` pooling llama-server splits a long input over micro-batches
    (``can_split`` in b11434 ``server-context.cpp``: 4,000 tokens answered at ``-ub 512``, measured): llama.cpp's
    own defaults, since a request is all prompt and no stream waits on it. Any other pooling needs the whole input
    in one micro-batch ("input (N tokens) is too large to process"), so ``-b``/``-ub`` are the context then."""
    whole = pooling != "last"
    batch, ubatch = (ctx, ctx) if whole else (EMBED_BATCH, EMBED_UBATCH)
    out_args = ["--embeddings", "-c", str(ctx), "--cache-ram", "0", "-b", str(batch), "-ub", str(ubatch)]
    if pooling:
        out_args += ["--pooling", pooling]
    return out_args


def models_max_for(planned: Sequence[int], total_ram: int) -> int:
    """``--models-max``: every model (all loaded at startup) when their planned RAM fits together in
    ``TOGETHER_SHARE`` of the machine's RAM; else how many of them fit, the default first (at least 1). With fewer
    than all, the router unloads the least recently used model to load another (``server_lru_sched``).
    Never 0 ("unlimited" in llama-server's help): b11434 then refuses to start with any model set to load at
    startup ("number of models to load on startup (2) exceeds models_max (0)", ``server_models::load_models``)."""
    budget = int(total_ram * TOGETHER_SHARE)
    if sum(planned) <= budget:
        return len(planned)
    used, count = 0, 0
    for size in [planned[0], *sorted(planned[1:])]:
        if used + size > budget and count:
            break
        used, count = used + size, count + 1
    return max(1, count)


def add_model(home: Home, text: str, *, source: str | None = None, verify_timeout: float = 300.0,
              confirm: Callable[[str], bool] | None = None, preset: Preset | None = None,
              clear_preset: bool = False) -> LibraryOutcome:
    """``qwenkit install MODEL`` in a home whose default is another model: MODEL joins the library (or, already
    there, is upgraded in place). ``preset``/``clear_preset``: as for the default model (``plan/presets.py``)."""
    asked = _Asked(preset, clear_preset)
    with home_lock(home, "install"):
        state = require_state(home)
        source = source or _source_of(state)
        if is_hub_source(source):
            return _add(home, state, wanted_model(text, None), source, verify_timeout, confirm, asked)
        # An offline bundle (or a mirror URL): its catalog in force, as for the install (``installer.install``)
        from bootstrap.core import settings
        from bootstrap.install.from_bundle import commit_records, discard_records, open_bundle

        bundle = open_bundle(source, home)
        if bundle is None:
            return _add(home, state, wanted_model(text, None), source, verify_timeout, confirm, asked)
        if bundle.root is None:
            raise UsageError(t("bundle.err_gone", where=source), t("bundle.hint_gone"))
        try:
            with settings.overridden(bundle.env()):
                outcome = _add(home, state, wanted_model(text, None), bundle.root, verify_timeout, confirm, asked)
        except BaseException:
            discard_records(bundle, home)
            raise
        (commit_records if outcome.kind in ("added", "upgraded") else discard_records)(bundle, home)
        return outcome


def _source_of(state: InstallState) -> str:
    return state.request.source if state.request is not None else "auto"


@dataclass(frozen=True)
class _Planned:
    """A model planned to join the others: the plan, its name, its flags as served, and what it is for."""

    plan: Plan
    name: str
    args: tuple[str, ...]
    embedding: bool


def _plan_model(home: Home, state: InstallState, wanted: Wanted, source: str) -> tuple[_Planned, int]:
    """plan: for the engine in place (every model of a home shares it) and the RAM and VRAM free now (the running
    models hold theirs); an embedding model gets its flags (``embedding_args``), the catalog's own come last.
    With the machine's total RAM (what the set is checked against)."""
    from bootstrap.catalog.models import load_catalog
    from bootstrap.detect.profile import detect
    from bootstrap.install.candidates import candidates_for
    from bootstrap.plan.engine_flags import with_overrides
    from bootstrap.plan.engine_variant import VariantChoice, check_engine
    from bootstrap.plan.planner import choose

    hardware = detect(home.root, engine=check_engine)
    candidates, _ = candidates_for(wanted.ref, home.models_dir, source)
    extra: tuple[str, ...] = ()
    if isinstance(wanted.ref, CatalogRef):
        extra = load_catalog().model(candidates[0].model_id).server_args
    variant = VariantChoice(state.engine.variant, t("library.same_engine", variant=state.engine.variant))
    embedding = is_embedding(candidates[0].profile, extra)
    if embedding:
        plan = plan_embedding(candidates, hardware, extra, variant=variant)
    else:
        plan = choose(candidates, hardware, variant=variant)
    name = model_name(plan, wanted)
    if name == state.server.alias:
        raise UsageError(t("library.err_is_default", name=name), t("library.hint_is_default"))
    args = tuple(with_overrides(list(plan.args), list(extra)))
    return _Planned(plan, name, args, embedding), hardware.memory.total_bytes


def embed_ctx(profile: ModelProfile) -> int:
    """The context an embedding model is served with unless ``--ctx`` says otherwise: ``EMBED_CTX`` tokens per
    input, or less when the model was trained for less."""
    return min(EMBED_CTX, profile.n_ctx_train or EMBED_CTX)


def plan_embedding(candidates: Sequence[Candidate], hardware: HardwareProfile, extra_args: Sequence[str], *,
                   requested_ctx: int | None = None, variant: VariantChoice | None = None) -> Plan:
    """An embedding model's plan as it is served beside a chat model — the one ``install MODEL`` adds, ``plan
    MODEL`` prints and ``models`` lists, so the three agree: its input limit (``embed_ctx``, or ``--ctx``), its
    flags and memory (``as_embedding``)."""
    from bootstrap.plan.planner import choose

    ctx = requested_ctx or embed_ctx(candidates[0].profile)
    plan = choose(list(candidates), hardware, requested_ctx=ctx, variant=variant)
    profile = next((c.profile for c in candidates if c.file == plan.file), candidates[0].profile)
    return as_embedding(plan, profile, extra_args, ctx_asked=requested_ctx is not None)


def as_embedding(plan: Plan, profile: ModelProfile, extra_args: Sequence[str], *, ctx_asked: bool = False) -> Plan:
    """The plan of a chat model turned into the one an embedding model is served with (``embedding_args``), its
    memory estimated for them: no prompt cache, and where the pooling needs it a micro-batch as large as the
    context (a 1,024-wide model at 8,192 tokens: 576.31 MiB of compute buffer as llama-server logged it, and as
    ``memory.estimate`` gives it, against 36.02 MiB at 512)."""
    from bootstrap.plan.engine_flags import with_overrides
    from bootstrap.plan.memory import estimate
    from bootstrap.plan.planner import Reason

    ctx = plan.settings.ctx
    pooling = pooling_of(profile, extra_args)
    args = with_overrides(list(plan.args), embedding_args(pooling, ctx))
    batch, ubatch = (int(args[args.index(f) + 1]) for f in ("-b", "-ub"))
    settings = replace(plan.settings, ubatch=ubatch, batch=batch, cache_ram_mib=0, ctx_checkpoints=0)
    memory = estimate(profile, settings)
    reasons = tuple(r for r in plan.reasons if r.topic not in ("prompt_cache", "batch"))
    if not ctx_asked:  # the planner was handed the input limit, which it calls "as asked (--ctx)"
        kv = f"{(memory.kv_gpu + memory.kv_cpu) / 2**20:.0f}"
        reasons = tuple(Reason("ctx", str(ctx), t("library.reason_embed_ctx", ctx=ctx, kv=kv))
                        if r.topic == "ctx" else r for r in reasons)
    why = Reason("embeddings", pooling or "-", t("library.reason_embeddings", pooling=pooling or "-",
                                                 batch=batch, ubatch=ubatch))
    return replace(plan, settings=settings, estimate=memory, args=tuple(args), reasons=(*reasons, why),
                   role="embedding")


@dataclass(frozen=True)
class _Asked:
    """The preset options of ``install MODEL`` for a model beside the default (``plan/presets.py``)."""

    preset: Preset | None = None
    clear: bool = False

    def kept(self, prior: LibraryModel | None) -> Preset | None:
        """The model's preset after this run: the options over the recorded one (unless cleared)."""
        recorded = None if self.clear or prior is None else prior.preset
        preset = recorded if self.preset is None else self.preset.over(recorded)
        return None if preset is None or preset.empty else preset


def _add(home: Home, state: InstallState, wanted: Wanted, source: str, timeout: float,
         confirm: Callable[[str], bool] | None, asked: _Asked | None = None) -> LibraryOutcome:
    from bootstrap.install.fetch_plan import fetch, plan_fetch
    from bootstrap.plan.presets import with_preset

    planned, total_ram = _plan_model(home, state, wanted, source)
    plan, name = planned.plan, planned.name
    prior = next((m for m in state.library if m.name == name), None)
    preset = (asked or _Asked()).kept(prior)
    planned = replace(planned, args=tuple(with_preset(planned.args, preset)))
    fetch_plan = plan_fetch(wanted, plan, source, home, None if prior is None else replace(state, files=prior.files))
    if prior is not None and not fetch_plan.changed and planned.args == prior.args and preset == prior.preset:
        out(t("library.unchanged", name=name, url=launch_spec(state, home).client_openai_url))
        return LibraryOutcome("unchanged", name, state)
    together = [state.server.planned_ram or 0, *(m.planned_ram or 0 for m in state.library if m.name != name),
                plan.estimate.host_total]
    models_max = models_max_for(together, total_ram)
    kind = model_kind("embedding" if planned.embedding else "chat", any(j.role == "mmproj" for j in fetch_plan.jobs))
    summary = t("library.confirm", name=name, role=t(f"status.kind_{kind}"),
                file=plan.file, size=human_size(plan.file_size), ram=human_size(plan.estimate.host_total),
                together=human_size(sum(together)), total=human_size(total_ram))
    info(summary)
    if models_max < len(together):
        warn(t("library.not_together", n=models_max, count=len(together)))
    if confirm is not None and not confirm(summary):
        return LibraryOutcome("cancelled", name, state)
    placed = fetch(fetch_plan)
    _selftest(home, state, name, [p.bytes_at for p in placed], planned.args, timeout)
    template = None if planned.embedding else _template(home, placed)
    entry = LibraryModel(name=name, model_id=plan.model_id, quant=plan.quant,
                         role="embedding" if planned.embedding else "chat",
                         files=tuple(_record(home, p.role, p.bytes_at, p.path, p.sha256, p.source, p.revision)
                                     for p in placed),
                         args=planned.args, request=wanted.text, source=source, planned_ram=plan.estimate.host_total,
                         chat_template=template, preset=preset)
    library = (*(m for m in state.library if m.name != name), entry)
    new_state = replace(state, library=library, models_max=models_max)
    # a new revision of a model already served: its bytes take the old ones' place while the server is stopped
    _switch(home, state, new_state, timeout, swaps=[(p.staged, p.path) for p in placed if p.staged is not None],
            tools_for=None if planned.embedding else name)
    refresh_examples(home, new_state)
    _said_done(home, new_state, entry, "library.added" if prior is None else "library.upgraded")
    return LibraryOutcome("added" if prior is None else "upgraded", name, new_state)


def refresh_library(home: Home, *, verify_timeout: float = 300.0) -> list[LibraryOutcome]:
    """A rerun: every other model checked as the default is (``freshness.check``: records, pins and ``stat()``
    only, so nothing changed stays a no-op) and upgraded in place where the catalog or its hub moved on."""
    from bootstrap.install import freshness
    from bootstrap.record.state import RequestRecord, load_state

    state = load_state(home)
    if state is None or not state.library:
        return []
    stale = []
    for entry in state.library:
        alone = replace(state, model_id=entry.model_id, quant=entry.quant, files=entry.files,
                        request=RequestRecord(entry.request, entry.source))
        fresh = freshness.check(home, alone, wanted_model(entry.request, None), entry.source)
        for note in fresh.notes:
            warn(note)
        if not fresh.up_to_date:
            for reason in fresh.reasons:
                info(t("install.change", reason=f"{entry.name}: {reason}"))
            stale.append(entry)
    outcomes = []
    for entry in stale:
        with home_lock(home, "install"):
            current = require_state(home)
            outcomes.append(_add(home, current, wanted_model(entry.request, None), entry.source, verify_timeout,
                                 None))
    return outcomes


def removable(home: Home, name: str) -> tuple[InstallState, LibraryModel]:
    """The record and the model ``remove NAME`` would take out; the default (exit 2) and an unknown name (exit 2,
    the installed names listed, the closest one suggested) are refused before anything is asked or stopped."""
    from bootstrap.core.suggest import did_you_mean

    state = require_state(home)
    name = installed_name(name, [state.server.alias, *(m.name for m in state.library)])
    if name == state.server.alias:
        raise UsageError(t("library.err_remove_default", name=name), t("library.hint_remove_default"))
    entry = next((m for m in state.library if m.name == name), None)
    if entry is None:
        names = [state.server.alias, *(m.name for m in state.library)]
        hint = did_you_mean(name, [m.name for m in state.library]) or t("library.hint_models")
        raise UsageError(t("library.err_unknown", name=name, names=join_names(names)), hint)
    return state, entry


def files_bytes(home: Home, entry: LibraryModel, state: InstallState) -> int:
    """Bytes ``remove`` frees: the model's files that no other model of the home uses."""
    used = {f.path for f in state.files} | {f.path for m in state.library if m is not entry for f in m.files}
    return sum(f.size for f in entry.files if f.path not in used)


def remove_model(home: Home, name: str, *, verify_timeout: float = 300.0) -> LibraryOutcome:
    """``qwenkit remove NAME``: the model leaves the endpoint, then its files go (those no other model uses)."""
    with home_lock(home, "install"):
        state, entry = removable(home, name)
        name = entry.name
        library = tuple(m for m in state.library if m.name != name)
        planned = [state.server.planned_ram or 0, *(m.planned_ram or 0 for m in library)]
        total = _ram_total()
        new_state = replace(state, library=library, models_max=models_max_for(planned, total) if library else 0)
        _switch(home, state, new_state, verify_timeout)
        used = {resolve_in_home(home, f.path) for f in new_state.files} | {
            resolve_in_home(home, f.path) for m in library for f in m.files}
        gone = cleanup.remove_obsolete(home, [p for p in (resolve_in_home(home, f.path) for f in entry.files)
                                              if p not in used])
        freed = sum(f.size for f in entry.files if resolve_in_home(home, f.path) in gone)
        refresh_examples(home, new_state)
        return LibraryOutcome("removed", name, new_state, freed=freed)


def _ram_total() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def _record(home: Home, role: str, at: Path, path: Path, sha256: str, source: str,
            revision: str | None) -> FileRecord:
    """The record of verified bytes now ``at`` that will be at ``path`` (a rename keeps size, mtime and inode)."""
    st = at.stat()
    return FileRecord(role, relative_to_home(home, path), st.st_size, sha256, source, revision,
                      mtime_ns=st.st_mtime_ns, inode=st.st_ino)


def _selftest(home: Home, state: InstallState, name: str, files: Sequence[Path], args: Sequence[str],
              timeout: float) -> None:
    """The model alone on a private loopback port, one token: a file the engine cannot load or run is refused
    here, while the working server keeps serving."""
    from bootstrap.place.engine_selftest import run_selftest

    server = resolve_in_home(home, state.engine.server)
    backend = _backend_flags(args)
    if len(files) > 1:
        backend += ["--mmproj", str(files[-1])] if _has_mmproj(files) else []
    result = run_selftest(server, files[0], home.logs_dir / f"selftest-{_file_safe(name)}.log", args=backend,
                          timeout=timeout)
    if result.failure is not None:
        raise ServerError(t("library.err_selftest", name=name, why=result.failure.message("llama-server")),
                          t("library.hint_selftest", log=result.log))


def _has_mmproj(files: Sequence[Path]) -> bool:
    return files[-1].name.lower().startswith("mmproj")


def _file_safe(name: str) -> str:
    return _NAME_UNSAFE.sub("-", name)


# Flags that shape the serving context, not whether the model loads and computes: the self-test sets its own.
_SERVING = {"-c", "--ctx-size", "-np", "--parallel", "-b", "--batch-size", "-ub", "--ubatch-size", "--embeddings",
            "--embedding", "--pooling", "--cache-ram", "--ctx-checkpoints", "-kvu", "--kv-unified", "--reasoning",
            "--alias", "--spec-type", "--draft-max", "--draft-min"}


def _backend_flags(args: Sequence[str]) -> list[str]:
    from bootstrap.render.command_words import group_words

    kept: list[str] = []
    for line in group_words(args):
        if line[0] not in _SERVING:
            kept += line
    return kept


def _template(home: Home, placed: Sequence[PlacedFile]) -> ChatTemplateRecord | None:
    """The kit's chat template for an added chat model (``place/chat_template.py``), from its verified bytes."""
    from bootstrap.place.chat_template import place_chat_template
    from bootstrap.record.build import template_record

    model = next(p for p in placed if p.role == "model")
    return template_record(home, place_chat_template(home, model.bytes_at))


def _switch(home: Home, old: InstallState, new: InstallState, timeout: float,
            swaps: Sequence[tuple[Path, Path]] = (), tools_for: str | None = None) -> None:
    """Stop the server, render the new set, start it again (``swaps``: staged files moved into place while it is
    stopped, the old bytes kept aside), prove it (``tools_for``: that model's tool-call proof too, recorded with
    it); on failure the old files and scripts come back and start again.

    The scripts are written only once the server is stopped, as the install's switch-over does
    (``switch_over._stop_previous``): a running ``run_qwen.bat`` is open in cmd.exe, and Wine's cmd holds it
    without delete sharing, so replacing it failed ("cannot write to …run_qwen.bat….tmp: Permission denied",
    exit 3); and Windows' own cmd reads the rest of a running batch file from the new bytes at its old offset."""
    from bootstrap.register import managers
    from bootstrap.render.start_scripts import drop_unused_prompts, render_start_scripts, start_files

    spec = launch_spec(new, home)
    manager = managers.manager_named(old.service.manager if old.service else "script", home)
    scripts = start_files(spec, home)  # rendered while it still serves: a value no script can hold stops nothing
    moved: list[tuple[Path, Path]] = []
    try:
        manager.stop()
        for rendered in scripts:
            rendered.write()
        drop_unused_prompts(spec, home)
        _reinstall(manager, spec)
        for staged, final in swaps:
            aside = final.with_name(final.name + ".previous")
            if final.exists():
                final.replace(aside)
            staged.replace(final)
            moved.append((final, aside))
        manager.start()
        prove(home, spec, new, timeout)
        if tools_for is not None:
            new = _with_tools(home, spec, new, tools_for, timeout)
    except QwenKitError:
        warn(t("library.rolling_back"))
        old_spec = launch_spec(old, home)
        manager.stop()
        render_start_scripts(old_spec, home)
        _reinstall(manager, old_spec)
        if not old_spec.router:
            old_spec.preset_file.unlink(missing_ok=True)
        for final, aside in reversed(moved):
            if aside.exists():
                aside.replace(final)
        manager.start()
        raise
    save_state(home, new)
    for _final, aside in moved:
        aside.unlink(missing_ok=True)
    if not spec.router:
        spec.preset_file.unlink(missing_ok=True)


def _reinstall(manager: ServiceManager, spec: LaunchSpec) -> None:
    """The service definition written again for the new start (idempotent: every manager runs the start script,
    WinSW's XML names it); the start script alone has nothing to install."""
    from bootstrap.register import managers

    if not isinstance(manager, managers.FallbackManager):
        managers.install_service(manager, spec)


def prove(home: Home, spec: LaunchSpec, state: InstallState, timeout: float) -> None:
    """Every model answers through the one endpoint with the key, and nothing answers without it: a one-token chat
    for a chat model, an embedding for an embedding model."""
    from bootstrap.place.api_key import read_api_key
    from bootstrap.verify.chat import wait_healthy
    from bootstrap.verify.models_check import check_models

    wait_healthy(spec.base_url, timeout=timeout)
    names = [(spec.alias, "chat"), *((m.name, m.role) for m in state.library)]
    check_models(spec, read_api_key(home), names, timeout)


def _with_tools(home: Home, spec: LaunchSpec, state: InstallState, name: str, timeout: float) -> InstallState:
    """The tool-call proof of the library model ``name`` through the router (``verify/tools_check.py``), said on
    stderr and recorded with the model."""
    from bootstrap.fetch.http_session import local_session
    from bootstrap.place.api_key import read_api_key
    from bootstrap.verify.tools_check import check_tools, tools_line

    entry = next(m for m in state.library if m.name == name)
    with local_session() as session:
        check = check_tools(session, spec.base_url, name, entry.args,
                            {"Authorization": f"Bearer {read_api_key(home)}"}, router=spec.router, timeout=timeout)
    info(tools_line(check))
    library = tuple(replace(m, tools=check) if m.name == name else m for m in state.library)
    return replace(state, library=library)


def _said_done(home: Home, state: InstallState, entry: LibraryModel, key: str) -> None:
    """The report: what clients now reach (a request naming no model still goes to the default, through the
    kit's front: ``register/router_front.py``); for an embedding model, how to ask it, and the RAG example."""
    from bootstrap.verify.chat import rag_command, render_embedding_snippet

    spec = launch_spec(state, home)
    out(t(key, name=entry.name, url=spec.client_openai_url, count=1 + len(state.library), default=spec.alias))
    if key != "library.added" or entry.role != "embedding":
        return
    out(t("library.try_embeddings", name=entry.name))
    out("  " + render_embedding_snippet(spec, entry.name))
    rag = rag_command(spec)
    if rag:
        out(t("library.try_rag", name=entry.name, default=spec.alias, command=rag))


def refresh_examples(home: Home, state: InstallState) -> None:
    """The venv's examples rendered again for the models now installed (``rag.py`` asks the installed embedding
    model), when the home has a venv."""
    from bootstrap.place.runtime_venv import render_examples

    if not home.examples_dir.is_dir():
        return
    spec = launch_spec(state, home)
    render_examples(home, endpoint=spec.openai_base_url, api_key_file=spec.api_key_file, model=spec.alias,
                    embed_model=state.embedding_name())
