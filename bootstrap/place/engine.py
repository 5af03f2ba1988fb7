"""The place stage for the engine: download the pinned llama.cpp release, verify it, extract it, put it in place.

Order, so a kill at any point leaves either the old state or the new one (DESIGN.md §1):
1. a marker in ``<home>/engine/b<N>-<variant>/`` that matches the pins → reuse, no network at all;
2. each asset fetched through the download engine (resumable, sha256-verified: pinned, or the digest GitHub's
   release API states for the asset);
3. every archive (main + CUDA runtime) extracted safely into a fresh staging folder on the same filesystem;
4. ``llama-server --version`` must run there (a missing library fails here, not at first start);
5. the marker ``.qwenkit-engine.json`` written, everything fsynced, the folder renamed into place;
6. the downloaded archives deleted (nothing keeps growing in the home).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from bootstrap.catalog.engine_pins import EngineAsset, EnginePins, assets_for, load_pins
from bootstrap.core import settings
from bootstrap.core.atomic_file import fsync_dir, write_atomic
from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.console import detail, info, t
from bootstrap.core.errors import IntegrityError, SourceError
from bootstrap.core.fs_errors import mapped, os_error
from bootstrap.core.hashing import is_sha256
from bootstrap.core.home import Home
from bootstrap.fetch.download import FetchOptions
from bootstrap.fetch.http_session import bounded, metadata_budget
from bootstrap.fetch.records import (
    API_TIMEOUT,
    TRANSPORT_ERRORS,
    Mirror,
    RemoteFile,
    Source,
    cause_text,
    new_session,
    read_json,
)
from bootstrap.fetch.source_bundle import fetch_any
from bootstrap.place.archive import extract_archive
from bootstrap.place.engine_failure import EngineFailed
from bootstrap.place.engine_marker import (
    MARKER,
    MARKER_SCHEMA,
    InstalledEngine,
    find_installed,
    installed_from,
    server_name,
)
from bootstrap.place.engine_probe import probe_version

GITHUB_WEB = "github.com"
GITHUB_API = "https://api.github.com"
DEFAULT_FETCH = FetchOptions()


@dataclass(frozen=True)
class ReleaseDigest:
    """What a release API states for one asset."""

    name: str
    size: int | None
    sha256: str | None


# ---- where assets live ----------------------------------------------------------------------------------
def _base_for(repo: str, pins_repo: str) -> str:
    """The download base for ``repo``'s releases: ``QWENKIT_ENGINE_URL`` with the repo swapped when it has one.

    The default (GitHub) and a hub-like mirror use ``<origin>/<owner>/<repo>/releases/download``; a flat mirror
    (any other path) serves every asset under ``<base>/<tag>/`` whichever repo released it.
    """
    base = settings.engine_url()
    suffix = f"/{pins_repo}/releases/download"
    if repo != pins_repo and base.endswith(suffix):
        return base[: -len(suffix)] + f"/{repo}/releases/download"
    return base


def asset_url(asset: EngineAsset, pins_repo: str = "ggml-org/llama.cpp") -> str:
    """``{QWENKIT_ENGINE_URL}/{tag}/{name}``."""
    return f"{_base_for(asset.repo, pins_repo)}/{quote(asset.tag)}/{quote(asset.name)}"


def release_api_url(repo: str, tag: str, pins_repo: str = "ggml-org/llama.cpp") -> str:
    """The release-by-tag API for the download base in use.

    github.com → ``https://api.github.com/repos/{owner}/{repo}/releases/tags/{tag}`` (REST API, "Get a release
    by tag name"); any other host → same origin + ``/api/v3/repos/…``, the GitHub Enterprise Server convention
    (which the loopback hub and API-compatible mirrors follow).
    """
    base = _base_for(repo, pins_repo)
    parts = urlsplit(base)
    path = f"/repos/{repo}/releases/tags/{quote(tag)}"
    if (parts.hostname or "").lower() == GITHUB_WEB:
        return GITHUB_API + path
    return f"{parts.scheme}://{parts.netloc}/api/v3{path}"


def _digests(repo: str, tag: str, pins_repo: str) -> dict[str, ReleaseDigest]:
    """Asset name → (size, sha256) from the release API; {} when the API has no such release (a plain mirror).

    GitHub states ``"digest": "sha256:<hex>"`` per asset (assets uploaded since mid-2025); older assets have none.
    """
    url = release_api_url(repo, tag, pins_repo)
    source = Source("engine", "engine-api", url, repo)
    session = new_session()
    try:  # one metadata request, bounded as a whole (docs/hubs.md, "Bounds on every network read")
        with bounded(metadata_budget()), session.get(
                url, headers={"Accept": "application/vnd.github+json"}, timeout=API_TIMEOUT, stream=True) as resp:
            if resp.status_code == 404:
                return {}
            if resp.status_code != 200:
                raise SourceError(t("engine.err_api", url=url, detail=f"HTTP {resp.status_code}"),
                                  t("engine.hint_api"))
            data = read_json(resp, source)
    except TRANSPORT_ERRORS as exc:
        raise SourceError(t("engine.err_api", url=url, detail=cause_text(exc)[0]), t("engine.hint_api")) from exc
    finally:
        session.close()
    found: dict[str, ReleaseDigest] = {}
    assets = data.get("assets") if isinstance(data, dict) else None
    for item in assets if isinstance(assets, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        size = item.get("size")
        digest = item.get("digest")
        sha = None
        if isinstance(digest, str) and digest.lower().startswith("sha256:"):
            hexpart = digest[7:].strip().lower()
            sha = hexpart if is_sha256(hexpart) else None
        found[item["name"]] = ReleaseDigest(item["name"], size if isinstance(size, int) and size > 0 else None, sha)
    return found


def resolve_assets(assets: tuple[EngineAsset, ...], pins_repo: str) -> list[RemoteFile]:
    """Each asset as a ``RemoteFile`` with an exact size and sha256: pinned, else from the release API.

    Only assets missing either value cost an API request (one per repo/tag). A pinned sha256 that the API
    contradicts is refused at once, before any download.
    """
    api: dict[tuple[str, str], dict[str, ReleaseDigest]] = {}
    out = []
    for asset in assets:
        sha, size = asset.sha256, asset.size
        if sha is None or size is None:
            key = (asset.repo, asset.tag)
            if key not in api:
                api[key] = _digests(asset.repo, asset.tag, pins_repo)
            stated = api[key].get(asset.name)
            if stated is not None and sha is not None and stated.sha256 and stated.sha256 != sha:
                raise IntegrityError(t("engine.err_pin_mismatch", name=asset.name, pinned=sha, stated=stated.sha256),
                                     t("engine.hint_pin_mismatch"))
            sha = sha or (stated.sha256 if stated else None)
            size = size or (stated.size if stated else None)
            if sha is None or size is None:
                raise IntegrityError(t("engine.err_no_checksum", name=asset.name), t("engine.hint_no_checksum"))
        url = asset_url(asset, pins_repo)
        host = urlsplit(url).hostname or "engine"
        label = "github" if host == GITHUB_WEB else f"mirror:{host}"
        out.append(RemoteFile(asset.name, size, sha, (Mirror(label, url),)))
    return out


# ---- install --------------------------------------------------------------------------------------------
def _remove_tree(path: Path) -> None:
    """Remove a folder (or a stray file/link) left by an earlier run; missing is fine."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _fsync_tree(folder: Path) -> None:
    """Make the staged folder durable before the rename publishes it (files were fsynced when written)."""
    for dirpath, _dirs, _files in os.walk(folder):
        fsync_dir(Path(dirpath))


