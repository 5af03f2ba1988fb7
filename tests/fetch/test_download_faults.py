"""Every fault kind of the loopback hub, on both protocols, ends in a verified file or a clean error.

The matrix (fault × protocol) checks the engine's invariants after each run: a placed file is byte-identical to
the version the caller asked for, each byte was written once (no double-write) unless a checksum failure forced
a full re-fetch, an error is a one-line SourceError (exit 4) with the part file kept so a rerun resumes, and the
fault really fired. The outcome table is printed at the end of the module (``pytest -rA`` or the terminal).
Also here: upstream change mid-download, and failover from a mirror that dies mid-file.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bootstrap.core.errors import QwenKitError, SourceError
from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.fetch.partial import plan_segment_size
from bootstrap.fetch.records import RemoteFile
from tests.support.download_fixtures import FAST, FILE, MIB, REPO, hf_mirror, ms_mirror, remote
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import seeded_bytes

SIZE = 16 * MIB + 4321
CONN = FAST.connections

# kind, params: each armed on the model file for both origins (the resolve redirect leaves byte faults armed
# for the CDN response that carries the bytes). ``times`` counts responses.
FAULTS: dict[str, dict[str, Any]] = {
    "status_429": {"kind": "status", "code": 429, "retry_after": 1, "times": 3},
    "status_503": {"kind": "status", "code": 503, "retry_after": 1, "times": 3},
    "status_503_no_retry_after": {"kind": "status", "code": 503, "times": 3},
    "reset": {"kind": "reset", "after": 300_000, "times": 4},
    "close": {"kind": "close", "after": 300_000, "times": 4},
    "stall": {"kind": "stall", "seconds": 3.0, "times": 2},  # > stall_timeout (1 s)
    "throttle": {"kind": "throttle", "rate": 2 * MIB, "times": None},
    # The first CONN ranged GETs are segments 0..CONN-1, one of which holds this offset: exactly one bad byte.
    "corrupt": {"kind": "corrupt", "offset": 2 * MIB + 7, "times": CONN},
    "ignore_range": {"kind": "ignore_range", "times": 1},
    "range_200": {"kind": "range_200", "times": None},
    "wrong_offset": {"kind": "wrong_offset", "delta": 1000, "times": 3},
    "short_length": {"kind": "short_length", "missing": 1, "times": 3},
    "no_commit_header": {"kind": "no_commit_header", "times": None},
    "mutate": {"kind": "mutate", "after": 4 * MIB, "times": 1},
}
PROTOCOLS = ("hf", "modelscope")

_outcomes: list[dict[str, Any]] = []


@pytest.fixture(scope="module", autouse=True)
def outcome_table(request: pytest.FixtureRequest):
    """Print the fault × protocol outcomes once the module is done (for the report)."""
    yield
    if not _outcomes:
        return
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    lines = [f"{'fault':<28}{'protocol':<12}{'outcome':<34}{'written':>10}{'served':>10}{'secs':>6}"]
    for o in _outcomes:
        lines.append(f"{o['fault']:<28}{o['protocol']:<12}{o['outcome']:<34}{o['written']:>10}{o['served']:>10}"
                     f"{o['secs']:>6.1f}")  # fmt: skip
    text = "\n".join(["", "download fault matrix (bytes: written by the engine / served by the hub)", *lines])
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(text)
    else:
        print(text)


@pytest.fixture
def content(hub: LoopbackHub) -> bytes:
    data = seeded_bytes(SIZE, 21)
    hub.create_repo(REPO, {FILE: data})
    return data


def mirror_for(hub: LoopbackHub, protocol: str):
    # HF URLs are pinned to the commit (the sources layer resolves main first); the ModelScope one names the
    # branch, as ModelScope downloads usually do, so an upstream change reaches it.
    return hf_mirror(hub) if protocol == "hf" else ms_mirror(hub)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_matrix(hub: LoopbackHub, content: bytes, tmp_path: Path, fault: str, protocol: str):
    spec = dict(FAULTS[fault])
    kind = spec.pop("kind")
    rf = remote(hub, mirror_for(hub, protocol))
    handle = hub.inject(kind, path_glob=FILE, **spec)
    dest = tmp_path / "models" / FILE
    partial = tmp_path / "partial"
    t0 = time.monotonic()
    try:
        [res] = fetch_files([(rf, dest)], partial, FAST)
        outcome, written, error = "ok", res.bytes_downloaded, None
    except QwenKitError as exc:
        outcome, written, error = f"{type(exc).__name__} exit {int(exc.exit_code)}", -1, exc
    secs = time.monotonic() - t0
    hub.wait_idle()
    served = hub.bytes_served(FILE)
    if error is not None:
        outcome += f": {error.message[:40]}"
    _outcomes.append({"fault": fault, "protocol": protocol,
                      "outcome": outcome[:33], "written": written, "served": served, "secs": secs})  # fmt: skip

    assert handle.hits >= 1, "the fault never fired: the test proved nothing"
    if kind == "mutate" and protocol == "modelscope":
        # The branch moved mid-download: the engine must stop, never mixing the two versions' bytes.
        assert isinstance(error, SourceError) and error.exit_code == 4
        assert "changed" in error.message and "\n" not in error.message
        assert not dest.exists()
        assert (partial / f"{rf.sha256}.part").exists() and (partial / f"{rf.sha256}.json").exists()
        # A rerun with the new listing fetches the new version cleanly.
        new = RemoteFile(FILE, rf.size, hub.sha256_of(REPO, FILE), rf.mirrors)
        assert new.sha256 != rf.sha256
        [res] = fetch_files([(new, dest)], partial, FAST)
        assert dest.read_bytes() == hub.read_file(REPO, FILE) != content
        return
    assert error is None, f"{fault}/{protocol}: {error}"
    assert dest.read_bytes() == content  # the version asked for, even when main moved (HF pinned to a commit)
    assert list(partial.iterdir()) == []
    if kind == "corrupt":
        assert res.bytes_downloaded == 2 * SIZE  # discarded once, fetched again
    else:
        assert res.bytes_downloaded == SIZE  # every byte written exactly once
    if kind == "ignore_range":
        assert any(r.status == 200 for r in hub.requests(file_glob=FILE))


def test_upstream_change_before_start_is_detected_from_headers(hub: LoopbackHub, content: bytes, tmp_path: Path):
    """The hub already serves another version: the stated sha256 differs, so not one byte is written."""
    rf = remote(hub, ms_mirror(hub))
    hub.store.mutate_file(REPO, FILE)
    with pytest.raises(SourceError) as info:
        fetch_files([(rf, tmp_path / FILE)], tmp_path / "partial", FAST)
    assert "changed" in info.value.message
    part = (tmp_path / "partial" / f"{rf.sha256}.part").read_bytes()
    assert part == bytes(SIZE)  # nothing of the new version landed in the old version's part file


def _kill_when(hub: LoopbackHub, served: int, action) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if sum(r.bytes for r in hub.requests(origin="cdn")) >= served:
                action()
                return
            time.sleep(0.02)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    return th


@pytest.mark.parametrize("death", ["stopped", "503_forever", "reset_forever"])
def test_failover_to_second_mirror_mid_file(tmp_path: Path, death: str):
    """Mirror 1 dies after ~6 MiB; mirror 2 finishes the file, and verified bytes from mirror 1 are kept."""
    data = seeded_bytes(SIZE, 31)
    with LoopbackHub(tmp_path / "hub1") as hub1, LoopbackHub(tmp_path / "hub2") as hub2:
        hub1.create_repo(REPO, {FILE: data})
        hub2.create_repo(REPO, {FILE: data})
        rf = remote(hub1, hf_mirror(hub1), ms_mirror(hub2))
        hub1.inject("throttle", path_glob=FILE, times=None, rate=2 * MIB)  # slow enough to die mid-file

        def die() -> None:
            if death == "stopped":
                hub1.stop()
            elif death == "503_forever":
                hub1.inject("status", path_glob=FILE, times=None, code=503)
                hub1.inject("reset", path_glob=FILE, times=None, after=0)  # cut the responses in flight
            else:
                hub1.inject("reset", path_glob=FILE, times=None, after=0)

        watcher = _kill_when(hub1, 6 * MIB, die)
        [res] = fetch_files([(rf, tmp_path / FILE)], tmp_path / "partial", FAST)
        watcher.join(5)
        assert res.path.read_bytes() == data
        assert res.source in ("hf", "modelscope")  # the mirror that delivered most of this run's bytes
        if death != "stopped":
            hub1.wait_idle()
        from_1 = sum(r.bytes for r in hub1.log if r.file == FILE)
        from_2 = hub2.bytes_served(FILE)
        assert 0 < from_2 < SIZE  # mirror 2 did not start over
        # What mirror 1 delivered is kept, except segments in flight when it died (at most one per connection).
        seg = plan_segment_size(SIZE, CONN)
        assert from_1 + from_2 - SIZE <= CONN * seg


def test_stall_longer_than_timeout_every_time_drops_the_mirror(hub: LoopbackHub, content: bytes, tmp_path: Path):
    rf = remote(hub, hf_mirror(hub))
    opts = FetchOptions(connections=2, quiet=True, stall_timeout=0.5, max_attempts=2, backoff_base=0.05)
    hub.inject("stall", path_glob=FILE, times=None, seconds=2.0)
    with pytest.raises(SourceError) as info:
        fetch_files([(rf, tmp_path / FILE)], tmp_path / "partial", opts)
    assert "hf" in info.value.message and info.value.exit_code == 4


def test_expired_signed_cdn_url_is_resolved_again(hub: LoopbackHub, content: bytes, tmp_path: Path):
    """A 403 from a cached CDN URL (its signature expired) sends the engine back to the hub, not to failure."""
    rf = remote(hub, hf_mirror(hub))
    hub.inject("throttle", path_glob=FILE, times=None, rate=4 * MIB)
    armed: list = []
    watcher = _kill_when(hub, 3 * MIB, lambda: armed.append(
        hub.inject("status", path_glob=FILE, times=1, code=403, origin="cdn")))
    [res] = fetch_files([(rf, tmp_path / FILE)], tmp_path / "partial", FAST)
    watcher.join(5)
    assert res.path.read_bytes() == content and res.source == "hf"
    assert armed and armed[0].hits == 1
    forbidden = [r for r in hub.requests(origin="cdn") if r.status == 403]
    assert len(forbidden) == 1
    # After the 403 the next request for that segment went back to the hub's resolve URL. Compared by arrival:
    # the hub may log the 403 only after the client's next request is already answered.
    assert any(r.origin == "hub" and r.started > forbidden[0].started for r in hub.requests())
