"""The download engine of the fetch stage: resumable, segmented, SHA-256 verified, with mirror failover.

One file at a time; a large file is cut into segments fetched over ``connections`` parallel ranged requests
(parallel ranges only pay when throughput is capped per connection, docs/hubs.md). Bytes land in
``<partial_dir>/<sha256>.part`` (see ``partial.py``), are hashed as the contiguous prefix grows, and only a file
whose SHA-256 matches is renamed into place. Every response is checked against what was asked: the
``Content-Range`` (not only the status), the body length, and the hub's statement of which content it is
(``X-Linked-Etag`` / ``X-Linked-Size``), so bytes of two versions or of the wrong offset never mix.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urljoin

import requests
import urllib3

from bootstrap.core.atomic_file import fsync_dir
from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.console import info, t, warn
from bootstrap.core.disk_space import device_of, ensure_space, free_bytes
from bootstrap.core.errors import IntegrityError, SourceError, UnsupportedMachine
from bootstrap.core.fs_errors import NO_SPACE
from bootstrap.core.hashing import sha256_file
from bootstrap.core.input_checks import decimal_int
from bootstrap.core.progress import FileProgress, Progress
from bootstrap.fetch import http_session
from bootstrap.fetch.mirror_pool import MirrorPool, MirrorState
from bootstrap.fetch.partial import PartFile, PrefixHasher, StateFlusher, resumable_bytes
from bootstrap.fetch.records import RemoteFile, budget_text, cause_text

CHUNK = 1 << 20  # read size: bounded memory per connection whatever the file size
MAX_REDIRECTS = 5
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
EXPIRED_STATUS = frozenset({401, 403, 404, 410})  # from a cached redirect target: its signature may have expired
RAMP_START = 2  # workers a large file starts with
RAMP_AFTER = 0.3  # seconds before deciding whether to open the other connections
RAMP_FAST = 256 << 20  # bytes/s: above this, more connections cannot help (SHA-256 ~765 MiB/s, docs/hubs.md)
NETWORK_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)


# ---- public records ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FetchOptions:
    """Knobs of one ``fetch_files`` call."""

    connections: int = 8  # parallel ranged segments for large files (small files: 1)
    quiet: bool = False  # no bars (--json mode)
    stall_timeout: float = 30.0  # no byte for this long: drop the connection and retry the segment
    max_attempts: int = 5  # per segment per mirror, then the mirror is dropped
    backoff_base: float = 1.0  # first retry delay (doubles, with jitter)
    backoff_cap: float = 30.0  # longest wait, also for a server's Retry-After
    # Each request's deadline and minimum rate (None: ``http_session.download_budget()``, the QWENKIT_* overrides
    # read when the download starts). A request cut by it is retried like a stall.
    budget: http_session.Budget | None = None


@dataclass(frozen=True)
class FetchResult:
    """A verified file in place."""

    path: Path
    size: int
    sha256: str
    source: str
    bytes_downloaded: int
    reused: bool


# ---- disk space -------------------------------------------------------------------------------------------
def _check_disk(jobs: Sequence[tuple[RemoteFile, Path]], partial_dir: Path) -> None:
    """Room for every byte still to fetch, plus a copy at the destination when it is another filesystem."""
    needs: dict[int, tuple[Path, int]] = {}

    def add(where: Path, n: int) -> None:
        dev = device_of(where)
        path, have = needs.get(dev, (where, 0))
        needs[dev] = (path, have + n)

    part_dev = device_of(partial_dir)
    for remote, dest in jobs:
        add(partial_dir, remote.size - resumable_bytes(partial_dir, remote.sha256, remote.size))
        if device_of(dest.parent) != part_dev:
            add(dest.parent, remote.size)
    for path, needed in needs.values():
        ensure_space(needed, free_bytes(path), path)


# ---- internal signals -------------------------------------------------------------------------------------
class _Retry(Exception):
    """A transient failure: try again on the same mirror after ``wait`` (None: exponential backoff)."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait


class _MirrorFailed(Exception):
    """This mirror cannot deliver this file (gone, forbidden, or serving another version)."""

    def __init__(self, reason: str, *, changed: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.changed = changed


class _RangeIgnored(Exception):
    """The server answered a sub-range with the whole body: continue as one sequential stream."""


class _Stopped(Exception):
    """Another worker failed or the user pressed Ctrl-C."""


# ---- one file ---------------------------------------------------------------------------------------------
class _FileDownload:
    """Fills one part file from the file's mirrors; workers share this object."""

    def __init__(
        self, remote: RemoteFile, part: PartFile, session: requests.Session, options: FetchOptions,
        bar: FileProgress,
    ) -> None:  # fmt: skip
        self.remote = remote
        self.part = part
        self.session = session
        self.options = options
        self.bar = bar
        self.mirrors = MirrorPool(remote.name, remote.mirrors)
        self.budget = options.budget or http_session.download_budget()
        self.stop = threading.Event()
        self.single_stream = part.count == 1 or options.connections <= 1
        self.by_source: Counter[str] = Counter()  # bytes written this pass, per mirror source
        self.downloaded = 0
        self.started = False  # any byte written yet (for the crash harness's checkpoint)
        self._lock = threading.Lock()
        self._claimed: set[int] = set()
        self._open: set[requests.Response] = set()
        self._error: BaseException | None = None

    # ---- orchestration ----------------------------------------------------------------------------
    def fill(self) -> None:
        """Fetch every missing byte: parallel segments, then one stream if a server ignored ranges."""
        self.by_source.clear()
        self.flusher = StateFlusher(self.part)
        try:
            if not self.single_stream:
                self._run([self._segment_worker] * min(self.options.connections, self.part.count), ramp=True)
            if not self.part.complete():
                self.single_stream = True
                self._run([self._stream_worker])
        finally:
            self.flusher.close()

    def _run(self, targets: list[Callable[[], None]], *, ramp: bool = False) -> None:
        """Run workers in threads; the main thread only waits, so Ctrl-C reaches it promptly.

        ``ramp``: start with ``RAMP_START`` workers and add the rest only if they are slower than ``RAMP_FAST``
        after ``RAMP_AFTER`` seconds. Parallel ranges pay only when each connection is capped (docs/hubs.md,
        "Throughput and hashing"); past a few hundred MiB/s hashing and the disk are the limit, and more threads
        only contend.
        """
        threads = [threading.Thread(target=self._guard, args=(fn,), daemon=True) for fn in targets]
        pending = threads[RAMP_START:] if ramp else []
        for th in threads[: len(threads) - len(pending)]:
            th.start()
        started, base = time.monotonic(), self.downloaded
        try:
            while any(th.is_alive() for th in threads) or pending:
                if pending and time.monotonic() - started >= RAMP_AFTER:
                    rate = (self.downloaded - base) / (time.monotonic() - started)
                    if rate < RAMP_FAST and not self.stop.is_set():
                        for th in pending:
                            th.start()
                    pending = []
                alive = next((th for th in threads if th.is_alive()), None)
                if alive is not None:
                    alive.join(0.05)
                else:
                    time.sleep(0.05)  # only pending workers left: wait for the ramp decision
        except BaseException:
            self.stop.set()
            self._abort_open()
            for th in threads:
                if th.is_alive():
                    th.join(10)
            raise
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except _Stopped:
            pass
        except BaseException as exc:  # the first real failure stops the other workers
            with self._lock:
                if self._error is None:
                    self._error = exc
            self.stop.set()
            self._abort_open()

    def _abort_open(self) -> None:
        """Shut the sockets of responses being read so blocked workers wake now, not after a stall timeout."""
        with self._lock:
            responses = list(self._open)
        for resp in responses:
            http_session.cut(getattr(getattr(resp.raw, "_connection", None), "sock", None))

    def _claim_segment(self) -> int | None:
        with self._lock:
            if self.single_stream or self.stop.is_set():
                return None
            for i in range(self.part.count):
                if i not in self._claimed and not self.part.is_done(i):
                    self._claimed.add(i)
                    return i
        return None

    def _segment_worker(self) -> None:
        while (i := self._claim_segment()) is not None:
            try:
                self._fetch(self._segment_span(i), whole_ok=False)
            except _RangeIgnored:
                with self._lock:
                    self.single_stream = True
                return
            finally:
                with self._lock:
                    self._claimed.discard(i)

    def _segment_span(self, i: int) -> Callable[[], tuple[int, int] | None]:
        start, last = self.part.start(i), self.part.start(i) + self.part.length(i) - 1

        def span() -> tuple[int, int] | None:
            return None if self.part.is_done(i) else (start + self.part.got[i], last)

        return span

    def _stream_worker(self) -> None:
        def span() -> tuple[int, int] | None:
            first = self.part.first_missing()
            return None if first is None else (first, self.remote.size - 1)

        self._fetch(span, whole_ok=True)

    # ---- one span, with retries and failover --------------------------------------------------------
    def _fetch(self, span: Callable[[], tuple[int, int] | None], *, whole_ok: bool) -> None:
        """Fetch the span ``span()`` names until it reports None; retries, backoff and failover live here."""
        attempts: Counter[int] = Counter()  # per mirror (by index)
        while (want := span()) is not None:
            if self.stop.is_set():
                raise _Stopped
            st = self.mirrors.current()
            key = self.mirrors.states.index(st)
            first, last = want

            def gained(first: int = first, last: int = last) -> int:
                """Bytes this attempt added: how far the span's start moved (one worker owns a span)."""
                now = span()
                return (last + 1 if now is None else now[0]) - first

            try:
                self._transfer(st, first, last, whole_ok=whole_ok)
                if gained() > 0:
                    attempts[key] = 0
                    continue
                raise _Retry("empty body")
            except _MirrorFailed as exc:
                self.mirrors.drop(st, exc.reason, changed=exc.changed)
            except (_Retry, *NETWORK_ERRORS) as exc:
                if self.stop.is_set():
                    raise _Stopped from exc
                st.forget_target()  # resolve again: a signed CDN URL may have expired, the hub may have moved on
                attempts[key] = 1 if gained() >= CHUNK else attempts[key] + 1
                if attempts[key] >= self.options.max_attempts:
                    self.mirrors.drop(st, _reason(exc))
                    continue
                self._sleep(self._backoff(attempts[key], getattr(exc, "wait", None)))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        cap = self.options.backoff_cap
        if retry_after is not None:
            return min(cap, retry_after)
        return min(cap, self.options.backoff_base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)  # noqa: S311

    def _sleep(self, seconds: float) -> None:
        if self.stop.wait(seconds):
            raise _Stopped

    # ---- one request --------------------------------------------------------------------------------
    def _transfer(self, st: MirrorState, first: int, last: int, *, whole_ok: bool) -> None:
        """One request, redirects included, held to ``self.budget`` (a deadline, a minimum rate): a source that
        trickles is cut and the span retried, and counts as no progress (``_fetch``)."""
        with http_session.bounded(self.budget) as watch:
            resp = self._open_range(st, first, last)
            with self._lock:
                self._open.add(resp)
            try:
                start, end = self._check(resp, first, last, whole_ok=whole_ok)
                self._pump(resp, start, end, st.mirror.source)
                watch.raise_if_fired()  # a body the watchdog ended early
            finally:
                with self._lock:
                    self._open.discard(resp)
                resp.close()

    def _open_range(self, st: MirrorState, first: int, last: int) -> requests.Response:
        """GET with ``Range``, following redirects by hand so credentials never leave the mirror's origin."""
        origin_url = st.mirror.url
        cached, generation = st.route()
        url, headers = cached or (origin_url, st.mirror.headers)
        timeout = (http_session.CONNECT_TIMEOUT, self.options.stall_timeout)
        for _hop in range(MAX_REDIRECTS + 1):
            resp = self.session.get(url, headers={**headers, "Range": f"bytes={first}-{last}"}, stream=True,
                                    allow_redirects=False, timeout=timeout)  # fmt: skip
            try:
                self._check_identity(resp)
            except BaseException:
                resp.close()
                raise
            if resp.status_code not in REDIRECT_STATUS:
                if cached is not None and resp.status_code in EXPIRED_STATUS:
                    resp.close()  # a signed CDN URL expired: resolve it again from the mirror's own URL
                    st.forget_target()
                    raise _Retry(f"HTTP {resp.status_code} from the redirect target", wait=0.0)
                if url != origin_url and resp.status_code < 300:
                    st.remember_target((url, headers), generation)
                return resp
            location = resp.headers.get("Location")
            resp.close()
            if not location:
                raise _MirrorFailed(f"HTTP {resp.status_code} without Location")
            url = urljoin(url, location)
            # docs/hubs.md: the HF 302 goes to a CDN on another host; auth (and ModelScope's cookie) must not follow.
            headers = st.mirror.headers if http_session.same_origin(origin_url, url) else {}
        raise _MirrorFailed("too many redirects")

    def _check_identity(self, resp: requests.Response) -> None:
        """A hub that states another sha256 or size for these bytes has changed under us: drop the mirror."""
        sha = http_session.linked_sha256(resp.headers)
        if sha is not None and sha != self.remote.sha256:
            raise _MirrorFailed(f"content is now {sha[:12]}…", changed=True)
        size = http_session.linked_size(resp.headers)
        if size is not None and size != self.remote.size:
            raise _MirrorFailed(f"size is now {size}", changed=True)

    def _check(self, resp: requests.Response, first: int, last: int, *, whole_ok: bool) -> tuple[int, int]:
        """Validate status and Content-Range; returns the absolute [start, end] the body carries."""
        code = resp.status_code
        if code in RETRYABLE_STATUS:
            raise _Retry(f"HTTP {code}", http_session.retry_after_seconds(resp.headers.get("Retry-After")))
        if code == 416:
            raise _MirrorFailed("HTTP 416: range not satisfiable", changed=True)
        if code not in (200, 206):
            raise _MirrorFailed(f"HTTP {code}")
        encoding = resp.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise _MirrorFailed(f"unexpected Content-Encoding {encoding}")
        size = self.remote.size
        cr = http_session.parse_content_range(resp.headers.get("Content-Range"))
        if cr is not None:  # 206, or a 200 that still says which bytes it carries (ModelScope, docs/hubs.md)
            if cr.total is not None and cr.total != size:
                raise _MirrorFailed(f"size is now {cr.total}", changed=True)
            if cr.first != first or cr.last > last:
                raise _Retry(f"asked bytes {first}-{last}, got {cr.first}-{cr.last}")
            return cr.first, cr.last
        if code == 206:
            raise _Retry("206 without Content-Range")
        length = decimal_int(resp.headers.get("Content-Length"))
        if length is not None and length != size:
            raise _MirrorFailed(f"size is now {length}", changed=True)
        if not whole_ok and (first != 0 or last != size - 1):
            raise _RangeIgnored
        return 0, size - 1

    def _pump(self, resp: requests.Response, start: int, end: int, source: str) -> None:
        """Write the body's bytes [start, end] into the part file, skipping bytes already there."""
        part = self.part
        pos = start
        with part.part_path.open("r+b", buffering=0) as fh:
            at = -1
            while chunk := http_session.read_some(resp, CHUNK):  # as bytes arrive: the watchdog sees each one
                if self.stop.is_set():
                    raise _Stopped
                view = memoryview(chunk)
                while view and pos <= end:
                    i = pos // part.segment_size
                    seg_end = part.start(i) + part.length(i)
                    take = min(len(view), seg_end - pos, end + 1 - pos)
                    have = part.start(i) + part.got[i]
                    if pos < have:  # bytes we hold already (a whole-body answer, or a resumed segment)
                        skip = min(take, have - pos)
                        pos, view = pos + skip, view[skip:]
                        continue
                    if pos > have:  # cannot happen for a response that starts where we asked
                        raise _Retry("gap in segment")
                    if at != pos:
                        fh.seek(pos)
                    _write_all(fh, view[:take])
                    pos, at, view = pos + take, pos + take, view[take:]
                    part.advance(i, take)
                    if not self.started:  # the harness's kill point: first bytes on disk
                        self.started = True
                        checkpoint("fetch-started")
                    self.flusher.wrote(take)
                    self.bar.update(take)
                    with self._lock:
                        self.downloaded += take
                        self.by_source[source] += take
                    if part.is_done(i):
                        self.flusher.notify()
                if pos > end:
                    break


def _write_all(fh: BinaryIO, data: memoryview) -> None:
    """Write every byte (a raw write may be partial); a disk that fills up anyway (another program) is exit 3."""
    try:
        while data:
            n = fh.write(data) or 0
            data = data[n:]
    except OSError as exc:
        if exc.errno in NO_SPACE:
            raise UnsupportedMachine(t("fetch.disk_full", path=fh.name), hint=t("fetch.hint.rerun")) from exc
        raise


def _reason(exc: BaseException) -> str:
    """A short technical reason for messages (requests' own texts run to several hundred characters)."""
    if isinstance(exc, _Retry):
        return exc.reason
    if isinstance(exc, http_session.BudgetExceeded):
        return budget_text(exc)
    if isinstance(exc, requests.ConnectTimeout):
        return cause_text(exc, http_session.CONNECT_TIMEOUT)[0]
    if isinstance(exc, (requests.ReadTimeout, TimeoutError)) or "Read timed out" in str(exc):
        return "no data received (stalled)"
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return "connection broken mid-body"
    if "reset by peer" in str(exc):
        return "connection reset"
    if isinstance(exc, requests.ConnectionError):  # DNS, refused, no route, TLS: named as the resolvers name them
        return cause_text(exc)[0]
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]


