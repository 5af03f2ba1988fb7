"""The loopback hub speaks the protocols and each fault is visible, exactly once, to a plain HTTP client.

Everything here is real HTTP on 127.0.0.1: ``requests`` where the library shows the fault, a raw socket
where only the wire does (a TCP reset, a FIN before Content-Length).
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from tests.support.hub import LoopbackHub, parse_range
from tests.support.hub_fixtures import REPO_ROOT, run_python, sdk_env, seeded_bytes

REPO = "acme/tiny"
SMALL = seeded_bytes(5_000, 1)  # regular git file
BIG = seeded_bytes(3 * 1024 * 1024 + 17, 2)  # LFS by size: redirected to the CDN
GGUF = seeded_bytes(200_000, 3)  # LFS by extension
TIMEOUT = 10


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def http() -> requests.Session:
    s = requests.Session()
    s.trust_env = False  # no proxy between us and loopback
    return s


@pytest.fixture
def repo(hub: LoopbackHub) -> str:
    """Commit sha of a repo with a regular file, a big LFS file and a small .gguf (LFS by pattern)."""
    return hub.create_repo(REPO, {"config.json": SMALL, "weights/big.bin": BIG, "m-Q4.gguf": GGUF})


def raw_get(url: str, headers: dict[str, str] | None = None, method: str = "GET") -> dict:
    """One request on a fresh socket; returns status, headers, body and how the body ended."""
    u = urlsplit(url)
    lines = [f"{method} {u.path}{'?' + u.query if u.query else ''} HTTP/1.1", f"Host: {u.netloc}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    with socket.create_connection((u.hostname, u.port), timeout=TIMEOUT) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError(f"connection ended inside headers: {buf!r}")
            buf += chunk
        head, body = buf.split(b"\r\n\r\n", 1)
        status_line, *hdr_lines = head.decode().split("\r\n")
        hdrs = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in hdr_lines)}
        expected = int(hdrs.get("content-length", "0")) if method != "HEAD" else 0
        ended = "complete"
        while len(body) < expected:
            try:
                chunk = sock.recv(1 << 20)
            except ConnectionResetError:
                ended = "reset"
                break
            if not chunk:
                ended = "eof"
                break
            body += chunk
    return {"status": int(status_line.split()[1]), "headers": hdrs, "body": body, "ended": ended}


def cdn_url(http: requests.Session, hub: LoopbackHub, path: str, rev: str = "main") -> str:
    r = http.head(hub.resolve_url(REPO, path, rev), allow_redirects=False, timeout=TIMEOUT)
    assert r.status_code == 302, r.status_code
    return r.headers["Location"]


# ---- protocol -------------------------------------------------------------------------------------


def test_regular_file_served_by_hub_with_git_etag(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    r = http.head(hub.resolve_url(REPO, "config.json"), allow_redirects=False, timeout=TIMEOUT)
    assert r.status_code == 200
    assert r.headers["X-Repo-Commit"] == repo
    assert r.headers["ETag"] == f'"{git_sha1(SMALL)}"'
    assert r.headers["Content-Length"] == str(len(SMALL))
    assert r.headers["Accept-Ranges"] == "bytes"
    g = http.get(hub.resolve_url(REPO, "config.json"), headers={"Accept-Encoding": "gzip"}, timeout=TIMEOUT)
    assert g.content == SMALL
    assert "Content-Encoding" not in g.headers


def test_lfs_file_redirects_to_cdn_on_other_host(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    for path, data in (("weights/big.bin", BIG), ("m-Q4.gguf", GGUF)):
        r = http.head(hub.resolve_url(REPO, path), allow_redirects=False, timeout=TIMEOUT)
        assert r.status_code == 302
        loc = urlsplit(r.headers["Location"])
        assert f"{loc.scheme}://{loc.netloc}" == hub.cdn_endpoint != hub.endpoint
        assert loc.hostname == "localhost"
        assert loc.path == f"/lfs/{sha256(data)}" and "sig=" in loc.query
        assert r.headers["X-Repo-Commit"] == repo
        assert r.headers["X-Linked-Etag"] == f'"{sha256(data)}"'
        assert r.headers["X-Linked-Size"] == str(len(data))
        g = http.get(hub.resolve_url(REPO, path), timeout=TIMEOUT)
        assert g.status_code == 200 and g.content == data
        assert g.headers["ETag"] == f'"{sha256(data)}"'
    assert hub.sha256_of(REPO, "weights/big.bin") == sha256(BIG)
    hub.wait_idle()
    assert hub.bytes_served("weights/big.bin", origin="cdn") == len(BIG)
    bad = http.get(r.headers["Location"].replace("sig=", "sig=00"), timeout=TIMEOUT)
    assert bad.status_code == 403


def test_lfs_direct_mode_serves_from_hub(tmp_path: Path, http: requests.Session) -> None:
    with LoopbackHub(tmp_path / "h", lfs_mode="direct") as hub:
        hub.create_repo(REPO, {"m.gguf": GGUF})
        r = http.get(hub.resolve_url(REPO, "m.gguf"), allow_redirects=False, timeout=TIMEOUT)
        assert r.status_code == 200 and r.content == GGUF
        assert r.headers["X-Linked-Etag"] == f'"{sha256(GGUF)}"'


def test_resolve_by_commit_and_quoted_revision(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    hub.tag(REPO, "refs/pr/1")
    for rev in (repo, "refs/pr/1"):
        r = http.get(hub.resolve_url(REPO, "config.json", rev), timeout=TIMEOUT)
        assert r.status_code == 200 and r.content == SMALL
        assert r.headers["X-Repo-Commit"] == repo
    assert "refs%2Fpr%2F1" in hub.resolve_url(REPO, "config.json", "refs/pr/1")


@pytest.mark.parametrize(
    ("url_tail", "status", "code"),
    [
        ("nobody/none/resolve/main/config.json", 401, "RepoNotFound"),
        (f"{REPO}/resolve/nope/config.json", 404, "RevisionNotFound"),
        (f"{REPO}/resolve/{'0' * 40}/config.json", 404, "RevisionNotFound"),
        (f"{REPO}/resolve/main/missing.txt", 404, "EntryNotFound"),
        ("api/models/nobody/none", 401, "RepoNotFound"),
        (f"api/models/{REPO}/revision/nope", 404, "RevisionNotFound"),
        (f"api/models/{REPO}/tree/main/nodir", 404, "EntryNotFound"),
    ],
)
def test_hf_error_codes(
    hub: LoopbackHub, repo: str, http: requests.Session, url_tail: str, status: int, code: str
) -> None:
    for method in ("HEAD", "GET"):
        r = http.request(method, f"{hub.endpoint}/{url_tail}", allow_redirects=False, timeout=TIMEOUT)
        assert (r.status_code, r.headers.get("X-Error-Code")) == (status, code)
    if code == "EntryNotFound" and "resolve" in url_tail:
        assert r.headers["X-Repo-Commit"] == repo


def test_gated_repo_needs_a_token(hub: LoopbackHub, http: requests.Session) -> None:
    hub.create_repo("acme/gated", {"a.txt": b"x"}, gated=True)
    url = hub.resolve_url("acme/gated", "a.txt")
    r = http.get(url, timeout=TIMEOUT)
    assert (r.status_code, r.headers["X-Error-Code"]) == (403, "GatedRepo")
    assert http.get(url, headers={"Authorization": "Bearer t"}, timeout=TIMEOUT).content == b"x"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-0", ("partial", 0, 0)),
        ("bytes=10-", ("partial", 10, 99)),
        ("bytes=-10", ("partial", 90, 99)),
        ("bytes=-1000", ("partial", 0, 99)),
        ("bytes=50-5000", ("partial", 50, 99)),  # clamped, as hf_transfer's last range needs
        ("bytes=99-99", ("partial", 99, 99)),
        ("bytes=100-", ("unsatisfiable", 0, 0)),
        ("bytes=-0", ("unsatisfiable", 0, 0)),
        ("bytes=0-1,5-6", ("full", 0, 99)),
        ("bytes=5-2", ("full", 0, 99)),
        ("items=0-1", ("full", 0, 99)),
        (None, ("full", 0, 99)),
    ],
)
def test_parse_range(header: str | None, expected: tuple[str, int, int]) -> None:
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize("route", ["hub", "cdn", "modelscope"])
def test_range_on_every_byte_route(hub: LoopbackHub, repo: str, http: requests.Session, route: str) -> None:
    path, data = ("config.json", SMALL) if route == "hub" else ("m-Q4.gguf", GGUF)
    if route == "modelscope":
        url = f"{hub.endpoint}/api/v1/models/{REPO}/repo?Revision=master&FilePath={path}"
    else:
        url = hub.resolve_url(REPO, path)
    n = len(data)
    cases = [
        ("bytes=100-199", 206, data[100:200], f"bytes 100-199/{n}"),
        (f"bytes={n - 5}-", 206, data[-5:], f"bytes {n - 5}-{n - 1}/{n}"),
        ("bytes=-7", 206, data[-7:], f"bytes {n - 7}-{n - 1}/{n}"),
        (f"bytes=10-{n + 500}", 206, data[10:], f"bytes 10-{n - 1}/{n}"),
        ("bytes=0-0,10-20", 200, data, None),
        (f"bytes={n}-", 416, None, f"bytes */{n}"),
    ]
    for header, status, body, crange in cases:
        r = http.get(url, headers={"Range": header}, timeout=TIMEOUT)
        assert r.status_code == status, header
        assert r.headers.get("Content-Range") == crange, header
        assert "Content-Encoding" not in r.headers
        if body is not None:
            assert r.content == body, header
            assert int(r.headers["Content-Length"]) == len(body)


def test_tree_pagination_with_absolute_link(hub: LoopbackHub, http: requests.Session) -> None:
    files = {f"d{i % 3}/f{i}.txt": b"%d" % i for i in range(7)} | {"top.txt": b"t"}
    commit = hub.create_repo("acme/many", files)
    hub.tree_page_size = 3
    url: str | None = f"{hub.endpoint}/api/models/acme/many/tree/main?recursive=true&expand=false"
    seen, pages = [], 0
    while url:
        r = http.get(url, timeout=TIMEOUT)
        assert r.status_code == 200
        page = r.json()
        assert 1 <= len(page) <= 3
        seen += page
        pages += 1
        url = r.links.get("next", {}).get("url")
        if url:
            assert url.startswith(f"{hub.endpoint}/api/models/acme/many/tree/main?")
    assert pages == 4  # 8 files + 3 directories, 3 per page
    assert sorted(e["path"] for e in seen if e["type"] == "file") == sorted(files)
    assert sorted(e["path"] for e in seen if e["type"] == "directory") == ["d0", "d1", "d2"]
    for e in seen:
        if e["type"] == "file":
            assert e["oid"] == git_sha1(files[e["path"]]) and "lfs" not in e
    hub.tree_page_size = 1000
    top = http.get(f"{hub.endpoint}/api/models/acme/many/tree/{commit}", timeout=TIMEOUT).json()
    assert sorted(e["path"] for e in top) == ["d0", "d1", "d2", "top.txt"]
    sub = http.get(f"{hub.endpoint}/api/models/acme/many/tree/main/d1", timeout=TIMEOUT).json()
    assert sorted(e["path"] for e in sub) == ["d1/f1.txt", "d1/f4.txt"]


def test_model_info_and_paths_info(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    info = http.get(f"{hub.endpoint}/api/models/{REPO}?blobs=true", timeout=TIMEOUT).json()
    assert info["id"] == REPO and info["sha"] == repo
    sib = {s["rfilename"]: s for s in info["siblings"]}
    assert sib["weights/big.bin"]["lfs"]["sha256"] == sha256(BIG)
    assert sib["weights/big.bin"]["size"] == len(BIG)
    assert sib["config.json"]["blobId"] == git_sha1(SMALL) and "lfs" not in sib["config.json"]
    plain = http.get(f"{hub.endpoint}/api/models/{REPO}/revision/{repo}", timeout=TIMEOUT).json()
    assert plain["sha"] == repo and "lfs" not in plain["siblings"][0]
    r = http.post(
        f"{hub.endpoint}/api/models/{REPO}/paths-info/main",
        data={"paths": ["m-Q4.gguf", "weights", "absent"]},
        timeout=TIMEOUT,
    )
    entries = {e["path"]: e for e in r.json()}
    assert set(entries) == {"m-Q4.gguf", "weights"}
    assert entries["m-Q4.gguf"]["lfs"]["oid"] == sha256(GGUF)
    assert entries["weights"]["type"] == "directory"


def test_modelscope_api(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    base = f"{hub.endpoint}/api/v1/models/{REPO}"
    info = http.get(base, timeout=TIMEOUT).json()
    assert info["Code"] == 200 and info["Success"] is True and info["Data"]["Name"] == "tiny"
    revs = http.get(f"{base}/revisions", timeout=TIMEOUT).json()["Data"]["RevisionMap"]
    assert [b["Revision"] for b in revs["Branches"]] == ["master"]
    files = http.get(f"{base}/repo/files?Revision=master&Recursive=True", timeout=TIMEOUT).json()
    by_path = {f["Path"]: f for f in files["Data"]["Files"]}
    assert by_path["weights/big.bin"]["Sha256"] == sha256(BIG) and by_path["weights/big.bin"]["IsLFS"]
    assert by_path["config.json"]["Size"] == len(SMALL) and not by_path["config.json"]["IsLFS"]
    assert by_path["weights"]["Type"] == "tree"
    shallow = http.get(f"{base}/repo/files?Revision={repo}&Root=weights", timeout=TIMEOUT).json()
    assert [f["Path"] for f in shallow["Data"]["Files"]] == ["weights/big.bin"]
    r = http.get(f"{base}/repo?Revision=master&FilePath=config.json", timeout=TIMEOUT)
    assert r.content == SMALL and r.headers["X-Linked-ETag"] == f'"{sha256(SMALL)}"'
    r = http.get(f"{base}/repo?Revision=master&FilePath=weights/big.bin", allow_redirects=False, timeout=TIMEOUT)
    assert r.status_code == 302 and r.headers["Location"].startswith(hub.cdn_endpoint)
    r = http.get(r.headers["Location"], timeout=TIMEOUT)
    assert r.content == BIG and r.headers["X-Linked-ETag"] == f'"{sha256(BIG)}"'
    for url in (f"{hub.endpoint}/api/v1/models/x/y", f"{base}/repo?Revision=nope&FilePath=config.json"):
        r = http.get(url, timeout=TIMEOUT)
        assert r.status_code == 404 and r.json()["Success"] is False
    assert http.get(f"{hub.endpoint}/api/v1/repos/internalAccelerationInfo", timeout=TIMEOUT).status_code == 404


def test_modelscope_listing_cap_is_silent(hub: LoopbackHub, http: requests.Session) -> None:
    hub.create_repo("acme/wide", {f"a/{i}.txt": b"x" for i in range(4)} | {"b/z.txt": b"z"})
    hub.ms_files_cap = 3
    base = f"{hub.endpoint}/api/v1/models/acme/wide/repo/files?Revision=master"
    full = http.get(f"{base}&Recursive=True", timeout=TIMEOUT).json()["Data"]["Files"]
    assert len(full) == 3  # truncated, no flag: the client must walk with Root=
    top = http.get(f"{base}&Recursive=False", timeout=TIMEOUT).json()["Data"]["Files"]
    assert [f["Path"] for f in top] == ["a", "b"]
    b = http.get(f"{base}&Recursive=True&Root=b", timeout=TIMEOUT).json()["Data"]["Files"]
    assert [f["Path"] for f in b] == ["b/z.txt"]


def test_release_asset_redirects_to_cdn_with_range(hub: LoopbackHub, http: requests.Session, tmp_path: Path) -> None:
    asset = tmp_path / "llama-b1-bin-ubuntu-x64.tar.gz"
    asset.write_bytes(GGUF)
    assert hub.add_release_asset("ggml-org/llama.cpp", "b1", asset) == sha256(GGUF)
    url = hub.release_url("ggml-org/llama.cpp", "b1", asset.name)
    r = http.get(url, allow_redirects=False, timeout=TIMEOUT)
    assert r.status_code == 302 and r.headers["Location"].startswith(f"{hub.cdn_endpoint}/assets/")
    assert http.get(url, timeout=TIMEOUT).content == GGUF
    r = http.get(url, headers={"Range": "bytes=1000-1999"}, timeout=TIMEOUT)
    assert r.status_code == 206 and r.content == GGUF[1000:2000]
    assert http.get(f"{hub.endpoint}/ggml-org/llama.cpp/releases/download/b1/x", timeout=TIMEOUT).status_code == 404
    hub.inject("corrupt", path_glob="llama-*.tar.gz", offset=5)
    bad = http.get(url, timeout=TIMEOUT).content
    assert bad[5] == GGUF[5] ^ 0xFF and bad[:5] + bad[6:] == GGUF[:5] + GGUF[6:]


def test_old_blobs_stay_after_new_commit(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    old_cdn = cdn_url(http, hub, "m-Q4.gguf")
    new = hub.commit(REPO, {"m-Q4.gguf": GGUF[::-1]}, delete=["config.json"])
    assert new != repo and hub.commit_of(REPO) == new
    assert http.get(old_cdn, timeout=TIMEOUT).content == GGUF
    assert http.get(hub.resolve_url(REPO, "m-Q4.gguf", repo), timeout=TIMEOUT).content == GGUF
    assert http.get(hub.resolve_url(REPO, "m-Q4.gguf"), timeout=TIMEOUT).content == GGUF[::-1]
    assert http.head(hub.resolve_url(REPO, "config.json"), timeout=TIMEOUT).status_code == 404
    assert http.head(hub.resolve_url(REPO, "config.json", repo), timeout=TIMEOUT).status_code == 200


def test_create_repos_from_tree_streams_files(hub: LoopbackHub, tmp_path: Path, http: requests.Session) -> None:
    src = tmp_path / "src"
    (src / "unsloth" / "Q-GGUF" / "sub").mkdir(parents=True)
    (src / "unsloth" / "Q-GGUF" / "Q-UD-IQ4_XS.gguf").write_bytes(GGUF)
    (src / "unsloth" / "Q-GGUF" / "sub" / "README.md").write_bytes(b"# hi\n")
    repos = hub.create_repos_from_tree(src)
    assert list(repos) == ["unsloth/Q-GGUF"]
    assert hub.sha256_of("unsloth/Q-GGUF", "Q-UD-IQ4_XS.gguf") == sha256(GGUF)
    assert hub.entry("unsloth/Q-GGUF", "Q-UD-IQ4_XS.gguf").lfs
    assert not hub.entry("unsloth/Q-GGUF", "sub/README.md").lfs
    assert http.get(hub.resolve_url("unsloth/Q-GGUF", "sub/README.md"), timeout=TIMEOUT).content == b"# hi\n"


# ---- faults ---------------------------------------------------------------------------------------


def test_status_fault_with_retry_after_then_clean(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    h = hub.inject("status", path_glob="config.json", code=429, retry_after=2)
    url = hub.resolve_url(REPO, "config.json")
    r = http.head(url, timeout=TIMEOUT)
    assert (r.status_code, r.headers["Retry-After"]) == (429, "2")
    assert h.hits == 1 and h.exhausted
    assert http.head(url, timeout=TIMEOUT).status_code == 200
    # Listings take it too (scope="api" matches the URL path); other files do not.
    hub.inject("status", path_glob="*/tree/*", scope="api", code=503, times=2)
    tree = f"{hub.endpoint}/api/models/{REPO}/tree/main"
    assert http.head(hub.resolve_url(REPO, "m-Q4.gguf"), timeout=TIMEOUT).status_code == 302
    assert [http.get(tree, timeout=TIMEOUT).status_code for _ in range(3)] == [503, 503, 200]


def test_status_fault_only_on_cdn_get(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    hub.inject("status", path_glob="*.gguf", origin="cdn", method="GET", code=503)
    assert http.head(hub.resolve_url(REPO, "m-Q4.gguf"), timeout=TIMEOUT).status_code == 302
    assert http.get(hub.resolve_url(REPO, "m-Q4.gguf"), timeout=TIMEOUT).status_code == 503
    assert http.get(hub.resolve_url(REPO, "m-Q4.gguf"), timeout=TIMEOUT).content == GGUF


def test_reset_is_a_tcp_rst_after_n_bytes(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = cdn_url(http, hub, "weights/big.bin")
    h = hub.inject("reset", path_glob="weights/*", after=100_000)
    res = raw_get(url)
    assert res["status"] == 200 and res["ended"] == "reset"
    assert res["body"] == BIG[:100_000]
    assert h.hits == 1
    hub.inject("reset", path_glob="weights/*", after=10)
    with pytest.raises(requests.exceptions.ChunkedEncodingError) as err:  # what requests users see
        http.get(url, timeout=TIMEOUT)
    assert "reset" in str(err.value).lower()
    hub.wait_idle()
    assert hub.log[-1].bytes == 10
    assert http.get(url, timeout=TIMEOUT).content == BIG


def test_close_is_a_fin_before_content_length(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = hub.resolve_url(REPO, "config.json")
    hub.inject("close", path_glob="config.json", after=1234)
    res = raw_get(url)
    assert res["ended"] == "eof" and res["body"] == SMALL[:1234]
    assert res["headers"]["content-length"] == str(len(SMALL))
    hub.wait_idle()
    assert hub.log[-1].bytes == 1234
    hub.inject("close", path_glob="config.json", after=0)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        http.get(url, timeout=TIMEOUT)
    assert http.get(url, timeout=TIMEOUT).content == SMALL


def test_stall_delays_headers(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = hub.resolve_url(REPO, "config.json")
    hub.inject("stall", path_glob="config.json", seconds=1.5)
    with pytest.raises(requests.exceptions.ReadTimeout):
        http.get(url, timeout=(TIMEOUT, 0.3))
    stall = hub.inject("stall", path_glob="config.json", seconds=0.6)
    t0 = time.monotonic()
    assert http.get(url, timeout=TIMEOUT).content == SMALL
    assert time.monotonic() - t0 >= 0.55
    assert http.get(url, timeout=TIMEOUT).content == SMALL
    assert stall.hits == 1 and stall.exhausted  # armed once: the second request was not stalled (no timing needed)


def test_throttle_caps_bytes_per_second(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = cdn_url(http, hub, "weights/big.bin")
    throttle = hub.inject("throttle", path_glob="weights/big.bin", rate=100_000)
    t0 = time.monotonic()
    r = http.get(url, headers={"Range": "bytes=0-119999"}, timeout=TIMEOUT)
    slow = time.monotonic() - t0
    assert r.content == BIG[:120_000]
    assert slow >= 1.0  # 120,000 bytes at 100,000 B/s: a lower bound holds on a busy machine too
    assert http.get(url, headers={"Range": "bytes=0-119999"}, timeout=TIMEOUT).content == BIG[:120_000]
    assert throttle.hits == 1 and throttle.exhausted  # the second request was served unthrottled


def test_corrupt_flips_one_byte_at_absolute_offset(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = cdn_url(http, hub, "weights/big.bin")
    offset = 2_000_000
    hub.inject("corrupt", path_glob="weights/big.bin", offset=offset, times=2)
    r = http.get(url, headers={"Range": f"bytes={offset - 10}-{offset + 9}"}, timeout=TIMEOUT)
    expected = bytearray(BIG[offset - 10 : offset + 10])
    expected[10] ^= 0xFF
    assert r.status_code == 206 and r.content == bytes(expected)
    full = http.get(url, timeout=TIMEOUT).content
    assert len(full) == len(BIG) and sha256(full) != sha256(BIG)
    assert [i for i in range(offset - 2, offset + 3) if full[i] != BIG[i]] == [offset]
    assert http.get(url, timeout=TIMEOUT).content == BIG


def test_ignore_range_answers_200_full(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = hub.resolve_url(REPO, "m-Q4.gguf")
    h = hub.inject("ignore_range", path_glob="*.gguf")
    assert http.get(url, timeout=TIMEOUT).status_code == 200 and h.hits == 0  # no Range: not consumed
    r = http.get(url, headers={"Range": "bytes=100-"}, timeout=TIMEOUT)
    assert r.status_code == 200 and r.content == GGUF and "Content-Range" not in r.headers
    r = http.get(url, headers={"Range": "bytes=100-"}, timeout=TIMEOUT)
    assert r.status_code == 206 and r.content == GGUF[100:]


def test_range_200_sends_partial_body_with_200(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = hub.resolve_url(REPO, "m-Q4.gguf")
    hub.inject("range_200", path_glob="*.gguf")
    r = http.get(url, headers={"Range": "bytes=100-"}, timeout=TIMEOUT)
    assert r.status_code == 200 and r.content == GGUF[100:]
    assert r.headers["Content-Range"] == f"bytes 100-{len(GGUF) - 1}/{len(GGUF)}"
    assert http.get(url, headers={"Range": "bytes=100-"}, timeout=TIMEOUT).status_code == 206


def test_wrong_offset_206(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = hub.resolve_url(REPO, "m-Q4.gguf")
    hub.inject("wrong_offset", path_glob="*.gguf", delta=1000)
    r = http.get(url, headers={"Range": "bytes=5000-5999"}, timeout=TIMEOUT)
    assert r.status_code == 206
    assert r.headers["Content-Range"] == f"bytes 4000-4999/{len(GGUF)}"
    assert r.content == GGUF[4000:5000]
    r = http.get(url, headers={"Range": "bytes=5000-5999"}, timeout=TIMEOUT)
    assert r.headers["Content-Range"].startswith("bytes 5000-") and r.content == GGUF[5000:6000]


def test_short_length_truncates_body(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = hub.resolve_url(REPO, "config.json")
    hub.inject("short_length", path_glob="config.json", missing=10)
    r = http.get(url, timeout=TIMEOUT)
    assert r.status_code == 200 and r.content == SMALL[:-10]
    assert r.headers["Content-Length"] == str(len(SMALL) - 10)
    hub.inject("short_length", path_glob="config.json", missing=1)
    r = http.get(url, headers={"Range": "bytes=0-99"}, timeout=TIMEOUT)
    assert r.headers["Content-Range"] == f"bytes 0-99/{len(SMALL)}" and r.content == SMALL[:99]
    assert http.get(url, timeout=TIMEOUT).content == SMALL


def test_no_commit_header(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    url = hub.resolve_url(REPO, "m-Q4.gguf")
    hub.inject("no_commit_header", path_glob="*.gguf")
    r = http.head(url, allow_redirects=False, timeout=TIMEOUT)
    assert "X-Repo-Commit" not in r.headers and r.headers["X-Linked-Etag"] == f'"{sha256(GGUF)}"'
    assert http.head(url, allow_redirects=False, timeout=TIMEOUT).headers["X-Repo-Commit"] == repo


def test_mutate_moves_main_and_keeps_old_commit(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    old_url = cdn_url(http, hub, "weights/big.bin")
    h = hub.inject("mutate", path_glob="weights/big.bin", after=300_000)
    res = raw_get(old_url)
    assert res["ended"] == "eof" and res["body"] == BIG[:300_000]  # cut=True: the download is interrupted
    assert h.hits == 1
    new_commit = hub.commit_of(REPO)
    assert new_commit != repo
    new_sha = hub.sha256_of(REPO, "weights/big.bin")
    assert new_sha != sha256(BIG) and hub.entry(REPO, "weights/big.bin").size == len(BIG)
    head = http.head(hub.resolve_url(REPO, "weights/big.bin"), allow_redirects=False, timeout=TIMEOUT)
    assert head.headers["X-Repo-Commit"] == new_commit
    assert head.headers["X-Linked-Etag"] == f'"{new_sha}"'
    new_bytes = http.get(hub.resolve_url(REPO, "weights/big.bin"), timeout=TIMEOUT).content
    assert sha256(new_bytes) == new_sha and len(new_bytes) == len(BIG)
    assert http.get(hub.resolve_url(REPO, "weights/big.bin", repo), timeout=TIMEOUT).content == BIG
    assert http.get(old_url, timeout=TIMEOUT).content == BIG  # the old CDN object stays
    ms = f"{hub.endpoint}/api/v1/models/{REPO}/repo?Revision=master&FilePath=weights/big.bin"
    assert sha256(http.get(ms, timeout=TIMEOUT).content) == new_sha
    assert hub.sha256_of(REPO, "config.json") == sha256(SMALL)  # the rest of the tree is unchanged


def test_mutate_met_by_a_last_byte_cuts_the_next_response(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    """A cut that loses nothing proves nothing: the threshold met exactly by a response's last byte leaves that
    response whole and unchanged, and fires on the next one before its first byte (test_download_faults'
    ``mutate`` case was flaky when it fired on a segment's end)."""
    old_url = cdn_url(http, hub, "weights/big.bin")
    h = hub.inject("mutate", path_glob="weights/big.bin", after=100_000)
    first = raw_get(old_url, {"Range": "bytes=0-99999"})
    assert first["ended"] == "complete" and first["body"] == BIG[:100_000]
    assert h.hits == 0 and hub.commit_of(REPO) == repo  # not yet: nothing of a response was left to cut
    second = raw_get(old_url, {"Range": "bytes=100000-199999"})
    assert second["status"] == 206 and second["ended"] == "eof" and second["body"] == b""
    assert h.hits == 1 and hub.commit_of(REPO) != repo


def test_mutate_without_cut_serves_whole_old_body(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    hub.inject("mutate", path_glob="config.json", after=0, cut=False)
    assert http.get(hub.resolve_url(REPO, "config.json"), timeout=TIMEOUT).content == SMALL
    assert hub.commit_of(REPO) != repo
    assert sha256(http.get(hub.resolve_url(REPO, "config.json"), timeout=TIMEOUT).content) != sha256(SMALL)


def test_trickle_sends_the_body_a_few_bytes_at_a_time(hub: LoopbackHub, repo: str) -> None:
    """Up to ``offset`` at once, then ``bytes`` every ``every`` seconds: each read returns, none completes."""
    url = hub.resolve_url(REPO, "config.json")
    hub.inject("trickle", path_glob="config.json", bytes=2, every=0.2, offset=4_990)
    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=TIMEOUT) as sock:
        sock.sendall(f"GET {u.path} HTTP/1.1\r\nHost: {u.netloc}\r\n\r\n".encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += sock.recv(65536)
        body = buf.split(b"\r\n\r\n", 1)[1]
        while len(body) < 4_990:
            body += sock.recv(65536)
        t0 = time.monotonic()
        while len(body) < 5_000:  # the last 10 bytes: 5 sends of 2 bytes, 0.2 s apart
            body += sock.recv(65536)
        took = time.monotonic() - t0
    assert body == SMALL
    assert 0.7 <= took < 5


def test_trickle_on_a_listing_and_on_the_cdn(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    hub.inject("trickle", scope="api", path_glob="/api/models/*", bytes=64, every=0.05)
    t0 = time.monotonic()
    r = http.get(f"{hub.endpoint}/api/models/{REPO}", timeout=TIMEOUT)
    took = time.monotonic() - t0
    assert r.json()["sha"] == repo
    assert took >= 0.8 * (len(r.content) // 64) * 0.05  # one wait of 50 ms per 64 bytes after the first
    url = hub.resolve_url(REPO, "weights/big.bin")
    h = hub.inject("trickle", path_glob="weights/big.bin", bytes=1000, every=0.05, offset=100_000)
    r = http.get(url, headers={"Range": "bytes=99000-102999"}, timeout=TIMEOUT)  # the 302 leaves it armed
    assert r.content == BIG[99_000:103_000] and h.hits == 1
    hub.wait_idle()
    assert [rec.status for rec in hub.requests(file_glob="weights/big.bin")][-2:] == [302, 206]


def test_gzip_bomb_inflates_to_the_real_listing(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    """``Content-Encoding: gzip`` despite ``Accept-Encoding: identity``; small on the wire, huge inflated."""
    import zlib

    hub.inject("gzip_bomb", path_glob="/api/v1/models/*", inflated=8 << 20)
    r = http.get(f"{hub.endpoint}/api/v1/models/{REPO}/revisions", headers={"Accept-Encoding": "identity"},
                 timeout=TIMEOUT, stream=True)
    assert r.headers["Content-Encoding"] == "gzip"
    wire = r.raw.read(decode_content=False)
    assert len(wire) < 64_000 and int(r.headers["Content-Length"]) == len(wire)
    inflated = zlib.decompress(wire, 16 + zlib.MAX_WBITS)
    assert len(inflated) > 8 << 20 and inflated[: 8 << 20].strip() == b""
    assert json.loads(inflated)["Data"]["RevisionMap"]["Branches"][0]["CommitId"] == repo
    assert "Content-Encoding" not in http.get(f"{hub.endpoint}/api/v1/models/{REPO}/revisions",
                                              timeout=TIMEOUT).headers  # consumed: the next answer is clean


def test_malformed_sets_and_drops_fields(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    hub.inject("malformed", path_glob=f"/api/models/{REPO}*", set={"siblings.*.lfs.size": "abc"}, drop=["sha"])
    info = http.get(f"{hub.endpoint}/api/models/{REPO}?blobs=true", timeout=TIMEOUT).json()
    assert "sha" not in info
    assert [s["lfs"]["size"] for s in info["siblings"] if "lfs" in s] == ["abc", "abc"]
    assert http.get(f"{hub.endpoint}/api/models/{REPO}?blobs=true", timeout=TIMEOUT).json()["sha"] == repo
    hub.inject("malformed", path_glob="*/revisions", set={"Data.RevisionMap.Branches": {"a": 1}})
    data = http.get(f"{hub.endpoint}/api/v1/models/{REPO}/revisions", timeout=TIMEOUT).json()["Data"]
    assert data["RevisionMap"]["Branches"] == {"a": 1}
    hub.inject("malformed", path_glob="*/revisions", set={"Data": [1, 2, 3]})
    assert http.get(f"{hub.endpoint}/api/v1/models/{REPO}/revisions", timeout=TIMEOUT).json()["Data"] == [1, 2, 3]
    hub.inject("malformed", path_glob="*/repo/files", set={"Data.Files.0.Size": -5})
    files = http.get(f"{hub.endpoint}/api/v1/models/{REPO}/repo/files", timeout=TIMEOUT).json()["Data"]["Files"]
    assert files[0]["Size"] == -5 and files[1]["Size"] >= 0
    with pytest.raises(ValueError, match="takes"):
        hub.inject("malformed", size=3)


def test_fault_validation_and_times(hub: LoopbackHub, repo: str, http: requests.Session) -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        hub.inject("explode")
    with pytest.raises(ValueError, match="takes"):
        hub.inject("reset", offset=3)
    h = hub.inject("status", path_glob="config.json", code=500, times=None)
    url = hub.resolve_url(REPO, "config.json")
    assert [http.head(url, timeout=TIMEOUT).status_code for _ in range(3)] == [500] * 3
    assert h.hits == 3
    h.remove()
    assert http.head(url, timeout=TIMEOUT).status_code == 200


def test_control_route_from_another_process(hub: LoopbackHub, repo: str, tmp_path: Path) -> None:
    code = f"""
import json, urllib.request
base = {hub.endpoint!r}
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={{"Content-Type": "application/json"}})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
out = {{}}
out["add"] = call("POST", "/_control/faults", {{"kind": "status", "path_glob": "config.json", "code": 503,
                                              "retry_after": 1}})[0]
out["bad"] = call("POST", "/_control/faults", {{"kind": "nope"}})[0]
out["first"] = call("GET", "/{REPO}/resolve/main/config.json")[0]
out["second"] = call("GET", "/{REPO}/resolve/main/config.json")[0]
call("POST", "/_control/faults", {{"kind": "status", "code": 500, "times": None}})
out["listed"] = len(json.loads(call("GET", "/_control/faults")[1]))
out["delete"] = call("DELETE", "/_control/faults")[0]
out["after"] = call("GET", "/{REPO}/resolve/main/config.json")[0]
out["log"] = len(json.loads(call("GET", "/_control/log")[1]))
out["settings"] = call("POST", "/_control/settings", {{"tree_page_size": 1}})[0]
out["bad_setting"] = call("POST", "/_control/settings", {{"nope": 1}})[0]
req = urllib.request.Request(base + "/api/models/{REPO}/tree/main")
with urllib.request.urlopen(req, timeout=10) as r:
    out["link"] = "rel=\\"next\\"" in (r.headers.get("Link") or "")
print(json.dumps(out))
"""
    proc = run_python(code, sdk_env(hub, tmp_path), timeout=30)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"add": 200, "bad": 400, "first": 503, "second": 200, "listed": 2, "delete": 200,
                   "after": 200, "log": 3, "settings": 200, "bad_setting": 400, "link": True}  # fmt: skip
    assert hub.faults.describe() == []
    assert hub.tree_page_size == 1


def test_standalone_server(tmp_path: Path) -> None:
    src = tmp_path / "src" / "acme" / "cli"
    src.mkdir(parents=True)
    (src / "x.gguf").write_bytes(GGUF)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.hub", "--root", str(tmp_path / "root"), "--tree",
         str(tmp_path / "src")],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = json.loads(proc.stdout.readline())
        assert set(line["repos"]) == {"acme/cli"}
        s = requests.Session()
        s.trust_env = False
        r = s.get(f"{line['endpoint']}/acme/cli/resolve/main/x.gguf", timeout=TIMEOUT)
        assert r.content == GGUF and r.url.startswith(line["cdn_endpoint"])
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
