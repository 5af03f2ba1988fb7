"""Model sources against the loopback hub: Hugging Face and ModelScope resolve the same bytes, pinned to one commit;
errors map to exit codes; ``auto`` ranks reachable sources by a real ranged read; bundles resolve by manifest.

All HTTP is real (127.0.0.1); the hub's fault injection makes one source slow or dead.
"""

from __future__ import annotations

import functools
import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from bootstrap.catalog.models import ModelFile, RepoRef
from bootstrap.core import console, settings
from bootstrap.core.errors import ExitCode, IntegrityError, QwenKitError, SourceError, UsageError
from bootstrap.fetch import source_modelscope
from bootstrap.fetch.records import Source, new_session
from bootstrap.fetch.source_probe import SourceOutcome, rank
from bootstrap.fetch.sources import RACE_BUDGET, resolve_files, sources_for
from tests.support.bundle_files import model_bundle
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import seeded_bytes

REPO = "acme/tiny-GGUF"
MODEL = seeded_bytes(3 * 1024 * 1024 + 5, 11)
MMPROJ = seeded_bytes(70_000, 12)
README = b"# tiny\n"
BOTH = (RepoRef("hf", REPO), RepoRef("modelscope", REPO))


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, hub: LoopbackHub) -> None:
    for name in ("HF_ENDPOINT", "MODELSCOPE_ENDPOINT", "HF_TOKEN", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
                 "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("QWENKIT_LANG", "en")
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("QWENKIT_HF_MIRRORS", raising=False)


@pytest.fixture
def commit(hub: LoopbackHub) -> str:
    return hub.create_repo(REPO, {"tiny-Q4_K_M.gguf": MODEL, "mm/mmproj-F16.gguf": MMPROJ, "README.md": README})


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(url: str) -> bytes:
    with requests.Session() as s:
        s.trust_env = False
        r = s.get(url, timeout=10)
        r.raise_for_status()
        return r.content


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("hub_name", ["hf", "modelscope"])
def test_resolves_size_sha256_and_pins_the_commit(hub: LoopbackHub, commit: str, hub_name: str) -> None:
    hub.tree_page_size = 1  # paged tree listings must not matter: metadata comes from one consistent answer
    paths = ["tiny-Q4_K_M.gguf", "mm/mmproj-F16.gguf", "README.md"]
    resolution = resolve_files(paths, sources_for(hub_name, BOTH))
    got = [r[0] for r in resolution.files]
    assert [(f.path, f.size, f.sha256) for f in got] == [
        ("tiny-Q4_K_M.gguf", len(MODEL), sha256(MODEL)),
        ("mm/mmproj-F16.gguf", len(MMPROJ), sha256(MMPROJ)),
        ("README.md", len(README), sha256(README)),  # regular git file: hashed by us, checked against its blob id
    ]
    assert {f.revision for f in got} == {commit} and all(commit in f.url for f in got)
    assert {f.source for f in got} == {hub_name}

    # A push to main after resolution does not change what the resolved URLs serve.
    new_commit = hub.commit(REPO, {"tiny-Q4_K_M.gguf": seeded_bytes(len(MODEL), 99)})
    assert new_commit != commit and hub.sha256_of(REPO, "tiny-Q4_K_M.gguf") != sha256(MODEL)
    assert sha256(fetch(got[0].url)) == sha256(MODEL)
    again = resolve_files(paths[:1], sources_for(hub_name, BOTH)).files[0][0]
    assert again.revision == new_commit and again.sha256 == hub.sha256_of(REPO, "tiny-Q4_K_M.gguf")


@pytest.mark.parametrize("hub_name", ["hf", "modelscope"])
def test_a_tag_resolves_to_its_commit(hub: LoopbackHub, commit: str, hub_name: str) -> None:
    hub.tag(REPO, "v1")
    hub.commit(REPO, {"tiny-Q4_K_M.gguf": seeded_bytes(100, 5)})
    repos = (RepoRef("hf", REPO, "v1"), RepoRef("modelscope", REPO, "v1"))
    got = resolve_files(["tiny-Q4_K_M.gguf"], sources_for(hub_name, repos)).files[0][0]
    assert (got.revision, got.size, got.sha256) == (commit, len(MODEL), sha256(MODEL))


def test_modelscope_listing_cap_is_walked_by_directory(hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {f"a/{i:02d}.txt": b"x" for i in range(8)} | {f"b/{i:02d}.txt": b"y" for i in range(8)}
    files |= {"z-model.gguf": MODEL, "c/deep/m.gguf": MMPROJ}
    files |= {f"crowded/{i:02d}.gguf": bytes([i]) * 10 for i in range(8)}
    hub.create_repo(REPO, files)
    hub.ms_files_cap = 5  # the live cap is 3000, silently; a recursive listing here would end inside a/
    monkeypatch.setattr(source_modelscope, "LISTING_CAP", 5)  # what we know of the server's cap
    src = sources_for("modelscope", BOTH)
    got = resolve_files(["z-model.gguf", "c/deep/m.gguf", "crowded/01.gguf"], src).files
    assert [g[0].sha256 for g in got] == [sha256(MODEL), sha256(MMPROJ), sha256(bytes([1]) * 10)]
    with pytest.raises(SourceError) as err:  # one directory over the cap cannot be seen past: said, not guessed
        resolve_files(["crowded/07.gguf"], src)
    assert "crowded" in err.value.message and err.value.exit_code == ExitCode.SOURCE


@pytest.mark.parametrize("hub_name", ["hf", "modelscope"])
@pytest.mark.parametrize(("repo", "revision", "path", "words"), [
    (REPO, None, "nope-Q4.gguf", [REPO, "nope-Q4.gguf"]),
    ("acme/missing", None, "tiny-Q4_K_M.gguf", ["acme/missing"]),
    (REPO, "no-such-branch", "tiny-Q4_K_M.gguf", [REPO, "no-such-branch"]),
])
def test_not_found_is_a_usage_error_naming_it(commit: str, hub_name: str, repo: str, revision: str | None,
                                               path: str, words: list[str]) -> None:
    refs = (RepoRef("hf", repo, revision), RepoRef("modelscope", repo, revision))
    with pytest.raises(UsageError) as err:
        resolve_files([path], sources_for(hub_name, refs))
    assert err.value.exit_code == ExitCode.USAGE
    assert all(w in err.value.message for w in words), err.value.message


def test_missing_file_hint_lists_the_repo_ggufs(commit: str) -> None:
    with pytest.raises(UsageError) as err:
        resolve_files(["tiny-Q8_0.gguf"], sources_for("hf", BOTH))
    assert "tiny-Q4_K_M.gguf" in (err.value.hint or "")


@pytest.mark.parametrize("variable", ["QWENKIT_HF_ENDPOINT", "QWENKIT_MODELSCOPE_ENDPOINT"])
def test_unreachable_endpoint_is_a_source_error(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    dead = closed_port_url()
    monkeypatch.setenv(variable, dead)
    hub_name = "hf" if "HF" in variable else "modelscope"
    with pytest.raises(SourceError) as err:
        resolve_files(["x.gguf"], sources_for(hub_name, BOTH))
    assert err.value.exit_code == ExitCode.SOURCE
    assert err.value.message == f"cannot reach {hub_name} ({dead.removeprefix('http://')}): connection refused"
    assert "--bundle" in (err.value.hint or "") and "resume" not in (err.value.hint or "")


def test_server_errors_are_retried_once_then_reported(hub: LoopbackHub, commit: str) -> None:
    hub.inject("status", code=503, retry_after=0, scope="api", path_glob="/api/v1/*")
    got = resolve_files(["tiny-Q4_K_M.gguf"], sources_for("modelscope", BOTH)).files[0][0]
    assert got.sha256 == sha256(MODEL)
    hub.inject("status", code=503, retry_after=0, scope="api", path_glob="/api/*", times=None)
    for name in ("hf", "modelscope"):
        with pytest.raises(SourceError):
            resolve_files(["tiny-Q4_K_M.gguf"], sources_for(name, BOTH))


def test_catalog_hint_must_match_the_listing(commit: str) -> None:
    digest = sha256(MODEL)
    good = ModelFile("tiny-Q4_K_M.gguf", sha256_hint=f"{digest[:12]}…{digest[-7:]}")
    got = resolve_files([good.path], sources_for("auto", BOTH), expected=[good]).files[0]
    assert {g.source for g in got} == {"hf", "modelscope"}
    bad = ModelFile("tiny-Q4_K_M.gguf", sha256_hint="ac0e2c1189e0…3e31a61")
    with pytest.raises(IntegrityError) as err:
        resolve_files([bad.path], sources_for("auto", BOTH), expected=[bad])
    assert err.value.exit_code == ExitCode.INTEGRITY
    assert "ac0e2c1189e0…3e31a61" in err.value.message and digest in err.value.message
    wrong_size = ModelFile("tiny-Q4_K_M.gguf", size=len(MODEL) + 1, size_exact=True)
    with pytest.raises(IntegrityError):
        resolve_files([bad.path], sources_for("hf", BOTH), expected=[wrong_size])


@pytest.fixture
def second_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackHub]:
    """Another hub serving ModelScope, so each source has its own origins (and its own faults)."""
    with LoopbackHub(tmp_path / "hub2") as h:
        monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", h.endpoint)
        yield h


@pytest.mark.parametrize("slow", ["hf", "modelscope"])
def test_auto_ranks_the_throttled_source_last(hub: LoopbackHub, second_hub: LoopbackHub, slow: str) -> None:
    hub.create_repo(REPO, {"tiny-Q4_K_M.gguf": MODEL})
    second_hub.create_repo(REPO, {"tiny-Q4_K_M.gguf": MODEL})
    throttled = hub if slow == "hf" else second_hub
    throttled.inject("throttle", rate=128 * 1024, path_glob="*.gguf", times=None)  # ~2 s for the probe read
    resolution = resolve_files(["tiny-Q4_K_M.gguf"], sources_for("auto", BOTH))
    order = [o.source for o in resolution.outcomes]
    assert order == [s for s in ("hf", "modelscope") if s != slow] + [slow]
    assert [f.source for f in resolution.files[0]] == order  # every reachable source stays as a mirror
    assert all(o.read_seconds is not None and o.error is None for o in resolution.outcomes)


def test_auto_drops_a_dead_source_with_its_reason(hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch,
                                                   commit: str) -> None:
    dead = closed_port_url()
    monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", dead)
    resolution = resolve_files(["tiny-Q4_K_M.gguf"], sources_for("auto", BOTH))
    assert [f.source for f in resolution.files[0]] == ["hf"]
    dropped = [o for o in resolution.outcomes if o.error is not None]
    assert [o.source for o in dropped] == ["modelscope"]
    assert dropped[0].error.message.endswith(f"({dead.removeprefix('http://')}): connection refused")
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", dead)
    with pytest.raises(SourceError) as err:
        resolve_files(["tiny-Q4_K_M.gguf"], sources_for("auto", BOTH))
    assert "hf" in err.value.message and "modelscope" in err.value.message


def test_auto_prefers_not_found_over_unreachable(monkeypatch: pytest.MonkeyPatch, commit: str) -> None:
    monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", closed_port_url())
    with pytest.raises(UsageError):
        resolve_files(["nope.gguf"], sources_for("auto", BOTH))


def test_sources_differing_from_the_preferred_listing_are_dropped(hub: LoopbackHub,
                                                                  second_hub: LoopbackHub) -> None:
    hub.create_repo(REPO, {"tiny-Q4_K_M.gguf": MODEL})
    second_hub.create_repo(REPO, {"tiny-Q4_K_M.gguf": seeded_bytes(len(MODEL), 77)})  # a stale mirror
    resolution = resolve_files(["tiny-Q4_K_M.gguf"], sources_for("auto", BOTH), probe=False)
    assert [f.source for f in resolution.files[0]] == ["hf"]
    assert len(resolution.notes) == 1 and "modelscope" in resolution.notes[0]


# ---- bundles and URLs ------------------------------------------------------------------------------------------
def make_bundle(root: Path, repo: str = REPO) -> Path:
    model_bundle(root, repo, [("tiny-Q4_K_M.gguf", MODEL)])
    return root


@pytest.fixture
def static_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A plain static web server (what an intranet serves a bundle with) over a fresh directory."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def test_bundle_directory_resolves_by_manifest(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "usb")
    sources = sources_for(str(bundle), (RepoRef("hf", "other/name"), RepoRef("modelscope", REPO)))
    assert [s.kind for s in sources] == ["bundle"]
    got = resolve_files(["tiny-Q4_K_M.gguf"], sources).files[0][0]
    assert got.url.startswith("file://") and (got.size, got.sha256) == (len(MODEL), sha256(MODEL))
    with pytest.raises(UsageError):
        resolve_files(["tiny-Q8_0.gguf"], sources)


def test_bundle_url_and_mirror_url(static_server: tuple[str, Path], hub: LoopbackHub, commit: str) -> None:
    url, root = static_server
    make_bundle(root)
    sources = sources_for(url + "/", BOTH)
    assert [(s.kind, s.endpoint) for s in sources] == [("bundle", url)]
    got = resolve_files(["tiny-Q4_K_M.gguf"], sources).files[0][0]
    assert sha256(fetch(got.url)) == got.sha256 == sha256(MODEL)
    mirror = sources_for(hub.endpoint, BOTH)  # no manifest there: an HF-compatible mirror
    assert [(s.kind, s.name) for s in mirror] == [("hf", hub.endpoint.split("//")[1])]
    assert resolve_files(["tiny-Q4_K_M.gguf"], mirror).files[0][0].revision == commit


@pytest.mark.parametrize("manifest", [
    "not json", json.dumps({"schema": 2, "files": []}),
    json.dumps({"schema": 1, "files": [{"path": "../../etc/passwd", "size": 1, "sha256": "0" * 64}]}),
    json.dumps({"schema": 1, "files": [{"path": "payload/x", "size": -1, "sha256": "0" * 64}]}),
])
def test_bad_manifest_is_an_integrity_error(tmp_path: Path, manifest: str) -> None:
    (tmp_path / "payload").mkdir()
    (tmp_path / "payload" / "manifest.json").write_text(manifest)
    with pytest.raises(IntegrityError):
        resolve_files(["x.gguf"], sources_for(str(tmp_path), BOTH))


@pytest.mark.parametrize("spec", ["ftp://x", "nowhere-dir", "HF ", ""])
def test_source_spec(spec: str) -> None:
    if spec.strip().lower() == "hf":
        assert [s.kind for s in sources_for(spec, BOTH)] == ["hf"]
        return
    with pytest.raises(UsageError):
        sources_for(spec, BOTH)


def test_hf_token_goes_only_to_the_hf_endpoint(monkeypatch: pytest.MonkeyPatch, hub: LoopbackHub) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    hf, ms = sources_for("auto", BOTH)
    assert hf.auth_headers() == {"Authorization": "Bearer hf_secret"} and ms.auth_headers() == {}
    assert sources_for(hub.endpoint, BOTH)[0].token == "hf_secret"  # the configured endpoint by URL
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", "https://huggingface.co")
    assert sources_for(hub.endpoint, BOTH)[0].token is None  # any other mirror: never


def test_single_hub_file_uses_the_same_name_on_the_other_hub(commit: str) -> None:
    only_hf = (RepoRef("hf", REPO, "0" * 40),)
    (ms,) = sources_for("modelscope", only_hf)
    assert (ms.kind, ms.repo, ms.revision) == ("modelscope", REPO, None)
    got = resolve_files(["tiny-Q4_K_M.gguf"], [ms]).files[0][0]
    assert got.revision == commit


def test_every_error_is_a_qwenkit_error(hub: LoopbackHub, commit: str) -> None:
    """A 200 that is not a hub (a captive portal) is a source failure, not a crash."""
    hub.inject("status", code=200, scope="api", path_glob="/api/*", times=None)
    for name in ("hf", "modelscope"):
        with pytest.raises(QwenKitError):
            resolve_files(["tiny-Q4_K_M.gguf"], [Source(name, name, hub.endpoint, REPO)], session=new_session())


@pytest.fixture
def black_hole() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` where connections are accepted (the kernel's backlog) and never answered: a hub
    whose packets vanish after the handshake, the slowest way to fail."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as srv:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"


def test_auto_does_not_wait_for_a_black_holed_hub(monkeypatch: pytest.MonkeyPatch, commit: str,
                                                   black_hole: str) -> None:
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", black_hole)
    start = time.monotonic()
    resolution = resolve_files(["tiny-Q4_K_M.gguf"], sources_for("auto", BOTH), probe=False)
    assert time.monotonic() - start < RACE_BUDGET + 3.0  # the race budget (slack for a busy machine), not a timeout
    assert [f.source for f in resolution.files[0]] == ["modelscope"]
    dropped = {o.source: o.error.message for o in resolution.outcomes if o.error is not None}
    assert dropped == {"hf": f"cannot reach hf ({black_hole.removeprefix('http://')}): no answer within 3 s "
                             "(packets dropped by a firewall, or a very slow network)"}


def test_hf_mirrors_are_extra_hf_sources(hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch, commit: str) -> None:
    dead = closed_port_url()
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", dead)
    monkeypatch.setenv("QWENKIT_HF_MIRRORS", f" {hub.endpoint}/ ,{dead}")
    sources = sources_for("hf", BOTH)
    mirror = hub.endpoint.removeprefix("http://")
    assert [(s.name, s.endpoint) for s in sources] == [("hf", dead), (mirror, hub.endpoint)]
    assert [s.name for s in sources_for("auto", BOTH)] == ["hf", mirror, "modelscope"]
    resolution = resolve_files(["tiny-Q4_K_M.gguf"], sources)
    assert [f.source for f in resolution.files[0]] == [mirror]


@pytest.mark.parametrize(("zone", "first"), [("Asia/Shanghai", "modelscope"), (":Asia/Urumqi", "modelscope"),
                                             ("Europe/Berlin", "hf")])
def test_a_chinese_time_zone_puts_modelscope_first(monkeypatch: pytest.MonkeyPatch, zone: str, first: str) -> None:
    monkeypatch.setenv("TZ", zone)
    assert sources_for("auto", BOTH)[0].name == first


def test_the_zh_language_puts_modelscope_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setattr(console, "language", lambda: "zh")
    assert [s.name for s in sources_for("auto", BOTH)] == ["modelscope", "hf"]


def test_time_zone_from_the_localtime_link(tmp_path: Path) -> None:
    link = tmp_path / "localtime"
    link.symlink_to("/usr/share/zoneinfo/Asia/Chongqing")
    assert settings.time_zone({}, str(link)) == "Asia/Chongqing"
    assert settings.time_zone({"TZ": "UTC"}, str(link)) == "UTC"
    assert settings.time_zone({}, str(tmp_path / "absent")) is None


def test_alike_scores_keep_the_preferred_source_first() -> None:
    preferred, fast = SourceOutcome("modelscope", 0.20, 0.10), SourceOutcome("hf", 0.18, 0.08)
    assert [o.source for o in rank([preferred, fast])] == ["modelscope", "hf"]
    much_faster = SourceOutcome("hf", 0.05, 0.02)
    assert [o.source for o in rank([preferred, much_faster])] == ["hf", "modelscope"]
