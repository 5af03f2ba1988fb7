"""The release workflow cannot run here; what can be checked is checked: its triggers, jobs, asset names and the
SHA256SUMS step, the manylinux_2_28 build with the glibc check at the floor the bundles use, and that every script,
option and test path a workflow names exists in this repository (a renamed flag fails here, not at release time)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bootstrap.catalog.bundle_platforms import PLATFORMS
from tests.support.paths import REPO_ROOT

yaml = pytest.importorskip("yaml")  # PyYAML: installed with the hub SDKs the test extras pull in

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
ASSETS = ("QwenClientKit-Setup-windows-x64.exe", "QwenClientKit-Setup-macos-arm64", "QwenClientKit-Setup-linux-x64")


def _load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in doc:  # YAML 1.1 reads the key `on` as a boolean
        doc["on"] = doc.pop(True)
    return doc


def _runs(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(job id, run script) for every step that runs a command."""
    return [(job_id, step["run"]) for job_id, job in doc["jobs"].items() for step in job.get("steps", [])
            if "run" in step]


def _steps(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) + str(step.get("uses", "")) for step in job["steps"])


def test_triggers_jobs_and_asset_names() -> None:
    doc = _load(RELEASE)
    assert doc["on"]["push"]["tags"] == ["v*"] and "workflow_dispatch" in doc["on"]
    jobs = doc["jobs"]
    assert "python -m build" in _steps(jobs["dist"]) and "twine check --strict" in _steps(jobs["dist"])
    matrix = jobs["setup"]["strategy"]["matrix"]["include"]
    assert {(m["os"], m["asset"]) for m in matrix} == {("windows-latest", ASSETS[0]), ("macos-latest", ASSETS[1])}
    linux = jobs["setup-linux"]
    assert re.fullmatch(r"quay\.io/pypa/manylinux_2_28_x86_64", linux["container"])
    assert ASSETS[2] in _steps(linux)
    release = jobs["release"]
    assert set(release["needs"]) == {"dist", "setup", "setup-linux"}
    sums = next(s["run"] for s in release["steps"] if s.get("name") == "Write SHA256SUMS")
    assert "sha256sum -- * > SHA256SUMS" in sums and all(a in sums for a in ASSETS)
    publish = next(s for s in release["steps"] if "gh release create" in s.get("run", ""))
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/v')" and "assets/*" in publish["run"]
    assert release["permissions"] == {"contents": "write"} and doc["permissions"] == {"contents": "read"}


def test_the_linux_setup_is_checked_at_the_glibc_floor_the_bundles_use() -> None:
    """One floor: the bundles' newest manylinux wheel tag (``bundle_platforms``), the release's ``--max``, and
    docs/releasing.md."""
    doc = _load(RELEASE)
    levels = [tuple(map(int, m.groups())) for tag in PLATFORMS["linux-x64"].pip_platforms
              if (m := re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", tag))]
    floor = ".".join(map(str, max(levels)))
    assert doc["env"]["GLIBC_FLOOR"] == floor
    steps = _steps(doc["jobs"]["setup-linux"])
    assert 'scripts/check_glibc.py --max "$GLIBC_FLOOR" dist/QwenClientKit-Setup dist-onedir/' in steps
    assert "--onedir --dist dist-onedir" in steps  # the files the one-file setup unpacks, checked one by one
    assert f"glibc {floor}" in (REPO_ROOT / "docs" / "releasing.md").read_text(encoding="utf-8")


def _help(script: Path) -> str:
    proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60,
                          cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("workflow", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_every_script_option_and_test_path_a_workflow_names_exists(workflow: str) -> None:
    checked = 0
    for job_id, script in _runs(_load(WORKFLOWS / workflow)):
        for line in script.splitlines():
            try:
                words = shlex.split(line.replace("\\", "/"), comments=True)
            except ValueError:  # a line of a multi-line shell construct
                continue
            for i, word in enumerate(words):
                if word.endswith(".py") and not word.startswith("-"):
                    path = REPO_ROOT / word
                    assert path.is_file(), f"{workflow}/{job_id}: {word} does not exist"
                    options = [w.split("=")[0] for w in words[i + 1:] if w.startswith("--")]
                    if options:
                        usage = _help(path)
                        missing = [o for o in options if not re.search(rf"{re.escape(o)}\b", usage)]
                        assert not missing, f"{workflow}/{job_id}: {word} has no {missing}"
                    checked += 1
                elif word == "pytest":
                    for arg in words[i + 1:]:
                        if arg.startswith("tests/"):
                            assert (REPO_ROOT / arg.split("::")[0]).exists(), f"{workflow}: {arg} does not exist"
                            checked += 1
    assert checked, f"{workflow} runs no script of this repository"


def test_actions_are_pinned_to_a_release() -> None:
    for path in WORKFLOWS.glob("*.yml"):
        for job in _load(path)["jobs"].values():
            for step in job.get("steps", []):
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+|release/v\d+)", step["uses"]), step["uses"]
