"""The download engine against the loopback hub: verified placement, reuse, resume, integrity, disk, headers.

Real HTTP on 127.0.0.1 (hub origin + a CDN origin on another hostname), real files of tens of MB. Helpers shared
with ``test_download_faults.py`` and ``test_download_kill.py`` are in ``tests/support/download_fixtures.py``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bootstrap.core import progress
from bootstrap.core.disk_space import ensure_space
from bootstrap.core.errors import ExitCode, IntegrityError, SourceError, UnsupportedMachine
from bootstrap.fetch import download
from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.fetch.http_session import linked_sha256, parse_content_range, retry_after_seconds, same_origin
from bootstrap.fetch.partial import plan_segment_size
from bootstrap.fetch.records import Mirror, RemoteFile
from tests.support.download_fixtures import FAST, FILE, MIB, REPO, hf_mirror, ms_mirror, remote
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import seeded_bytes


@pytest.fixture
def data() -> bytes:
    return seeded_bytes(24 * MIB + 4321, 11)


@pytest.fixture
def repo(hub: LoopbackHub, data: bytes) -> str:
    return hub.create_repo(REPO, {FILE: data, "config.json": b'{"a": 1}'})


def test_hf_download_is_verified_placed_and_leaves_no_partial(hub, repo, data, tmp_path):
    dest = tmp_path / "models" / FILE
    rf = remote(hub, hf_mirror(hub))
    [res] = fetch_files([(rf, dest)], tmp_path / "partial", FAST)
    assert dest.read_bytes() == data
    assert (res.path, res.size, res.sha256, res.source, res.reused) == (dest, len(data), rf.sha256, "hf", False)
    assert res.bytes_downloaded == len(data)
    assert list((tmp_path / "partial").iterdir()) == []
    # Parallel ranged GETs went to the CDN origin; the hub only answered the resolve redirects.
    cdn = [r for r in hub.requests(origin="cdn") if r.method == "GET"]
    assert len(cdn) == -(-rf.size // plan_segment_size(rf.size, FAST.connections))
    assert all(r.status == 206 for r in cdn)
    assert hub.bytes_served(FILE, origin="hub") == 0


def test_small_regular_file_uses_one_request(hub, repo, tmp_path):
    rf = remote(hub, hf_mirror(hub, path="config.json"), path="config.json")
    [res] = fetch_files([(rf, tmp_path / "c.json")], tmp_path / "partial", FAST)
    assert res.path.read_bytes() == b'{"a": 1}'
    assert [r.status for r in hub.requests(file_glob="config.json")] == [206]


def test_existing_correct_dest_is_reused_without_network(hub, repo, data, tmp_path):
    dest = tmp_path / FILE
    dest.write_bytes(data)
    [res] = fetch_files([(remote(hub, hf_mirror(hub)), dest)], tmp_path / "partial", FAST)
    assert res.reused and res.bytes_downloaded == 0 and res.source == "local"
    assert hub.requests() == []


def test_existing_wrong_dest_of_same_size_is_replaced(hub, repo, data, tmp_path):
    dest = tmp_path / FILE
    dest.write_bytes(bytes(len(data)))
    [res] = fetch_files([(remote(hub, hf_mirror(hub)), dest)], tmp_path / "partial", FAST)
    assert not res.reused and dest.read_bytes() == data


def test_zero_byte_file(hub, tmp_path):
    hub.create_repo("acme/empty", {"empty.txt": b""})
    rf = remote(hub, hf_mirror(hub, "acme/empty", "empty.txt"), repo="acme/empty", path="empty.txt")
    [res] = fetch_files([(rf, tmp_path / "empty.txt")], tmp_path / "partial", FAST)
    assert res.path.read_bytes() == b"" and res.sha256 == rf.sha256


def test_resume_from_state_fetches_only_missing_segments(hub, repo, data, tmp_path):
    """A part file with some segments recorded: the rerun re-hashes them from disk and fetches the rest."""
    partial = tmp_path / "partial"
    rf = remote(hub, hf_mirror(hub))
    seg = plan_segment_size(rf.size, FAST.connections)
    done = list(range(0, 12 * MIB // seg))
    partial.mkdir()
    part = bytearray(rf.size)
    for i in done:
        part[i * seg:(i + 1) * seg] = data[i * seg:(i + 1) * seg]
    (partial / f"{rf.sha256}.part").write_bytes(part)
    (partial / f"{rf.sha256}.json").write_text(json.dumps(
        {"version": 1, "sha256": rf.sha256, "size": rf.size, "segment_size": seg, "done": done}))
    [res] = fetch_files([(rf, tmp_path / FILE)], partial, FAST)
    assert res.path.read_bytes() == data
    assert res.bytes_downloaded == rf.size - len(done) * seg
    assert hub.bytes_served(FILE) == rf.size - len(done) * seg


def test_resume_never_trusts_unrecorded_bytes(hub, repo, data, tmp_path):
    """Garbage in segments the state does not list is overwritten; a lying part without state is discarded."""
    partial = tmp_path / "partial"
    partial.mkdir()
    rf = remote(hub, hf_mirror(hub))
    (partial / f"{rf.sha256}.part").write_bytes(b"\xff" * rf.size)  # no state file: not resumable
    [res] = fetch_files([(rf, tmp_path / FILE)], partial, FAST)
    assert res.path.read_bytes() == data and hub.bytes_served(FILE) == rf.size


def test_corrupt_once_is_refetched_and_twice_is_integrity_error(hub, repo, data, tmp_path):
    rf = remote(hub, hf_mirror(hub))
    dest = tmp_path / "models" / FILE
    # A byte route claims a fault whatever its range: the first 8 ranged GETs are segments 0-7, one of them
    # carries offset 3 MiB + 3, so exactly one response is corrupted.
    hub.inject("corrupt", path_glob=FILE, times=FAST.connections, offset=3 * MIB + 3)
    [res] = fetch_files([(rf, dest)], tmp_path / "p1", FAST)
    assert dest.read_bytes() == data and res.bytes_downloaded == 2 * rf.size

    dest.unlink()
    hub.clear_log()
    hub.inject("corrupt", path_glob=FILE, times=None, offset=7 * MIB + 3)
    with pytest.raises(IntegrityError) as info:
        fetch_files([(rf, dest)], tmp_path / "p2", FAST)
    assert info.value.exit_code == ExitCode.INTEGRITY == 5
    assert rf.sha256 in info.value.message and "hf" in info.value.message
    assert not dest.exists()
    assert list((tmp_path / "p2").iterdir()) == []  # bad bytes are not kept for a resume
    assert hub.bytes_served(FILE) == 2 * rf.size


def test_all_mirrors_failing_is_source_error_with_state_kept(hub, repo, data, tmp_path):
    partial = tmp_path / "partial"
    rf = remote(hub, hf_mirror(hub), ms_mirror(hub))
    hub.inject("reset", path_glob=FILE, times=None, after=300_000)
    with pytest.raises(SourceError) as info:
        fetch_files([(rf, tmp_path / FILE)], partial, FAST)
    assert info.value.exit_code == 4
    assert "hf" in info.value.message and "modelscope" in info.value.message
    assert "\n" not in info.value.message and info.value.hint
    assert not (tmp_path / FILE).exists()
    assert (partial / f"{rf.sha256}.part").stat().st_size == rf.size  # resumable state is there
    hub.clear_faults()
    [res] = fetch_files([(rf, tmp_path / FILE)], partial, FAST)
    assert res.path.read_bytes() == data


def test_unknown_repo_drops_mirror_without_retries(hub, repo, data, tmp_path):
    bad = Mirror("mirror:gone", hub.resolve_url("acme/absent", FILE, "main"))
    rf = remote(hub, bad, hf_mirror(hub))
    [res] = fetch_files([(rf, tmp_path / FILE)], tmp_path / "partial", FAST)
    assert res.path.read_bytes() == data and res.source == "hf"
    assert len([r for r in hub.requests(origin="hub") if "absent" in r.path]) <= FAST.connections


def test_credentials_stay_on_the_mirror_origin():
    hub_url = "http://127.0.0.1:8000/acme/m/resolve/abc/x.gguf"
    assert same_origin(hub_url, "http://127.0.0.1:8000/other")
    assert not same_origin(hub_url, "http://localhost:8000/lfs/x")  # CDN on another hostname
    assert not same_origin(hub_url, "http://127.0.0.1:8001/x")  # same host, other port (ModelScope cookie)
    assert not same_origin("https://h/x", "http://h/x")
    assert same_origin("https://h/x", "https://h:443/y")


def test_protocol_parsers():
    assert parse_content_range("bytes 0-9/100") == download.http_session.ContentRange(0, 9, 100)
    assert parse_content_range("bytes 5-9/*").total is None
    assert parse_content_range("bytes 9-5/100") is None and parse_content_range("items 0-1/2") is None
    assert retry_after_seconds("7") == 7.0 and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    sha = "a" * 64
    assert linked_sha256({"X-Linked-Etag": f'"{sha}"'}) == sha
    assert linked_sha256({"X-Linked-ETag": f'W/"{sha.upper()}"'}) == sha
    assert linked_sha256({"ETag": f'"{sha}"'}) is None  # a CDN ETag is never taken for the sha256
    assert linked_sha256({"X-Linked-Etag": '"abc"'}) is None


def test_segment_plan_bounds():
    assert plan_segment_size(3 * MIB, 8) == 3 * MIB  # small: one stream
    assert plan_segment_size(100 * MIB, 1) == 100 * MIB
    assert plan_segment_size(24 * MIB, 8) == MIB
    assert plan_segment_size(512 * MIB, 8) == 8 * MIB
    assert plan_segment_size(40 << 30, 8) == 64 * MIB  # 40 GiB: capped, state stays small


def test_disk_decision_at_the_boundary(tmp_path):
    # Free bytes recorded on a real nearly-full disk (a 20 GiB quant against 20 GiB minus one byte free).
    needed = 21_474_836_480
    ensure_space(needed, needed, tmp_path)
    with pytest.raises(UnsupportedMachine) as info:
        ensure_space(needed, needed - 1, tmp_path)
    assert info.value.exit_code == 3
    assert str(needed) in info.value.message and "1" in info.value.hint


def test_disk_check_runs_before_any_request_and_counts_resumable_bytes(hub, repo, data, tmp_path, monkeypatch):
    partial = tmp_path / "partial"
    rf = remote(hub, hf_mirror(hub))
    monkeypatch.setattr(download, "free_bytes", lambda path: rf.size - 1)  # the probe is the only fake
    with pytest.raises(UnsupportedMachine) as info:
        fetch_files([(rf, tmp_path / FILE)], partial, FAST)
    assert info.value.exit_code == 3 and str(rf.size) in info.value.message
    assert hub.requests() == []
    # With one segment already complete on disk, one byte less is needed and the same free space suffices.
    seg = plan_segment_size(rf.size, FAST.connections)
    (partial / f"{rf.sha256}.part").write_bytes(data[:seg] + bytes(rf.size - seg))
    (partial / f"{rf.sha256}.json").write_text(json.dumps(
        {"version": 1, "sha256": rf.sha256, "size": rf.size, "segment_size": seg, "done": [0]}))
    [res] = fetch_files([(rf, tmp_path / FILE)], partial, FAST)
    assert res.path.read_bytes() == data and hub.bytes_served(FILE) == rf.size - seg


@pytest.mark.parametrize("terminal", [True, False])
def test_quiet_false_reports_on_stderr_only(hub, repo, data, tmp_path, capsys, monkeypatch, terminal):
    """Bars on a terminal; plain lines (start, end) off one."""
    monkeypatch.setattr(progress, "on_terminal", lambda: terminal)
    rf = remote(hub, hf_mirror(hub))
    fetch_files([(rf, tmp_path / FILE)], tmp_path / "partial",
                FetchOptions(connections=4, stall_timeout=5))  # fmt: skip
    out, err = capsys.readouterr()
    assert out == "" and FILE in err
    if terminal:
        assert "100%" in err and "\r" in err
    else:
        assert "\r" not in err and err.splitlines()[0] == f"{FILE}: downloading 24.0 MiB"


class _Recorder(BaseHTTPRequestHandler):
    """A minimal origin that records request headers: redirects ``/file`` to its peer, serves ``/blob`` ranges."""

    protocol_version = "HTTP/1.1"
    body = b""
    peer = ""
    seen: list[dict[str, str]]

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        if self.path == "/file":
            self.send_response(302)
            self.send_header("Location", f"{self.peer}/blob")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        first, last = (int(x) for x in self.headers["Range"].split("=")[1].split("-"))
        chunk = self.body[first:last + 1]
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {first}-{first + len(chunk) - 1}/{len(self.body)}")
        self.send_header("Content-Length", str(len(chunk)))
        self.end_headers()
        self.wfile.write(chunk)


@pytest.mark.parametrize("cdn_host", ["localhost", "127.0.0.1"])  # another hostname; same host, another port
def test_mirror_headers_never_follow_a_redirect_to_another_origin(tmp_path, cdn_host):
    body = seeded_bytes(6 * MIB + 5, 3)
    servers = []
    for _ in range(2):
        handler = type("H", (_Recorder,), {"body": body, "seen": []})
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    hub_srv, cdn_srv = servers
    hub_srv.RequestHandlerClass.peer = f"http://{cdn_host}:{cdn_srv.server_address[1]}"
    try:
        secret = {"Authorization": "Bearer s3cret", "Cookie": "m_session_id=s3cret"}
        mirror = Mirror("modelscope", f"http://127.0.0.1:{hub_srv.server_address[1]}/file", secret)
        rf = RemoteFile("f.bin", len(body), hashlib.sha256(body).hexdigest(), (mirror,))
        [res] = fetch_files([(rf, tmp_path / "f.bin")], tmp_path / "partial", FAST)
        assert res.path.read_bytes() == body
        hub_seen, cdn_seen = hub_srv.RequestHandlerClass.seen, cdn_srv.RequestHandlerClass.seen
        assert hub_seen and all(h.get("authorization") == "Bearer s3cret" for h in hub_seen)
        assert len(cdn_seen) >= 2  # ranged segments
        assert not any("authorization" in h or "cookie" in h for h in cdn_seen)
        assert all(h["user-agent"].startswith("qwenclientkit/") for h in hub_seen + cdn_seen)
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()
