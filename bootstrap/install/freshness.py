"""Is the install in this home what a rerun would install? Answered from records, without reading model bytes.

A rerun with nothing changed must finish in well under a second, so this looks only at ``state.json``, the catalog,
the engine pins and ``stat()`` of the files: same request, same kit, engine marker matching the pins, catalog file
names and pinned revisions as recorded, and every file with the size, mtime and inode it had when verified. A file
whose revision the catalog does not pin is checked with the hub's listing (metadata only); when the hub cannot be
reached the installed files stay (an offline machine keeps working) and the reason is returned as a note.
"""

from __future__ import annotations

from dataclasses import dataclass

from bootstrap import __version__
from bootstrap.catalog.model_ref import CatalogRef, HubFileRef, LocalFileRef, Wanted
from bootstrap.catalog.models import load_catalog
from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError
from bootstrap.core.home import Home
from bootstrap.fetch.model_files import wanted_files
from bootstrap.place import engine_marker
from bootstrap.plan.keep_alive import effective, keep_alive_text
from bootstrap.plan.presets import Preset
from bootstrap.record.state import InstallState, file_intact, resolve_in_home, template_file


@dataclass(frozen=True)
class Freshness:
    up_to_date: bool
    reasons: tuple[str, ...]  # why not (localized), empty when up to date
    notes: tuple[str, ...] = ()  # e.g. "could not check for a newer revision: …"
    launch_only: bool = False  # every reason is how the server starts (its context, its thinking default)


def check(home: Home, state: InstallState, wanted: Wanted, source: str, thinking: bool | None = None,
          ctx: int | None = None, rpc: tuple[str, ...] = (), *, keep_alive: int | None = None,
          preset: Preset | None = None) -> Freshness:
    """Whether a rerun can stop here (the server may still need a start: that is the installer's business).
    ``thinking``: the thinking default asked for (``install --thinking``; None: the catalog's); ``ctx``: the
    context asked for (``install --ctx``; None: the plan's)."""
    reasons: list[str] = []  # what needs the pipeline
    launch: list[str] = []  # how the server starts: a restart with new flags is enough
    notes: list[str] = []
    if state.request is None or state.request.model != wanted.text:
        reasons.append(t("fresh.model_changed", old=state.request.model if state.request else state.model_id,
                         new=wanted.text))
    recorded = state.request.thinking if state.request is not None else None
    if recorded != thinking:
        launch.append(t("fresh.thinking_changed", old=_on_off(recorded), new=_on_off(thinking)))
    recorded_ctx = state.request.ctx if state.request is not None else None
    if recorded_ctx != ctx:
        launch.append(t("options.fresh_ctx_changed", old=_ctx_text(recorded_ctx), new=_ctx_text(ctx)))
    recorded_keep = state.request.keep_alive if state.request is not None else None
    if effective(recorded_keep) != effective(keep_alive):  # install --keep-alive: the server restarts with it
        launch.append(t("ps.fresh_keep_alive_changed", old=keep_alive_text(effective(recorded_keep)),
                        new=keep_alive_text(effective(keep_alive))))
    if (state.request.preset if state.request is not None else None) != preset:  # plan/presets.py
        launch.append(t("fresh.preset_changed"))
    recorded_rpc = state.request.rpc if state.request is not None else ()
    if recorded_rpc != rpc:
        reasons.append(t("rpc.fresh_changed", old=",".join(recorded_rpc) or "none", new=",".join(rpc) or "none"))
    if state.kit_version != __version__:
        reasons.append(t("fresh.kit_changed", old=state.kit_version, new=__version__))
    found = engine_marker.find_installed(home, state.engine.variant)
    if found is None or found.build != state.engine.build:
        reasons.append(t("fresh.engine_changed", old=f"b{state.engine.build}"))
    for record in state.files:
        if not file_intact(record, resolve_in_home(home, record.path)):
            reasons.append(t("fresh.file_changed", path=record.path))
    if not home.start_script(state.system).is_file() or not home.api_key_file.is_file():
        reasons.append(t("fresh.scripts_missing"))
    template = template_file(home, state.server.chat_template)
    if template is not None and not template.is_file():  # the server would not start: place it again
        reasons.append(t("fresh.template_missing", path=state.server.chat_template.path))  # type: ignore[union-attr]
    if not reasons:  # the files still as the catalog pins them?
        _check_revisions(state, wanted, source, reasons, notes)
    model = reasons[:1] if state.request is None or state.request.model != wanted.text else []
    return Freshness(not (reasons or launch), (*model, *launch, *reasons[len(model):]), tuple(notes),
                     launch_only=bool(launch) and not reasons)


def _on_off(thinking: bool | None) -> str:
    return t("fresh.thinking_default") if thinking is None else ("on" if thinking else "off")


def _ctx_text(ctx: int | None) -> str:
    return t("options.ctx_auto") if ctx is None else t("options.ctx_tokens", ctx=ctx)


def _is_commit(revision: str | None) -> bool:
    """A full commit id (40 hex digits): the only kind of pin that cannot move."""
    return revision is not None and len(revision) == 40 and all(c in "0123456789abcdef" for c in revision.lower())


def _check_revisions(state: InstallState, wanted: Wanted, source: str, reasons: list[str], notes: list[str]) -> None:
    """Catalog file names and pins against the record; unpinned files against the hub's listing."""
    ref = wanted.ref
    if isinstance(ref, LocalFileRef):
        return
    if isinstance(ref, CatalogRef):
        entry = load_catalog().model(state.model_id)
        text = f"{entry.id}:{state.quant}"
        pins = {r.hub: r.revision for r in entry.repos}
    else:
        assert isinstance(ref, HubFileRef)
        text = wanted.text
        pins = {ref.hub: ref.revision}
    try:
        files, repos = wanted_files(text)
    except QwenKitError as exc:  # the recorded quant left the catalog: an upgrade picks another
        reasons.append(exc.message)
        return
    recorded = {r.path.rpartition("/")[2]: r for r in state.files}
    names = [f.path.rpartition("/")[2] for f in files]
    if sorted(names) != sorted(recorded):
        reasons.append(t("fresh.files_changed"))
        return
    unpinned = []
    for f, name in zip(files, names, strict=True):
        record = recorded[name]
        pin = pins.get(record.source)
        catalog_moved = bool(f.sha256) and str(f.sha256).lower() != record.sha256
        pin_moved = _is_commit(pin) and record.revision is not None and pin != record.revision
        if catalog_moved or pin_moved:
            reasons.append(t("fresh.revision_changed", path=name))
        elif not _is_commit(pin):  # a branch or tag moves: ask the hub
            unpinned.append((f, record))
    if reasons or not unpinned:
        return
    from bootstrap.fetch.sources import resolve_files, sources_for  # only now: the network code is the heavy import

    try:  # the hub's listing of the branch, metadata only
        resolution = resolve_files([f.path for f, _ in unpinned], sources_for(source, repos), probe=False)
    except QwenKitError as exc:
        notes.append(t("fresh.not_checked", reason=exc.message))
        return
    for (f, record), candidates in zip(unpinned, resolution.files, strict=True):
        if all(c.sha256 != record.sha256 for c in candidates):
            reasons.append(t("fresh.revision_changed", path=f.path.rpartition("/")[2]))
