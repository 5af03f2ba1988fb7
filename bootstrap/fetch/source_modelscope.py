"""ModelScope resolver, speaking its documented REST API (``{endpoint}/api/v1/…``) with requests.

Why not the ``modelscope`` SDK: in 1.40 ``HubApi.get_model_files`` returns only ``Path`` and ``Size`` (no
``Sha256``, which is the whole point) and applies ``root`` by filtering client-side, so the listing cap below
cannot be walked around; importing it also costs ~0.45 s and it reads ``MODELSCOPE_ENDPOINT`` at import time.

Protocol (modelscope SDK ``modelscope/hub/api.py``; docs/hubs.md, "ModelScope"):
- ``GET models/{o}/{n}/revisions`` → ``Data.RevisionMap.{Branches,Tags}[] = {Revision, CommitId?, …}``: the named
  branch/tag is pinned to its commit once, and every file URL uses that commit.
- ``GET models/{o}/{n}/repo/files?Revision=&Root=&Recursive=`` → ``Data.Files[] = {Path, Type, Size, Sha256, …}``,
  silently capped at 3000 entries. We list only the directory that holds the file (``Root=<dir>``, not
  recursive), so a big repo never hides the file behind the cap; a single directory at the cap is reported.
- ``GET models/{o}/{n}/repo?Revision={commit}&FilePath={path}`` → the bytes (or a redirect to a CDN).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import requests

from bootstrap.core.console import t
from bootstrap.core.errors import SourceError, UsageError
from bootstrap.fetch.records import (
    COMMIT_RE,
    ResolvedFile,
    Source,
    hash_small_file,
    listing_field,
    listing_sha256,
    listing_size,
    metadata_get,
    read_json,
    retry_after,
    unreachable,
)

DEFAULT_REVISION = "master"
LISTING_CAP = 3000  # entries; ModelScope truncates larger listings without saying so


def download_url(endpoint: str, repo: str, revision: str, path: str) -> str:
    """``{endpoint}/api/v1/models/{repo}/repo?Revision=…&FilePath=…``: the byte URL of one file."""
    return f"{endpoint}/api/v1/models/{repo}/repo?" + urlencode({"Revision": revision, "FilePath": path})


def _get(session: requests.Session, source: Source, route: str, params: dict[str, str]) -> Any | None:
    """``Data`` of one API answer; ``None`` for a 404 (the caller names what was missing). One retry on 429/5xx."""
    url = f"{source.endpoint}/api/v1/models/{source.repo}{route}"
    for attempt in range(2):
        with metadata_get(session, source, url, params=params, headers=source.auth_headers()) as response:
            status = response.status_code
            if status == 404:
                return None
            if (status == 429 or status >= 500) and attempt == 0:
                time.sleep(retry_after(response.headers))
                continue
            if status != 200:
                raise unreachable(source, ValueError(f"HTTP {status} for {url}"))
            body = read_json(response, source)
        if not isinstance(body, dict) or body.get("Success") is False or "Data" not in body:
            raise unreachable(source, ValueError(f"not a ModelScope answer from {url}"))
        return body["Data"]
    raise unreachable(source, ValueError(f"no answer from {url}"))  # pragma: no cover - loop always returns


def _pin(session: requests.Session, source: Source) -> str | None:
    """The commit a branch or tag points to (``None`` when the server does not say: files pin themselves then)."""
    revision = source.revision or DEFAULT_REVISION
    if COMMIT_RE.match(revision):
        return revision
    data = _get(session, source, "/revisions", {})
    if data is None:
        raise UsageError(t("sources.err_repo_not_found", repo=source.repo, source=source.name))
    data = listing_field(source, "Data", _or(data, {}), dict)  # null stands for empty; any other type is wrong
    revision_map = listing_field(source, "Data.RevisionMap", _or(data.get("RevisionMap"), {}), dict)
    for kind in ("Branches", "Tags"):
        items = listing_field(source, f"Data.RevisionMap.{kind}", _or(revision_map.get(kind), []), list)
        for i, item in enumerate(items):
            item = listing_field(source, f"Data.RevisionMap.{kind}[{i}]", item, dict)
            if item.get("Revision") == revision:
                commit = str(item.get("CommitId") or "")
                return commit if COMMIT_RE.match(commit) else None
    raise UsageError(t("sources.err_revision_not_found", repo=source.repo, revision=revision, source=source.name))


def _list_dir(session: requests.Session, source: Source, revision: str, directory: str) -> list[dict[str, Any]]:
    params = {"Revision": revision, "Recursive": "false"}
    if directory:
        params["Root"] = directory
    data = _get(session, source, "/repo/files", params)
    if data is None:
        return []
    data = listing_field(source, "Data", data, dict)
    files = listing_field(source, "Data.Files", data.get("Files"), list)
    return [listing_field(source, f"Data.Files[{i}]", f, dict) for i, f in enumerate(files)]


def resolve_modelscope(source: Source, paths: Sequence[str], session: requests.Session) -> list[ResolvedFile]:
    """Resolve ``paths`` of ``source.repo`` at ``source.revision`` (default ``master``) on ModelScope."""
    commit = _pin(session, source)
    listing_revision = commit or source.revision or DEFAULT_REVISION
    listings: dict[str, list[dict[str, Any]]] = {}
    out = []
    for path in paths:
        directory = path.rpartition("/")[0]
        if directory not in listings:
            listings[directory] = _list_dir(session, source, listing_revision, directory)
        entries = listings[directory]
        entry = next((e for e in entries if e.get("Path") == path and e.get("Type", "blob") == "blob"), None)
        if entry is None:
            if len(entries) >= LISTING_CAP:
                raise SourceError(t("sources.err_listing_capped", source=source.name, repo=source.repo,
                                    directory=directory or "/", count=len(entries)))
            raise UsageError(t("sources.err_file_not_found", repo=source.repo, path=path, source=source.name),
                             t("sources.hint_file_not_found", available=_ggufs(entries)))
        # Without a branch→commit answer, the entry's own commit pins the file (its bytes at that commit are the
        # bytes listed); failing both, the branch name is used and the sha256 check still guards the bytes.
        file_revision = commit or _entry_commit(entry) or listing_revision
        url = download_url(source.endpoint, source.repo, file_revision, path)
        size = listing_size(source, f"{path}: Size", entry.get("Size"))
        listed = entry.get("Sha256")
        if listed in (None, ""):
            sha256 = hash_small_file(session, source, url, size, None)
        else:
            sha256 = listing_sha256(source, f"{path}: Sha256", listed)
        out.append(ResolvedFile(source.name, source.repo, path, file_revision, url, size, sha256,
                                tuple(source.auth_headers().items())))
    return out


def _or(value: Any, empty: Any) -> Any:
    """``empty`` for a JSON null, else the value as it came (its type is checked by the caller)."""
    return empty if value is None else value


def _entry_commit(entry: dict[str, Any]) -> str | None:
    for key in ("CommitId", "Revision"):
        value = str(entry.get(key) or "")
        if COMMIT_RE.match(value):
            return value
    return None


def _ggufs(entries: list[dict[str, Any]]) -> str:
    names = sorted(str(e.get("Path")) for e in entries if str(e.get("Path", "")).endswith(".gguf"))
    return ", ".join(names[:12]) + (" ..." if len(names) > 12 else "") if names else "-"
