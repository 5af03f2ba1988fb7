"""Hugging Face resolver: any HF-compatible endpoint (huggingface.co, hf-mirror style mirrors, an intranet proxy).

One ``model_info(revision, files_metadata=True)`` call (``GET /api/models/{repo}/revision/{rev}?blobs=true``) returns
the commit the revision points to *and* every file's size and LFS sha256 from that same commit, so the metadata is
consistent by construction. Download URLs are then built on the commit (``/{repo}/resolve/{commit}/{path}``), not
on the branch: a push to ``main`` during an install cannot mix revisions (huggingface_hub #4815).
The sha256 is ``siblings[].lfs.sha256``, never an ETag (a CDN/Xet ETag is 64-hex but not the sha256:
docs/hubs.md, "Where a file's SHA-256 comes from").
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from urllib.parse import quote

import requests
from huggingface_hub import HfApi
from huggingface_hub import constants as hf_constants
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import get_session

from bootstrap.core.console import t
from bootstrap.core.errors import SourceError, UsageError
from bootstrap.core.hashing import is_sha256
from bootstrap.fetch.records import (
    API_TIMEOUT,
    COMMIT_RE,
    TRANSPORT_ERRORS,
    ResolvedFile,
    Source,
    hash_small_file,
    unreachable,
)

DEFAULT_REVISION = "main"

# huggingface_hub >= 2.x builds its User-Agent by asking huggingface.co for a list of AI-agent harnesses
# (``utils/_detect_agent.py`` ``_fetch_registry``: ``GET {HF_ENDPOINT or huggingface.co}/api/agent-harnesses``, 3 s
# timeout, once a day) unless telemetry is off (``utils/_headers.py`` ``_http_user_agent`` reads
# ``constants.HF_HUB_DISABLE_TELEMETRY`` per call). That request goes to huggingface.co even when the endpoint in use
# is a mirror, and costs its whole timeout where huggingface.co is black-holed: off, as ``HF_HUB_DISABLE_TELEMETRY=1``.
hf_constants.HF_HUB_DISABLE_TELEMETRY = True


def resolve_url(endpoint: str, repo: str, commit: str, path: str) -> str:
    """``{endpoint}/{repo}/resolve/{commit}/{path}``: the byte URL of one file at one commit."""
    return f"{endpoint}/{repo}/resolve/{commit}/{quote(path)}"


def _api_timeout() -> object:
    """``API_TIMEOUT`` as the hub client takes it: connect and read apart, so a black-holed endpoint costs the
    short connect budget, not the read one. huggingface_hub >= 1.0 passes ``timeout`` to httpx
    (``httpx.Timeout(read, connect=…)``); 0.x to requests (a ``(connect, read)`` tuple)."""
    client = type(get_session()).__module__.partition(".")[0]
    if client in ("httpx", "httpx2"):
        timeout_type = importlib.import_module(client).Timeout
        return timeout_type(API_TIMEOUT[1], connect=API_TIMEOUT[0])
    return API_TIMEOUT


def _model_info(source: Source) -> object:
    """``model_info`` with every failure mapped to our exit codes (2: your input, 4: the source)."""
    api = HfApi(endpoint=source.endpoint, token=source.token or False, library_name="qwenclientkit")
    revision = source.revision or DEFAULT_REVISION
    try:
        # timeout is required: huggingface_hub 2.x's shared client has none, a stalled mirror would hang.
        return api.model_info(source.repo, revision=revision, files_metadata=True, timeout=_api_timeout())  # type: ignore[arg-type]
    except GatedRepoError as exc:  # before RepositoryNotFoundError: it is a subclass
        raise UsageError(t("sources.err_gated", repo=source.repo, source=source.name),
                         t("sources.hint_gated")) from exc
    except RepositoryNotFoundError as exc:
        raise UsageError(t("sources.err_repo_not_found", repo=source.repo, source=source.name)) from exc
    except RevisionNotFoundError as exc:
        raise UsageError(t("sources.err_revision_not_found", repo=source.repo, revision=revision,
                           source=source.name)) from exc
    except HFValidationError as exc:
        raise UsageError(t("sources.err_repo_not_found", repo=source.repo, source=source.name)) from exc
    except HfHubHTTPError as exc:  # 5xx, 429, a proxy's 403…: the source failed, not the request
        raise unreachable(source, exc) from exc
    except TRANSPORT_ERRORS as exc:  # after the HTTP errors above: HfHubHTTPError is an OSError too
        raise unreachable(source, exc) from exc
    except (ValueError, KeyError, TypeError) as exc:  # a 200 that is not the HF API (a captive portal, a web page)
        raise unreachable(source, exc) from exc


def resolve_hf(source: Source, paths: Sequence[str], session: requests.Session) -> list[ResolvedFile]:
    """Resolve ``paths`` of ``source.repo`` at ``source.revision`` (default ``main``) on an HF-compatible endpoint."""
    info = _model_info(source)
    commit = str(getattr(info, "sha", "") or "")
    if not COMMIT_RE.match(commit):
        raise unreachable(source, ValueError(f"no commit in the answer for {source.repo}"))
    siblings = {s.rfilename: s for s in (getattr(info, "siblings", None) or [])}
    out = []
    for path in paths:
        sibling = siblings.get(path)
        if sibling is None:
            raise UsageError(t("sources.err_file_not_found", repo=source.repo, path=path, source=source.name),
                             t("sources.hint_file_not_found", available=_ggufs(siblings)))
        url = resolve_url(source.endpoint, source.repo, commit, path)
        lfs = sibling.lfs
        size = lfs.size if lfs is not None else sibling.size
        if size is None:
            raise unreachable(source, ValueError(f"no size listed for {path}"))
        if lfs is not None:
            sha256 = str(lfs.sha256).lower()
            if not is_sha256(sha256):
                raise SourceError(t("sources.err_bad_listing", source=source.name, path=path))
        else:
            sha256 = hash_small_file(session, source, url, int(size), sibling.blob_id)
        out.append(ResolvedFile(source.name, source.repo, path, commit, url, int(size), sha256,
                                tuple(source.auth_headers().items())))
    return out


def _ggufs(siblings: dict[str, object]) -> str:
    """The repo's .gguf files, for the "not found" hint (at most 12)."""
    names = sorted(p for p in siblings if p.endswith(".gguf"))
    return ", ".join(names[:12]) + (" ..." if len(names) > 12 else "") if names else "-"
