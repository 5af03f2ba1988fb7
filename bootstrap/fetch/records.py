"""Records and HTTP helpers shared by the source resolvers (Hugging Face, ModelScope, bundle) and the probe.

A resolver turns "this path in this repo" into a ``ResolvedFile``: a URL pinned to one commit, the exact size and
the sha256 the hub publishes, so the download engine can verify every byte and never mixes revisions.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from bootstrap.core.console import t
from bootstrap.core.errors import IntegrityError, SourceError
from bootstrap.core.file_formats import parse_json
from bootstrap.core.net_causes import cause_of
from bootstrap.core.sizes import human_size
from bootstrap.fetch.http_session import (
    BodyRefused,
    BudgetExceeded,
    bounded,
    make_session,
    metadata_budget,
    read_capped,
    read_some,
)

# Metadata requests: connect fast or give up; a hub that answers slower than this is treated as unreachable.
# Per socket operation; the whole request is bounded by ``http_session.META_DEADLINE``.
API_TIMEOUT = (3.0, 15.0)
# A regular (non-LFS) file has no published sha256; we fetch it to hash it ourselves, but only when small
# (git-stored text: configs, templates). Model files are always LFS on both hubs.
SMALL_FILE_LIMIT = 16 << 20
# A listing larger than this, on the wire or once inflated, is not a hub answering: the largest real ones
# (huggingface.co model info with blobs for a repo of thousands of files, a ModelScope folder at its 3000-entry
# cap) are a few MiB.
MAX_JSON_BYTES = 16 << 20
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")

# Exceptions meaning "the network or the server failed" (not "the file does not exist"). Every request of the
# fetch stage goes through requests (``http_session``), whose errors are OSErrors too.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (requests.RequestException, OSError)


@dataclass(frozen=True)
class Source:
    """One place files can come from.

    ``kind`` is ``hf`` (any HF-compatible endpoint), ``modelscope`` or ``bundle``; ``name`` is what users read
    ("hf", "modelscope", "hf-mirror.com", "bundle"); ``endpoint`` a base URL or, for a bundle, a directory or URL;
    ``repo``/``revision`` say which repo and branch/tag/commit on that source (``aliases``: other names the same
    repo has, which a bundle may use). ``token`` goes only to this endpoint.
    """

    kind: str
    name: str
    endpoint: str
    repo: str
    revision: str | None = None
    token: str | None = field(default=None, repr=False)
    aliases: tuple[str, ...] = ()

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


@dataclass(frozen=True)
class ResolvedFile:
    """A file located on one source: bytes at ``url`` are ``size`` long with this ``sha256``, at ``revision``."""

    source: str
    repo: str
    path: str
    revision: str
    url: str
    size: int
    sha256: str
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)


def new_session() -> requests.Session:
    """The product's HTTP session (OS trust store, env proxies) sized for a few parallel metadata requests."""
    return make_session(pool_size=4)


def host_of(url: str) -> str:
    """``host[:port]`` of a URL (never its credentials or path): how a message names an endpoint in one word."""
    return urlsplit(url).netloc.rpartition("@")[2] or url


def cause_text(exc: BaseException, seconds: float = API_TIMEOUT[0]) -> tuple[str, bool]:
    """What went wrong, in the user's words (``core.net_causes``), and whether it was TLS interception;
    ``seconds``: the timeout the failed request had, for a timeout."""
    if isinstance(exc, BudgetExceeded):
        return budget_text(exc), False
    cause = cause_of(exc)
    if cause.kind == "timeout":
        return t("sources.cause_timeout", seconds=f"{seconds:g}"), False
    if cause.kind == "http":
        return t("sources.cause_http", status=cause.status), False
    if cause.kind == "other":
        detail = str(exc).splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        return t("sources.cause_other", detail=detail), False
    return t(f"sources.cause_{cause.kind}"), cause.kind == "tls"


