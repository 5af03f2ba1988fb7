"""Model sources (the fetch stage's first half): which sources to use, and each wanted file resolved on them.

``sources_for`` turns ``--source`` (``auto``, ``hf``, ``modelscope``, a mirror or bundle URL, a bundle directory)
and a model's repos into ``Source`` records, endpoints from ``settings``. ``resolve_files`` resolves every wanted
file on every source (in parallel, and for ``auto`` with a timed ranged read: ``source_probe``), checks the
listings against the catalog's sha256/hint, and returns per file the sources that agree, fastest first.
``remote_files`` hands that to the download engine as ``RemoteFile``s whose mirrors it fails over between.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

import requests

from bootstrap.catalog.models import ModelFile, RepoRef
from bootstrap.catalog.source_names import SOURCE_NAMES
from bootstrap.core import console, settings
from bootstrap.core.console import t
from bootstrap.core.errors import IntegrityError, QwenKitError, SourceError, UsageError
from bootstrap.fetch.http_session import Budget, BudgetExceeded, bounded, metadata_budget
from bootstrap.fetch.records import (
    API_TIMEOUT,
    NO_NETWORK_CAUSES,
    TRANSPORT_ERRORS,
    Mirror,
    RemoteFile,
    ResolvedFile,
    Source,
    SourceUnreachable,
    bad_listing,
    new_session,
    unreachable_named,
)
from bootstrap.fetch.source_bundle import MANIFEST, is_url, manifest_url, resolve_bundle
from bootstrap.fetch.source_hf import resolve_hf
from bootstrap.fetch.source_modelscope import resolve_modelscope
from bootstrap.fetch.source_probe import SourceOutcome, rank, timed_read

Resolver = Callable[[Source, Sequence[str], requests.Session], list[ResolvedFile]]
RESOLVERS: dict[str, Resolver] = {"hf": resolve_hf, "modelscope": resolve_modelscope, "bundle": resolve_bundle}


@dataclass(frozen=True)
class Resolution:
    """Per wanted file (in the order asked), its resolutions on the sources that agree, preferred first."""

    files: tuple[tuple[ResolvedFile, ...], ...]
    outcomes: tuple[SourceOutcome, ...]  # every source tried, ranked ones first; errors say why one was dropped
    notes: tuple[str, ...] = ()  # sources dropped for one file (disagreeing listing), already localized


# ``--source auto`` waits for every source at most this long once one has answered: a black-holed hub costs
# seconds, and one that answers later is dropped (a rerun, or ``--source``, still reaches it).
RACE_BUDGET = 3.0
# However many requests a resolver makes (ModelScope: the revisions, one listing per folder, a retry after a 429),
# none waits longer than this for all of them: each request has ``http_session.META_DEADLINE``, and a source still
# resolving after this many of them is dropped as timed out. No wait in the race is unbounded.
RESOLVE_REQUESTS = 4
CHINA_ZONES = ("Asia/Shanghai", "Asia/Chongqing", "Asia/Chungking", "Asia/Urumqi", "Asia/Harbin", "PRC")


def prefers_modelscope(language: str | None = None, zone: str | None = None) -> bool:
    """A Chinese UI language or a mainland time zone (``TZ`` or ``/etc/localtime``): ModelScope goes first, since
    from there huggingface.co is often slow or blocked while modelscope.cn is near."""
    return (language or console.language()) == "zh" or (zone or settings.time_zone() or "") in CHINA_ZONES


def _hub_source(hub: str, ref: RepoRef) -> Source:
    if hub == "hf":
        return Source("hf", "hf", settings.hf_endpoint(), ref.repo, ref.revision, settings.hf_token())
    return Source("modelscope", "modelscope", settings.modelscope_endpoint(), ref.repo, ref.revision)


def _ref_for(hub: str, repos: Sequence[RepoRef]) -> RepoRef | None:
    """The repo on ``hub``; else the first repo's name without its revision (hubs share repo names, a commit
    of one hub means nothing on the other). ``None`` when there are no repos at all."""
    for ref in repos:
        if ref.hub == hub:
            return ref
    return RepoRef(hub, repos[0].repo, None) if repos else None


def _with_mirrors(source: Source) -> list[Source]:
    """An HF source followed by the ``QWENKIT_HF_MIRRORS`` endpoints (no token: it goes to the HF endpoint only)."""
    if source.kind != "hf":
        return [source]
    mirrors = [Source("hf", urlsplit(url).netloc.rpartition("@")[2] or url, url, source.repo, source.revision)
               for url in settings.hf_mirrors() if url != source.endpoint]
    return [source, *mirrors]


def _has_manifest(root: str, session: requests.Session) -> bool:
    if not is_url(root):
        return (Path(root) / MANIFEST).is_file()
    try:
        with bounded(metadata_budget()), session.get(manifest_url(root), timeout=API_TIMEOUT,
                                                     stream=True) as response:
            return response.status_code == 200
    except TRANSPORT_ERRORS:
        return False


def sources_for(spec: str, repos: Sequence[RepoRef], session: requests.Session | None = None) -> list[Source]:
    """The sources ``--source spec`` means for a model held in ``repos`` (configured preference order).

    ``auto``: every hub the model has a repo on. ``hf``/``modelscope``: that hub (the same repo name is tried
    when the model names only the other hub). A URL: a bundle when ``<URL>/payload/manifest.json`` exists, else
    an HF-compatible mirror (the HF token goes there only when it is the configured HF endpoint). An existing
    directory: a bundle.
    """
    if not repos:
        raise UsageError(t("sources.err_no_repos"))
    value = spec.strip()
    key = value.lower()
    if key == "auto":
        hubs = list(dict.fromkeys(r.hub for r in repos if r.hub in ("hf", "modelscope")))
        if prefers_modelscope():
            hubs.sort(key=lambda hub: hub != "modelscope")
        return [s for hub in hubs for s in _with_mirrors(_hub_source(hub, _ref_for(hub, repos)))]  # type: ignore[arg-type]
    if key in SOURCE_NAMES:
        hub = SOURCE_NAMES[key]
        return _with_mirrors(_hub_source(hub, _ref_for(hub, repos)))  # type: ignore[arg-type]
    names = tuple(dict.fromkeys(r.repo for r in repos))
    session = session or new_session()
    if is_url(value):
        root = value.rstrip("/")
        if _has_manifest(root, session):
            return [Source("bundle", "bundle", root, names[0], None, None, names[1:])]
        hf = _ref_for("hf", repos)
        token = settings.hf_token() if root == settings.hf_endpoint() else None
        name = urlsplit(root).netloc.rpartition("@")[2]  # host[:port]: a name never carries credentials
        return [Source("hf", name, root, hf.repo, hf.revision, token)]  # type: ignore[union-attr]
    if Path(value).is_dir() and _has_manifest(value, session):
        return [Source("bundle", "bundle", str(Path(value).resolve()), names[0], None, None, names[1:])]
    raise UsageError(t("sources.err_bad_source", source=spec), t("sources.hint_bad_source"))


def _resolve_one(source: Source, paths: Sequence[str],
                 session: requests.Session) -> tuple[list[ResolvedFile], SourceOutcome]:
    """Resolve on one source, timing its metadata answers; a failure becomes the outcome's error."""
    start = time.monotonic()
    try:
        files = RESOLVERS[source.kind](source, paths, session)
    except QwenKitError as exc:
        return [], SourceOutcome(source.name, error=exc)
    except Exception as exc:  # a resolver that trips on an answer we did not foresee: said, never a silent thread
        detail = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc).strip() else '-'}"[:160]
        return [], SourceOutcome(source.name, error=bad_listing(source, t("sources.listing_error", detail=detail)))
    return files, SourceOutcome(source.name, time.monotonic() - start)


