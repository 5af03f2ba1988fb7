"""Offline bundle resolver: a directory (USB drive) or a URL (any static web server) holding ``payload/manifest.json``.

Manifest schema 1 (written by ``bundle create``, DESIGN.md §4)::

    {"schema": 1,
     "files": [{"path": "payload/models/<repo>/<file>", "size": N, "sha256": "<64 hex>",
                "repo": "<owner/name>", "revision": "<commit>", "kind": "model|mmproj|engine|wheel"}, …]}

``path`` is relative to the bundle root, always with ``/``. Resolving a model file means finding its entry; the
bytes are then a ``file://`` URL (a local bundle: the download engine copies and verifies) or ``<root>/<path>``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit
from urllib.request import url2pathname

import requests

from .atomic_file import fsync_dir
from .console import t
from .download import ensure_space, free_bytes, sha256_file
from .errors import IntegrityError, UsageError
from .source_common import (
    API_TIMEOUT,
    MAX_JSON_BYTES,
    SHA256_RE,
    ResolvedFile,
    Source,
    read_json,
    transport_guard,
    unreachable,
)

MANIFEST = "payload/manifest.json"
MANIFEST_SCHEMA = 1
KINDS = ("model", "mmproj", "engine", "wheel")


def is_url(text: str) -> bool:
    return text.lower().startswith(("http://", "https://"))


def manifest_url(root: str) -> str:
    return f"{root.rstrip('/')}/{MANIFEST}"


def load_manifest(source: Source, session: requests.Session) -> list[dict[str, Any]]:
    """The validated ``files`` of a bundle's manifest; a bad manifest is an integrity failure (exit 5)."""
    if is_url(source.endpoint):
        with transport_guard(source), session.get(manifest_url(source.endpoint), timeout=API_TIMEOUT,
                                                  stream=True) as response:
            if response.status_code != 200:
                raise unreachable(source, ValueError(f"HTTP {response.status_code} for {MANIFEST}"))
            document = read_json(response, source)
    else:
        path = Path(source.endpoint) / MANIFEST
        try:
            if path.stat().st_size > MAX_JSON_BYTES:
                raise IntegrityError(t("sources.err_bad_manifest", where=str(path), detail="too large"))
            document = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(t("sources.err_no_bundle", where=source.endpoint)) from exc
        except ValueError as exc:
            raise IntegrityError(t("sources.err_bad_manifest", where=str(path), detail=str(exc)[:120])) from exc
    return _validate(document, source.endpoint)


def _validate(document: Any, where: str) -> list[dict[str, Any]]:
    def bad(detail: str) -> IntegrityError:
        return IntegrityError(t("sources.err_bad_manifest", where=where, detail=detail))

    if not isinstance(document, dict) or document.get("schema") != MANIFEST_SCHEMA:
        raise bad(f"schema must be {MANIFEST_SCHEMA}")
    files = document.get("files")
    if not isinstance(files, list):
        raise bad("files must be a list")
    for i, entry in enumerate(files):
        if not isinstance(entry, dict):
            raise bad(f"files[{i}] is not an object")
        rel = entry.get("path")
        parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
        if not parts or rel.startswith("/") or "\\" in rel or ".." in parts or ":" in parts[0]:
            raise bad(f"files[{i}].path")
        size, sha256 = entry.get("size"), entry.get("sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise bad(f"files[{i}].size")
        if not isinstance(sha256, str) or not SHA256_RE.match(sha256):
            raise bad(f"files[{i}].sha256")
        if entry.get("kind") is not None and entry.get("kind") not in KINDS:
            raise bad(f"files[{i}].kind")
    return files


def model_path(repo: str, path: str) -> str:
    """Where a model file sits in a bundle: ``payload/models/<repo>/<path>``."""
    return f"payload/models/{repo}/{path}"


def resolve_bundle(source: Source, paths: Sequence[str], session: requests.Session) -> list[ResolvedFile]:
    """Find ``paths`` of ``source.repo`` (or one of its ``aliases``) in the bundle's manifest."""
    entries = {e["path"]: e for e in load_manifest(source, session)}
    repos = (source.repo, *source.aliases)
    out = []
    for path in paths:
        entry = next((entries[model_path(r, path)] for r in repos if model_path(r, path) in entries), None)
        if entry is None:
            raise UsageError(t("sources.err_file_not_found", repo=source.repo, path=path, source=source.name))
        if is_url(source.endpoint):
            url = f"{source.endpoint.rstrip('/')}/{quote(entry['path'])}"
        else:
            url = (Path(source.endpoint) / entry["path"]).resolve().as_uri()
        out.append(ResolvedFile(source.name, str(entry.get("repo") or source.repo), path,
                                str(entry.get("revision") or ""), url, entry["size"], entry["sha256"].lower()))
    return out


def local_path(url: str) -> Path | None:
    """The file behind a ``file://`` URL of a local bundle (``None`` for any other URL)."""
    if not url.startswith("file:"):
        return None
    parts = urlsplit(url)
    return Path(url2pathname((f"//{parts.netloc}" if parts.netloc else "") + parts.path))  # UNC: \\server\share


def copy_verified(src: Path, dest: Path, size: int, sha256: str, work_dir: Path) -> None:
    """Copy a bundle file into place, hashing as it goes: write to ``work_dir``, fsync, check, rename.

    The download engine speaks HTTP only; a bundle on a USB drive or a share is read here instead, with the
    same guarantees (a file that does not match the manifest is never placed: exit 5).
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    ensure_space(size, free_bytes(work_dir), work_dir)
    tmp = work_dir / f"{sha256}.copy"
    digest = hashlib.sha256()
    copied = 0
    try:
        with src.open("rb") as fh, tmp.open("wb") as out:
            while block := fh.read(4 << 20):
                digest.update(block)
                out.write(block)
                copied += len(block)
            out.flush()
            os.fsync(out.fileno())
        if copied != size or digest.hexdigest() != sha256:
            raise IntegrityError(t("sources.err_bundle_file", path=str(src), expected=sha256,
                                   actual=digest.hexdigest()))
        os.replace(tmp, dest)
        fsync_dir(dest.parent)
    finally:
        tmp.unlink(missing_ok=True)


def place_from_bundle(src: Path, dest: Path, size: int, sha256: str, work_dir: Path) -> bool:
    """``copy_verified`` unless ``dest`` already holds exactly these bytes; True when a copy was made."""
    if dest.is_file() and dest.stat().st_size == size and sha256_file(dest) == sha256:
        return False
    copy_verified(src, dest, size, sha256, work_dir)
    return True