def budget_text(exc: BudgetExceeded) -> str:
    """Why a bounded request was cut, in the user's words: past its deadline, or below its minimum rate."""
    budget = exc.budget
    if exc.kind == "slow" and budget.min_rate is not None:
        return t("sources.cause_slow", rate=human_size(int(budget.min_rate)), seconds=f"{budget.window:g}")
    return t("sources.cause_deadline", seconds=f"{budget.deadline or 0:g}")


class SourceUnreachable(SourceError):
    """``SourceError`` for a source that did not answer usefully, with the cause's kind (``core.net_causes``:
    "dns", "timeout", "refused", "unreachable", "tls", "http", "other"), so a failure of every source can tell
    "this machine has no network" (the way out is a bundle or a proxy) from "this source is down"."""

    def __init__(self, message: str, hint: str | None, cause: str) -> None:
        super().__init__(message, hint)
        self.cause = cause


# Causes that mean "nothing got through from here": no network, a firewall, a missing proxy.
NO_NETWORK_CAUSES = frozenset({"dns", "timeout", "refused", "unreachable"})


def unreachable(source: Source, exc: BaseException, url: str | None = None) -> SourceUnreachable:
    """The one error for "this source did not answer usefully" (exit 4; a rerun retries): one line naming the
    source, its host and the cause, and a hint with the ways out (another source, a mirror, a proxy, a bundle)."""
    return unreachable_named(source.name, url or source.endpoint, exc)


def unreachable_named(name: str, url: str, exc: BaseException) -> SourceUnreachable:
    """``unreachable`` for a source known by name and one of its URLs (the probe's ranged read)."""
    cause, tls = cause_text(exc)
    kind = "other" if isinstance(exc, BudgetExceeded) else cause_of(exc).kind
    return SourceUnreachable(t("sources.err_unreachable", source=name, host=host_of(url), cause=cause),
                             t("sources.hint_tls" if tls else "sources.hint_unreachable"), kind)


def bad_listing(source: Source, what: str, url: str | None = None) -> IntegrityError:
    """The one error for "this source answered, but not with a listing we can trust" (exit 5): a field of the
    wrong type or value, a body past its cap, or a resolver that failed on it. Nothing is downloaded from it."""
    return IntegrityError(t("sources.err_bad_listing", source=source.name, host=host_of(url or source.endpoint),
                            what=what), t("sources.hint_bad_listing"))


def shown_value(value: Any, limit: int = 40) -> str:
    """A listing value as a message shows it: JSON, on one line, cut at ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def listing_size(source: Source, field: str, value: Any) -> int:
    """A byte count from a listing: a non-negative integer (not a bool, a float or text), else a bad listing."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise bad_listing(source, t("sources.listing_size", field=field, value=shown_value(value)))


def listing_sha256(source: Source, field: str, value: Any) -> str:
    """A sha256 from a listing: 64 hex digits (either case), else a bad listing."""
    if isinstance(value, str) and re.fullmatch(r"[0-9a-fA-F]{64}", value):
        return value.lower()
    raise bad_listing(source, t("sources.listing_sha256", field=field, value=shown_value(value)))


