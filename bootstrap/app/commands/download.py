"""``qwenkit download MODEL [--source SRC] [--dest DIR]``: fetch a model's files, verified, without installing.

MODEL is a catalog id with an optional quant (the quant's file plus the model's mmproj) or one hub file
(``hf:OWNER/REPO/PATH[@REV]``, ``ms:…``; a split GGUF's first shard brings its other shards). Files land in
``<home>/models/<repo>/<path>``, or flat in ``--dest``. One line per file placed; exit codes per DESIGN.md §2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bootstrap.core.console import out, t
from bootstrap.core.home import resolve_home
from bootstrap.core.input_checks import check_text
from bootstrap.core.sizes import human_size
from bootstrap.fetch.download import FetchResult, fetch_files
from bootstrap.fetch.model_files import destinations, report_resolution, wanted_files
from bootstrap.fetch.source_bundle import local_path, place_from_bundle
from bootstrap.fetch.sources import Resolution, measure, remote_files, resolve_files, sources_for


def _all_present(resolution: Resolution, targets: list[Path]) -> bool:
    """Every destination already holds a file of the listed size (the engine still verifies its sha256)."""
    for candidates, target in zip(resolution.files, targets, strict=True):
        try:
            if target.stat().st_size != candidates[0].size:
                return False
        except OSError:
            return False
    return True


def run(args: argparse.Namespace) -> int:
    source = check_text("--source", getattr(args, "source", None) or "auto")
    dest_arg = check_text("--dest", args.dest) if getattr(args, "dest", None) else None
    files, repos = wanted_files(args.model)
    sources = sources_for(source, repos)
    home = resolve_home()
    dest = Path(dest_arg).expanduser().resolve() if dest_arg else None
    targets, partial_dir = destinations([f.path for f in files], repos[0].repo, dest, home)
    resolution = resolve_files([f.path for f in files], sources, expected=files, probe=False)
    if len(resolution.files[0]) > 1 and not _all_present(resolution, targets):
        resolution = measure(resolution)  # only worth a probe when there is something to download
    report_resolution(resolution)
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
        out(t(key, path=str(result.path), size=human_size(result.size, decimals=2), sha256=result.sha256[:12],
               source=result.source))
    return 0


def _copy(src: Path, size: int, sha256: str, target: Path, work_dir: Path, source: str) -> FetchResult:
    if not place_from_bundle(src, target, size, sha256, work_dir):
        return FetchResult(target, size, sha256, "local", 0, True)
    return FetchResult(target, size, sha256, source, size, False)