def resolve_deadline() -> float:
    """Seconds the race waits for any source at most: ``RESOLVE_REQUESTS`` metadata requests' deadlines."""
    deadline = metadata_budget().deadline
    return RESOLVE_REQUESTS * (deadline if deadline is not None else 30.0)


def _race(sources: Sequence[Source], paths: Sequence[str],
          session: requests.Session) -> list[tuple[list[ResolvedFile], SourceOutcome]]:
    """Resolve on every source at once; once one has answered, the others get until ``RACE_BUDGET`` seconds after
    the start, then count as timed out; none is waited for past ``resolve_deadline()``. Daemon threads: a source
    still hanging never holds the process open, and each thread answers whatever happens to it."""
    answers: queue.Queue[tuple[int, tuple[list[ResolvedFile], SourceOutcome]]] = queue.Queue()

    def answer(i: int, source: Source) -> None:
        result: tuple[list[ResolvedFile], SourceOutcome] = ([], SourceOutcome(
            source.name, error=bad_listing(source, t("sources.listing_error", detail="stopped"))))
        try:
            result = _resolve_one(source, paths, session)
        finally:
            answers.put((i, result))

    for i, source in enumerate(sources):
        threading.Thread(target=answer, args=(i, source), name=f"resolve-{source.name}", daemon=True).start()
    start = time.monotonic()
    limit = resolve_deadline()
    results: dict[int, tuple[list[ResolvedFile], SourceOutcome]] = {}
    answered = False
    while len(results) < len(sources):
        until = start + (min(RACE_BUDGET, limit) if answered else limit)
        try:
            i, result = answers.get(timeout=max(0.0, until - time.monotonic()))
        except queue.Empty:
            break
        results[i] = result
        answered = answered or result[1].error is None
    late: BaseException = TimeoutError("timed out") if answered else BudgetExceeded("deadline", Budget(limit))
    return [results.get(i) or ([], SourceOutcome(s.name, error=unreachable_named(s.name, s.endpoint, late)))
            for i, s in enumerate(sources)]


