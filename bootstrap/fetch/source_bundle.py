"""An offline bundle as a source: a folder (USB drive) or a URL (any static web server) with a manifest.

The layout and the manifest are ``bundle_manifest``'s. Resolving a model file means finding its entry; the bytes
are then a ``file://`` URL (a local bundle: copied and hashed here, the download engine speaks HTTP only) or
``<root>/<path>`` (fetched, resumed and verified by the download engine like any mirror).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, urlsplit
from urllib.request import url2pathname

import requests

from bootstrap.catalog import bundle_manifest
from bootstrap.catalog.source_names import is_url
from bootstrap.core.atomic_file import fsync_dir
from bootstrap.core.console import t
from bootstrap.core.errors import SourceError, UsageError
from bootstrap.core.progress import Progress
from bootstrap.fetch.download import FetchOptions, fetch_files, holds
from bootstrap.fetch.http_session import BodyRefused, BudgetExceeded, bounded, metadata_budget, read_capped
from bootstrap.fetch.records import (
    API_TIMEOUT,
    TRANSPORT_ERRORS,
    RemoteFile,
    ResolvedFile,
    Source,
    budget_text,
    transport_guard,
)
from bootstrap.fetch.verified_copy import copy_verified

MANIFEST = bundle_manifest.MANIFEST
OWN_BAR_BYTES = 16 << 20  # files at least this big get their own progress bar


def manifest_url(root: str) -> str:
    return f"{root.rstrip('/')}/{MANIFEST}"


def load_manifest(source: Source, session: requests.Session) -> bundle_manifest.Manifest:
    """The bundle's manifest, checked against its ``SHA256SUMS`` (a bad pair is an integrity failure, exit 5)."""
    if is_url(source.endpoint):
        with transport_guard(source):
            return read_url(source.endpoint, session)
    return bundle_manifest.read_dir(Path(source.endpoint))


def file_url(root: str, rel: str) -> str:
    """Where a bundle file's bytes are: ``<root>/<path>`` for a served bundle, a ``file://`` URL for a folder."""
    if is_url(root):
        return f"{root.rstrip('/')}/{quote(rel)}"
    return (Path(root) / rel).resolve().as_uri()


def model_path(repo: str, path: str) -> str:
    """Where a model file sits in a bundle: ``payload/models/<repo>/<path>``."""
    return f"payload/models/{repo}/{path}"


def resolve_bundle(source: Source, paths: Sequence[str], session: requests.Session) -> list[ResolvedFile]:
    """Find ``paths`` of ``source.repo`` (or one of its ``aliases``) in the bundle's manifest."""
    entries = load_manifest(source, session).by_path()
    repos = (source.repo, *source.aliases)
    out = []
    for path in paths:
        entry = next((entries[model_path(r, path)] for r in repos if model_path(r, path) in entries), None)
        if entry is None:
            raise UsageError(t("sources.err_file_not_found", repo=source.repo, path=path, source=source.name))
        out.append(ResolvedFile(source.name, entry.repo or source.repo, path, entry.revision or "",
                                file_url(source.endpoint, entry.path), entry.size, entry.sha256))
    return out


def local_path(url: str) -> Path | None:
    """The file behind a ``file://`` URL of a local bundle (``None`` for any other URL)."""
    if not url.startswith("file:"):
        return None
    parts = urlsplit(url)
    return Path(url2pathname((f"//{parts.netloc}" if parts.netloc else "") + parts.path))  # UNC: \\server\share


def place_from_bundle(src: Path, dest: Path, size: int, sha256: str, work_dir: Path,
                      progress: Progress | None = None) -> bool:
    """``copy_verified`` unless ``dest`` already holds exactly these bytes; True when a copy was made."""
    if holds(dest, size, sha256):
        if progress is not None:
            progress.skip(size)
        return False
    # Small files (wheels) count toward the total only: forty bars for forty wheels would bury the messages.
    bar = progress.file(dest.name, size, 0, "copy") if progress is not None and size >= OWN_BAR_BYTES else None
    update = bar.update if bar is not None else progress.skip if progress is not None else None
    try:
        copy_verified(src, dest, size, sha256, work_dir, progress=update)
    finally:
        if bar is not None:
            bar.close()
    return True


def fetch_any(jobs: Sequence[tuple[RemoteFile, Path]], partial_dir: Path, options: FetchOptions | None = None,
              *, hold: Path | None = None) -> None:
    """Fetch each (file, destination), verified: from a bundle folder by a hashed copy, else by the download engine.

    ``hold``: every file first lands there and is moved to its destination only when all of them are verified, so
    one bad file of a bundle leaves nothing placed (the folder must be on the destinations' filesystem).
    """
    staged = [(r, hold / f"{r.sha256}-{d.name}" if hold is not None else d, d) for r, d in jobs]
    local = [(r, t_) for r, t_, _ in staged if local_path(r.mirrors[0].url) is not None]
    if local:
        options = options or FetchOptions()
        progress = Progress(sum(r.size for r, _ in local), quiet=options.quiet)
        try:
            for remote, target in local:
                src = local_path(remote.mirrors[0].url)
                assert src is not None
                place_from_bundle(src, target, remote.size, remote.sha256, partial_dir, progress)
        finally:
            progress.close()
    remote_jobs = [(r, t_) for r, t_, _ in staged if local_path(r.mirrors[0].url) is None]
    if remote_jobs:
        fetch_files(remote_jobs, partial_dir, options or FetchOptions())
    if hold is not None:
        for _remote, held, dest in staged:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(held, dest)
            fsync_dir(dest.parent)


def _get(session: requests.Session, url: str) -> bytes | None:
    """A small document over HTTP, bounded in time (``http_session.metadata_budget``) and in size on the wire and
    once inflated; ``None`` on 404."""
    try:
        with bounded(metadata_budget()), session.get(url, timeout=API_TIMEOUT, stream=True) as response:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise SourceError(t("bundle.err_http", url=url, detail=f"HTTP {response.status_code}"),
                                  t("bundle.hint_http"))
            return read_capped(response, bundle_manifest.MAX_MANIFEST_BYTES)
    except BodyRefused as exc:
        raise bundle_manifest.damaged(url, "too large" if exc.kind != "encoding" else exc.encoding) from exc
    except TRANSPORT_ERRORS as exc:
        detail = budget_text(exc) if isinstance(exc, BudgetExceeded) else \
            (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise SourceError(t("bundle.err_http", url=url, detail=detail), t("bundle.hint_http")) from exc


def read_url(root: str, session: requests.Session) -> bundle_manifest.Manifest:
    """The manifest of a bundle served over HTTP(S) at ``root``."""
    base = root.rstrip("/")
    raw = _get(session, f"{base}/{bundle_manifest.MANIFEST}")
    if raw is None:
        raise UsageError(t("sources.err_no_bundle", where=base), t("bundle.hint_no_bundle"))
    sums = _get(session, f"{base}/{bundle_manifest.SUMS}")
    return bundle_manifest.parse(raw, sums, f"{base}/{bundle_manifest.MANIFEST}")