def _drop_downloads(downloads: Path, names: list[str]) -> None:
    """Delete downloaded archives once their content is in place: nothing in the home keeps growing."""
    for name in names:
        with contextlib.suppress(OSError):
            (downloads / name).unlink()


def _copy_durably(src: Path, dest: Path) -> None:
    """A plain (non-archive) asset such as WinSW's exe, copied and fsynced like extracted files."""
    with src.open("rb") as fin, dest.open("wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
        fout.flush()
        os.fsync(fout.fileno())
    dest.chmod(0o755)


def _publish(staging: Path, final: Path) -> None:
    """Rename ``staging`` to ``final``; an outdated ``final`` is moved aside first and removed after."""
    final.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final.exists() or final.is_symlink():
        old = staging.with_name(staging.name + ".old")
        _remove_tree(old)
        os.replace(final, old)
    os.replace(staging, final)
    fsync_dir(final.parent)
    if old is not None:
        _remove_tree(old)


def _fetch_assets(home: Home, assets: tuple[EngineAsset, ...], pins: EnginePins,
                  options: FetchOptions) -> tuple[Path, ...]:
    """Assets resolved (pinned sha256, else the release API's) and fetched, verified, into the home's downloads:
    from the release host, a mirror, or a bundle (``QWENKIT_ENGINE_URL`` = its ``payload/engines``: a served
    bundle is fetched like a mirror, a bundle folder is copied with its hash checked as it goes)."""
    remotes = resolve_assets(assets, pins.repo)
    downloads = home.partial_dir / "engine"
    downloads.mkdir(parents=True, exist_ok=True)
    fetch_any([(r, downloads / r.name) for r in remotes], home.partial_dir, options)
    return tuple(downloads / r.name for r in remotes)


def fetch_engine(home: Home, variant: str, *, pins: EnginePins | None = None,
                 options: FetchOptions = DEFAULT_FETCH) -> tuple[Path, ...] | None:
    """The pinned assets of ``variant``, verified, in the home's downloads; ``None`` when that engine is installed."""
    pins = pins or load_pins()
    assets = assets_for(pins, variant)
    if find_installed(home, variant, pins) is not None:
        return None
    return _fetch_assets(home, assets, pins, options)


def fetch_winsw(home: Home, *, pins: EnginePins | None = None, options: FetchOptions = DEFAULT_FETCH) -> Path | None:
    """The pinned WinSW exe (the Windows service wrapper, for installs with admin rights), verified, in the home's
    downloads; ``None`` when the pins name none."""
    pins = pins or load_pins()
    if pins.winsw is None:
        return None
    (path,) = _fetch_assets(home, (pins.winsw,), pins, options)
    return path


def install_engine(home: Home, variant: str, *, pins: EnginePins | None = None,
                   options: FetchOptions = DEFAULT_FETCH, fetched: Sequence[Path] | None = None) -> InstalledEngine:
    """Put the pinned engine for ``variant`` at ``home.engine_dir("b<build>", variant)`` (idempotent).

    ``fetched``: the assets ``fetch_engine`` already verified in this run (not read again).
    Raises UsageError (pins), SourceError (network, rerun resumes), IntegrityError (checksum, hostile archive),
    ServerError (the extracted llama-server does not start on this machine).
    """
    pins = pins or load_pins()
    assets = assets_for(pins, variant)
    existing = find_installed(home, variant, pins)
    final = home.engine_dir(f"b{pins.build}", variant)
    downloads = home.partial_dir / "engine"
    if existing is not None:
        _drop_downloads(downloads, [a.name for a in assets])  # a run killed after the rename left them
        if not options.quiet:
            info(t("engine.reused", variant=variant, build=pins.build, path=str(existing.dir)))
        return existing
    staging = home.staging_dir / final.name
    _remove_tree(staging)  # a killed run's half-extracted folder
    _remove_tree(staging.with_name(staging.name + ".old"))
    remotes = resolve_assets(assets, pins.repo)
    paths = list(fetched) if fetched is not None else fetch_engine(home, variant, pins=pins, options=options)
    assert paths is not None  # not installed (checked above)
    with mapped(staging):
        staging.mkdir(parents=True)
    try:
        for asset, path in zip(assets, paths, strict=True):
            if asset.kind == "exe":
                _copy_durably(path, staging / asset.name)
            else:
                extract_archive(path, staging, kind=asset.kind)
        server = staging / server_name(variant)
        if not server.is_file():
            raise IntegrityError(t("engine.err_no_server", archive=assets[0].name, server=server.name),
                                 t("engine.hint_archive"))
        version_line, _build, _commit = probe_version(server)
        marker = {
            "schema": MARKER_SCHEMA, "build": pins.build, "tag": pins.tag, "repo": pins.repo, "variant": variant,
            "version_line": version_line,
            "assets": [{"name": r.name, "sha256": r.sha256, "size": r.size} for r in remotes],
        }
        write_atomic(staging / MARKER, (json.dumps(marker, indent=2) + "\n").encode())
        _fsync_tree(staging)
        checkpoint("engine-staged")
        _publish(staging, final)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            _remove_tree(staging)
        if isinstance(exc, (IntegrityError, EngineFailed)):  # a bad archive, or a build that cannot run here
            _drop_downloads(downloads, [r.name for r in remotes])
        failure = os_error(exc, staging) if isinstance(exc, OSError) else None  # full disk, read-only home…
        if failure is not None:
            raise failure from exc
        raise
    _drop_downloads(downloads, [r.name for r in remotes])
    if not options.quiet:
        info(t("engine.installed", variant=variant, build=pins.build, path=str(final)))
        detail(t("engine.version_said", version=version_line))  # --verbose: the engine's own words
    return installed_from(final, pins, variant, marker, reused=False)

