"""The bounds on every network read (``fetch/http_session.py``) against the loopback hub: a deadline for the whole
request (headers included), a minimum rate over a window, a body capped on the wire and once inflated.

Times asserted here are generous bounds around shrunk budgets (a bound, never a measurement); what each hostile
source costs through the CLI is ``tests/fetch/test_hostile_network.py`` and ``scripts/bench_hostile.py``.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from bootstrap.fetch import http_session
from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.fetch.http_session import BodyRefused, Budget, BudgetExceeded, bounded, read_capped, read_some
from bootstrap.fetch.records import Mirror, RemoteFile
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import seeded_bytes

REPO = "acme/bounds"
BLOB = seeded_bytes(2 << 20, 7)
SMALL = b'{"ok": true}\n' * 100


@pytest.fixture
def repo(hub: LoopbackHub) -> LoopbackHub:
    hub.create_repo(REPO, {"blob.bin": BLOB, "small.json": SMALL})
    return hub


@pytest.fixture
def ours() -> Iterator[requests.Session]:
    """The product's session (its pools let a bounded block cut a connection still waiting for headers)."""
    session = http_session.make_session(2)
    session.trust_env = False
    with session:
        yield session


def _drain(session: requests.Session, url: str, **kwargs: object) -> int:
    got = 0
    with session.get(url, stream=True, timeout=(5, 10), **kwargs) as response:  # type: ignore[arg-type]
        while chunk := read_some(response, 1 << 16):
            got += len(chunk)
    return got


def test_a_trickled_body_is_cut_at_the_deadline_even_on_a_plain_session(repo: LoopbackHub) -> None:
    """A byte every 0.5 s (each read returns within its timeout): the block ends at its 1 s deadline."""
    repo.inject("trickle", path_glob="blob.bin", bytes=1, every=0.5, times=None)
    start = time.monotonic()
    with requests.Session() as plain, pytest.raises(BudgetExceeded) as info, bounded(Budget(1.0)):
        plain.trust_env = False
        _drain(plain, repo.resolve_url(REPO, "blob.bin"))
    assert info.value.kind == "deadline" and time.monotonic() - start < 8


def test_a_slow_body_is_cut_for_its_rate(repo: LoopbackHub, ours: requests.Session) -> None:
    """About 2 KB/s against a floor of 16 KiB/s over 1 s: cut as slow, long before any deadline."""
    repo.inject("trickle", path_glob="blob.bin", bytes=200, every=0.1, times=None)
    start = time.monotonic()
    with pytest.raises(BudgetExceeded) as info, bounded(Budget(60.0, 16 << 10, 1.0)):
        _drain(ours, repo.resolve_url(REPO, "blob.bin"))
    assert info.value.kind == "slow" and time.monotonic() - start < 8


def test_a_fast_body_is_not_cut(repo: LoopbackHub, ours: requests.Session) -> None:
    with bounded(Budget(30.0, 16 << 10, 1.0)) as watch:
        assert _drain(ours, repo.resolve_url(REPO, "blob.bin")) == len(BLOB)
    assert watch.fired is None and watch.received == len(BLOB)


def test_headers_that_never_come_are_cut_at_the_deadline(repo: LoopbackHub, ours: requests.Session) -> None:
    """The hub waits 20 s before its headers; the read timeout (10 s) would wait; the block's 1 s does not."""
    repo.inject("stall", path_glob="small.json", seconds=20)
    start = time.monotonic()
    with pytest.raises(BudgetExceeded), bounded(Budget(1.0)):
        _drain(ours, repo.resolve_url(REPO, "small.json"))
    assert time.monotonic() - start < 8


def test_the_session_is_usable_after_a_cut(repo: LoopbackHub, ours: requests.Session) -> None:
    """A cut connection is not handed to the next request from the pool."""
    repo.inject("trickle", path_glob="small.json", bytes=1, every=1.0)
    with pytest.raises(BudgetExceeded), bounded(Budget(0.5)):
        _drain(ours, repo.resolve_url(REPO, "small.json"))
    with bounded(Budget(10.0)):
        assert _drain(ours, repo.resolve_url(REPO, "small.json")) == len(SMALL)


