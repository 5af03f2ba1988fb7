"""The frozen setup as the bundle maker: ``QwenClientKit-Setup bundle create`` carries no pip, and here neither
does the machine's only Python, so the wheels come from a throwaway venv made with that Python
(``bundle.wheels.pip_python``); the setup copies itself to the bundle root. Real parts only: the PyInstaller build,
the loopback hub, pip offline from the wheelhouse."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from bootstrap.bundle.create import PARTIAL
from bootstrap.catalog import bundle_manifest
from tests.support.bundle_bed import clean_env
from tests.support.hub import LoopbackHub
from tests.support.install_bed import MODEL_FILE, MODEL_ID, MODEL_REPO, catalog_text, serve_engine, write_chat_model

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(setup: Path, *argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(setup), *argv], env=env, capture_output=True, text=True, timeout=600, check=False,
                          stdin=subprocess.DEVNULL, cwd=setup.parent)


def test_frozen_setup_makes_a_bundle_holding_itself_and_the_wheels(frozen_setup: Path, engine_asset: Path,
                                                                    wheelhouse: Path, tmp_path: Path) -> None:
    tiny = write_chat_model(tmp_path / "src" / MODEL_FILE)
    catalog = tmp_path / "catalog.toml"
    out = tmp_path / "USB 盘" / "bundle"
    temp = tmp_path / "temp"  # the system's temporary folder for the setup, where the pip venv is made
    temp.mkdir()
    # The machine's only Python has no pip (Debian/Ubuntu with python3-venv but not python3-pip): running pip with
    # it fails, making a venv with it works.
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    assert subprocess.run([str(bare / "bin" / "python"), "-I", "-m", "pip", "--version"], capture_output=True,
                          check=False).returncode != 0
    with LoopbackHub(tmp_path / "hub") as hub:
        catalog.write_text(catalog_text(hub.create_repo(MODEL_REPO, {MODEL_FILE: tiny})), encoding="utf-8")
        env = clean_env(QWENKIT_CATALOG=str(catalog), QWENKIT_HF_ENDPOINT=hub.endpoint,
                        QWENKIT_MODELSCOPE_ENDPOINT=hub.endpoint, QWENKIT_ENGINE_URL=serve_engine(hub, engine_asset),
                        QWENKIT_WHEELS=str(wheelhouse), QWENKIT_HOME=str(tmp_path / "home"), TMPDIR=str(temp))
        env.pop("PYTHONPATH")  # the frozen setup runs its own code, and its pip venv must not see the checkout
        env["PATH"] = os.pathsep.join([str(bare / "bin"), "/usr/bin", "/bin"])
        made = _run(frozen_setup, "bundle", "create", "--out", str(out), MODEL_ID, "--platform", "linux-x64",
                    "--python", PY, env=env)
    assert made.returncode == 0, made.stderr[-3000:]
    assert f"Making a temporary pip environment with {bare / 'bin'}" in made.stderr, made.stderr[-3000:]
    assert "Traceback" not in made.stderr

    setup = out / frozen_setup.name
    assert _sha(setup) == _sha(frozen_setup) and os.access(setup, os.X_OK)
    manifest = bundle_manifest.read_dir(out)
    setups = {f.path: f for f in manifest.of_kind("setup")}
    assert set(setups) == {frozen_setup.name, "install.sh", "payload/launch.py"}  # and the launchers beside it
    entry = setups[frozen_setup.name]
    assert (entry.platform, entry.sha256) == ("Linux", _sha(frozen_setup))
    readme = (out / "README.txt").read_text(encoding="utf-8")  # the setup is what a Linux user is told to run
    assert f'  Linux: in a terminal, run "<this folder>/{frozen_setup.name}"' in readme.splitlines()
    wheels = [f.path.rsplit("/", 1)[1] for f in manifest.of_kind("wheel")]
    assert any(n.startswith("qwenclientkit-") for n in wheels) and any(n.startswith("openai-") for n in wheels)
    assert not (out / PARTIAL).exists()
    assert not list(temp.glob("qwenkit-pip-*"))  # the throwaway venv is gone

    verified = _run(setup, "bundle", "verify", str(out), env=clean_env())  # the copy in the bundle checks it
    assert verified.returncode == 0 and "is intact" in verified.stdout, verified.stderr[-3000:]
    venv_line = next(line for line in made.stderr.splitlines() if "temporary pip environment" in line)
    print(f"\nfrozen bundle: {len(manifest.files)} files, {len(wheels)} wheels; setup {setup.stat().st_size} bytes; "
          f"{venv_line.strip()}")
