"""Installing from an offline bundle (a folder or a URL): open it, put its catalog and pins in force, fetch its parts.

- **open**: the manifest pair is checked (``bundle_manifest``). For a folder, the whole bundle is also checked by
  ``stat`` (every listed file present with its size, nothing unlisted under ``payload/``): cheap, and it catches the
  commonest damage, an interrupted copy, before any work. Every byte the install then uses (model, mmproj, engine,
  wheels) is hashed as it is copied; ``bundle verify`` hashes the rest.
- **in force**: the bundle's catalog and engine pins are written to ``<home>/cache/bundle-new/`` and named by
  ``QWENKIT_CATALOG`` / ``QWENKIT_ENGINES`` / ``QWENKIT_ENGINE_URL`` for this run (``settings.overridden``), so the
  planner sees only what the bundle carries and the engine comes from ``payload/engines``.
- **recorded only when verified**: those records become ``<home>/bundle/`` (``commit_records``) only after the
  install from the bundle passed every check, like the files themselves: a tampered newer bundle that is refused
  (exit 5) leaves the records of the bundle the home was installed from, so a rerun with no drive still finds
  that install up to date.
- **reruns**: a rerun with no source uses the recorded bundle; when it is gone (the drive unplugged), the copy in
  the home is enough to find the install up to date and keep serving.
- **no network**: nothing here or in the stages it feeds opens a socket except to a served bundle's own host and
  to the local server (tests run the install in a network namespace with no interfaces but loopback).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bootstrap.catalog import bundle_manifest
from bootstrap.catalog.bundle_manifest import MANIFEST, BundleFile, Manifest, stat_problems
from bootstrap.catalog.bundle_platforms import wheels_folder
from bootstrap.catalog.engine_pins import parse_pins
from bootstrap.catalog.models import parse_catalog
from bootstrap.catalog.source_names import is_hub_source
from bootstrap.core.atomic_file import PUBLIC, fsync_dir, write_atomic
from bootstrap.core.console import info, t, warn
from bootstrap.core.display_text import masked_url
from bootstrap.core.errors import IntegrityError, QwenKitError, SourceError, UsageError
from bootstrap.core.file_formats import read_regular
from bootstrap.core.fs_errors import mapped
from bootstrap.core.home import Home
from bootstrap.fetch.download import FetchOptions
from bootstrap.fetch.http_session import BudgetExceeded, bounded, metadata_budget
from bootstrap.fetch.records import API_TIMEOUT, Mirror, RemoteFile, cause_text, new_session
from bootstrap.fetch.source_bundle import fetch_any, file_url, is_url, read_url

ORIGIN = "origin.txt"
CATALOG = "catalog.json"
ENGINES = "engines.json"
SUMS = "SHA256SUMS"


@dataclass(frozen=True)
class OpenedBundle:
    """A bundle an install reads from; ``root`` is ``None`` when only the home's copy of its records is at hand."""

    root: str | None  # an absolute folder path or a URL
    manifest: Manifest
    folder: Path  # <home>/bundle, or <home>/cache/bundle-new for records not committed yet

    @property
    def variants(self) -> frozenset[str]:
        variants = self.manifest.engines.get("variants")
        return frozenset(variants) if isinstance(variants, dict) else frozenset()

    def env(self) -> dict[str, str]:
        """The variables that put the bundle's catalog, pins and engine folder in force."""
        env = {"QWENKIT_CATALOG": str(self.folder / CATALOG), "QWENKIT_ENGINES": str(self.folder / ENGINES)}
        if self.root is not None:
            engines = file_url(self.root, "payload/engines") if not is_url(self.root) \
                else f"{self.root.rstrip('/')}/payload/engines"
            env["QWENKIT_ENGINE_URL"] = engines
        return env

    def wheels_for(self, system: str, machine: str) -> list[BundleFile]:
        folder = wheels_folder(system, machine)
        return [f for f in self.manifest.of_kind("wheel") if folder is not None and f.platform == folder]


def bundle_root(source: str) -> str | None:
    """The bundle ``source`` names (absolute folder or URL), ``None`` for a hub, a mirror or a missing folder."""
    if is_hub_source(source):
        return None
    if is_url(source):
        url = f"{source.rstrip('/')}/{MANIFEST}"
        session = new_session()
        try:  # a metadata request, bounded as a whole: a header block trickled byte by byte never times out
            with bounded(metadata_budget()), session.get(url, timeout=API_TIMEOUT, stream=True) as response:
                return source.rstrip("/") if response.status_code == 200 else None
        except BudgetExceeded as exc:  # it answers, too slowly to read: say so, rather than try it as a mirror
            raise SourceError(t("bundle.err_http", url=masked_url(url), detail=cause_text(exc)[0]),
                              t("bundle.hint_http")) from exc
        except OSError:  # nothing answers there: not a bundle (a mirror URL then fails with its own line)
            return None
        finally:
            session.close()
    path = Path(source).expanduser()
    return str(path.resolve()) if (path / MANIFEST).is_file() else None


def check_complete(root: Path, manifest: Manifest) -> None:
    """Every listed file present with its size and nothing unlisted under ``payload/`` (stat only), else exit 5."""
    problems = stat_problems(root, manifest)
    if problems:
        more = f" (+{len(problems) - 1})" if len(problems) > 1 else ""
        raise IntegrityError(problems[0].message + more, t("bundle.hint_recopy"))


def _documents(root: str, manifest: Manifest) -> dict[str, bytes]:
    raw = bundle_manifest.dumps(manifest)
    return {"manifest.json": raw, SUMS: bundle_manifest.sums_text(raw, manifest.files),
            CATALOG: _json(manifest.catalog), ENGINES: _json(manifest.engines), ORIGIN: (root + "\n").encode("utf-8")}