def test_read_capped_refuses_a_gzip_bomb_after_the_cap(repo: LoopbackHub, ours: requests.Session) -> None:
    repo.inject("gzip_bomb", path_glob="/api/models/*", inflated=64 << 20)
    with ours.get(f"{repo.endpoint}/api/models/{REPO}", stream=True, timeout=10) as response, \
            pytest.raises(BodyRefused) as info:
        read_capped(response, 1 << 20)
    assert info.value.kind == "inflated" and info.value.encoding == "gzip"


def test_read_capped_decodes_a_small_gzip_answer(repo: LoopbackHub, ours: requests.Session) -> None:
    """A server that compresses although we asked for identity is still understood, within the cap."""
    repo.inject("gzip_bomb", path_glob="/api/models/*", inflated=1000)
    with ours.get(f"{repo.endpoint}/api/models/{REPO}", stream=True, timeout=10) as response:
        body = read_capped(response, 1 << 20)
    assert body[:1000].strip() == b"" and b'"id": "acme/bounds"' in body


def test_read_capped_refuses_what_is_too_large_on_the_wire(repo: LoopbackHub, ours: requests.Session) -> None:
    with ours.get(repo.resolve_url(REPO, "blob.bin"), stream=True, timeout=10) as response, \
            pytest.raises(BodyRefused) as info:
        read_capped(response, 1 << 20)
    assert info.value.kind == "size"


def test_bounds_can_be_set_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("QWENKIT_MIN_RATE", "QWENKIT_RATE_WINDOW", "QWENKIT_SEGMENT_DEADLINE", "QWENKIT_META_DEADLINE"):
        monkeypatch.delenv(name, raising=False)
    assert http_session.download_budget() == Budget(600.0, 1024.0, 30.0)
    assert http_session.metadata_budget() == Budget(30.0)
    monkeypatch.setenv("QWENKIT_MIN_RATE", "4096")
    monkeypatch.setenv("QWENKIT_RATE_WINDOW", "2.5")
    monkeypatch.setenv("QWENKIT_SEGMENT_DEADLINE", "not a number")  # ignored: the default holds
    monkeypatch.setenv("QWENKIT_META_DEADLINE", "-3")  # not positive: ignored
    assert http_session.download_budget() == Budget(600.0, 4096.0, 2.5)
    assert http_session.metadata_budget() == Budget(30.0)


def test_a_deflate_stream_is_decoded_within_bounds() -> None:
    """The decoder for ``Content-Encoding: deflate`` (zlib stream) inflates no further than asked."""
    packed = zlib.compress(b" " * (8 << 20))
    decoder = zlib.decompressobj(zlib.MAX_WBITS)
    assert len(decoder.decompress(packed, 1000)) == 1000 and decoder.unconsumed_tail


def test_a_download_request_past_its_deadline_is_resumed_not_failed(hub: LoopbackHub, tmp_path: Path) -> None:
    """A request is closed at its deadline and the rest of its range asked for again: a slow but steady source
    still delivers the whole file, every byte written once."""
    data = seeded_bytes(3 << 20, 9)
    hub.create_repo(REPO, {"m.gguf": data})
    hub.inject("throttle", path_glob="m.gguf", rate=1 << 20, times=None)  # 3 s for the file, 1 s per request
    entry = hub.entry(REPO, "m.gguf")
    remote = RemoteFile("m.gguf", entry.size, entry.sha256,
                        (Mirror("hf", hub.resolve_url(REPO, "m.gguf", hub.commit_of(REPO))),))
    options = FetchOptions(connections=1, quiet=True, backoff_base=0.05, budget=Budget(1.0, 1024.0, 30.0))
    [result] = fetch_files([(remote, tmp_path / "m.gguf")], tmp_path / "partial", options)
    assert result.path.read_bytes() == data and result.bytes_downloaded == len(data)
    hub.wait_idle()
    assert len([r for r in hub.requests(origin="cdn", file_glob="m.gguf") if r.method == "GET"]) >= 2
