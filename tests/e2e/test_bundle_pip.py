"""A bundle that runs where it lands (issue 24, item 6), made by a pip-installed kit: no frozen setup anywhere.

The kit is pip-installed into a venv of its own (no source checkout on ``sys.path``, no ``PYTHONPATH``), and its
wheel is not in the package source either (``QWENKIT_WHEELS`` is the wheelhouse without it): ``bundle create``
packs the installed kit again (``bundle.wheels.installed_wheel``). The bundle is then installed on a "machine" that
has never seen qwenkit: a network namespace with loopback only (``tests.support.offline``), a fresh ``HOME``,
``PATH=/usr/bin:/bin`` whose Python (Debian's) has no kit, following exactly what ``README.txt`` says for Linux. The
server answers, and the ``qwenkit`` command the install put in ``~/.local/bin`` works.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bootstrap.catalog import bundle_manifest
from bootstrap.core.home import Home
from bootstrap.register.managers import FallbackManager
from tests.support.bundle_bed import clean_env
from tests.support.hub import LoopbackHub
from tests.support.install_bed import MODEL_FILE, MODEL_ID, MODEL_REPO, catalog_text, serve_engine, write_chat_model
from tests.support.offline import Offline
from tests.support.wheelhouse import KIT_DIST

TARGET_PYTHON = Path("/usr/bin/python3")  # Debian's: the "other machine's" Python, without the kit
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"

# What runs inside the namespace (its Python has only the standard library): the README's command, then a chat
# request to the server it installed, the qwenkit command it put on PATH, and that command stopping the server.
INSIDE = r'''
import json, os, socket, subprocess, sys, time, urllib.request
spec = json.loads(sys.argv[1])
def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    return {"argv": argv, "rc": p.returncode, "stdout": p.stdout[-6000:], "stderr": p.stderr[-20000:]}
out = {"interfaces": sorted(n for _, n in socket.if_nameindex()),
       "before": run(["sh", "-c", "command -v qwenkit || echo none"])}
started = time.monotonic()
out["install"] = run(spec["argv"])
out["install"]["seconds"] = round(time.monotonic() - started, 1)
home = os.path.join(os.environ["HOME"], ".local", "share", "qwenclientkit")
if out["install"]["rc"] == 0:
    state = json.load(open(os.path.join(home, "state.json"), encoding="utf-8"))
    key = open(os.path.join(home, "secrets", "api-key"), encoding="utf-8").read().strip()
    body = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % state["server"]["port"], data=body,
                                     headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=120) as reply:
        out["chat"] = reply.status
    qwenkit = os.path.join(os.environ["HOME"], ".local", "bin", "qwenkit")
    out["status"] = run([qwenkit, "status", "--json"])
out["stop"] = run([os.path.join(os.environ["HOME"], ".local", "bin", "qwenkit"), "service", "stop"])
print(json.dumps(out))
'''


@dataclass
class Made:
    root: Path
    manifest: bundle_manifest.Manifest
    create: subprocess.CompletedProcess[str]


def _pip_kit(root: Path, wheelhouse: Path) -> Path:
    """A venv with the kit pip-installed from its wheel (not editable, not a checkout): its ``qwenkit``."""
    venv = root / "pip-kit"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                    "--no-index", "--find-links", str(wheelhouse), KIT_DIST], check=True, capture_output=True)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import bootstrap; print(bootstrap.__file__)"],
                           check=True, capture_output=True, text=True, cwd=root, env=clean_env(PYTHONPATH=""))
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout  # the installed kit, not this checkout
    return venv / "bin" / "qwenkit"


def _without_kit(wheelhouse: Path, dest: Path) -> Path:
    """The wheelhouse as a package source that has every dependency but not the kit's own wheel."""
    dest.mkdir()
    for wheel in wheelhouse.glob("*.whl"):
        if wheel.name.startswith(f"{KIT_DIST}-"):
            continue
        if wheel.stat().st_dev == dest.stat().st_dev:
            os.link(wheel, dest / wheel.name)
        else:
            shutil.copy(wheel, dest / wheel.name)
    return dest


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path, wheelhouse: Path) -> Iterator[Made]:
    work = tmp_path_factory.mktemp("pip-bundle")
    qwenkit = _pip_kit(work, wheelhouse)
    with LoopbackHub(work / "hub") as hub:
        engine_url = serve_engine(hub, engine_asset)
        revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(work / "src" / MODEL_FILE)})
        catalog = work / "catalog.toml"
        catalog.write_text(catalog_text(revision), encoding="utf-8")
        env = clean_env(QWENKIT_CATALOG=str(catalog), QWENKIT_HF_ENDPOINT=hub.endpoint,
                        QWENKIT_MODELSCOPE_ENDPOINT=hub.endpoint, QWENKIT_ENGINE_URL=engine_url,
                        QWENKIT_WHEELS=str(_without_kit(wheelhouse, work / "index")))
        env.pop("PYTHONPATH")
        root = work / "USB 离线包"
        proc = subprocess.run([str(qwenkit), "bundle", "create", "--out", str(root), MODEL_ID, "--platform",
                               "linux-x64", "--python", VERSION], cwd=work, env=env, capture_output=True, text=True,
                              timeout=1800, check=False, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr[-4000:]
        yield Made(root, bundle_manifest.read_dir(root), proc)


def test_a_pip_made_bundle_says_what_to_run_and_carries_it(made: Made) -> None:
    setups = {f.path: f for f in made.manifest.of_kind("setup")}
    assert set(setups) == {"install.sh", "payload/launch.py"}  # Linux only: no install.bat, no frozen setup
    assert (made.root / "install.sh").stat().st_mode & 0o111
    wheels = [f.path.rpartition("/")[2] for f in made.manifest.of_kind("wheel")]
    assert any(name.startswith(f"{KIT_DIST}-") for name in wheels)  # packed from the installed kit
    assert "No setup program in the bundle: target machines run install.sh" in made.create.stderr
    readme = (made.root / "README.txt").read_text(encoding="utf-8")
    assert "double-click the setup" not in readme and "双击本目录中的安装程序" not in readme
    assert _readme_linux_line(readme) == 'sh "<this folder>/install.sh"'
    assert f"(it needs Python {VERSION}:" in readme and f"（需要 Python {VERSION}：" in readme
    proc = subprocess.run(["sha256sum", "-c", "--strict", "payload/SHA256SUMS"], cwd=made.root, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_install_as_the_readme_says_on_a_machine_without_qwenkit_or_network(made: Made, tmp_path: Path) -> None:
    offline = Offline(tmp_path / "guard")
    if not offline.netns:
        pytest.fail("this test needs a network namespace (unshare --user --net): the target machine has no network",
                    pytrace=False)
    user_home = tmp_path / "用户"
    user_home.mkdir()
    readme = (made.root / "README.txt").read_text(encoding="utf-8")
    command = shlex.split(_readme_linux_line(readme).replace("<this folder>", str(made.root)))
    assert "Add --yes to answer its one question in advance" in readme
    argv = [*command, "--yes"]
    env = {"HOME": str(user_home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    wrapped, wrapped_env = offline.wrap([str(TARGET_PYTHON), "-c", INSIDE, json.dumps({"argv": argv})], env)
    try:
        proc = subprocess.run(wrapped, env=wrapped_env, capture_output=True, text=True, timeout=1800, check=False,
                              stdin=subprocess.DEVNULL, cwd=tmp_path)
    finally:
        FallbackManager(Home(user_home / ".local" / "share" / "qwenclientkit")).stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["interfaces"] == ["lo"] and out["before"]["stdout"].strip() == "none"
    install = out["install"]
    assert install["rc"] == 0, install["stderr"][-6000:]
    assert "Preparing QwenClientKit from this bundle" in install["stderr"]
    assert "The server answers" in install["stderr"] + install["stdout"]
    assert out["chat"] == 200
    assert out["status"]["rc"] == 0 and json.loads(out["status"]["stdout"])["healthy"] is True
    assert out["stop"]["rc"] == 0
    assert offline.attempts() == []  # not one connection or lookup beyond loopback
    print(json.dumps({"install_s": install["seconds"], "argv": argv[:2]}, ensure_ascii=False))


def _readme_linux_line(readme: str) -> str:
    """The command the README's English part gives for Linux (``  Linux: in a terminal, run  CMD  (…)``)."""
    line = next(ln for ln in readme.splitlines() if ln.startswith("  Linux: "))
    return line.split("run  ", 1)[1].split("  (", 1)[0]