def _holds(folder: Path, documents: dict[str, bytes]) -> bool:
    """Whether ``folder`` already holds exactly ``documents`` (each read bounded, never through a link)."""
    for name, data in documents.items():
        try:
            found = read_regular(folder / name, len(data), _unusable, follow_links=False, missing_ok=True)
        except QwenKitError:
            return False
        if found != data:
            return False
    return True


def _unusable(detail: str) -> QwenKitError:
    return UsageError(detail)


def _save(home: Home, root: str, manifest: Manifest) -> Path:
    """The bundle's records where this run reads them: ``<home>/bundle`` when it already holds them (a rerun of
    the same bundle writes nothing), else a fresh ``<home>/cache/bundle-new`` that ``commit_records`` publishes
    once the install has passed every check."""
    documents = _documents(root, manifest)
    if _holds(home.bundle_dir, documents):
        return home.bundle_dir
    pending = home.bundle_pending_dir
    with mapped(pending):
        shutil.rmtree(pending, ignore_errors=True)
        pending.mkdir(parents=True)
        for name, data in documents.items():
            write_atomic(pending / name, data, mode=0o600 if name == ORIGIN else PUBLIC)  # a URL may hold a password
    return pending


def commit_records(bundle: OpenedBundle, home: Home) -> None:
    """Make a verified install's bundle records the home's (``<home>/bundle``): two renames, the old records kept
    aside until the new ones are in place (``_saved`` puts them back if a kill came between the two)."""
    if bundle.folder != home.bundle_pending_dir:
        return
    old = home.bundle_pending_dir.with_name("bundle-old")
    with mapped(home.bundle_dir):
        shutil.rmtree(old, ignore_errors=True)
        if home.bundle_dir.exists():
            os.replace(home.bundle_dir, old)
        os.replace(home.bundle_pending_dir, home.bundle_dir)
        fsync_dir(home.root)
        shutil.rmtree(old, ignore_errors=True)


def _json(document: Any) -> bytes:
    import json

    return (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def discard_records(bundle: OpenedBundle, home: Home) -> None:
    """Drop a refused or failed install's uncommitted records (the home's own stay as they are)."""
    if bundle.folder == home.bundle_pending_dir:
        shutil.rmtree(home.bundle_pending_dir, ignore_errors=True)


def _saved(home: Home, source: str) -> Manifest | None:
    """The home's copy of the bundle last installed from, when it came from ``source``."""
    folder = home.bundle_dir
    old = home.bundle_pending_dir.with_name("bundle-old")
    if not folder.exists() and old.is_dir():  # a kill between commit_records' two renames
        with mapped(folder):
            os.replace(old, folder)
    try:
        origin, raw, sums = (read_regular(folder / name, bundle_manifest.MAX_MANIFEST_BYTES, _unusable,
                                          follow_links=False) for name in (ORIGIN, "manifest.json", SUMS))
    except QwenKitError:
        return None
    assert origin is not None and raw is not None
    if origin.decode("utf-8", "replace").strip().rstrip("/") != _absolute(source).rstrip("/"):
        return None
    return bundle_manifest.parse(raw, sums, str(folder / "manifest.json"))


def _absolute(source: str) -> str:
    return source if is_url(source) else str(Path(source).expanduser().resolve())


def open_bundle(source: str, home: Home) -> OpenedBundle | None:
    """The bundle ``source`` names, checked, its records ready in the home (committed by ``commit_records``);
    ``None`` when it is not a bundle."""
    root = bundle_root(source)
    if root is None:
        saved = None if is_hub_source(source) else _saved(home, source)
        if saved is not None:
            warn(t("bundle.offline_records", where=source))
            return OpenedBundle(None, saved, home.bundle_dir)
        if not is_hub_source(source) and not is_url(source):  # a folder that is not (or no longer) a bundle
            raise UsageError(t("sources.err_no_bundle", where=source), t("bundle.hint_no_bundle"))
        return None
    if is_url(root):
        session = new_session()
        try:
            manifest = read_url(root, session)
        finally:
            session.close()
    else:
        manifest = bundle_manifest.read_dir(Path(root))
        check_complete(Path(root), manifest)
    where = Path(root if not is_url(root) else ".") / MANIFEST
    parse_catalog(manifest.catalog, where)  # a catalog or pins this kit cannot read: one line now, not later
    parse_pins(manifest.engines, where)
    folder = _save(home, root, manifest)
    info(t("bundle.using", where=root, created=manifest.created, version=manifest.tool_version))
    return OpenedBundle(root, manifest, folder)


def fetch_wheels(bundle: OpenedBundle, home: Home, system: str, machine: str,
                 options: FetchOptions | None = None) -> Path | None:
    """This machine's wheels from the bundle, verified, in ``<home>/cache/wheels``; ``None`` when it has none."""
    files = bundle.wheels_for(system, machine)
    if bundle.root is None or not files:
        warn(t("bundle.no_wheels", platform=wheels_folder(system, machine) or f"{system}-{machine}"))
        return None
    dest = home.wheels_cache
    if dest.exists():
        shutil.rmtree(dest)  # another bundle's wheels must not mix with these
    dest.mkdir(parents=True)
    root = bundle.root
    jobs = [(RemoteFile(f.path.rpartition("/")[2], f.size, f.sha256, (Mirror("bundle", file_url(root, f.path)),)),
             dest / f.path.rpartition("/")[2]) for f in files]
    fetch_any(jobs, home.partial_dir, options)
    return dest