def _read_one(outcome: SourceOutcome, first: ResolvedFile, session: requests.Session) -> SourceOutcome:
    try:
        seconds = timed_read(session, first.url, dict(first.headers), first.size)
    except Exception as exc:  # whatever stopped the read, this source is not usable now
        return replace(outcome, error=unreachable_named(outcome.source, first.url, exc))
    return replace(outcome, read_seconds=seconds)


def _first_failure(outcomes: Sequence[SourceOutcome]) -> QwenKitError:
    """Nothing resolved: your input (not found, exit 2) outranks integrity (5), which outranks the network (4).

    When every source failed for want of a network (DNS, no route, refused, timed out), the hint leads with what
    works without one (an offline bundle, a proxy): "another source" is what just failed.
    """
    errors = [o.error for o in outcomes if o.error is not None]
    for kind in (UsageError, IntegrityError):
        for error in errors:
            if isinstance(error, kind):
                return error
    if len(errors) == 1:
        return errors[0]
    tls = any(e.hint == t("sources.hint_tls") for e in errors)
    offline = all(isinstance(e, SourceUnreachable) and e.cause in NO_NETWORK_CAUSES for e in errors)
    hint = "sources.hint_tls" if tls else "sources.hint_offline" if offline else "sources.hint_unreachable"
    return SourceError(t("sources.err_all_failed", details=console.join_items(e.message for e in errors)), t(hint))


def _agrees(expected: ModelFile | None, resolved: ResolvedFile) -> bool:
    if expected is None:
        return True
    if expected.size_exact and expected.size is not None and expected.size != resolved.size:
        return False
    return expected.matches_hint(resolved.sha256)


