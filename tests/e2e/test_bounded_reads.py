"""The reads issue 24 item 2 left unbounded, through the real CLI: a served bundle's manifest probe, a served bundle's
files read by ``bundle verify``, and the engine's release API. Each source here answers, byte by byte, so that no
socket read ever times out: only a bound on the whole request ends the wait.

Measured before this change (bounds shrunk as below, runs killed after 60 s):
- ``install --bundle URL``, the manifest's header block trickled: still waiting at 60 s (the probe that asks
  whether the URL is a bundle had only a per-read timeout) → exit 4, "cannot fetch …/payload/manifest.json: no
  complete answer within 2 s", 2.5 s;
- ``bundle verify URL``, a model file's body trickled: still waiting at 60 s → exit 4, "cannot fetch …: slower
  than 1.0 KiB/s for 2 s", 2.5 s (the manifest itself was bounded already: 2.4 s);
- ``bundle create``, the release API's body trickled: still waiting at 60 s → exit 4, "the release API … did not
  answer usefully: no complete answer within 2 s", 2.8 s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootstrap.catalog.bundle_platforms import PLATFORMS
from bootstrap.catalog.engine_pins import assets_for, load_pins
from bootstrap.core.errors import ExitCode
from tests.support.bundle_bed import clean_env
from tests.support.bundle_files import model_bundle
from tests.support.hostile_sources import FILE, MODEL, REPO, Run, catalog_toml, run_cli
from tests.support.hub import LoopbackHub
from tests.support.trickle_server import TrickleServer, trickle_server

# The bounds shrunk (defaults 30 s, 30 s, 600 s: bootstrap/fetch/http_session.py).
BOUNDS = {"QWENKIT_META_DEADLINE": "2", "QWENKIT_RATE_WINDOW": "2", "QWENKIT_SEGMENT_DEADLINE": "3"}
KILL_S = 90  # a run still going by then is a hang (each ends within a few seconds of its bound)


@pytest.fixture
def bundle(tmp_path: Path) -> Iterator[TrickleServer]:
    """A small real bundle (one model file, a real manifest pair) served over HTTP."""
    root = tmp_path / "www"
    root.mkdir()
    model_bundle(root, REPO, [(FILE, MODEL[:300_000])])
    with trickle_server(root) as server:
        yield server


def one_error(run: Run) -> str:
    """The run's one ``error:`` line, checked: it ended, with exit 4, no traceback, a ``hint:`` after it."""
    assert run.rc is not None, f"still running after {KILL_S} s: {run.stderr[-2000:]}"
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.rc == ExitCode.SOURCE, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    assert len(errors) == 1, run.stderr[-3000:]
    assert errors[0] + 1 < len(lines) and lines[errors[0] + 1].startswith("hint: "), run.stderr[-3000:]
    return lines[errors[0]]


@pytest.mark.parametrize("part", ["headers", "body"])
def test_install_from_a_bundle_url_whose_manifest_trickles_ends_with_one_line(
        bundle: TrickleServer, tmp_path: Path, part: str) -> None:
    """The first read of ``install --bundle URL`` asks whether the URL is a bundle; a server that trickles the
    header block held it forever. Now the same 2 s bound as every metadata request, and the one line names it."""
    probe = bundle.trickle("/payload/manifest.json", part, lead=12)
    home = tmp_path / "home"
    run = run_cli(["install", "--bundle", bundle.url, "--yes"], clean_env(QWENKIT_HOME=str(home), **BOUNDS), KILL_S)
    line = one_error(run)
    assert line == f"error: cannot fetch {bundle.url}/payload/manifest.json: no complete answer within 2 s " \
                   "(it answers too slowly)"
    assert probe.hits >= 1
    assert not (home / "state.json").exists() and not (home / "bundle").exists()  # nothing of it trusted


@pytest.mark.parametrize(("glob", "part", "step", "every", "cause"), [
    ("/payload/manifest.json", "headers", 1, 5.0, r"no complete answer within 2 s \(it answers too slowly\)"),
    ("/payload/manifest.json", "body", 1, 5.0, r"no complete answer within 2 s \(it answers too slowly\)"),
    # below the floor (1 KiB/s over the 2 s window)
    ("/payload/models/*", "body", 1, 5.0, r"slower than 1(\.0)? KiB/s for 2 s"),
    # 8 KiB/s, above the floor: the file's deadline (3 s for a file under 64 MiB) ends it; whole it takes 37 s
    ("/payload/models/*", "body", 2048, 0.25, r"no complete answer within 3 s \(it answers too slowly\)"),
], ids=["manifest-headers", "manifest-body", "file-below-floor", "file-past-deadline"])
def test_bundle_verify_of_a_url_that_trickles_ends_with_one_line(
        bundle: TrickleServer, tmp_path: Path, glob: str, part: str, step: int, every: float, cause: str) -> None:
    """``bundle verify URL`` reads the manifest (a metadata request) and then every file whole, hashing it: each
    file read now has the download engine's rate floor and a deadline for its size (``verify.file_budget``)."""
    fault = bundle.trickle(glob, part, step=step, every=every, lead=12)
    run = run_cli(["bundle", "verify", bundle.url], clean_env(QWENKIT_HOME=str(tmp_path / "home"), **BOUNDS),
                  KILL_S)
    line = one_error(run)
    assert fault.hits == 1
    assert re.fullmatch(rf"error: cannot fetch {re.escape(bundle.url)}{glob.replace('*', '.+')}: {cause}",
                        line), line


def test_bundle_create_whose_release_api_trickles_ends_with_one_line(tmp_path: Path) -> None:
    """The engine's pins carry no sha256 (payload/engines.toml says why), so the release API is asked for each
    asset's digest: a trickled answer held ``bundle create`` (and an install) forever."""
    pins = load_pins()  # payload/engines.toml
    [asset] = assets_for(pins, PLATFORMS["linux-x64-cpu"].variants[0])
    assert asset.sha256 is None  # else no API request is made and this test proves nothing
    out = tmp_path / "bundle"
    with LoopbackHub(tmp_path / "hub") as hub:
        hub.create_repo(REPO, {FILE: MODEL})
        hub.add_release_asset(asset.repo, asset.tag, b"never downloaded", asset.name)
        api = hub.inject("trickle", scope="api", path_glob="/api/v3/repos/*", times=None, bytes=1, every=5.0,
                         offset=10)
        catalog = tmp_path / "catalog.toml"
        catalog.write_text(catalog_toml(), encoding="utf-8")
        env = clean_env(QWENKIT_HOME=str(tmp_path / "home"), QWENKIT_CATALOG=str(catalog),
                        QWENKIT_HF_ENDPOINT=hub.endpoint, QWENKIT_MODELSCOPE_ENDPOINT=hub.endpoint,
                        QWENKIT_ENGINE_URL=hub.release_base(asset.repo), **BOUNDS)
        run = run_cli(["bundle", "create", "--out", str(out), "tiny", "--platform", "linux-x64-cpu"], env, KILL_S)
        line = one_error(run)
        assert line == f"error: the release API {hub.release_api_url(asset.repo, asset.tag)} did not answer " \
                       "usefully: no complete answer within 2 s (it answers too slowly)"
        assert api.hits >= 1
    assert not (out / "payload" / "manifest.json").exists()  # no bundle published
