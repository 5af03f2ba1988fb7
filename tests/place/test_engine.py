"""Engine install end to end with real parts: the loopback hub serves the packed test-bed engine as upstream's
release asset (and GitHub's release API), the product downloads, verifies, extracts and probes it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import signal
import tarfile
from pathlib import Path

import pytest
import requests

from bootstrap.catalog.engine_pins import VARIANTS, EnginePins, assets_for, load_pins
from bootstrap.core import console
from bootstrap.core.errors import ExitCode, IntegrityError, UsageError
from bootstrap.core.home import Home
from bootstrap.detect.hardware import load_profile
from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.place.engine import MARKER, asset_url, install_engine, release_api_url, resolve_assets
from bootstrap.place.engine_probe import parse_devices, probe_engine
from bootstrap.plan import engine_variant
from bootstrap.plan.engine_variant import cuda_toolkit_hint
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import run_python
from tests.support.paths import REPO_ROOT, TEST_DATA

REPO = "ggml-org/llama.cpp"
TAG = "b10434"
ASSET = "llama-b10434-bin-ubuntu-vulkan-x64.tar.gz"
VARIANT = "ubuntu-vulkan-x64"
OPTIONS = FetchOptions(quiet=True, backoff_base=0.01, backoff_cap=0.05)
HARDWARE = TEST_DATA / "hardware"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy",
                 "QWENKIT_ENGINE_URL", "QWENKIT_ENGINES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    console.set_language("en")
    yield
    console.set_language(None)


@pytest.fixture
def served(hub: LoopbackHub, engine_asset: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test-bed engine served as upstream's asset; QWENKIT_ENGINE_URL aimed at the hub. Returns its sha256."""
    sha = hub.add_release_asset(REPO, TAG, engine_asset, ASSET)
    monkeypatch.setenv("QWENKIT_ENGINE_URL", hub.release_base(REPO))
    return sha


def _pins_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asset_line: str) -> Path:
    path = tmp_path / "engines.toml"
    path.write_text(
        f'schema = 1\n[engine]\nrepo = "{REPO}"\nbuild = 10434\ntag = "{TAG}"\n'
        f'[variants."{VARIANT}"]\nassets = [{{ {asset_line} }}]\n', encoding="utf-8")
    monkeypatch.setenv("QWENKIT_ENGINES", str(path))
    return path


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "我的 家")


def _leftovers(home: Home) -> list[str]:
    """Anything an install must not leave behind: staging folders, downloaded archives, partial files."""
    staged = list(home.staging_dir.iterdir()) if home.staging_dir.exists() else []
    partial = [p for p in home.partial_dir.rglob("*") if not p.is_dir()] if home.partial_dir.exists() else []
    return sorted(str(p.relative_to(home.root)) for p in staged + partial)


# ---- install from the release API digest, probe, reuse ----------------------------------------------------
def test_install_with_api_digest_probe_and_zero_request_rerun(
        hub: LoopbackHub, served: str, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        engine_asset: Path, engine_build: int | None) -> None:
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}"')  # no sha256, no size: GitHub's digest decides
    installed = install_engine(home, VARIANT, options=OPTIONS)

    assert installed.dir == home.root / "engine" / "b10434-ubuntu-vulkan-x64"
    assert installed.server == installed.dir / "llama-server" and os.access(installed.server, os.X_OK)
    assert installed.fit_params == installed.dir / "llama-fit-params"
    assert installed.assets == ((ASSET, served, engine_asset.stat().st_size),)
    assert not installed.reused
    marker = json.loads((installed.dir / MARKER).read_text())
    assert (marker["build"], marker["variant"], marker["assets"][0]["sha256"]) == (10434, VARIANT, served)
    assert _leftovers(home) == []  # archive deleted, staging renamed away
    hub.wait_idle()
    paths = [r.path for r in hub.requests()]
    assert paths[0] == f"/api/v3/repos/{REPO}/releases/tags/{TAG}"
    assert hub.bytes_served(ASSET) == engine_asset.stat().st_size

    info = probe_engine(installed.server)
    assert info.build == engine_build
    assert {"--n-cpu-moe", "--api-key-file"} <= info.flags
    assert info.devices == parse_devices("Available devices:\n  (none)\n") == ()

    hub.clear_log()
    again = install_engine(home, VARIANT, options=OPTIONS)
    hub.wait_idle()
    assert again.reused and again.dir == installed.dir and again.assets == installed.assets
    assert hub.requests() == []  # zero network on a rerun


