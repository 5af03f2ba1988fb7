"""``--source auto``: measure each reachable source and order them fastest first.

A source's score is the time its metadata answered (the resolve itself: one small API request, or a few) plus the
time a short ranged read of the real file took, following its redirects to the CDN that will serve the bytes.
Both matter: a mirror with a fast API but a throttled CDN is slow where it counts. The reads run in parallel, with
short timeouts, so a dead source costs seconds, not minutes; it is dropped with a note and the download engine gets
the remaining sources as mirrors to fail over to mid-file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import requests

from bootstrap.core.errors import QwenKitError
from bootstrap.fetch.http_session import Budget, BudgetExceeded, bounded, read_some
from bootstrap.fetch.source_bundle import local_path

PROBE_BYTES = 256 << 10
PROBE_TIMEOUT = (3.0, 5.0)  # connect, read (seconds)
PROBE_DEADLINE = 8.0  # the whole read, connect included: a read slower than this is cut and extrapolated


@dataclass(frozen=True)
class SourceOutcome:
    """How one source fared: seconds for metadata and for the ranged read, or the error that dropped it."""

    source: str
    api_seconds: float | None = None
    read_seconds: float | None = None
    error: QwenKitError | None = None

    @property
    def score(self) -> float:
        return (self.api_seconds or 0.0) + (self.read_seconds or 0.0)


def timed_read(session: requests.Session, url: str, headers: dict[str, str], size: int) -> float:
    """Seconds to read the first ``min(size, PROBE_BYTES)`` bytes of ``url``; raises on any failure.

    A read cut by ``PROBE_DEADLINE`` is extrapolated to the full probe length, so a trickling source still ranks
    last instead of failing; one that sent no byte by then fails (``BudgetExceeded``).
    """
    if size <= 0:
        return 0.0  # nothing to read (a ranged request for it would be answered 416)
    want = min(size, PROBE_BYTES)
    start = time.monotonic()
    local = local_path(url)
    if local is not None:
        with local.open("rb") as fh:
            got = len(fh.read(want))
        return time.monotonic() - start if got == want else _fail(url, got, want)
    got = 0
    try:  # bounded as a whole: a source trickling bytes would otherwise keep each 16 KiB read waiting for days
        with bounded(Budget(PROBE_DEADLINE)), session.get(url, headers={**headers, "Range": f"bytes=0-{want - 1}"},
                                                          timeout=PROBE_TIMEOUT, stream=True) as response:
            if response.status_code not in (200, 206):
                raise requests.HTTPError(f"HTTP {response.status_code}", response=response)
            while got < want and (chunk := read_some(response, 16 << 10)):
                got += len(chunk)
    except BudgetExceeded:
        if got == 0:
            raise
    elapsed = time.monotonic() - start
    if got == 0:
        return _fail(url, got, want)
    return elapsed * want / min(got, want)


def _fail(url: str, got: int, want: int) -> float:
    raise OSError(f"{url}: read {got} of {want} bytes")


def rank(outcomes: list[SourceOutcome], alike: float = 1.3) -> list[SourceOutcome]:
    """Reachable sources, fastest first; the first given (the preferred hub) stays first when its score is within
    ``alike`` times the fastest one's (plus 50 ms): two hubs that answer alike are ordered by preference."""
    usable = [o for o in outcomes if o.error is None]
    ranked = sorted(usable, key=lambda o: o.score)
    if usable and ranked and usable[0] is not ranked[0] and usable[0].score <= ranked[0].score * alike + 0.05:
        ranked.remove(usable[0])
        ranked.insert(0, usable[0])
    return ranked
