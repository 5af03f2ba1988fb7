"""Installing from an offline bundle (a folder or a URL): open it, put its catalog and pins in force, fetch its parts.

- **open**: the manifest pair is checked (``bundle_manifest``). For a folder, the whole bundle is also checked by
  ``stat`` (every listed file present with its size, nothing unlisted under ``payload/``): cheap, and it catches the
  commonest damage, an interrupted copy, before any work. Every byte the install then uses (model, mmproj, engine,
  wheels) is hashed as it is copied; ``bundle verify`` hashes the rest.
- **in force**: the bundle's catalog and engine pins are written to ``<home>/bundle/`` and named by
  ``QWENKIT_CATALOG`` / ``QWENKIT_ENGINES`` / ``QWENKIT_ENGINE_URL`` for this run (``settings.overridden``), so the
  planner sees only what the bundle carries and the engine comes from ``payload/engines``.
- **reruns**: a rerun with no source uses the recorded bundle; when it is gone (the drive unplugged), the copy in
  the home is enough to find the install up to date and keep serving.
- **no network**: nothing here or in the stages it feeds opens a socket except to a served bundle's own host and
  to the local server (tests run the install in a network namespace with no interfaces but loopback).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import bundle_manifest
from .atomic_file import write_atomic
from .bundle_manifest import MANIFEST, BundleFile, Manifest
from .bundle_platforms import wheels_folder
from .bundle_verify import stat_problems
from .catalog import parse_catalog
from .console import info, t, warn
from .download import FetchOptions, Mirror, RemoteFile
from .engine_pins import parse_pins
from .errors import IntegrityError, UsageError
from .home import Home
from .source_bundle import fetch_any, file_url, is_url
from .source_common import API_TIMEOUT, new_session
from .source_names import is_hub_source

ORIGIN = "origin.txt"
CATALOG = "catalog.json"
ENGINES = "engines.json"
SUMS = "SHA256SUMS"


@dataclass(frozen=True)
class OpenedBundle:
    """A bundle an install reads from; ``root`` is ``None`` when only the home's copy of its records is at hand."""

    root: str | None  # an absolute folder path or a URL
    manifest: Manifest
    folder: Path  # <home>/bundle

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
        session = new_session()
        try:
            with session.get(f"{source.rstrip('/')}/{MANIFEST}", timeout=API_TIMEOUT, stream=True) as response:
                return source.rstrip("/") if response.status_code == 200 else None
        except OSError:
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


def _save(folder: Path, root: str, manifest: Manifest) -> None:
    """The bundle's records in the home (atomic; rewritten only when they change)."""
    raw = bundle_manifest.dumps(manifest)
    documents: dict[str, bytes] = {
        "manifest.json": raw, SUMS: bundle_manifest.sums_text(raw, manifest.files),
        CATALOG: _json(manifest.catalog), ENGINES: _json(manifest.engines), ORIGIN: (root + "\n").encode("utf-8"),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in documents.items():
        path = folder / name
        if not path.is_file() or path.read_bytes() != data:
            write_atomic(path, data)


def _json(document: Any) -> bytes:
    import json

    return (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _saved(folder: Path, source: str) -> Manifest | None:
    """The home's copy of the bundle last installed from, when it came from ``source``."""
    try:
        origin = (folder / ORIGIN).read_text(encoding="utf-8").strip()
        raw, sums = (folder / "manifest.json").read_bytes(), (folder / SUMS).read_bytes()
    except OSError:
        return None
    if origin.rstrip("/") != _absolute(source).rstrip("/"):
        return None
    return bundle_manifest.parse(raw, sums, str(folder / "manifest.json"))


def _absolute(source: str) -> str:
    return source if is_url(source) else str(Path(source).expanduser().resolve())


def open_bundle(source: str, home: Home) -> OpenedBundle | None:
    """The bundle ``source`` names, checked and its records saved in the home; ``None`` when it is not a bundle."""
    root = bundle_root(source)
    if root is None:
        saved = None if is_hub_source(source) else _saved(home.bundle_dir, source)
        if saved is not None:
            warn(t("bundle.offline_records", where=source))
            return OpenedBundle(None, saved, home.bundle_dir)
        if not is_hub_source(source) and not is_url(source):  # a folder that is not (or no longer) a bundle
            raise UsageError(t("sources.err_no_bundle", where=source), t("bundle.hint_no_bundle"))
        return None
    if is_url(root):
        session = new_session()
        try:
            manifest = bundle_manifest.read_url(root, session)
        finally:
            session.close()
    else:
        manifest = bundle_manifest.read_dir(Path(root))
        check_complete(Path(root), manifest)
    where = Path(root if not is_url(root) else ".") / MANIFEST
    parse_catalog(manifest.catalog, where)  # a catalog or pins this kit cannot read: one line now, not later
    parse_pins(manifest.engines, where)
    _save(home.bundle_dir, root, manifest)
    info(t("bundle.using", where=root, created=manifest.created, version=manifest.tool_version))
    return OpenedBundle(root, manifest, home.bundle_dir)


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
