"""Hugging Face resolver: any HF-compatible endpoint (huggingface.co, hf-mirror style mirrors, an intranet proxy).

One model-info request (``GET /api/models/{repo}/revision/{rev}?blobs=true``, what huggingface_hub's
``model_info(revision, files_metadata=True)`` sends) returns the commit the revision points to *and* every file's
size and LFS sha256 from that same commit, so the metadata is consistent by construction. Download URLs are then
built on the commit (``/{repo}/resolve/{commit}/{path}``), not on the branch: a push to ``main`` during an install
cannot mix revisions (huggingface_hub #4815). The sha256 is ``siblings[].lfs.sha256``, never an ETag (a CDN/Xet
ETag is 64-hex but not the sha256: docs/hubs.md, "Where a file's SHA-256 comes from").

Why our own request and not ``HfApi.model_info``: the SDK reads the whole answer, decompressed, with a timeout per
read only, so a trickled answer never ends and a gzip bomb is inflated whole before anything is checked. Here the
request is bounded as a whole, the body capped before and after inflation (``records.metadata_get``,
``records.read_json``), and every field we use is checked for its type before it is used. Errors are told apart as
huggingface_hub's ``hf_raise_for_status`` does (``utils/_http.py``): the ``X-Error-Code`` header
(``RepoNotFound``, ``RevisionNotFound``, ``GatedRepo``), and a 401 that is not "Invalid credentials" meaning
"no such repo, or private".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import requests

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.fetch.records import (
    COMMIT_RE,
    ResolvedFile,
    Source,
    bad_listing,
    hash_small_file,
    listing_field,
    listing_sha256,
    listing_size,
    metadata_get,
    read_json,
    unreachable,
)

DEFAULT_REVISION = "main"
_BAD_AUTH_TEXT = "Invalid credentials in Authorization header"  # huggingface_hub ``hf_raise_for_status``
_DISABLED = "Access to this resource is disabled."


def resolve_url(endpoint: str, repo: str, commit: str, path: str) -> str:
    """``{endpoint}/{repo}/resolve/{commit}/{path}``: the byte URL of one file at one commit."""
    return f"{endpoint}/{repo}/resolve/{commit}/{quote(path)}"


def info_url(endpoint: str, repo: str, revision: str) -> str:
    """``{endpoint}/api/models/{repo}/revision/{revision}`` (the revision quoted whole, slashes too, as the SDK
    quotes it): the model-info route that answers for one revision."""
    return f"{endpoint}/api/models/{quote(repo)}/revision/{quote(revision, safe='')}"


def _model_info(source: Source, session: requests.Session) -> dict[str, Any]:
    """The model-info answer, with every failure mapped to our exit codes (2: your input, 4: the source, 5: an
    answer that is not a listing)."""
    revision = source.revision or DEFAULT_REVISION
    url = info_url(source.endpoint, source.repo, revision)
    with metadata_get(session, source, url, params={"blobs": "true"}, headers=source.auth_headers()) as response:
        status = response.status_code
        if status != 200:
            _raise_for(source, response, revision)
        info = read_json(response, source)
    return listing_field(source, "model info", info, dict)


def _raise_for(source: Source, response: requests.Response, revision: str) -> None:
    """The error a non-200 model-info answer means (huggingface_hub ``hf_raise_for_status``, same order)."""
    code = response.headers.get("X-Error-Code")
    message = response.headers.get("X-Error-Message")
    if code == "RevisionNotFound":
        raise UsageError(t("sources.err_revision_not_found", repo=source.repo, revision=revision,
                           source=source.name))
    if code == "GatedRepo":
        raise UsageError(t("sources.err_gated", repo=source.repo, source=source.name), t("sources.hint_gated"))
    if code == "RepoNotFound" or message == _DISABLED or (response.status_code == 401 and message != _BAD_AUTH_TEXT):
        raise UsageError(t("sources.err_repo_not_found", repo=source.repo, source=source.name))
    # 5xx, 429, a proxy's 403, a mirror without this API (404 without a code): the source failed, not the request
    raise unreachable(source, requests.HTTPError(f"HTTP {response.status_code}", response=response), response.url)


def _siblings(source: Source, info: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``siblings`` by file name; each entry an object with a text ``rfilename``, else a bad listing."""
    listed = listing_field(source, "siblings", info.get("siblings", []), list)
    out: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(listed):
        entry = listing_field(source, f"siblings[{i}]", item, dict)
        out[listing_field(source, f"siblings[{i}].rfilename", entry.get("rfilename"), str)] = entry
    return out


def resolve_hf(source: Source, paths: Sequence[str], session: requests.Session) -> list[ResolvedFile]:
    """Resolve ``paths`` of ``source.repo`` at ``source.revision`` (default ``main``) on an HF-compatible endpoint."""
    info = _model_info(source, session)
    commit = info.get("sha")
    if not isinstance(commit, str) or not COMMIT_RE.match(commit):
        raise bad_listing(source, t("sources.listing_missing", field="sha") if commit is None else
                          t("sources.listing_shape", field="sha", value=str(commit)[:40]))
    siblings = _siblings(source, info)
    out = []
    for path in paths:
        sibling = siblings.get(path)
        if sibling is None:
            raise UsageError(t("sources.err_file_not_found", repo=source.repo, path=path, source=source.name),
                             t("sources.hint_file_not_found", available=_ggufs(siblings)))
        url = resolve_url(source.endpoint, source.repo, commit, path)
        lfs = sibling.get("lfs")
        if lfs is not None:
            lfs = listing_field(source, f"{path}: lfs", lfs, dict)
            size = listing_size(source, f"{path}: lfs.size", lfs.get("size"))
            sha256 = listing_sha256(source, f"{path}: lfs.sha256", lfs.get("sha256"))
        else:
            size = listing_size(source, f"{path}: size", sibling.get("size"))
            blob = sibling.get("blobId")
            blob = listing_field(source, f"{path}: blobId", blob, str) if blob is not None else None
            sha256 = hash_small_file(session, source, url, size, blob)
        out.append(ResolvedFile(source.name, source.repo, path, commit, url, size, sha256,
                                tuple(source.auth_headers().items())))
    return out


def _ggufs(siblings: dict[str, object]) -> str:
    """The repo's .gguf files, for the "not found" hint (at most 12)."""
    names = sorted(p for p in siblings if p.endswith(".gguf"))
    return ", ".join(names[:12]) + (" ..." if len(names) > 12 else "") if names else "-"