def listing_field(source: Source, field: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    """A listing value of the JSON type ``kind`` (dict, list, str…), else a bad listing naming the field."""
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    raise bad_listing(source, t("sources.listing_shape", field=field, value=shown_value(value)))


@contextmanager
def transport_guard(source: Source) -> Iterator[None]:
    """Turn network failures inside the block into ``SourceError`` for ``source``."""
    try:
        yield
    except TRANSPORT_ERRORS as exc:
        raise unreachable(source, exc) from exc


@contextmanager
def metadata_get(session: requests.Session, source: Source, url: str,
                 **kwargs: Any) -> Iterator[requests.Response]:
    """``GET url`` as one metadata request of ``source``, bounded as a whole (``http_session.metadata_budget``:
    connect, headers and body together); network failures and the deadline become ``unreachable``."""
    with transport_guard(source), bounded(metadata_budget()), session.get(
            url, timeout=API_TIMEOUT, stream=True, **kwargs) as response:
        yield response


def read_json(response: requests.Response, source: Source) -> Any:
    """The JSON body of a metadata answer, bounded in size on the wire and once inflated (a listing past the cap
    is a bad listing, exit 5); a body that is not JSON means this is not a hub answering (a captive portal: 4)."""
    try:
        body = read_capped(response, MAX_JSON_BYTES)
    except BodyRefused as exc:
        raise refused_listing(source, exc, response.url) from exc
    return parse_json(body, lambda detail: unreachable(source, ValueError(detail)))


def refused_listing(source: Source, exc: BodyRefused, url: str | None = None) -> IntegrityError:
    """``bad_listing`` for a body ``read_capped`` refused: too large, inflating past the cap, or an encoding."""
    limit = human_size(exc.limit)
    if exc.kind == "size":
        return bad_listing(source, t("sources.listing_too_large", limit=limit), url)
    if exc.kind == "inflated":
        return bad_listing(source, t("sources.listing_inflates", limit=limit, encoding=exc.encoding), url)
    return bad_listing(source, t("sources.listing_encoding", encoding=exc.encoding), url)


def git_blob_sha1(data: bytes) -> str:
    """The git object id of a file's bytes: sha1 of ``blob <size>\\0`` + bytes (how HF names regular files)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def hash_small_file(session: requests.Session, source: Source, url: str, size: int, git_sha1: str | None) -> str:
    """sha256 of a regular (non-LFS) file, which hubs do not publish: fetch it (small, bounded) and hash it.

    When the listing gives the git blob id, the bytes are checked against it first, so the sha256 we hand the
    download engine is as trustworthy as a published one.
    """
    if size > SMALL_FILE_LIMIT:
        raise unreachable(source, ValueError(f"no sha256 published for a {size} B file"))
    with metadata_get(session, source, url, headers=source.auth_headers()) as response:
        if response.status_code != 200:
            raise unreachable(source, ValueError(f"HTTP {response.status_code} for {url}"))
        if (response.headers.get("Content-Encoding") or "identity").strip().lower() not in ("", "identity"):
            raise bad_listing(source, t("sources.listing_encoding", encoding=response.headers["Content-Encoding"]),
                              url)  # the bytes we hash must be the file's
        data = bytearray()
        while chunk := read_some(response, 1 << 16):
            data += chunk
            if len(data) > size:
                break
    if len(data) != size or (git_sha1 and git_blob_sha1(bytes(data)) != git_sha1):
        raise unreachable(source, ValueError(f"{url} does not match its listing"))
    return hashlib.sha256(data).hexdigest()


def retry_after(headers: Mapping[str, str], cap: float = 5.0) -> float:
    """Seconds to wait from an integer ``Retry-After`` (bounded: a metadata request never waits long)."""
    try:
        return min(cap, max(0.0, float(headers.get("Retry-After", "1"))))
    except ValueError:
        return 1.0


# ---- files: what to fetch, from where, and what was placed ---------------------------------------------------


@dataclass(frozen=True)
class Mirror:
    """One place a file can be fetched from (already pinned to a revision)."""

    source: str  # label for messages/failover: "hf", "modelscope", "bundle", "mirror:<host>"
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)  # sent to this URL's origin only


@dataclass(frozen=True)
class RemoteFile:
    """A file to fetch: what it must be (size, sha256) and where it may come from, in preference order."""

    name: str
    size: int
    sha256: str
    mirrors: tuple[Mirror, ...]


@dataclass(frozen=True)
class PlacedFile:
    """A verified model file in the home, with where it came from (for the record)."""

    role: str  # "model" | "mmproj"
    path: Path
    size: int
    sha256: str
    source: str
    revision: str | None = None
    staged: Path | None = None  # the verified bytes wait here while the live install still uses ``path``

    @property
    def bytes_at(self) -> Path:
        """Where the verified bytes are now (staging before the swap)."""
        return self.staged or self.path
