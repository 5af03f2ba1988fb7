"""What goes into a bundle: target platforms, Python versions, catalog models and quants, and every file they need.

Everything here is decided before the bundle folder is touched (``bundle.create`` step 1): bad input costs nothing,
and each file is resolved to its size and sha256 (model files on the hubs, engine assets from the release) so the
bundle's catalog and engine pins can name exactly the bytes it holds.
"""

from __future__ import annotations

import copy
import platform
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bootstrap.catalog.bundle_manifest import BundleFile
from bootstrap.catalog.bundle_platforms import TargetPlatform, host_platform, target
from bootstrap.catalog.engine_pins import EngineAsset, assets_for, load_pins, pins_document
from bootstrap.catalog.model_ref import CatalogRef, parse_model_ref
from bootstrap.catalog.models import Catalog, CatalogModel, catalog_document
from bootstrap.core.console import join_names, t
from bootstrap.core.errors import UsageError
from bootstrap.detect.probes.pythons import SUPPORTED
from bootstrap.fetch.model_files import report_resolution, wanted_files
from bootstrap.fetch.records import RemoteFile
from bootstrap.fetch.source_bundle import local_path, model_path
from bootstrap.fetch.sources import remote_files, resolve_files, sources_for
from bootstrap.place.engine import resolve_assets

DEFAULT_PYTHONS = tuple(f"{major}.{minor}" for major, minor in SUPPORTED)
_PYTHON_RE = re.compile(r"3\.\d{1,2}")

Selection = list[tuple[CatalogModel, list[str]]]  # each bundled model with its quants (canonical names), in order


@dataclass(frozen=True)
class Want:
    """A file the bundle must hold, and where its bytes may come from."""

    rel: str  # path in the bundle, ``/``-separated
    kind: str  # bundle_manifest.KINDS
    size: int
    sha256: str
    remote: RemoteFile | None = None
    local: tuple[Path, ...] = ()  # files with these bytes here (a --reuse bundle, the home, a source bundle)
    repo: str | None = None
    revision: str | None = None
    platform: str | None = None

    def entry(self) -> BundleFile:
        return BundleFile(self.rel, self.size, self.sha256, self.kind, self.repo, self.revision, self.platform)


# ---- the request's words -------------------------------------------------------------------------------------


def targets(names: Sequence[str]) -> list[TargetPlatform]:
    """The target platforms named (duplicates dropped); none named: this machine's."""
    if not names:
        host = host_platform(platform.system(), platform.machine())
        if host is None:
            raise UsageError(t("bcreate.err_no_host_platform", system=platform.system(), machine=platform.machine()),
                             t("bcreate.hint_platform"))
        names = (host,)
    return list({tp.name: tp for tp in (target(n) for n in names)}.values())


def pythons(values: Sequence[str]) -> tuple[str, ...]:
    """The Python versions the wheels must cover ("3.11" …); none named: every supported one."""
    for value in values:
        if not _PYTHON_RE.fullmatch(value) or tuple(int(p) for p in value.split(".")) not in SUPPORTED:
            raise UsageError(t("bcreate.err_python", value=value, known=join_names(DEFAULT_PYTHONS)))
    return tuple(dict.fromkeys(values)) or DEFAULT_PYTHONS


def selection(catalog: Catalog, models: Sequence[str], quants: Sequence[str]) -> Selection:
    """Each bundled catalog model with its quants (canonical names), in the order asked."""
    chosen: dict[str, tuple[CatalogModel, list[str]]] = {}
    for text in models or (catalog.default_model,):
        ref = parse_model_ref(text)
        if not isinstance(ref, CatalogRef):
            raise UsageError(t("bcreate.err_not_catalog", model=text), t("bcreate.hint_not_catalog"))
        entry = catalog.model(ref.model_id)
        names = [ref.quant] if ref.quant else (list(quants) or [entry.default_quant])
        _, have = chosen.setdefault(entry.id, (entry, []))
        for name in names:
            canonical = entry.quant(name).name
            if canonical not in have:
                have.append(canonical)
    return list(chosen.values())


# ---- the documents the bundle carries ----------------------------------------------------------------------------


def _fill(table: dict[str, Any], size: int, sha256: str) -> None:
    table.update({"size": size, "size_exact": True, "sha256": sha256})


