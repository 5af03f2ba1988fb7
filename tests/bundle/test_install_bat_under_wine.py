"""A bundle's ``install.bat`` run by a real cmd.exe (Wine's; tests/support/wine.py): it finds a Python on the PATH
and hands the user's words to ``payload\\launch.py``; with none it says so and exits 3.

The stand-in ``python.exe`` (tests/support/win/argv_recorder.c) answers the version probe with its ``QK_EXIT``
and records the last command line it got, the launch. The bundle sits on a path with a space, ``&``, ``!``,
parentheses and ``^``, as a USB drive's folder may; Wine's own differences from Windows are listed in
tests/render/test_bat_under_wine.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bootstrap.bundle import launchers
from bootstrap.catalog.bundle_platforms import PLATFORMS
from bootstrap.core.messages import MESSAGES
from tests.support import wine

PYTHONS = ["3.11", "3.12"]
RUN_TIMEOUT_S = 120  # a bound, not a speed check


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "USB (E) A&B ! ^x" / "QwenClientKit-bundle"
    for want, data in launchers.launcher_files([PLATFORMS["windows-x64"]], PYTHONS):
        (root / want.rel).parent.mkdir(parents=True, exist_ok=True)
        (root / want.rel).write_bytes(data)
    return root


def _run(bundle: Path, prefix: Path, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["wine", str(wine.windows_path(bundle / "install.bat")), *args],
                          env=wine.wine_env(prefix, **env), capture_output=True, timeout=RUN_TIMEOUT_S)


def test_the_python_found_runs_the_launcher_with_the_users_words(bundle: Path, tmp_path: Path,
                                                                  wine_prefix: Path) -> None:
    python = wine.build_recorder(tmp_path / "Python 3.12" / "python.exe")
    proc = _run(bundle, wine_prefix, "--yes", "--ctx", "8192", WINEPATH=str(wine.windows_path(python.parent)),
                QK_EXIT="0")
    assert proc.returncode == 0, proc.stderr
    assert wine.read_record(python).args == ["python", str(wine.windows_path(bundle / "payload" / "launch.py")),
                                            "--yes", "--ctx", "8192"]


def test_no_python_is_said_and_exit_3(bundle: Path, wine_prefix: Path) -> None:
    proc = _run(bundle, wine_prefix, "--yes")  # an argument: no pause at the end (a double-click waits for a key)
    assert proc.returncode == 3, proc.stderr
    wanted = MESSAGES["options.launch_no_python"]["en"].format(wanted="/".join(PYTHONS))
    assert wanted in proc.stdout.decode("utf-8", errors="replace")