# ---- placing and reusing ----------------------------------------------------------------------------------
def _place(part: PartFile, dest: Path) -> None:
    """fsync, then rename into place (copy + rename when the home spans filesystems); never a half file."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with part.part_path.open("r+b") as fh:
        os.fsync(fh.fileno())
    try:
        os.replace(part.part_path, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        with part.part_path.open("rb") as src, tmp.open("wb") as out:
            shutil.copyfileobj(src, out, 4 * CHUNK)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    fsync_dir(dest.parent)
    part.remove()


def _fetch_one(
    remote: RemoteFile, dest: Path, partial_dir: Path, session: requests.Session, options: FetchOptions,
    progress: Progress,
) -> FetchResult:  # fmt: skip
    if not remote.mirrors:
        raise SourceError(t("fetch.no_source", name=remote.name))
    part = PartFile(partial_dir, remote.sha256, remote.size, options.connections)
    have = part.have_bytes()
    # ``have`` > 0: the progress says what is left of what (a rerun that starts at 40 % is not a fast download)
    bar = progress.file(remote.name, remote.size, have)
    job = _FileDownload(remote, part, session, options, bar)
    mismatches: Counter[str] = Counter()
    downloaded = 0
    try:
        while True:
            hasher = PrefixHasher(part)
            try:
                job.fill()
                actual = hasher.result()
            finally:
                hasher.stop()
            if actual == remote.sha256:
                break
            sources = set(job.by_source) or {remote.mirrors[0].source}
            mismatches.update(sources)
            downloaded += job.downloaded
            bar.rewind(part.have_bytes())
            part.restart()
            job.downloaded = 0
            worst = max(sources, key=lambda s: mismatches[s])
            if mismatches[worst] >= 2:
                part.remove()
                raise IntegrityError(t("fetch.integrity", name=remote.name, source=worst, expected=remote.sha256,
                                       actual=actual), hint=t("fetch.hint.integrity"))  # fmt: skip
            warn(t("fetch.integrity_retry", name=remote.name))
        _place(part, dest)
    finally:
        bar.close()
    source = job.by_source.most_common(1)[0][0] if job.by_source else remote.mirrors[0].source
    return FetchResult(dest, remote.size, remote.sha256, source, downloaded + job.downloaded, False)


def holds(path: Path, size: int, sha256: str) -> bool:
    """Whether ``path`` is a file with exactly these bytes (size first: a wrong size costs no read)."""
    try:
        if not path.is_file() or path.stat().st_size != size:
            return False
    except OSError:
        return False
    return sha256_file(path) == sha256


def _reusable(remote: RemoteFile, dest: Path) -> bool:
    """A file already at ``dest`` with the right size and hash needs no download (one read, no network)."""
    return holds(dest, remote.size, remote.sha256)


def fetch_files(
    jobs: Sequence[tuple[RemoteFile, Path]], partial_dir: Path, options: FetchOptions = FetchOptions()
) -> list[FetchResult]:
    """Download each (file, destination), verified, resuming what earlier runs left in ``partial_dir``.

    Raises UnsupportedMachine (disk), SourceError (every mirror failed; partial state kept for a rerun),
    IntegrityError (checksum failed twice from one source; nothing placed); Ctrl-C leaves resumable state.
    """
    partial_dir = Path(partial_dir)
    results: dict[int, FetchResult] = {}
    todo: list[tuple[int, RemoteFile, Path]] = []
    for idx, (remote, dest) in enumerate(jobs):
        dest = Path(dest)
        if _reusable(remote, dest):
            results[idx] = FetchResult(dest, remote.size, remote.sha256, "local", 0, True)
            if not options.quiet:
                info(t("fetch.reused", name=remote.name))
        else:
            todo.append((idx, remote, dest))
    if todo:
        partial_dir.mkdir(parents=True, exist_ok=True)
        _check_disk([(r, d) for _, r, d in todo], partial_dir)
        progress = Progress(sum(r.size for _, r, _ in todo), quiet=options.quiet, files=len(todo))
        session = http_session.make_session(max(1, options.connections))
        try:
            for idx, remote, dest in todo:
                results[idx] = _fetch_one(remote, dest, partial_dir, session, options, progress)
        finally:
            session.close()
            progress.close()
    return [results[i] for i in range(len(jobs))]