def restrict_catalog(doc: Mapping[str, Any], chosen: Sequence[tuple[str, Sequence[str]]],
                     facts: Mapping[tuple[str, str], tuple[int, str]],
                     revisions: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """The catalog document naming only the bundled models and quants, each file pinned to its bytes.

    ``chosen``: (model id, quant names) in bundle order, the default first; ``facts``: (model id, file path) →
    (size, sha256); ``revisions``: (hub, repo) → the commit the files came from (other repos keep the catalog's).
    """
    ids = [model_id.lower() for model_id, _ in chosen]
    by_id = {str(m.get("id", "")).lower(): m for m in doc.get("models", []) if isinstance(m, Mapping)}
    models = []
    for model_id, quants in chosen:
        entry = copy.deepcopy(dict(by_id[model_id.lower()]))
        wanted = [q.lower() for q in quants]
        kept = [dict(q) for q in entry.get("quants", []) if str(q.get("name", "")).lower() in wanted]
        kept.sort(key=lambda q: wanted.index(str(q["name"]).lower()))
        for quant in kept:
            if (model_id, quant["file"]) in facts:
                _fill(quant, *facts[(model_id, quant["file"])])
        entry["quants"] = kept
        if entry.get("default_quant") not in {q["name"] for q in kept}:
            entry["default_quant"] = kept[0]["name"]
        mmproj = entry.get("mmproj")
        if isinstance(mmproj, dict) and (model_id, mmproj.get("file")) in facts:
            _fill(mmproj, *facts[(model_id, mmproj["file"])])
        if "fallbacks" in entry:
            entry["fallbacks"] = [f for f in entry["fallbacks"] if str(f).lower() in ids]
        if str(entry.get("mtp_variant", "")).lower() not in ids:  # an MTP variant left out of the bundle
            entry.pop("mtp_variant", None)
        for repo in entry.get("repos", []):
            pinned = revisions.get((repo.get("hub"), repo.get("repo")))
            if pinned:
                repo["revision"] = pinned
        models.append(entry)
    out = {k: copy.deepcopy(v) for k, v in doc.items() if k != "models"}
    out["default_model"] = models[0]["id"]
    out["models"] = models
    return out


def restrict_engines(doc: Mapping[str, Any], variants: Sequence[str], facts: Mapping[str, tuple[int, str]],
                     winsw: bool) -> dict[str, Any]:
    """The engines document naming only ``variants`` (and WinSW when ``winsw``), every asset with size and sha256
    (``facts``: asset name → (size, sha256))."""
    out = {k: copy.deepcopy(v) for k, v in doc.items() if k not in ("variants", "winsw")}
    out["variants"] = {}
    for variant in variants:
        table = copy.deepcopy(dict(doc["variants"][variant]))
        table["assets"] = [{**a, "size": facts[a["name"]][0], "sha256": facts[a["name"]][1]}
                           for a in table["assets"]]
        out["variants"][variant] = table
    if winsw and isinstance(doc.get("winsw"), Mapping) and doc["winsw"].get("name") in facts:
        size, sha = facts[doc["winsw"]["name"]]
        out["winsw"] = {**doc["winsw"], "size": size, "sha256": sha}
    return out


# ---- resolving the files -----------------------------------------------------------------------------------------


def model_wants(chosen: Selection, source: str, local: Mapping[str, list[Path]]) -> tuple[list[Want], dict[str, Any]]:
    """The model files (and mmproj) of ``chosen``, resolved on the hubs of ``source``; with the catalog document
    naming exactly them. ``local``: sha256 → files on this machine holding those bytes."""
    wants: dict[str, Want] = {}
    facts: dict[tuple[str, str], tuple[int, str]] = {}
    revisions: dict[tuple[str, str], str] = {}
    for entry, quants in chosen:
        paths: list[str] = []
        expected = []
        for quant in quants:
            files, _ = wanted_files(f"{entry.id}:{quant}")
            for f in files:
                if f.path not in paths:
                    paths.append(f.path)
                    expected.append(f)
        resolution = resolve_files(paths, sources_for(source, entry.repos), expected=expected, probe=False)
        report_resolution(resolution)
        for path, candidates, remote in zip(paths, resolution.files, remote_files(resolution), strict=True):
            first = candidates[0]
            for c in candidates:
                if c.source in ("hf", "modelscope") and c.revision:
                    revisions[(c.source, c.repo)] = c.revision
            facts[(entry.id, path)] = (first.size, first.sha256)
            rel = model_path(first.repo, path)
            on_disk = [p for p in (local_path(c.url) for c in candidates) if p is not None]
            kind = "mmproj" if entry.mmproj is not None and entry.mmproj.path == path else "model"
            wants.setdefault(rel, Want(rel, kind, first.size, first.sha256, None if on_disk else remote,
                                       tuple(on_disk) + tuple(local.get(first.sha256, ())), first.repo,
                                       first.revision or None))
    raw = catalog_document()
    return list(wants.values()), restrict_catalog(raw, [(m.id, qs) for m, qs in chosen], facts, revisions)


def engine_wants(chosen: Sequence[TargetPlatform], local: Mapping[str, list[Path]]
                 ) -> tuple[list[Want], dict[str, Any]]:
    """The engine assets (and WinSW for a Windows target) of every target's variants, resolved on the release;
    with the engines document naming exactly them."""
    pins = load_pins()
    variants = list(dict.fromkeys(v for tp in chosen for v in tp.variants))
    assets: dict[tuple[str, str], EngineAsset] = {}
    for variant in variants:
        for asset in assets_for(pins, variant):
            assets.setdefault((asset.tag, asset.name), asset)
    windows = any(tp.system == "Windows" for tp in chosen)
    if windows and pins.winsw is not None:
        assets.setdefault((pins.winsw.tag, pins.winsw.name), pins.winsw)
    remotes = resolve_assets(tuple(assets.values()), pins.repo)
    wants = [Want(f"payload/engines/{a.tag}/{a.name}", "engine", r.size, r.sha256, r, tuple(local.get(r.sha256, ())),
                  platform=a.variant) for a, r in zip(assets.values(), remotes, strict=True)]
    facts = {a.name: (r.size, r.sha256) for a, r in zip(assets.values(), remotes, strict=True)}
    raw = pins_document()
    return wants, restrict_engines(raw, variants, facts, windows)
