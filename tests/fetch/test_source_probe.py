"""``--source auto``'s probe: a short ranged read of the real file, over real HTTP on the loopback hub (redirects to
its CDN origin included), a local bundle file read directly, failures raised so the source is dropped, a trickle
cut at the deadline and extrapolated, and ``rank``'s order (fastest first, ties keep the configured preference).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from bootstrap.core.errors import SourceError
from bootstrap.fetch import source_probe
from bootstrap.fetch.records import TRANSPORT_ERRORS
from bootstrap.fetch.source_probe import PROBE_BYTES, SourceOutcome, rank, timed_read
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import seeded_bytes

REPO = "acme/probe-GGUF"
BIG = seeded_bytes(PROBE_BYTES * 3 + 17, 21)  # LFS (a .gguf): served by the CDN origin behind a 302
SMALL = seeded_bytes(5000, 22)


@pytest.fixture
def session() -> Iterator[requests.Session]:
    """A plain session that ignores any proxy in the environment (the hub is on 127.0.0.1)."""
    with requests.Session() as s:
        s.trust_env = False
        yield s


@pytest.fixture
def repo(hub: LoopbackHub) -> LoopbackHub:
    hub.create_repo(REPO, {"big.gguf": BIG, "small.gguf": SMALL})
    return hub


def file_requests(hub: LoopbackHub, name: str) -> list[tuple[str, str | None, int, int]]:
    """(origin, Range, status, body bytes) of every request for ``name``, once the hub has answered them all."""
    hub.wait_idle()
    return [(r.origin, r.range, r.status, r.bytes) for r in hub.requests(file_glob=name)]


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_reads_only_the_probe_length_through_the_cdn_redirect(repo: LoopbackHub, session: requests.Session) -> None:
    """One ranged request for the first PROBE_BYTES, answered by the CDN the hub redirects to: the probe measures
    where the bytes will come from, and costs 256 KiB, not the file."""
    seconds = timed_read(session, repo.resolve_url(REPO, "big.gguf"), {}, len(BIG))
    assert seconds >= 0.0
    seen = file_requests(repo, "big.gguf")
    want = f"bytes=0-{PROBE_BYTES - 1}"
    assert ("hub", want, 302, 0) in seen
    assert ("cdn", want, 206, PROBE_BYTES) in seen


def test_a_file_smaller_than_the_probe_is_read_whole(repo: LoopbackHub, session: requests.Session) -> None:
    """The range asked never passes the file's end (a Range beyond it could be answered 416)."""
    timed_read(session, repo.resolve_url(REPO, "small.gguf"), {}, len(SMALL))
    assert ("cdn", f"bytes=0-{len(SMALL) - 1}", 206, len(SMALL)) in file_requests(repo, "small.gguf")


def test_an_empty_file_costs_no_request(repo: LoopbackHub, session: requests.Session) -> None:
    """Size 0 scores 0 without asking: ``bytes=0--1`` is no range, and a real hub answers 416 for it."""
    assert timed_read(session, repo.resolve_url(REPO, "big.gguf"), {}, 0) == 0.0
    assert file_requests(repo, "big.gguf") == []


def test_headers_go_with_the_request(repo: LoopbackHub, session: requests.Session) -> None:
    """The source's headers (a token) are sent and the probe's own Range added, not replacing them."""
    gated = "acme/gated-GGUF"
    repo.create_repo(gated, {"g.gguf": SMALL}, gated=True)
    url = repo.resolve_url(gated, "g.gguf")
    with pytest.raises(requests.HTTPError, match="403"):
        timed_read(session, url, {}, len(SMALL))
    timed_read(session, url, {"Authorization": "Bearer hf_test"}, len(SMALL))
    assert ("cdn", f"bytes=0-{len(SMALL) - 1}", 206, len(SMALL)) in file_requests(repo, "g.gguf")


@pytest.mark.parametrize("code", [404, 429, 503])
def test_an_error_status_raises_a_transport_error(repo: LoopbackHub, session: requests.Session, code: int) -> None:
    """Any status but 200/206 drops the source (``sources._read_one`` catches TRANSPORT_ERRORS)."""
    repo.inject("status", code=code, path_glob="big.gguf", origin="cdn")
    with pytest.raises(TRANSPORT_ERRORS) as err:
        timed_read(session, repo.resolve_url(REPO, "big.gguf"), {}, len(BIG))
    assert str(code) in str(err.value)


