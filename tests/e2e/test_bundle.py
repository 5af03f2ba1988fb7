"""Offline bundles end to end (issue 7), with real parts only.

A bundle is made from the loopback hub (engine release asset, a tiny model, the real Gemma file, wheels for this
Python from the local wheelhouse, the frozen setup), checked with ``bundle verify``, and installed:

1. with no network at all: inside a network namespace whose only interface is loopback (``unshare -rn``), the
   setup executable run from the bundle folder finds the bundle beside itself, installs, and the server answers a
   chat request; a rerun with the drive unplugged finds the install up to date. Every Python process also carries a
   guard that logs (and refuses) any non-loopback connection or name lookup: the log must stay empty. Where no
   namespace can be had, the guard alone is the fence (and the source checkout stands in for the frozen setup,
   which a ``sitecustomize`` cannot reach);
2. over HTTP from ``python -m http.server`` (what an intranet does) into two homes, unattended (an answers file
   for one, flags for the other);
3. a one-byte change in any payload file is refused: ``bundle verify`` names every altered file, and an install
   that reads an altered file stops with exit 5 before anything is placed, leaving a working install untouched.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from bootstrap.bundle.verify import verify_bundle
from bootstrap.catalog import bundle_manifest
from bootstrap.core.errors import ExitCode, IntegrityError
from bootstrap.core.home import Home
from bootstrap.register.managers import FallbackManager
from tests.support.bundle_bed import (
    GEMMA_ID,
    GEMMA_REPO,
    BundleBed,
    clean_env,
    make_bed,
    qwenkit,
    two_model_catalog,
)
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import MODEL_FILE, MODEL_ID, MODEL_REPO, write_chat_model
from tests.support.offline import Offline
from tests.support.testbed import GEMMA_FILE

SETUP_NAME = "QwenClientKit-Setup"


@dataclass
class Made:
    bed: BundleBed
    root: Path
    manifest: bundle_manifest.Manifest
    create_log: str
    setup: Path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path, gemma_gguf: Path, wheelhouse: Path,
         frozen_setup: Path) -> Iterator[Made]:
    """One bundle for the module, made once, in a folder whose name has spaces, ``&``, ``%`` and Chinese."""
    work = tmp_path_factory.mktemp("bundle")
    tiny = write_chat_model(work / "src" / MODEL_FILE)
    with LoopbackHub(work / "hub") as hub:
        bed = make_bed(hub, engine_asset, gemma_gguf, tiny, work / "catalog.toml", wheelhouse)
        root = work / "USB 离线包 & 100%"
        proc = bed.create(root, "--setup", str(frozen_setup))
        assert proc.returncode == 0, proc.stderr[-3000:]
        manifest = bundle_manifest.read_dir(root)
        yield Made(bed, root, manifest, proc.stderr, frozen_setup)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _flip(path: Path, offset: int | None = None) -> bytes:
    """Change one byte (the middle one by default) in place; returns the original bytes."""
    data = path.read_bytes()
    at = len(data) // 2 if offset is None else offset
    path.write_bytes(data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:])
    return data


def _chat(home: Home) -> requests.Response:
    state = json.loads(home.state_file.read_text(encoding="utf-8"))
    key = home.api_key_file.read_text(encoding="utf-8").strip()
    with requests.Session() as session:
        session.trust_env = False
        return session.post(f"http://127.0.0.1:{state['server']['port']}/v1/chat/completions", timeout=120,
                            headers={"Authorization": f"Bearer {key}"},
                            json={"messages": [{"role": "user", "content": "The capital of France is"}],
                                  "max_tokens": 8, "temperature": 0})


def test_bundle_holds_everything_and_verifies(made: Made) -> None:
    kinds = {f.kind for f in made.manifest.files}
    assert {"model", "engine", "wheel", "setup", "doc"} <= kinds
    models = {f.path for f in made.manifest.of_kind("model")}
    assert models == {f"payload/models/{GEMMA_REPO}/{GEMMA_FILE}", f"payload/models/{MODEL_REPO}/{MODEL_FILE}"}
    assert (made.root / SETUP_NAME).is_file()
    for entry in made.manifest.files:  # every listed file is there with the listed bytes
        assert (made.root / entry.path).stat().st_size == entry.size and _sha(made.root / entry.path) == entry.sha256
    proc = qwenkit("bundle", "verify", str(made.root), "--json", env=clean_env())
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] and report["files"] == len(made.manifest.files) and report["problems"] == []


def test_install_with_no_network_at_all(made: Made, tmp_path: Path) -> None:
    """The setup in the bundle folder installs with no network, the server answers, a rerun needs no drive."""
    offline = Offline(tmp_path / "guard")
    home = Home(tmp_path / "离线 home")
    frozen = offline.mode.startswith("netns")  # the frozen setup ignores a sitecustomize guard: netns only
    installer = [str(made.root / SETUP_NAME)] if frozen else [sys.executable, "-m", "bootstrap"]
    spec = {"installer": installer, "bundle": str(made.root), "home": str(home.root), "pass_bundle": not frozen}
    argv, env = offline.wrap([sys.executable, "-m", "tests.support.offline_session", json.dumps(spec)],
                             clean_env(QWENKIT_HOME=str(home.root)))
    made.bed.hub.clear_log()
    try:
        proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1200,
                              check=False, stdin=subprocess.DEVNULL)
    finally:
        FallbackManager(home).stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    install = out["install"]
    assert install["rc"] == 0, install["stderr"][-3000:]
    if offline.mode.startswith("netns"):
        assert out["interfaces"] == ["lo"]  # nothing but loopback in the namespace
    assert "Installing from the bundle" in install["stderr"] and "The server answers" in install["stdout"]
    assert out["chat"]["status"] == 200 and out["chat"]["content"].strip()
    assert out["rerun"]["rc"] == 0 and "Up to date" in out["rerun"]["stdout"], out["rerun"]["stderr"][-2000:]
    assert "not reachable now" in out["rerun"]["stderr"]
    assert out["chat_after_rerun"]["status"] == 200
    assert offline.attempts() == []  # not one connection or lookup beyond loopback
    assert made.bed.hub.requests() == []  # and the hub saw nothing
    state = json.loads(home.state_file.read_text(encoding="utf-8"))
    assert state["request"]["source"] == str(made.root)
    listed = {f.sha256 for f in made.manifest.of_kind("model")}
    assert {f["sha256"] for f in state["files"]} <= listed
    assert (home.root / state["venv_python"]).is_file()  # the runtime venv, built from the bundle's wheels
    assert not home.wheels_cache.exists() and not (home.staging_dir / "held").exists()


def test_two_homes_from_a_bundle_served_over_http(made: Made, tmp_path: Path) -> None:
    """An intranet: ``python -m http.server`` serves the folder; two machines install unattended from its URL."""
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory",
                               str(made.root), "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    homes = [Home(tmp_path / "机器 A"), Home(tmp_path / "machine B")]
    try:
        assert server.stdout is not None
        port = re.search(r"port (\d+)", server.stdout.readline())
        assert port is not None
        url = f"http://127.0.0.1:{port.group(1)}/"
        offline = Offline(tmp_path / "guard", netns=False)  # the web server is on this host's loopback
        answers = tmp_path / "answers.toml"
        answers.write_text(f'bundle = "{url}"\nservice = false\nverify = false\n', encoding="utf-8")
        runs = [["install", "--answers", str(answers)],
                ["install", "--bundle", url, "--yes", "--no-service", "--no-venv", MODEL_ID]]
        for home, args in zip(homes, runs, strict=True):
            argv, env = offline.wrap([sys.executable, "-m", "bootstrap", *args],
                                     clean_env(QWENKIT_HOME=str(home.root)))
            proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
                                  check=False, stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert _chat(home).status_code == 200
        assert offline.attempts() == []
        states = [json.loads(h.state_file.read_text(encoding="utf-8")) for h in homes]
        assert [s["model_id"] for s in states] == [GEMMA_ID, MODEL_ID]
        assert states[0]["server"]["port"] != states[1]["server"]["port"]  # the second moved to a free port
        assert all(s["request"]["source"] == url.rstrip("/") for s in states)
    finally:
        for home in homes:
            FallbackManager(home).stop()
        server.terminate()
        server.wait(timeout=30)


def test_the_setup_of_a_newer_bundle_upgrades_in_place(made: Made, tmp_path: Path) -> None:
    """A new revision of one model, a new bundle made reusing the old one, its setup rerun: only that file is
    copied, the engine stays, the server answers with the new file."""
    home = Home(tmp_path / "home")
    env = clean_env(QWENKIT_HOME=str(home.root))
    first = qwenkit("install", "--bundle", str(made.root), "--yes", "--no-service", "--no-venv", MODEL_ID, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    engine_before = json.loads(home.state_file.read_text(encoding="utf-8"))["engine"]
    try:
        new_model = write_chat_model(tmp_path / "v2" / MODEL_FILE, seed=7)
        revision = made.bed.hub.commit(MODEL_REPO, {MODEL_FILE: new_model})
        catalog = tmp_path / "catalog-v2.toml"
        catalog.write_text(two_model_catalog(made.bed.hub.commit_of(GEMMA_REPO), revision), encoding="utf-8")
        newer = tmp_path / "bundle v2"
        made_v2 = made.bed.create(newer, "--reuse", str(made.root), "--setup", str(made.setup),
                                  env=made.bed.create_env(QWENKIT_CATALOG=str(catalog)))
        assert made_v2.returncode == 0, made_v2.stderr[-3000:]
        proc = subprocess.run([str(newer / SETUP_NAME), "install", "--yes", "--no-service", "--no-venv"],
                              env=env, capture_output=True, text=True, timeout=900, check=False,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert f"a new revision of {MODEL_FILE}" in proc.stderr and "upgraded" in proc.stdout.lower()
        state = json.loads(home.state_file.read_text(encoding="utf-8"))
        assert state["request"]["source"] == str(newer) and state["engine"] == engine_before
        assert [f["sha256"] for f in state["files"]] == [_sha(new_model)]
        assert _sha(home.models_dir / MODEL_REPO / MODEL_FILE) == _sha(new_model)
        assert _chat(home).status_code == 200
    finally:
        FallbackManager(home).stop()


def test_with_the_drive_gone_a_change_asks_for_it(made: Made, tmp_path: Path) -> None:
    """Unplugged, the records say the install is up to date; a change that needs the bundle's files asks for the
    drive (exit 2) and leaves the install serving."""
    home = Home(tmp_path / "home")
    env = clean_env(QWENKIT_HOME=str(home.root))
    first = qwenkit("install", "--bundle", str(made.root), "--yes", "--no-service", "--no-venv", MODEL_ID, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    before = home.state_file.read_bytes()
    away = made.root.with_name(made.root.name + " (unplugged)")
    made.root.rename(away)
    try:
        same = qwenkit("install", "--yes", "--no-service", "--no-venv", env=env)
        other = qwenkit("install", "--yes", "--no-service", "--no-venv", GEMMA_ID, env=env)
    finally:
        away.rename(made.root)
        try:
            assert _chat(home).status_code == 200
        finally:
            FallbackManager(home).stop()
    assert same.returncode == 0 and "Up to date" in same.stdout
    assert other.returncode == ExitCode.USAGE and "not reachable now" in other.stderr
    assert "Plug the drive in" in other.stderr and home.state_file.read_bytes() == before


def test_verify_names_every_altered_payload_file(made: Made) -> None:
    """One byte changed in any file of the bundle: ``bundle verify`` refuses it and names exactly that file."""
    paths = [f.path for f in made.manifest.files] + [bundle_manifest.MANIFEST, bundle_manifest.SUMS]
    refused = {}
    for rel in paths:
        original = _flip(made.root / rel)
        try:
            try:
                report = verify_bundle(str(made.root), quiet=True)
                refused[rel] = [p.path for p in report.problems] == [rel]
            except IntegrityError:  # the manifest pair itself: refused before any file is read
                refused[rel] = rel in (bundle_manifest.MANIFEST, bundle_manifest.SUMS)
        finally:
            (made.root / rel).write_bytes(original)
    assert refused and all(refused.values()), {k: v for k, v in refused.items() if not v}
    assert verify_bundle(str(made.root), quiet=True).ok  # everything restored


def _tamper_cases(manifest: bundle_manifest.Manifest, *, every: bool = False) -> list[tuple[str, int | None]]:
    """Files an install of the default model on this machine reads (the model twice: mid-file, and inside the GGUF
    header): one of each kind, or ``every`` one of them."""
    gemma = f"payload/models/{GEMMA_REPO}/{GEMMA_FILE}"
    engine = next(f.path for f in manifest.of_kind("engine") if f.platform == "ubuntu-x64")  # no GPU here
    wheels = sorted(f.path for f in manifest.of_kind("wheel"))
    if not every:
        wheels = [next(w for w in wheels if "/qwenclientkit-" in w), next(w for w in wheels if "/openai-" in w)]
    return [(bundle_manifest.MANIFEST, None), (bundle_manifest.SUMS, None), (engine, None),
            *((w, None) for w in wheels), (gemma, None), (gemma, 64)]


def _refused_installs(made: Made, tmp_path: Path, cases: list[tuple[str, int | None]]) -> dict[str, tuple]:
    """Per altered file, a fresh install from the bundle: (exit code, what it placed, its last lines)."""
    results = {}
    for rel, offset in cases:
        original = _flip(made.root / rel, offset)
        fresh = Home(tmp_path / f"fresh-{len(results)}")
        try:
            proc = qwenkit("install", "--bundle", str(made.root), "--yes", "--no-service",
                           env=clean_env(QWENKIT_HOME=str(fresh.root)))
        finally:
            (made.root / rel).write_bytes(original)
        placed = [str(p) for p in (fresh.models_dir, fresh.engines_dir, fresh.venv_dir, fresh.state_file)
                  if p.is_file() or any(x.is_file() for x in p.rglob("*"))]
        results[f"{rel}@{offset}"] = (proc.returncode, placed, proc.stderr.strip().splitlines()[-2:])
        shutil.rmtree(fresh.root, ignore_errors=True)
    return results


def test_an_install_that_reads_an_altered_file_places_nothing(made: Made, tmp_path: Path) -> None:
    """Each altered file stops a fresh install with exit 5 before anything is placed; a working home that is asked
    to switch to the altered model keeps serving its model, its state byte-identical."""
    working = Home(tmp_path / "working")
    env = clean_env(QWENKIT_HOME=str(working.root))
    first = qwenkit("install", "--bundle", str(made.root), "--yes", "--no-service", "--no-venv", MODEL_ID, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    before = working.state_file.read_bytes()
    try:
        results = _refused_installs(made, tmp_path, _tamper_cases(made.manifest))
        failures = {case: r for case, r in results.items() if r[0] != ExitCode.INTEGRITY or r[1]}
        assert len(results) == 7 and not failures, failures
        # The working home asked to switch to the altered Gemma: refused, and it keeps serving the tiny model.
        gemma = made.root / f"payload/models/{GEMMA_REPO}/{GEMMA_FILE}"
        original = _flip(gemma)
        try:
            switch = qwenkit("install", "--bundle", str(made.root), "--yes", "--no-service", "--no-venv", GEMMA_ID,
                             env=env)
        finally:
            gemma.write_bytes(original)
        assert switch.returncode == ExitCode.INTEGRITY, switch.stderr[-2000:]
        assert working.state_file.read_bytes() == before
        assert _chat(working).status_code == 200
    finally:
        FallbackManager(working).stop()


@pytest.mark.slow
def test_every_file_an_install_reads_is_refused(made: Made, tmp_path: Path) -> None:
    """The full matrix (every wheel too): ``-m slow``; prints one JSON line per case for the closing note."""
    results = _refused_installs(made, tmp_path, _tamper_cases(made.manifest, every=True))
    for case, (code, placed, last) in results.items():
        print(json.dumps({"case": case, "exit": code, "placed": placed, "message": last[0] if last else ""}))
    failures = {case: r for case, r in results.items() if r[0] != ExitCode.INTEGRITY or r[1]}
    assert len(results) > 7 and not failures, failures


def test_a_copy_cut_short_is_refused_at_once(made: Made, tmp_path: Path) -> None:
    """An interrupted copy (a file missing or short) is found by stat before any work; ``bundle verify`` names it."""
    copy = tmp_path / "partial copy"
    shutil.copytree(made.root, copy)
    wheel = copy / made.manifest.of_kind("wheel")[0].path
    wheel.unlink()
    proc = qwenkit("install", "--bundle", str(copy), "--yes", "--no-service",
                   env=clean_env(QWENKIT_HOME=str(tmp_path / "home")))
    assert proc.returncode == ExitCode.INTEGRITY and "missing" in proc.stderr
    assert not (tmp_path / "home" / "state.json").exists() and not (tmp_path / "home" / "models").exists()
    verify = qwenkit("bundle", "verify", str(copy), env=clean_env())
    assert verify.returncode == ExitCode.INTEGRITY and wheel.name in verify.stderr


def test_a_second_model_of_the_bundle_is_added_beside_with_no_hub(made: Made, tmp_path: Path) -> None:
    """A bundle carries several models: the default installs from it, then ``install MODEL --bundle DIR`` adds
    another beside it — no hub endpoint, no catalog, no engine URL in the environment, and the hub sees nothing."""
    home = Home(tmp_path / "两个模型 home")
    env = clean_env(QWENKIT_HOME=str(home.root))
    made.bed.hub.clear_log()
    try:
        first = qwenkit("install", "--bundle", str(made.root), "--yes", "--no-service", "--no-venv", env=env)
        assert first.returncode == 0, first.stderr[-3000:]
        added = qwenkit("install", MODEL_ID, "--bundle", str(made.root), "--yes", env=env)
        assert added.returncode == 0, added.stderr[-3000:]
        assert f"Added {MODEL_ID}: 2 models served" in added.stdout
        key = home.api_key_file.read_text(encoding="utf-8").strip()
        state = json.loads(home.state_file.read_text(encoding="utf-8"))
        port = state["server"]["port"]
        for model in (GEMMA_ID, MODEL_ID):
            answer = requests.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=120,
                                   headers={"Authorization": f"Bearer {key}", "Connection": "close"},
                                   json={"model": model, "max_tokens": 4,
                                         "messages": [{"role": "user", "content": "hello"}]})
            assert answer.status_code == 200, (model, answer.text)
        assert [m["source"] for m in state["library"]] == [str(made.root)]
        listed = {f.sha256 for f in made.manifest.of_kind("model")}
        assert state["library"][0]["files"][0]["sha256"] in listed
    finally:
        FallbackManager(home).stop()
    assert made.bed.hub.requests() == []
