"""The pipeline's layering (DESIGN.md §1), checked by ``import-linter`` with the contracts in ``pyproject.toml``.

The real package must keep both contracts; a copy of it with one planted upward import (function-local, so only a
checker that reads every import sees it), or one planted cycle inside a package, must break them. Both run the
``lint-imports`` command a developer runs, in a subprocess, on a copy (the graph is built from files on disk).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports" + (".exe" if os.name == "nt" else ""))


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The package and its contracts, copied so a test can plant imports without touching the checkout."""
    shutil.copytree(REPO_ROOT / "bootstrap", tmp_path / "bootstrap",
                    ignore=shutil.ignore_patterns("__pycache__", "_data"))
    shutil.copy2(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_package_keeps_its_layers_and_has_no_cycles() -> None:
    proc = _lint(REPO_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pipeline layers KEPT" in proc.stdout
    assert "no import cycles inside a package KEPT" in proc.stdout


def test_a_planted_upward_import_breaks_the_layers(copy: Path) -> None:
    (copy / "bootstrap" / "core" / "planted.py").write_text(
        '"""Planted by the test: core reaching up into the orchestrator."""\n\n\n'
        "def later() -> object:\n"
        "    from bootstrap.install import installer\n\n"
        "    return installer\n")
    proc = _lint(copy)
    assert proc.returncode != 0
    assert "pipeline layers BROKEN" in proc.stdout
    assert "bootstrap.core.planted -> bootstrap.install.installer" in proc.stdout


def test_catalog_and_detect_stay_independent(copy: Path) -> None:
    target = copy / "bootstrap" / "catalog" / "models.py"
    target.write_text(target.read_text() + "\n\nif False:  # planted by the test\n"
                      "    from bootstrap.detect import hardware  # noqa: F401\n")
    proc = _lint(copy)
    assert proc.returncode != 0
    assert "bootstrap.catalog.models -> bootstrap.detect.hardware" in proc.stdout


def test_a_planted_cycle_inside_a_package_breaks_the_acyclic_contract(copy: Path) -> None:
    fetch = copy / "bootstrap" / "fetch"
    (fetch / "planted_a.py").write_text('"""Planted."""\n\nfrom bootstrap.fetch import planted_b  # noqa: F401\n')
    (fetch / "planted_b.py").write_text('"""Planted."""\n\nfrom bootstrap.fetch import planted_a  # noqa: F401\n')
    proc = _lint(copy)
    assert proc.returncode != 0
    assert "no import cycles inside a package BROKEN" in proc.stdout
    assert "bootstrap.fetch" in proc.stdout and "planted_" in proc.stdout


def test_every_module_imports() -> None:
    """A moved or renamed name fails here, at once, instead of in the one end-to-end test that reaches it."""
    import importlib
    import pkgutil

    import bootstrap

    names = [m.name for m in pkgutil.walk_packages(bootstrap.__path__, "bootstrap.") if not m.name.endswith("__main__")]
    assert len(names) > 100
    for name in names:
        importlib.import_module(name)