def test_an_ignored_range_still_reads_only_the_probe(repo: LoopbackHub, session: requests.Session) -> None:
    """A server that answers 200 with the whole body is read up to the probe length and then let go."""
    repo.inject("ignore_range", path_glob="big.gguf", origin="cdn")
    assert timed_read(session, repo.resolve_url(REPO, "big.gguf"), {}, len(BIG)) >= 0.0
    statuses = [(origin, status) for origin, _, status, _ in file_requests(repo, "big.gguf")]
    assert ("cdn", 200) in statuses


def test_a_connection_closed_before_any_byte_fails(repo: LoopbackHub, session: requests.Session) -> None:
    """A body cut before its first byte is a failure, not a zero-second read that would rank first."""
    repo.inject("close", after=0, path_glob="big.gguf", origin="cdn")
    with pytest.raises(TRANSPORT_ERRORS):
        timed_read(session, repo.resolve_url(REPO, "big.gguf"), {}, len(BIG))


def test_an_unreachable_origin_fails_fast(session: requests.Session) -> None:
    """Connection refused surfaces as a transport error (the caller turns it into a dropped source)."""
    with pytest.raises(requests.ConnectionError):
        timed_read(session, f"http://127.0.0.1:{closed_port()}/x/resolve/main/big.gguf", {}, 1000)


def test_a_trickle_is_cut_at_the_deadline_and_extrapolated(repo: LoopbackHub, session: requests.Session,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A source far too slow to finish the probe is not waited for and not failed: the part read within the
    deadline is scaled to the full probe, so the score exceeds the deadline and the source ranks last."""
    deadline = 0.3
    monkeypatch.setattr(source_probe, "PROBE_DEADLINE", deadline)
    repo.inject("throttle", rate=32 * 1024, path_glob="big.gguf", origin="cdn")  # 8 s for 256 KiB
    seconds = timed_read(session, repo.resolve_url(REPO, "big.gguf"), {}, len(BIG))
    assert seconds > deadline  # only a read cut short with bytes missing is scaled up past the deadline
    repo.stop()  # wakes the throttled response so the log is final
    served = sum(b for origin, _, _, b in file_requests(repo, "big.gguf") if origin == "cdn")
    assert 0 < served < PROBE_BYTES


def test_a_stalled_origin_times_out(repo: LoopbackHub, session: requests.Session,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """No answer at all costs the read timeout, then the source is dropped (the probe never hangs an install)."""
    monkeypatch.setattr(source_probe, "PROBE_TIMEOUT", (1.0, 0.3))
    repo.inject("stall", seconds=30, path_glob="big.gguf", origin="cdn")
    with pytest.raises(requests.Timeout):
        timed_read(session, repo.resolve_url(REPO, "big.gguf"), {}, len(BIG))


def test_a_bundle_file_is_read_from_disk(tmp_path: Path, session: requests.Session) -> None:
    """A ``file://`` URL (a bundle on a USB drive) is timed by reading the file itself; a file shorter than its
    manifest says fails naming how much was there."""
    path = tmp_path / "model dir" / "m.gguf"
    path.parent.mkdir()
    path.write_bytes(SMALL)
    assert timed_read(session, path.as_uri(), {}, len(SMALL)) >= 0.0
    with pytest.raises(OSError, match=f"read {len(SMALL)} of {len(SMALL) + 1} bytes"):
        timed_read(session, path.as_uri(), {}, len(SMALL) + 1)
    with pytest.raises(FileNotFoundError):
        timed_read(session, (tmp_path / "gone.gguf").as_uri(), {}, 10)


def test_rank_orders_by_metadata_plus_read_time_and_drops_errors() -> None:
    """The score is API time + read time (a fast API in front of a slow CDN is slow); dropped sources are gone."""
    outcomes = [
        SourceOutcome("hf", api_seconds=0.05, read_seconds=2.0),
        SourceOutcome("modelscope", api_seconds=0.9, read_seconds=0.2),
        SourceOutcome("mirror:dead", error=SourceError("unreachable")),
        SourceOutcome("bundle", api_seconds=None, read_seconds=0.5),
    ]
    assert [o.source for o in rank(outcomes)] == ["bundle", "modelscope", "hf"]
    assert [o.score for o in rank(outcomes)] == pytest.approx([0.5, 1.1, 2.05])


def test_rank_keeps_the_configured_preference_on_ties() -> None:
    """Equal scores (e.g. two unmeasured sources) keep the given order: the user's preference decides."""
    outcomes = [SourceOutcome(name, 0.1, 0.1) for name in ("hf", "modelscope", "mirror:a")]
    assert [o.source for o in rank(outcomes)] == ["hf", "modelscope", "mirror:a"]
    assert rank([SourceOutcome("hf", error=SourceError("x"))]) == []
