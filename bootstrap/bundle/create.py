"""``bundle create``: on a connected machine, write an offline bundle folder (layout: ``bundle_manifest``).

Order, so a kill at any point leaves a folder that is visibly unfinished (no manifest) and a rerun that resumes:
1. every input checked and every file resolved (catalog models on the hubs, engine assets' digests) before any
   write, so a typo costs nothing and never unpublishes a good bundle (``bundle_selection``);
2. the old manifest removed (``bundle_manifest.unpublish``);
3. files already in the folder verified and kept; files another bundle (``--reuse``) or the install home holds
   with the same sha256 hard-linked (same filesystem) after a hash (``bundle_reuse``);
4. the bytes still to write compared with the free space (and FAT32's 4 GiB file limit) before any download
   (``bundle_drive``);
5. wheels (``bundle_wheels``), then copies and downloads (resumable in ``<out>/.qwenkit-partial``, verified);
6. setup executables, the launchers (``install.sh``, ``install.bat``, ``payload/launch.py``: the kit from its wheels
   with the target's own Python, whatever made the bundle) and ``README.txt`` saying what to run on each OS
   (``root_files``, ``launchers``); leftovers of an earlier bundle removed;
7. the work folder ``.qwenkit-partial`` removed (a copy of the finished folder carries nothing but the bundle),
   then ``SHA256SUMS`` and the manifest written last.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bootstrap import __version__
from bootstrap.bundle import launchers, root_files, selection
from bootstrap.bundle.drive import check_room
from bootstrap.bundle.reuse import RECORD, Sorted, VerifiedRecord, local_sources, remove_stale, sort_out
from bootstrap.bundle.selection import Selection, Want
from bootstrap.bundle.wheels import ESTIMATE as WHEELS_ESTIMATE
from bootstrap.bundle.wheels import download_wheels
from bootstrap.catalog.bundle_manifest import BundleFile, Manifest, unpublish, write
from bootstrap.catalog.bundle_platforms import TargetPlatform
from bootstrap.catalog.models import load_catalog
from bootstrap.core.console import info, join_names, t
from bootstrap.core.disk_space import free_bytes
from bootstrap.core.errors import UsageError
from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.fetch.partial import resumable_bytes
from bootstrap.fetch.verified_copy import copy_verified

PARTIAL = ".qwenkit-partial"  # the create's work folder: downloads, copies, wheels, the verified record


@dataclass(frozen=True)
class CreateRequest:
    """What to bundle (``bundle create`` arguments)."""

    out: Path
    models: tuple[str, ...] = ()  # catalog refs "id" or "id:quant"; empty: the catalog's default
    quants: tuple[str, ...] = ()  # quants for every model named without one
    platforms: tuple[str, ...] = ()  # bundle_platforms names; empty: this machine's
    setups: tuple[Path, ...] = ()
    pythons: tuple[str, ...] = ()  # empty: every supported version
    reuse: tuple[Path, ...] = ()  # other bundles whose verified files may be linked
    source: str = "auto"
    home: Path | None = None  # an install home whose verified model files may be linked


@dataclass(frozen=True)
class CreateResult:
    """The bundle written."""

    manifest: Manifest
    total_bytes: int
    downloaded_bytes: int
    reused_bytes: int  # already in the folder, or linked/copied from a home or another bundle
    free_bytes: int  # left on the folder's filesystem afterwards
    fits: bool


def _remove_work(partial: Path) -> None:
    """The work folder goes once the bundle is complete (a link to one is removed, never followed)."""
    if partial.is_symlink() or partial.is_file():
        partial.unlink()
    elif partial.is_dir():
        shutil.rmtree(partial, ignore_errors=True)


def publish_modes(out: Path, entries: Sequence[BundleFile], *, include_root: bool) -> None:
    """Every listed file readable by all (0644; setups run on Linux/macOS 0755) and every folder on the way
    traversable (0755), whatever the umask and however the file got here (downloads and copies are made in
    private work files): a bundle is served by web servers and checked with ``sha256sum -c`` by other users.
    ``include_root``: the bundle folder itself too, when this run created it.

    A filesystem without POSIX modes (FAT32/exFAT sticks) refuses or ignores ``chmod``; everyone can read there
    anyway, so a refusal is not an error.
    """
    folders = {out} if include_root else set()
    for entry in entries:
        path = out / entry.path
        executable = entry.kind == "setup" and entry.platform != "Windows"
        with contextlib.suppress(OSError):
            path.chmod(0o755 if executable else 0o644)
        folders.update(p for p in path.parents if out in p.parents)
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.chmod(0o755)


@dataclass(frozen=True)
class _Resolved:
    """Step 1: every input checked and every file located, before anything is written."""

    out: Path
    targets: list[TargetPlatform]
    pythons: tuple[str, ...]
    setups: list[Path]
    chosen: Selection
    wants: list[Want]  # model files and engine assets
    catalog_doc: dict[str, Any]
    engines_doc: dict[str, Any]

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(f"{m.id}:{q}" for m, qs in self.chosen for q in qs)


def create(request: CreateRequest) -> CreateResult:
    """Write the bundle described by ``request`` (see the module docstring for the order)."""
    # 1. inputs and files, resolved before any write
    bundle = _resolve(request)
    out = bundle.out

    # 2. unpublished; 3. what is here or on this disk kept or linked
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    old_root = root_files.old_root_files(out)
    unpublish(out)
    partial = out / PARTIAL
    record = VerifiedRecord(partial / RECORD)
    todo = sort_out(out, bundle.wants, record)

    # 4. room for the rest
    _check_room(bundle, todo, partial)

    # 5. wheels, copies, downloads
    wheel_files = download_wheels(out, bundle.targets, bundle.pythons, partial)
    copied, downloaded = _fill(todo, record, partial)

    # 6. the root files; what an earlier bundle left
    setups = root_files.place_setups(out, bundle.setups, partial)
    runners = launchers.write_launchers(out, launchers.launcher_files(bundle.targets, bundle.pythons))
    readme = launchers.write_readme(out, _readme(bundle))
    root_wants = [*setups, *runners, readme]
    if not setups:
        info(t("options.bundle_no_setup", pythons=join_names(bundle.pythons)))
    entries = [*(w.entry() for w in bundle.wants),
               *(BundleFile(wf.path.relative_to(out).as_posix(), wf.size, wf.sha256, "wheel", platform=wf.folder)
                 for wf in wheel_files),
               *(w.entry() for w in root_wants)]
    keep = {e.path for e in entries}
    root_files.remove_old_root(out, old_root, keep)
    remove_stale(out, keep)

    # 7. work folder gone, manifest last
    manifest = _manifest(bundle, entries)
    _remove_work(partial)
    publish_modes(out, entries, include_root=created)
    write(out, manifest)
    return CreateResult(manifest, sum(e.size for e in entries), downloaded, todo.reused + copied, free_bytes(out),
                        fits=True)


def _resolve(request: CreateRequest) -> _Resolved:
    """Check every input and locate every file (catalog models on the hubs, engine assets' digests)."""
    out = Path(request.out).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise UsageError(t("bcreate.err_out", path=str(out)))
    targets = selection.targets(request.platforms)
    pythons = selection.pythons(request.pythons)
    setups = root_files.setups(request.setups, reserved=("payload", PARTIAL, *launchers.NAMES))
    chosen = selection.selection(load_catalog(), request.models, request.quants)
    local = local_sources(request.home, request.reuse)
    info(t("bcreate.resolving", models=join_names(f"{m.id}:{q}" for m, qs in chosen for q in qs),
           platforms=join_names(tp.name for tp in targets)))
    model_wants, catalog_doc = selection.model_wants(chosen, request.source, local)
    engine_wants, engines_doc = selection.engine_wants(targets, local)
    return _Resolved(out, targets, pythons, setups, chosen, model_wants + engine_wants, catalog_doc, engines_doc)


def _check_room(bundle: _Resolved, todo: Sorted, partial: Path) -> None:
    """The bytes still to write (copies, setups, the README, what downloads have left, the wheels' estimate)
    against the free space and the drive's file-size limit."""
    setup_sizes = {p.name: p.stat().st_size for p in bundle.setups}
    runners = sum(len(data) for _, data in launchers.launcher_files(bundle.targets, bundle.pythons))
    needed = (sum(w.size for _, _, w in todo.copies) + sum(setup_sizes.values()) + runners
              + len(_readme(bundle).encode("utf-8"))
              + sum(w.size - resumable_bytes(partial, w.sha256, w.size) for _, _, w in todo.downloads)
              + WHEELS_ESTIMATE * len({tp.wheels for tp in bundle.targets}) * len(bundle.pythons))
    check_room(bundle.out, {**{w.rel: w.size for w in bundle.wants}, **setup_sizes}, needed)


def _readme(bundle: _Resolved) -> str:
    """README.txt for what this bundle holds: per OS, its setup or the launcher (``launchers.readme_text``)."""
    setups = [launchers.Setup(p.name, root_files.setup_system(p)) for p in bundle.setups]
    return launchers.readme_text(bundle.targets, bundle.pythons, setups)


def _fill(todo: Sorted, record: VerifiedRecord, partial: Path) -> tuple[int, int]:
    """Copy the files found on this machine and download the rest, each verified and stamped in the record:
    (bytes copied, bytes downloaded)."""
    copied, downloaded = 0, 0
    for src, dest, want in todo.copies:
        info(t("bcreate.copying", path=want.rel, source=str(src)))
        copy_verified(src, dest, want.size, want.sha256, partial)
        record.stamp(dest, want)
        copied += want.size
    if todo.downloads:
        results = fetch_files([(r, d) for r, d, _ in todo.downloads], partial, FetchOptions())
        for (_, dest, want), result in zip(todo.downloads, results, strict=True):
            record.stamp(dest, want)
            downloaded += result.bytes_downloaded
    return copied, downloaded


def _manifest(bundle: _Resolved, entries: Sequence[BundleFile]) -> Manifest:
    return Manifest(
        created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), tool_version=__version__,
        platforms=tuple(tp.name for tp in bundle.targets), python_versions=bundle.pythons,
        models=bundle.model_names, catalog=bundle.catalog_doc, engines=bundle.engines_doc, files=tuple(entries))
