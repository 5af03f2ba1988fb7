"""templates/ and payload/ are found the same way from a source checkout, an installed wheel and the frozen setup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bootstrap import __version__
from bootstrap.core.resources import resource_dir
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


def test_source_checkout_finds_resources() -> None:
    assert resource_dir("templates") == ROOT / "templates"
    assert resource_dir("payload") == ROOT / "payload"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT)], check=True, timeout=300)
    return next(out.glob("qwenclientkit-*.whl"))


def test_wheel_carries_templates_and_payload(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for top in ("templates", "payload"):
        repo_files = {p.relative_to(ROOT / top).as_posix() for p in (ROOT / top).rglob("*") if p.is_file()}
        packed = {n.split(f"bootstrap/_data/{top}/", 1)[1] for n in names if n.startswith(f"bootstrap/_data/{top}/")}
        assert repo_files and repo_files == packed, top
    assert "bootstrap/app/cli.py" in names
    assert not any(n.startswith("tests/") for n in names)


def test_installed_wheel_finds_resources(wheelhouse: Path, tmp_path: Path) -> None:
    """The kit installed from wheels with its dependencies, as the runtime venv gets it (the wheelhouse's kit wheel
    is rebuilt from this checkout)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheelhouse),
                    "--no-compile", "qwenclientkit"], check=True, timeout=600)
    # run from an unrelated folder so the checkout cannot shadow the installed package
    proc = subprocess.run([str(venv / "bin" / "qwenkit"), "selfcheck"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    site = Path(report["templates"]).parents[2]
    assert site.name == "site-packages" and str(venv) in report["templates"]
    assert Path(report["payload"], "README.md").is_file()
    assert report["version"] == __version__ and report["frozen"] is False
    assert report["first_start_checks"] == []


def test_frozen_setup_finds_resources(frozen_setup: Path, tmp_path: Path) -> None:
    exe = frozen_setup
    report = json.loads(subprocess.run([str(exe), "selfcheck"], capture_output=True, text=True, check=True,
                                       timeout=60).stdout)
    assert report["frozen"] is True and report["version"] == __version__
    assert Path(report["templates"]).name == "templates" and "_MEI" in report["templates"]
    assert report["first_start_checks"] == []  # templates, payload and the TLS trust store all usable frozen
    # the stages built so far work frozen: probes (psutil, NVML, truststore), the shipped catalog, the planner
    home = {**os.environ, "QWENKIT_HOME": str(tmp_path / "home")}
    doctor = subprocess.run([str(exe), "doctor", "--json"], capture_output=True, text=True, timeout=120, env=home)
    assert doctor.returncode == 0, doctor.stderr
    profile = tmp_path / "hw.json"
    profile.write_text(doctor.stdout)
    plan = subprocess.run([str(exe), "plan", "--hardware", str(profile), "--json"], capture_output=True, text=True,
                          timeout=120, env=home)
    assert plan.returncode in (0, 3), plan.stderr  # 3: this machine may be too small for every catalog model
    if plan.returncode == 0:
        assert json.loads(plan.stdout)["args"]
