"""The fetch stage of an install: the plan's files resolved on the sources, and only what changed downloaded.

Per file, against what the home already holds (``state.json``):
- the same bytes (sha256) at the same path, and the file's size, mtime and inode as recorded → reused without
  reading a byte (``--verify`` hashes it instead);
- a file the live install uses whose content must change (a new revision) → downloaded into staging, so the old
  file keeps serving until the swap (``file_swap``);
- anything else → downloaded straight to its place (nothing serves from there).
Every download is resumable and verified by SHA-256 before it is placed (``download.fetch_files``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bootstrap.catalog.model_ref import CatalogRef, LocalFileRef, Wanted
from bootstrap.catalog.models import load_catalog
from bootstrap.core.console import info, t
from bootstrap.core.hashing import sha256_file
from bootstrap.core.home import Home
from bootstrap.fetch.download import FetchOptions, holds
from bootstrap.fetch.model_files import destinations, report_resolution, wanted_files
from bootstrap.fetch.partial import resumable_bytes
from bootstrap.fetch.records import PlacedFile, RemoteFile
from bootstrap.fetch.source_bundle import fetch_any
from bootstrap.fetch.sources import measure, remote_files, resolve_files, sources_for
from bootstrap.install import file_swap
from bootstrap.plan.planner import Plan
from bootstrap.record.state import FileRecord, InstallState, file_intact, resolve_in_home


@dataclass(frozen=True)
class FileJob:
    """One file of the install and what the fetch stage does with it."""

    role: str  # "model" | "shard" | "mmproj"
    final: Path
    size: int
    sha256: str | None  # None only for a local file not hashed yet
    source: str
    revision: str | None
    remote: RemoteFile | None  # None: nothing to download (reused, or a local file)
    target: Path  # where verified bytes land: ``final``, or staging for a file the live install uses


@dataclass(frozen=True)
class FetchPlan:
    jobs: tuple[FileJob, ...]
    partial_dir: Path

    @property
    def to_download(self) -> int:
        """Bytes still to fetch (what a partial download already holds is not counted)."""
        return sum(j.remote.size - resumable_bytes(self.partial_dir, j.remote.sha256, j.remote.size)
                   for j in self.jobs if j.remote is not None)

    @property
    def changed(self) -> tuple[FileJob, ...]:
        return tuple(j for j in self.jobs if j.remote is not None)


def _recorded(home: Home, previous: InstallState | None) -> dict[Path, FileRecord]:
    if previous is None:
        return {}
    return {resolve_in_home(home, f.path): f for f in previous.files}


def _roles(paths: Sequence[str], mmproj: str | None) -> list[str]:
    """model for the first file, shard for a split GGUF's other parts, mmproj for the vision projector."""
    return ["mmproj" if p == mmproj else "model" if i == 0 else "shard" for i, p in enumerate(paths)]


def plan_fetch(wanted: Wanted, plan: Plan, source: str, home: Home, previous: InstallState | None, *,
               rehash: bool = False) -> FetchPlan:
    """Resolve the plan's files on the sources (metadata only) and decide, per file, reuse / stage / download."""
    recorded = _recorded(home, previous)
    if isinstance(wanted.ref, LocalFileRef):
        return FetchPlan((_local_job(wanted.ref.path, recorded.get(wanted.ref.path), rehash),), home.partial_dir)
    text = f"{plan.model_id}:{plan.quant}" if isinstance(wanted.ref, CatalogRef) else wanted.text
    files, repos = wanted_files(text)
    targets, partial_dir = destinations([f.path for f in files], repos[0].repo, None, home)
    resolution = resolve_files([f.path for f in files], sources_for(source, repos), expected=files, probe=False)
    mmproj = None
    if isinstance(wanted.ref, CatalogRef):
        entry = load_catalog().model(plan.model_id)
        mmproj = entry.mmproj.path if entry.mmproj is not None else None
    roles = _roles([f.path for f in files], mmproj)
    jobs = [_remote_job(home, role, final, remote, candidates[0].source, candidates[0].revision,
                        recorded.get(final), rehash)
            for role, remote, candidates, final in zip(roles, remote_files(resolution), resolution.files, targets,
                                                        strict=True)]
    if any(j.remote is not None for j in jobs) and len(resolution.files[0]) > 1:
        # A short timed read per source, fastest first: only worth it when bytes will flow.
        resolution = measure(resolution)
        jobs = [j if j.remote is None else replace(j, remote=remote, source=candidates[0].source)
                for j, remote, candidates in zip(jobs, remote_files(resolution), resolution.files, strict=True)]
    report_resolution(resolution)
    return FetchPlan(tuple(jobs), partial_dir)


def _remote_job(home: Home, role: str, final: Path, remote: RemoteFile, source: str, revision: str,
                record: FileRecord | None, rehash: bool) -> FileJob:
    def job(download: RemoteFile | None, target: Path) -> FileJob:
        return FileJob(role, final, remote.size, remote.sha256, source, revision, download, target)

    if record is None:  # nothing live at this path: download (or reuse a verified copy) in place
        return job(remote, final)
    if record.sha256 == remote.sha256 and record.size == remote.size:
        if not rehash and file_intact(record, final):
            return FileJob(role, final, record.size, record.sha256, record.source, record.revision, None, final)
        if holds(final, remote.size, remote.sha256):
            return FileJob(role, final, record.size, record.sha256, record.source, record.revision, None, final)
    # The live install uses this path: the new bytes wait in staging until the swap.
    return job(remote, file_swap.staged_path(home, remote.sha256, final.name))


def _local_job(path: Path, record: FileRecord | None, rehash: bool) -> FileJob:
    """A local ``.gguf`` the user pointed at: used where it is, hashed once (and again only when it changed)."""
    if record is not None and not rehash and file_intact(record, path):
        return FileJob("model", path, record.size, record.sha256, "local", None, None, path)
    info(t("install.hashing", path=path))
    return FileJob("model", path, path.stat().st_size, sha256_file(path), "local", None, None, path)


def fetch(fetch_plan: FetchPlan, options: FetchOptions | None = None, *, hold: Path | None = None
          ) -> list[PlacedFile]:
    """Download what changed (resumable, verified) and return every file of the install.

    ``hold`` (installs from a bundle): nothing reaches its place until every file is verified.
    """
    todo = [(j.remote, j.target) for j in fetch_plan.jobs if j.remote is not None]
    fetch_any(todo, fetch_plan.partial_dir, options or FetchOptions(), hold=hold)
    placed = []
    for j in fetch_plan.jobs:
        assert j.sha256 is not None
        staged = j.target if j.target != j.final else None
        placed.append(PlacedFile(j.role, j.final, j.size, j.sha256, j.source, j.revision, staged=staged))
    return placed
