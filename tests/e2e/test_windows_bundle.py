"""An offline bundle made for Windows on this (connected) machine, installed under Wine with no network at all.

The bundle is made by ``qwenkit bundle create --platform windows-x64-cpu --python 3.13 --setup <the real
QwenClientKit-Setup-windows-x64.exe>`` from the loopback hub (the cross-built ``win-cpu`` engine asset, a tiny chat
model) and the test bed's wheelhouse (its ``windows-x64`` wheels for CPython 3.13), into a folder named with
Chinese characters, spaces, ``&`` and parentheses. Then, inside a network namespace whose only interface is
loopback (``unshare -rn``), the setup in that folder is run under Wine as a double-click would find it: it finds
``payload/`` beside itself, installs, starts ``run_qwen.bat`` and proves it with a chat; a real chat request is
answered; with the drive "unplugged" (the folder renamed) a rerun through the home's copy of the setup finds the
install up to date. The hub outside the namespace must see no request at all.

The Python processes' offline guard (tests/support/offline.py) cannot reach into the Windows programs, so here the
namespace alone is the fence, and the test skips where no namespace can be had.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from bootstrap.catalog import bundle_manifest
from bootstrap.catalog.engine_pins import load_pins
from tests.support import testbed, wine
from tests.support.bundle_bed import clean_env, qwenkit
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import ENGINE_REPO, ENGINE_TAG, MODEL_FILE, MODEL_REPO, catalog_text, write_chat_model
from tests.support.llama import free_port
from tests.support.offline import Offline, netns_available
from tests.support.wheelhouse import WINDOWS

pytestmark = pytest.mark.skipif(not netns_available(),
                                reason="needs an unprivileged network namespace (unshare --user --net)")

BUNDLE_DIR = "离线包 USB & (x)"
HOME_DIR = "王五 A&B ! (y)"
INSTALL_TIMEOUT_S = 1500  # install + chat + rerun under Wine on a busy 2-core machine: a bound, not a speed check


@dataclass
class WinBundle:
    root: Path
    setup: Path
    manifest: bundle_manifest.Manifest
    hub: LoopbackHub
    create_log: str


@pytest.fixture(scope="module")
def win_bundle(windows_setup: Path, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinBundle]:
    win_bin = testbed.windows_engine_dir()
    if win_bin is None:
        pytest.skip(f"the Windows engine is not provisioned (Wine or mingw-w64 missing, or {testbed.WINDOWS_OPT_IN}=0)")
    work = tmp_path_factory.mktemp("win-bundle")
    asset = wine.pack_win_cpu(win_bin, work, ENGINE_TAG)
    with LoopbackHub(work / "hub") as hub:
        hub.add_release_asset(ENGINE_REPO, ENGINE_TAG, asset, asset.name)
        winsw = load_pins().winsw
        assert winsw is not None
        # WinSW's exe comes from GitHub, which this machine cannot reach: a Windows program stands in for it. A
        # Windows bundle carries it for services run as administrator; this install asks for none (--no-service).
        hub.add_release_asset(winsw.repo, winsw.tag, wine.build_recorder(work / "standin" / winsw.name), winsw.name)
        revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(work / "model" / MODEL_FILE)})
        catalog = work / "catalog.toml"
        catalog.write_text(catalog_text(revision), encoding="utf-8")
        root = work / BUNDLE_DIR
        env = clean_env(QWENKIT_CATALOG=str(catalog), QWENKIT_HF_ENDPOINT=hub.endpoint,
                        QWENKIT_MODELSCOPE_ENDPOINT=hub.endpoint, QWENKIT_ENGINE_URL=hub.release_base(ENGINE_REPO),
                        QWENKIT_WHEELS=str(wheelhouse))
        proc = qwenkit("bundle", "create", "--out", str(root), "--platform", "windows-x64-cpu", "--python", WINDOWS[1],
                       "--setup", str(windows_setup), env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield WinBundle(root, root / windows_setup.name, bundle_manifest.read_dir(root), hub, proc.stderr)


def test_the_windows_bundle_carries_the_setup_the_engine_and_windows_wheels(win_bundle: WinBundle) -> None:
    files = win_bundle.manifest.files
    setups = [f for f in files if f.kind == "setup"]
    assert [(f.path, f.platform) for f in setups if "/" not in f.path and f.path.endswith(".exe")] == \
        [(win_bundle.setup.name, "Windows")]
    engines = sorted(Path(f.path).name for f in files if f.kind == "engine")
    assert engines == sorted([f"llama-{ENGINE_TAG}-bin-win-cpu-x64.zip", load_pins().winsw.name])  # type: ignore[union-attr]
    wheels = [Path(f.path).name for f in files if f.kind == "wheel"]
    assert any(w.startswith("pydantic_core-") and w.endswith("-cp313-win_amd64.whl") for w in wheels)
    assert any(w.startswith("colorama-") for w in wheels)  # tqdm's Windows-only dependency, by the target's markers
    assert not any("manylinux" in w for w in wheels)
    readme = (win_bundle.root / "README.txt").read_text(encoding="utf-8")
    assert win_bundle.setup.name in readme


def test_the_setup_installs_from_the_bundle_under_wine_with_no_network(win_bundle: WinBundle, tmp_path: Path) -> None:
    prefix = wine.make_prefix(tmp_path / "prefix")  # made here, used inside: its wineserver starts in the namespace
    home = tmp_path / HOME_DIR / "QwenClientKit"
    env = {k: v for k, v in wine.wine_env(prefix).items() if not k.startswith(("QWENKIT_", "LLAMA_", "HF_"))
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env.update(QWENKIT_HOME=str(wine.windows_path(home)), QWENKIT_LANG="en", PYTHONPATH=str(REPO_ROOT))
    subprocess.run(["wineserver", "-k"], env=env, timeout=60, check=False)  # the one wineboot left, outside
    spec = {"installer": ["wine", str(win_bundle.setup)], "bundle": str(win_bundle.root), "home": str(home),
            "pass_bundle": False, "kit": ["wine", str(home / "app" / win_bundle.setup.name)], "encoding": "cp1252"}
    offline = Offline(tmp_path / "guard")
    argv, env = offline.wrap([sys.executable, "-m", "tests.support.offline_session", json.dumps(spec)], env)
    win_bundle.hub.clear_log()
    try:
        proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    finally:
        subprocess.run(["wineserver", "-k"], env=env, timeout=60, check=False)  # ends every Wine program there
        for server in wine.processes_running("llama-server.exe", str(home)):  # where that could not reach
            server.kill()
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    install = out["install"]
    assert install["rc"] == 0, install["stderr"][-3000:]
    assert out["interfaces"] == ["lo"]  # nothing but loopback where the setup ran
    assert "Installing from the bundle" in install["stderr"], install["stderr"][-3000:]
    assert "win-cpu" in install["stdout"] + install["stderr"]
    assert "The server answers" in install["stdout"], install["stdout"][-3000:]
    # The supervisor it left running unpacked itself on its own, so the setup could remove its own unpacked files.
    assert "Failed to remove temporary directory" not in install["stderr"], install["stderr"][-3000:]
    assert out["chat"]["status"] == 200 and out["chat"]["content"] is not None
    assert out["rerun"]["rc"] == 0 and "Up to date" in out["rerun"]["stdout"], out["rerun"]["stderr"][-2000:]
    assert "not reachable now" in out["rerun"]["stderr"]
    assert out["chat_after_rerun"]["status"] == 200
    assert out["stop"]["rc"] == 0, out["stop"]["stderr"][-2000:]
    assert win_bundle.hub.requests() == []  # not one request reached the hub
    state = json.loads((home / "state.json").read_text(encoding="utf-8"))
    assert state["request"]["source"] == str(wine.windows_path(win_bundle.root))
    assert (home / "run_qwen.bat").is_file() and not (home / "run_qwen.sh").exists()
    assert (home / "bin" / "llama-server.exe").is_file() or any(home.glob("**/llama-server.exe"))


def test_a_bundles_winsw_is_on_the_screen_and_a_service_that_never_runs_gives_way(win_bundle: WinBundle,
                                                                                    tmp_path: Path) -> None:
    """The bundle carries WinSW and Wine counts as administrator: the confirmation screen and the install agree on
    a WinSW service. Wine starts no service (here WinSW's stand-in registers and "starts" it, and the server never
    runs), so the install says so with a true reason, removes that registration and runs the start script under
    the supervisor instead (DESIGN.md §5), exit 0 and serving.

    Before: the screen said "the start script run_qwen.bat only" (it asked without the bundle's WinSW), the install
    registered WinSW, then ended with exit 6 "llama-server stopped: -" and a hint naming logs\\qwenclientkit.err.log,
    which did not exist."""
    prefix = wine.make_prefix(tmp_path / "prefix")
    home = tmp_path / "服务 S&B" / "QwenClientKit"
    env = {k: v for k, v in wine.wine_env(prefix).items() if not k.startswith(("QWENKIT_", "LLAMA_", "HF_"))}
    env.update(QWENKIT_HOME=str(wine.windows_path(home)), QWENKIT_LANG="en", NO_PROXY="127.0.0.1,localhost")
    port = free_port()
    setup = ["wine", str(win_bundle.setup)]
    try:
        proc = wine.run_until_exit([*setup, "install", "--bundle", str(wine.windows_path(win_bundle.root)), "--yes",
                                    "--port", str(port)], env, INSTALL_TIMEOUT_S)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs = next(line for line in proc.stderr.splitlines() if line.strip().startswith("runs as"))
        assert "Windows service via WinSW" in runs, proc.stderr[-3000:]
        assert "llama-server never ran" in proc.stderr and "no log file was written" in proc.stderr
        assert "qwenclientkit.err.log" not in proc.stderr
        assert "registered the server but never ran it" in proc.stderr and "run_qwen.bat" in proc.stderr
        assert "The server answers" in proc.stdout, proc.stdout[-3000:]
        state = json.loads((home / "state.json").read_text(encoding="utf-8"))
        assert state["service"]["manager"] == "script"
        assert not (home / "service" / "qwenclientkit-service.exe").exists()  # the registration is gone
        key = (home / "secrets" / "api-key").read_text(encoding="utf-8").strip()
        chat = requests.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=120,
                             headers={"Authorization": f"Bearer {key}"},
                             json={"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4})
        assert chat.status_code == 200, chat.text[:300]
        assert wine.run_until_exit([*setup, "uninstall", "--yes"], env, 300).returncode == 0
    finally:
        subprocess.run(["wineserver", "-k"], env=env, timeout=60, check=False)
        for server in wine.processes_running("llama-server.exe", str(home)):
            server.kill()