def test_install_with_pinned_sha256_needs_no_api(
        hub: LoopbackHub, served: str, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        engine_asset: Path, engine_build: int | None) -> None:
    size = engine_asset.stat().st_size
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}", sha256 = "{served}", size = {size}')
    installed = install_engine(home, VARIANT, options=OPTIONS)
    hub.wait_idle()
    assert not [r for r in hub.requests() if "/api/" in r.path]
    assert installed.assets == ((ASSET, served, size),)
    assert probe_engine(installed.server).build == engine_build


def test_wrong_pinned_sha256_installs_nothing(
        hub: LoopbackHub, served: str, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        engine_asset: Path) -> None:
    wrong = hashlib.sha256(b"not the engine").hexdigest()
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}", sha256 = "{wrong}", size = {engine_asset.stat().st_size}')
    with pytest.raises(IntegrityError) as err:
        install_engine(home, VARIANT, options=OPTIONS)
    assert err.value.exit_code == ExitCode.INTEGRITY and ASSET in err.value.message
    assert not home.engine_dir("b10434", VARIANT).exists()
    assert _leftovers(home) == []


def test_pinned_sha256_contradicted_by_api_refused_before_download(
        hub: LoopbackHub, served: str, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = hashlib.sha256(b"not the engine").hexdigest()
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}", sha256 = "{wrong}"')  # no size: the API is asked
    with pytest.raises(IntegrityError) as err:
        install_engine(home, VARIANT, options=OPTIONS)
    assert wrong in err.value.message and served in err.value.message
    assert hub.bytes_served(ASSET) == 0
    assert not home.engine_dir("b10434", VARIANT).exists()


def test_no_digest_anywhere_is_exit_5(
        hub: LoopbackHub, served: str, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub.release_digests = False  # a release from before GitHub stated digests
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}"')
    with pytest.raises(IntegrityError) as err:
        install_engine(home, VARIANT, options=OPTIONS)
    assert err.value.exit_code == ExitCode.INTEGRITY
    assert err.value.message == (f"no checksum for {ASSET}; pin sha256 in engines.toml (QWENKIT_ENGINES) "
                                 "or install from a bundle")
    assert hub.bytes_served(ASSET) == 0


def test_hostile_asset_is_refused_and_nothing_kept(
        hub: LoopbackHub, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A correctly-digested asset whose tarball climbs out with ``..``: refused, nothing placed, archive dropped."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tf:
        for name, data in (("llama-b10434/llama-server", b"#!/bin/sh\n"), ("llama-b10434/../../../escaped", b"x")):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tf.addfile(info, io.BytesIO(data))
    hub.add_release_asset(REPO, TAG, raw.getvalue(), ASSET)
    monkeypatch.setenv("QWENKIT_ENGINE_URL", hub.release_base(REPO))
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}"')
    with pytest.raises(IntegrityError) as err:
        install_engine(home, VARIANT, options=OPTIONS)
    assert "llama-b10434/../../../escaped" in err.value.message
    assert not home.engine_dir("b10434", VARIANT).exists() and _leftovers(home) == []
    assert not list(home.root.parent.rglob("escaped"))


