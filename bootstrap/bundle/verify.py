"""``qwenkit bundle verify DIR|URL``: rehash a whole bundle against its manifest and name every problem.

An install reads only the files it uses (and hashes each as it copies it); this command checks everything, so an
admin can vouch for a USB copy or a web server's folder before a rollout. Problems, each named with its path:
``missing`` (listed, absent), ``link`` (listed, but a link, or reached through one leaving the folder: a bundle
holds its files itself), ``size`` (listed, other size), ``altered`` (same size, other sha256), ``extra`` (under
``payload/`` but not listed; over HTTP a folder cannot be listed, so extras are only found on disk).
The manifest pair itself is checked first (``bundle_manifest.parse``): a change there fails before any hashing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests

from bootstrap.catalog.bundle_manifest import (
    BundleFile,
    Manifest,
    Problem,
    extra_problems,
    file_size,
    file_state,
    problem,
    read_dir,
)
from bootstrap.core.console import t
from bootstrap.core.display_text import masked_url
from bootstrap.core.errors import IntegrityError, SourceError
from bootstrap.core.hashing import sha256_file
from bootstrap.core.progress import Progress
from bootstrap.fetch.http_session import Budget, bounded, download_budget, read_some
from bootstrap.fetch.partial import MAX_SEGMENT
from bootstrap.fetch.records import API_TIMEOUT, TRANSPORT_ERRORS, cause_text, new_session
from bootstrap.fetch.source_bundle import is_url, read_url


@dataclass(frozen=True)
class VerifyReport:
    where: str
    manifest: Manifest
    checked_files: int
    checked_bytes: int
    problems: tuple[Problem, ...]
    extras_checked: bool  # False over HTTP: a web server cannot list a folder

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"where": masked_url(self.where), "ok": self.ok, "created": self.manifest.created,
                "tool_version": self.manifest.tool_version, "platforms": list(self.manifest.platforms),
                "models": list(self.manifest.models), "files": self.checked_files, "bytes": self.checked_bytes,
                "extras_checked": self.extras_checked,
                "problems": [{"path": p.path, "kind": p.kind} for p in self.problems]}


def _hash_local(path: Path, bar: Any) -> tuple[int, str]:
    read = 0

    def advance(n: int) -> None:
        nonlocal read
        read += n
        bar.update(n)

    digest = sha256_file(path, advance)
    return read, digest


def _check_local(root: Path, entry: BundleFile, progress: Progress) -> Problem | None:
    path = root / entry.path
    state = file_state(root, entry.path)
    size = file_size(path) if state is None else None
    if state is not None or size is None:
        progress.skip(entry.size)
        return problem(entry.path, state or "missing")
    if size != entry.size:
        progress.skip(entry.size)
        return problem(entry.path, "size", expected=entry.size, actual=size)
    bar = progress.file(entry.path.rpartition("/")[2], entry.size, 0, "check")
    try:
        read, actual = _hash_local(path, bar)
    finally:
        bar.close()
    if read != entry.size:  # changed while being read
        return problem(entry.path, "size", expected=entry.size, actual=read)
    return None if actual == entry.sha256 else problem(entry.path, "altered", expected=entry.sha256[:12],
                                                        actual=actual[:12])


def file_budget(size: int) -> Budget:
    """The bounds of reading one served bundle file whole, in one request: the download engine's rate floor
    (``MIN_RATE`` over ``RATE_WINDOW``), and the time the engine gives the same bytes in its largest segments
    (``SEGMENT_DEADLINE`` per ``MAX_SEGMENT``: 600 s per 64 MiB), so a source trickling just above the floor still
    ends instead of taking months over a 20 GB file. docs/hubs.md, "Bounds on every network read"."""
    download = download_budget()
    assert download.deadline is not None
    return Budget(download.deadline * max(1, -(-size // MAX_SEGMENT)), download.min_rate, download.window)


def _check_url(base: str, entry: BundleFile, session: requests.Session, progress: Progress) -> Problem | None:
    url = f"{base}/{quote(entry.path)}"
    bar = progress.file(entry.path.rpartition("/")[2], entry.size, 0, "check")
    digest = hashlib.sha256()
    read = 0
    try:
        with bounded(file_budget(entry.size)) as watch, session.get(url, timeout=API_TIMEOUT,
                                                                     stream=True) as response:
            if response.status_code == 404:
                return problem(entry.path, "missing")
            if response.status_code != 200:
                raise SourceError(t("bundle.err_http", url=masked_url(url), detail=f"HTTP {response.status_code}"),
                                  t("bundle.hint_http"))
            while block := read_some(response, 1 << 20):  # as bytes arrive: the watchdog counts each one
                read += len(block)
                if read > entry.size:
                    break
                digest.update(block)
                bar.update(len(block))
            watch.raise_if_fired()  # a body the watchdog ended early is a timeout, not a short file
    except TRANSPORT_ERRORS as exc:
        raise SourceError(t("bundle.err_http", url=masked_url(url), detail=cause_text(exc)[0]),
                          t("bundle.hint_http")) from exc
    finally:
        bar.close()
    if read != entry.size:
        return problem(entry.path, "size", expected=entry.size, actual=read)
    actual = digest.hexdigest()
    return None if actual == entry.sha256 else problem(entry.path, "altered", expected=entry.sha256[:12],
                                                        actual=actual[:12])


def verify_bundle(where: str, *, quiet: bool = False) -> VerifyReport:
    """Check every file of the bundle at ``where`` (folder or URL). Manifest-level failures raise (exit 5)."""
    remote = is_url(where)
    session = new_session() if remote else None
    try:
        manifest = read_url(where, session) if session is not None else read_dir(Path(where))
        total = sum(f.size for f in manifest.files)
        progress = Progress(total, quiet=quiet)
        problems: list[Problem] = []
        try:
            for entry in manifest.files:
                if session is not None:
                    problem = _check_url(where.rstrip("/"), entry, session, progress)
                else:
                    problem = _check_local(Path(where), entry, progress)
                if problem is not None:
                    problems.append(problem)
        finally:
            progress.close()
        if session is None:
            problems += extra_problems(Path(where), {f.path for f in manifest.files})
    finally:
        if session is not None:
            session.close()
    return VerifyReport(where, manifest, len(manifest.files), total, tuple(problems), session is None)


def raise_for(report: VerifyReport) -> None:
    """Exit 5 when anything is wrong: the bundle must not be used as it is."""
    if report.problems:
        raise IntegrityError(t("bundle.err_verify", count=len(report.problems), where=report.where),
                             t("bundle.hint_recopy"))
