"""The candidates the plan stage chooses among, for the model an install is for (``model_ref.wanted_model``).

Candidates carry a model profile from the best facts at hand: a local file's header, else the catalog's shape
facts, else (a catalog entry with no shape, e.g. an intranet admin's own model) the header of the remote file read
with a few ranged requests.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bootstrap.catalog.model_ref import CatalogRef, HubFileRef, LocalFileRef, ModelRef
from bootstrap.catalog.models import CatalogModel, RepoRef, load_catalog
from bootstrap.core.console import t
from bootstrap.core.errors import IntegrityError, UsageError
from bootstrap.core.hashing import sha256_file
from bootstrap.fetch.gguf_remote import read_remote_header
from bootstrap.fetch.records import ResolvedFile
from bootstrap.fetch.source_bundle import local_path
from bootstrap.fetch.sources import resolve_files, sources_for
from bootstrap.plan.gguf_header import read_header
from bootstrap.plan.model_facts import catalog_candidates, file_candidate, local_file, prefer_mtp_files
from bootstrap.plan.model_profile import ModelProfile, model_profile
from bootstrap.plan.planner import Candidate


def _remote_reference(entry: CatalogModel, quant: str | None, source: str) -> tuple[ModelProfile, int]:
    """The profile of one quant from its remote header, for a catalog entry without shape facts."""
    path = entry.quant(quant).file.path
    resolution = resolve_files([path], sources_for(source, entry.repos), probe=False)
    first = resolution.files[0][0]
    return _profile_of(first), first.size


def _profile_of(resolved: ResolvedFile) -> ModelProfile:
    """The profile from a resolved file's header: ranged reads of a URL, or the first bytes of a bundle file.

    A bundle file whose header does not parse (or names no architecture we know) is hashed before saying so: a file
    that does not match its manifest is reported as the altered file it is (exit 5), not as a bad model.
    """
    local = local_path(resolved.url)
    if local is None:
        return model_profile(read_remote_header(resolved.url, headers=dict(resolved.headers)))
    try:
        return model_profile(read_header(local))
    except UsageError:
        if sha256_file(local) != resolved.sha256:
            raise IntegrityError(t("sources.err_bundle_file", path=str(local), expected=resolved.sha256,
                                   actual=sha256_file(local)), t("bundle.hint_recopy")) from None
        raise


def _hub_candidate(ref: HubFileRef, source: str) -> Candidate:
    """Read only the header of a hub file (a few MB of ranged reads) to plan before downloading it."""
    resolution = resolve_files([ref.path], sources_for(source, [RepoRef(ref.hub, ref.repo, ref.revision)]),
                               probe=False)
    first = resolution.files[0][0]
    name = ref.path.rpartition("/")[2]
    profile = _profile_of(first)
    return Candidate(name, name, "file", ref.path, first.size, profile, thinks=profile.thinks, facts="remote-header")


def candidates_for(ref: ModelRef, models_dir: Path | None, source: str = "auto", thinking: bool | None = None
                   ) -> tuple[list[Candidate], list[Candidate]]:
    """(candidates in preference order, fallbacks) for a model reference; ``thinking`` (``install --thinking``)
    overrides the catalog's thinking default."""
    if isinstance(ref, LocalFileRef):
        if not ref.path.is_file():
            raise UsageError(t("plan.err_no_file", path=str(ref.path)))
        return [_thinking(file_candidate(ref.path), thinking)], []
    if isinstance(ref, HubFileRef):
        return [_thinking(_hub_candidate(ref, source), thinking)], []
    assert isinstance(ref, CatalogRef)
    catalog = load_catalog()
    entry = catalog.model(ref.model_id)
    candidates = _catalog_candidates(entry, ref.quant, models_dir, source, thinking)
    if entry.mtp_variant is not None:
        variant = catalog.model(entry.mtp_variant)
        names = {q.name.lower() for q in variant.quants}
        if ref.quant is None or ref.quant.lower() in names:
            candidates = prefer_mtp_files(candidates, _catalog_candidates(
                variant, ref.quant, models_dir, source, thinking, every_quant=ref.quant is None))
    if ref.quant:  # an explicit quant is what the user wants: no silent substitution
        return candidates, []
    fallbacks = [c for fid in entry.fallbacks for c in _catalog_candidates(catalog.model(fid), None, models_dir,
                                                                           source, thinking)]
    return candidates, fallbacks


def _thinking(candidate: Candidate, thinking: bool | None) -> Candidate:
    return candidate if thinking is None else dataclasses.replace(candidate, thinking_default=thinking, thinks=True)


def _catalog_candidates(entry: CatalogModel, quant: str | None, models_dir: Path | None,
                        source: str, thinking: bool | None, every_quant: bool = False) -> list[Candidate]:
    """``every_quant``: all of the entry's quants, not just its default and smaller (an MTP variant is matched to
    the base entry's quants by name)."""
    reference = None
    have_local = models_dir is not None and any(local_file(entry, q.file.path, models_dir) for q in entry.quants)
    if entry.shape is None and not have_local:
        reference = _remote_reference(entry, quant, source)
    if every_quant:
        return [c for q in entry.quants
                for c in catalog_candidates(entry, q.name, models_dir, reference, thinking)]
    return catalog_candidates(entry, quant, models_dir, reference, thinking)