def _check(path: str, candidates: list[ResolvedFile], expected: ModelFile | None,
           notes: list[str]) -> tuple[ResolvedFile, ...]:
    """The candidates that agree with the catalog and with the preferred source; the rest dropped with a note."""
    agreeing = [c for c in candidates if _agrees(expected, c)]
    if not agreeing:
        published = (expected.sha256 or expected.sha256_hint or "-") if expected else "-"
        first = candidates[0]
        raise IntegrityError(t("sources.err_hint_mismatch", path=path, expected=published, listed=first.sha256,
                               source=first.source), t("sources.hint_hint_mismatch"))
    reference = agreeing[0]
    kept = []
    for c in candidates:
        if c in agreeing and (c.sha256, c.size) == (reference.sha256, reference.size):
            kept.append(c)
        else:
            notes.append(t("sources.note_disagrees", source=c.source, path=path, listed=c.sha256[:12],
                           preferred=reference.source, sha256=reference.sha256[:12]))
    return tuple(kept)


def resolve_files(paths: Sequence[str], sources: Sequence[Source], *,
                  expected: Sequence[ModelFile | None] | None = None, probe: bool | None = None,
                  session: requests.Session | None = None) -> Resolution:
    """Resolve ``paths`` on every source in parallel, check them against ``expected`` (catalog entries), and with
    ``probe`` (default: more than one source) order the sources fastest first (``measure``); else the given order.

    Sources that fail are dropped with their error; when none is left the most telling error is raised (file not
    found 2, integrity 5, unreachable 4). A listing that disagrees with the catalog costs no byte of download.
    """
    if not sources:
        raise UsageError(t("sources.err_no_repos"))
    session = session or new_session()
    wanted = list(expected) if expected is not None else [None] * len(paths)
    results = _race(sources, paths, session)
    by_source = {outcome.source: files for files, outcome in results}
    usable = [o for _, o in results if o.error is None]
    if not usable:
        raise _first_failure([o for _, o in results])
    notes: list[str] = []
    files = tuple(_check(path, [by_source[o.source][i] for o in usable], wanted[i], notes)
                  for i, path in enumerate(paths))
    resolution = Resolution(files, tuple(usable) + tuple(o for _, o in results if o.error is not None),
                            tuple(notes))
    return measure(resolution, session) if (len(sources) > 1 if probe is None else probe) else resolution


def measure(resolution: Resolution, session: requests.Session | None = None) -> Resolution:
    """Time a short ranged read of the first file on each source still in use (in parallel) and reorder every
    file's sources fastest first; a source whose read fails is dropped from all files, with its error kept."""
    in_use = [c.source for c in resolution.files[0]]
    by_name = {o.source: o for o in resolution.outcomes}
    firsts = {c.source: c for c in resolution.files[0]}
    session = session or new_session()
    with ThreadPoolExecutor(max_workers=len(in_use), thread_name_prefix="probe") as pool:
        measured = list(pool.map(lambda name: _read_one(by_name[name], firsts[name], session), in_use))
    ranked = rank(measured)
    if not ranked:
        raise _first_failure(measured)
    order = {o.source: i for i, o in enumerate(ranked)}
    files = tuple(tuple(sorted((c for c in candidates if c.source in order), key=lambda c: order[c.source]))
                  for candidates in resolution.files)
    if any(not candidates for candidates in files):  # a file only the dropped source had
        raise _first_failure(measured)
    rest = tuple(o for o in measured if o.error is not None) + tuple(
        o for o in resolution.outcomes if o.source not in firsts)
    return Resolution(files, tuple(ranked) + rest, resolution.notes)


def remote_files(resolution: Resolution) -> list[RemoteFile]:
    """One ``RemoteFile`` per wanted file, its mirrors the agreeing sources in preference order."""
    out = []
    for candidates in resolution.files:
        first = candidates[0]
        mirrors = tuple(Mirror(c.source, c.url, dict(c.headers)) for c in candidates)
        out.append(RemoteFile(first.path.rpartition("/")[2], first.size, first.sha256, mirrors))
    return out
