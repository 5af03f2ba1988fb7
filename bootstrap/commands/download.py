"""``qwenkit download MODEL [--source SRC] [--dest DIR]``: fetch a model's files, verified, without installing.

MODEL is a catalog id with an optional quant (the quant's file plus the model's mmproj) or one hub file
(``hf:OWNER/REPO/PATH[@REV]``, ``ms:…``; a split GGUF's first shard brings its other shards). Files land in
``<home>/models/<repo>/<path>``, or flat in ``--dest``. One line per file placed; exit codes per DESIGN.md §2.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..catalog import ModelFile, RepoRef, load_catalog
from ..console import info, t, warn
from ..download import FetchResult, fetch_files, sha256_file
from ..errors import UsageError
from ..home import Home, resolve_home
from ..model_ref import CatalogRef, HubFileRef, parse_model_ref
from ..source_bundle import copy_verified, local_path
from ..sources import Resolution, measure, remote_files, resolve_files, sources_for

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


def _report(resolution: Resolution) -> None:
    """Which sources were measured, which dropped and why (stderr)."""
    measured = [o for o in resolution.outcomes if o.error is None and o.read_seconds is not None]
    if len(measured) > 1:
        for o in measured:
            info(t("sources.probe", source=o.source, millis=round(o.score * 1000)))
    for o in resolution.outcomes:
        if o.error is not None:
            warn(t("sources.dropped", source=o.source, reason=o.error.message))
    for note in resolution.notes:
        warn(note)


def _all_present(resolution: Resolution, targets: list[Path]) -> bool:
    """Every destination already holds a file of the listed size (the engine still verifies its sha256)."""
    for candidates, target in zip(resolution.files, targets, strict=True):
        try:
            if target.stat().st_size != candidates[0].size:
                return False
        except OSError:
            return False
    return True


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.2f} {unit}"
    return f"{n} B"


def run(args: argparse.Namespace) -> int:
    files, repos = wanted_files(args.model)
    sources = sources_for(getattr(args, "source", None) or "auto", repos)
    home = resolve_home()
    dest = Path(args.dest).expanduser().resolve() if getattr(args, "dest", None) else None
    targets, partial_dir = destinations([f.path for f in files], repos[0].repo, dest, home)
    resolution = resolve_files([f.path for f in files], sources, expected=files, probe=False)
    if len(resolution.files[0]) > 1 and not _all_present(resolution, targets):
        resolution = measure(resolution)  # only worth a probe when there is something to download
    _report(resolution)
    results: dict[int, FetchResult] = {}
    jobs, job_index = [], []
    for i, (remote, target) in enumerate(zip(remote_files(resolution), targets, strict=True)):
        local = local_path(remote.mirrors[0].url)
        if local is not None:  # a bundle on disk: copied and hashed here (the engine speaks HTTP)
            results[i] = _copy(local, remote.size, remote.sha256, target, partial_dir, remote.mirrors[0].source)
        else:
            jobs.append((remote, target))
            job_index.append(i)
    for i, result in zip(job_index, fetch_files(jobs, partial_dir), strict=True):
        results[i] = result
    for result in (results[i] for i in range(len(files))):
        key = "sources.reused" if result.reused else "sources.placed"
        info(t(key, path=str(result.path), size=_size_text(result.size), sha256=result.sha256[:12],
               source=result.source))
    return 0


def _copy(src: Path, size: int, sha256: str, target: Path, work_dir: Path, source: str) -> FetchResult:
    if target.is_file() and target.stat().st_size == size and sha256_file(target) == sha256:
        return FetchResult(target, size, sha256, "local", 0, True)
    copy_verified(src, target, size, sha256, work_dir)
    return FetchResult(target, size, sha256, source, size, False)