def test_killed_run_staging_is_cleaned_on_rerun(
        hub: LoopbackHub, served: str, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        engine_build: int | None) -> None:
    """What a kill during extraction leaves (a half-filled staging folder) is removed, then the install works."""
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}"')
    stale = home.staging_dir / "b10434-ubuntu-vulkan-x64"
    (stale / "sub").mkdir(parents=True)
    (stale / "llama-server").write_bytes(b"half written")
    (stale / "sub" / "libggml.so").write_bytes(b"x")
    (stale / "dangling.so").symlink_to("nowhere.so")
    installed = install_engine(home, VARIANT, options=OPTIONS)
    assert not stale.exists() and not (installed.dir / "sub").exists()
    assert probe_engine(installed.server).build == engine_build


def test_sigkill_during_extraction_then_rerun(
        hub: LoopbackHub, served: str, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        engine_build: int | None) -> None:
    """A real SIGKILL right after the first extracted file: nothing is placed; the rerun cleans up and installs."""
    pins = _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}"')
    code = (
        "import os, signal\n"
        "from bootstrap.place import archive\n"
        "from bootstrap.fetch.download import FetchOptions\n"
        "from bootstrap.place.engine import install_engine\n"
        "from pathlib import Path\n"
        "from bootstrap.core.home import Home\n"
        "real = archive._Writer.file\n"
        "def file(self, *a, **k):\n"
        "    real(self, *a, **k)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "archive._Writer.file = file\n"
        f"install_engine(Home(Path({str(home.root)!r})), {VARIANT!r}, options=FetchOptions(quiet=True))\n"
    )
    env = {**os.environ, "QWENKIT_ENGINE_URL": hub.release_base(REPO), "QWENKIT_ENGINES": str(pins),
           "PYTHONPATH": str(REPO_ROOT)}
    proc = run_python(code, env, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    staged = home.staging_dir / "b10434-ubuntu-vulkan-x64"
    assert len(list(staged.iterdir())) == 1  # killed with one file written
    assert not home.engine_dir("b10434", VARIANT).exists()
    hub.wait_idle()
    hub.clear_log()
    installed = install_engine(home, VARIANT, options=OPTIONS)
    assert not staged.exists() and _leftovers(home) == []
    hub.wait_idle()
    assert hub.bytes_served(ASSET) == 0  # the verified archive from the killed run was used, not fetched again
    assert probe_engine(installed.server).build == engine_build


def test_changed_pins_replace_an_outdated_install(
        hub: LoopbackHub, served: str, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A marker that no longer matches the pins (another sha256) is reinstalled, not trusted."""
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}"')
    first = install_engine(home, VARIANT, options=OPTIONS)
    marker = json.loads((first.dir / MARKER).read_text())
    marker["assets"][0]["sha256"] = "0" * 64
    (first.dir / MARKER).write_text(json.dumps(marker))
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}", sha256 = "{served}"')
    second = install_engine(home, VARIANT, options=OPTIONS)
    assert not second.reused
    assert json.loads((second.dir / MARKER).read_text())["assets"][0]["sha256"] == served
    assert _leftovers(home) == []


# ---- the loopback hub's GitHub release API ----------------------------------------------------------------
def test_release_api_route_matches_served_bytes(hub: LoopbackHub, engine_asset: Path) -> None:
    sha = hub.add_release_asset(REPO, TAG, engine_asset, ASSET)
    extra = hub.add_release_asset(REPO, TAG, b"cudart bytes", "cudart-llama-bin-win-cuda-12.4-x64.zip")
    resp = requests.get(hub.release_api_url(REPO, TAG), timeout=10)
    assert resp.status_code == 200
    release = resp.json()
    assert release["tag_name"] == TAG
    by_name = {a["name"]: a for a in release["assets"]}
    assert set(by_name) == {ASSET, "cudart-llama-bin-win-cuda-12.4-x64.zip"}
    for name, expected in ((ASSET, sha), ("cudart-llama-bin-win-cuda-12.4-x64.zip", extra)):
        body = requests.get(by_name[name]["browser_download_url"], timeout=30).content
        assert by_name[name]["digest"] == f"sha256:{expected}" == f"sha256:{hashlib.sha256(body).hexdigest()}"
        assert by_name[name]["size"] == len(body)
    assert requests.get(hub.release_api_url(REPO, "b1"), timeout=10).status_code == 404


def test_release_and_api_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    pins = load_pins()
    main = assets_for(pins, "win-cuda-12.4")[0]
    assert asset_url(main) == ("https://github.com/ggml-org/llama.cpp/releases/download/b10434/"
                               "llama-b10434-bin-win-cuda-12.4-x64.zip")
    assert release_api_url(REPO, TAG) == "https://api.github.com/repos/ggml-org/llama.cpp/releases/tags/b10434"
    assert pins.winsw is not None
    assert asset_url(pins.winsw) == "https://github.com/winsw/winsw/releases/download/v2.12.0/WinSW-x64.exe"
    assert release_api_url("winsw/winsw", "v2.12.0") == \
        "https://api.github.com/repos/winsw/winsw/releases/tags/v2.12.0"
    monkeypatch.setenv("QWENKIT_ENGINE_URL", "https://ghe.corp.example:8443/ggml-org/llama.cpp/releases/download/")
    assert release_api_url(REPO, TAG) == \
        "https://ghe.corp.example:8443/api/v3/repos/ggml-org/llama.cpp/releases/tags/b10434"
    assert asset_url(pins.winsw) == \
        "https://ghe.corp.example:8443/winsw/winsw/releases/download/v2.12.0/WinSW-x64.exe"
    monkeypatch.setenv("QWENKIT_ENGINE_URL", "http://mirror.lan/llama")  # a flat mirror: every asset under <tag>/
    assert asset_url(main) == "http://mirror.lan/llama/b10434/llama-b10434-bin-win-cuda-12.4-x64.zip"


def test_winsw_resolves_through_the_same_digest_lookup(hub: LoopbackHub, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """WinSW has no pinned sha256 either: its release API digest verifies it, from the same (swapped-repo) host."""
    payload = b"MZ" + bytes(range(256)) * 64  # stands in for WinSW-x64.exe (Windows is not here)
    sha = hub.add_release_asset("winsw/winsw", "v2.12.0", payload, "WinSW-x64.exe")
    monkeypatch.setenv("QWENKIT_ENGINE_URL", hub.release_base(REPO))
    pins = load_pins()
    assert pins.winsw is not None
    (remote,) = resolve_assets((pins.winsw,), pins.repo)
    assert (remote.sha256, remote.size) == (sha, len(payload))
    assert remote.mirrors[0].url == hub.release_url("winsw/winsw", "v2.12.0", "WinSW-x64.exe")
    (result,) = fetch_files([(remote, tmp_path / "WinSW-x64.exe")], tmp_path / "partial", OPTIONS)
    assert result.path.read_bytes() == payload


# ---- the shipped pins -------------------------------------------------------------------------------------
def test_shipped_pins_cover_every_variant_and_agree_with_the_rules() -> None:
    pins = load_pins()
    assert (pins.build, pins.tag, pins.repo) == (10434, "b10434", REPO)
    assert set(pins.assets) == set(VARIANTS)
    names = {v: [a.name for a in assets] for v, assets in pins.assets.items()}
    assert names["win-cuda-12.4"] == ["llama-b10434-bin-win-cuda-12.4-x64.zip",
                                      "cudart-llama-bin-win-cuda-12.4-x64.zip"]
    assert names["win-cuda-13"] == ["llama-b10434-bin-win-cuda-13.3-x64.zip",
                                    "cudart-llama-bin-win-cuda-13.3-x64.zip"]
    assert names["ubuntu-vulkan-x64"] == [ASSET]
    assert names["macos-arm64"] == ["llama-b10434-bin-macos-arm64.tar.gz"]
    kinds = {a.kind for assets in pins.assets.values() for a in assets}
    assert kinds == {"zip", "tar.gz"}
    assert pins.winsw is not None and (pins.winsw.name, pins.winsw.kind, pins.winsw.tag) == \
        ("WinSW-x64.exe", "exe", "v2.12.0")
    assert pins.rules is not None
    assert pins.rules.cuda12_min_driver == engine_variant.CUDA12_MIN_DRIVER
    assert pins.rules.cuda13_min_driver == engine_variant.CUDA13_MIN_DRIVER
    assert pins.rules.cuda13_min_cc == engine_variant.CUDA13_MIN_CC
    t4 = load_profile(HARDWARE / "t4_16gb.json")  # Linux + NVIDIA
    assert engine_variant.choose_variant(t4).name == pins.rules.linux_nvidia


@pytest.mark.parametrize(("body", "key"), [
    ('schema = 1\n[engine]\nrepo = "a/b"\nbuild = "x"\ntag = "b1"\n', "engine.build"),
    ('[engine]\nrepo = "a/b"\nbuild = 1\ntag = "b1"\n[variants.ubuntu-x64]\nassets = [{ name = "x.tar.gz", '
     'sha256 = "abc" }]\n', "variants.ubuntu-x64.assets[0].sha256"),
    ('[engine]\nrepo = "a/b"\nbuild = 1\ntag = "b1"\n[variants.haiku]\nassets = [{ name = "x.zip" }]\n',
     "variants.haiku"),
    ('[engine]\nrepo = "a/b"\nbuild = 1\ntag = "b1"\n[variants.ubuntu-x64]\nassets = [{ name = "../x.tar.gz" }]\n',
     "variants.ubuntu-x64.assets[0].name"),
    ('[engine]\nrepo = "a/b"\nbuild = 1\ntag = "b1"\n[variants.ubuntu-x64]\nassets = [{ name = "x.rar" }]\n',
     "variants.ubuntu-x64.assets[0].kind"),
    ('[engine\nrepo = "a/b"\n', "engines.toml"),
])
def test_malformed_pins_are_one_line_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str,
                                                  key: str) -> None:
    path = tmp_path / "engines.toml"
    path.write_text(body, encoding="utf-8")
    monkeypatch.setenv("QWENKIT_ENGINES", str(path))
    with pytest.raises(UsageError) as err:
        load_pins()
    assert err.value.exit_code == ExitCode.USAGE
    assert key in err.value.message and "\n" not in err.value.message


def test_unpinned_variant_is_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pins_file(tmp_path, monkeypatch, f'name = "{ASSET}"')
    pins: EnginePins = load_pins()
    with pytest.raises(UsageError) as err:
        assets_for(pins, "win-cuda-13")
    assert "win-cuda-13" in err.value.message


def test_cuda_toolkit_is_offered_not_forced() -> None:
    t4 = load_profile(HARDWARE / "t4_16gb.json")  # Linux + NVIDIA (recorded)
    no_gpu = load_profile(HARDWARE / "no_gpu_16gb.json")
    on_windows = dataclasses.replace(t4, os=dataclasses.replace(t4.os, system="Windows"))
    with_nvcc = {"nvcc": "/usr/local/cuda/bin/nvcc"}.get
    without: dict[str, str] = {}
    hint = cuda_toolkit_hint(t4, {}, which=with_nvcc)
    assert hint is not None and "/usr/local/cuda/bin/nvcc" in hint and "\n" not in hint
    assert "/opt/cuda" in (cuda_toolkit_hint(t4, {"CUDA_PATH": "/opt/cuda"}, which=without.get) or "")
    assert cuda_toolkit_hint(t4, {}, which=without.get) is None
    assert not [g for g in no_gpu.gpus if g.vendor == "nvidia"]
    assert cuda_toolkit_hint(no_gpu, {"CUDA_PATH": "/opt/cuda"}, which=with_nvcc) is None
    assert cuda_toolkit_hint(on_windows, {"CUDA_PATH": "C:/cuda"}, which=with_nvcc) is None
