"""templates/ and payload/ are found the same way from a source checkout, an installed wheel and the frozen setup;
the wheel and sdist a release publishes (``python -m build``) pass ``twine check --strict`` and the wheel runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
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
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # a PYTHONPATH naming the checkout shadows it
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheelhouse),
                    "--no-compile", "qwenclientkit"], check=True, timeout=600, env=env)
    # run from an unrelated folder so the checkout cannot shadow the installed package
    proc = subprocess.run([str(venv / "bin" / "qwenkit"), "selfcheck"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, env=env)
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


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, sdist) as the release workflow builds them: ``python -m build`` makes the sdist, then the wheel FROM
    that sdist, so a file the sdist forgets is missing from the wheel too. ``--no-isolation``: hatchling comes from
    the test extras (no network here)."""
    for tool in ("build", "twine"):
        if importlib.util.find_spec(tool) is None:
            pytest.skip(f"'{tool}' is not installed (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return next(out.glob("qwenclientkit-*.whl")), next(out.glob("qwenclientkit-*.tar.gz"))


def test_release_dists_pass_twine_check_strict(dists: tuple[Path, Path]) -> None:
    """What PyPI's upload checks: the README renders as the long description, the metadata is complete."""
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2


def test_release_metadata_says_what_the_package_is(dists: tuple[Path, Path]) -> None:
    wheel, sdist = dists
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(f"qwenclientkit-{__version__}.dist-info/METADATA").decode("utf-8")
    headers = [line.partition(": ") for line in meta.split("\n\n", 1)[0].splitlines()]
    fields: dict[str, list[str]] = {}
    for key, _, value in headers:
        fields.setdefault(key, []).append(value)
    assert fields["Name"] == ["qwenclientkit"] and fields["Version"] == [__version__]
    assert fields["License-Expression"] == ["Apache-2.0"] and fields["License-File"] == ["LICENSE"]
    assert fields["Requires-Python"] == ["<3.14,>=3.10"]
    assert fields["Description-Content-Type"] == ["text/markdown"]
    assert {"Homepage", "Source", "Issues"} <= {u.split(",")[0] for u in fields["Project-URL"]}
    assert "qwen" in fields["Keywords"][0] and "llama.cpp" in fields["Keywords"][0]
    classifiers = set(fields["Classifier"])
    for version in ("3.10", "3.11", "3.12", "3.13"):  # the classifiers follow requires-python
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert {"Operating System :: Microsoft :: Windows", "Operating System :: MacOS",
            "Operating System :: POSIX :: Linux"} <= classifiers
    assert meta.split("\n\n", 1)[1].startswith("# QwenClientKit")  # the README is the long description
    assert f"qwenclientkit-{__version__}.dist-info/licenses/LICENSE" in names
    for top in ("templates", "payload"):
        assert any(n.startswith(f"bootstrap/_data/{top}/") for n in names), top
    with tarfile.open(sdist) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    assert {"LICENSE", "README.md", "pyproject.toml", "templates/run_qwen.sh.j2", "payload/catalog.toml",
            "bootstrap/__init__.py", "build_installer.py"} <= members


@pytest.mark.slow  # a fresh venv and ~40 wheels: about 50 s on two shared cores
def test_release_wheel_installs_and_runs_offline(dists: tuple[Path, Path], wheelhouse: Path, tmp_path: Path) -> None:
    """The published wheel in a fresh venv with its dependencies from the wheelhouse (no index: CI reaches only
    package registries, and this must not depend on them), run from an unrelated folder as ``pipx`` would."""
    wheel, _ = dists
    venv = tmp_path / "fresh venv 新"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    # no PYTHONPATH: what it names must neither satisfy a dependency at install time nor shadow the venv after
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QWENKIT_CATALOG")}
    env["QWENKIT_LANG"] = "en"
    subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                    str(wheelhouse), "--no-compile", str(wheel)], check=True, timeout=600, env=env)

    def qwenkit(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(bindir / "qwenkit"), *argv], capture_output=True, text=True, cwd=tmp_path,
                              env=env, timeout=120)

    version = qwenkit("--version")
    assert version.returncode == 0 and __version__ in version.stdout + version.stderr
    models = qwenkit("models", "--json")
    assert models.returncode == 0, models.stderr
    doc = json.loads(models.stdout)
    listed = doc["models"] if isinstance(doc, dict) else doc
    assert any("qwen3.6-35b-a3b" in json.dumps(m) for m in listed)  # the catalog shipped inside the wheel
    selfcheck = json.loads(qwenkit("selfcheck").stdout)
    assert str(venv) in selfcheck["payload"] and selfcheck["version"] == __version__
