"""Which files a MODEL names and where they go in the home (the fetch stage's bookkeeping, shared by ``download``
and ``install``).

A catalog id names its quant's file plus the model's mmproj; a hub file (``hf:``/``ms:``) names itself, and the first
shard of a split GGUF brings its other shards. Files land in ``<home>/models/<repo>/<path>``; names from a catalog or
a hub are checked so none can climb out of that folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from bootstrap.catalog.model_ref import CatalogRef, HubFileRef, parse_model_ref
from bootstrap.catalog.models import ModelFile, RepoRef, load_catalog
from bootstrap.core.console import detail, t, warn
from bootstrap.core.errors import UsageError
from bootstrap.core.home import Home

if TYPE_CHECKING:  # annotation only: a rerun's up-to-date check must not import the network code
    from bootstrap.fetch.sources import Resolution

# llama.cpp's split naming (gguf-split): NAME-00001-of-00003.gguf; the loader opens the rest from the first.
_SHARD = re.compile(r"^(?P<stem>.*)-00001-of-(?P<count>\d{5})\.gguf$")
PARTIAL_SUBDIR = ".qwenkit-partial"


def wanted_files(model: str) -> tuple[list[ModelFile], tuple[RepoRef, ...]]:
    """The files MODEL names (catalog entries keep their size/sha256 hints) and the repos holding them."""
    ref = parse_model_ref(model)
    if isinstance(ref, CatalogRef):
        entry = load_catalog().model(ref.model_id)
        files = [entry.quant(ref.quant).file]
        if entry.mmproj is not None:
            files.append(entry.mmproj)
        return _with_shards(files), entry.repos
    if isinstance(ref, HubFileRef):
        return _with_shards([ModelFile(ref.path)]), (RepoRef(ref.hub, ref.repo, ref.revision),)
    raise UsageError(t("sources.err_local_model", model=model))


def _with_shards(files: list[ModelFile]) -> list[ModelFile]:
    out: list[ModelFile] = []
    for f in files:
        out.append(f)
        m = _SHARD.match(f.path)
        if m:
            count = int(m["count"])
            out += [ModelFile(f"{m['stem']}-{i:05d}-of-{count:05d}.gguf") for i in range(2, count + 1)]
    return out


def destinations(paths: list[str], repo: str, dest: Path | None, home: Home) -> tuple[list[Path], Path]:
    """Where each file goes, and the partial-download folder to use.

    Partial files must sit on the destination's filesystem so the final rename is atomic (no cross-device copy):
    the home's ``cache/partial`` when the destination is inside the home, else ``<dest>/.qwenkit-partial``.
    """
    for rel in (repo, *paths):  # names come from a catalog or a hub: never let one climb out of the folder
        parts = rel.replace("\\", "/").split("/")
        if rel.startswith("/") or any(part in ("", ".", "..") or ":" in part for part in parts):
            raise UsageError(t("sources.err_bad_path", path=rel))
    if dest is None:
        return [home.models_dir / repo / p for p in paths], home.partial_dir
    targets = [dest / p.rpartition("/")[2] for p in paths]
    inside = dest == home.root or home.root in dest.parents
    return targets, home.partial_dir if inside else dest / PARTIAL_SUBDIR


def report_resolution(resolution: Resolution) -> None:
    """Which sources were measured (``--verbose``), which dropped and why (stderr)."""
    measured = [o for o in resolution.outcomes if o.error is None and o.read_seconds is not None]
    if len(measured) > 1:
        for o in measured:
            detail(t("sources.probe", source=o.source, millis=round(o.score * 1000)))
    for o in resolution.outcomes:
        if o.error is not None:
            warn(t("sources.dropped", source=o.source, reason=o.error.message))
    for note in resolution.notes:
        warn(note)
