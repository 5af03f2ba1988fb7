"""Homes a Windows user may pick, through the real ``QwenClientKit-Setup-windows-x64.exe`` under Wine with the
cross-built ``llama-server.exe`` (issue 41): a folder named with ``%``, one with ``%`` and Chinese, and two homes on
one Windows account sharing the ``qwenkit`` launcher's folder on the user PATH. A Wine prefix has no Python, as a PC
that never installed one.

- ``100% A&B!``: before, the install downloaded everything, then ended with "llama-server ended before it served
  (exit code 1)" (Wine's cmd drops the ``%`` from ``%~dp0``: every file of the home "not found"); now it serves.
- ``张三 100%``: the start script cannot name it where cmd reads a batch file in the ANSI code page (Wine): exit 2
  before any download, one line naming both characters.
- The plan on a PC without Python says no venv is made (it counted "runtime venv: about 24.7 MiB").
- The supervisor's "llama-server (PID N) serves" names the server, not the ``cmd.exe`` running the start script.
- Two homes: the user PATH entry the first install added goes with the second home's uninstall (it outlived both).

It needs the Windows engine the provisioning cross-builds, and skips without it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import testbed, wine
from tests.support.install_bed import MODEL_FILE
from tests.support.llama import free_port
from tests.support.windows_install import COMMAND_TIMEOUT_S, WinInstall
from tests.support.windows_install import installed as installed_under_wine

HOME_DIR = "Li 100% A&B!"


@pytest.fixture(scope="module")
def installed(windows_setup: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinInstall]:
    win_bin = testbed.windows_engine_dir()
    if win_bin is None:
        pytest.skip(f"the Windows engine is not provisioned (Wine or mingw-w64 missing, or {testbed.WINDOWS_OPT_IN}=0)")
    with installed_under_wine(windows_setup, win_bin, tmp_path_factory.mktemp("win-home"), HOME_DIR) as bed:
        yield bed


def _other_home(bed: WinInstall, name: str) -> dict[str, str]:
    """The environment for another home on the same Windows account (same prefix, hub and catalog)."""
    return {**bed.env, "QWENKIT_HOME": str(wine.windows_path(bed.home.parent.parent / name / "QwenClientKit"))}


def _user_path(bed: WinInstall) -> str:
    done = subprocess.run(["wine", "reg", "query", r"HKCU\Environment", "/v", "Path"], capture_output=True,
                          env=bed.env, timeout=120, check=False)
    return done.stdout.decode("cp1252", errors="replace")


def test_a_home_with_percent_installs_and_serves(installed: WinInstall) -> None:
    first = installed.first
    assert first.returncode == 0, first.stderr[-3000:]
    assert "The server answers" in first.stdout, first.stdout[-3000:]
    assert "100%% A&B!" in (installed.home / "run_qwen.bat").read_text(encoding="utf-8")
    assert installed.chat(installed.key()).status_code == 200


def test_the_plan_says_no_venv_is_made_without_python(installed: WinInstall) -> None:
    venv = next(line for line in installed.first.stderr.splitlines() if "runtime venv" in line)
    assert "not made (no Python 3.10-3.13 here" in venv, venv
    assert "MiB" not in venv


def test_the_supervisor_names_the_servers_own_pid(installed: WinInstall) -> None:
    """The PID in ``logs\\server.log`` is the one the OS shows holding the port (``service status --json``), under
    ``cmd.exe`` (whose PID it was before)."""
    log = (installed.home / "logs" / "server.log").read_text(encoding="utf-8", errors="replace")
    logged = [int(pid) for pid in re.findall(r"llama-server \(PID (\d+)\) serves at", log)]
    assert logged, log[-2000:]
    status = installed.run("service", "status", "--json")
    assert status.returncode == 0, status.stderr[-2000:]
    holder = json.loads(status.stdout)["port_holder"]
    assert holder["state"] == "ours" and logged[-1] == holder["pid"], (logged, holder)


def test_a_home_with_percent_and_chinese_is_refused_before_any_download(installed: WinInstall) -> None:
    served = installed.hub.bytes_served(MODEL_FILE)
    env = _other_home(installed, "张三 100%")
    done = wine.run_until_exit(["wine", str(installed.exe), "install", "--yes", "--port", str(free_port())], env,
                               COMMAND_TIMEOUT_S)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "'%'" in errors[0] and "non-ASCII" in errors[0], done.stderr[-3000:]
    assert "hint: " in done.stderr and "Traceback" not in done.stderr
    assert installed.hub.bytes_served(MODEL_FILE) == served  # not a byte of the model
    assert not (installed.home.parent.parent / "张三 100%" / "QwenClientKit").exists()  # no half-made home


def test_the_last_of_two_homes_takes_the_shared_path_entry(installed: WinInstall) -> None:
    """A second home installed on the same account rewrites the launcher for itself and finds the folder already on
    the user PATH. Uninstalled first, the first home leaves the entry (the second's launcher is there); the second's
    uninstall then takes it out."""
    other = _other_home(installed, "Wang B")
    done = wine.run_until_exit(["wine", str(installed.exe), "install", "--yes", "--port", str(free_port())], other,
                               COMMAND_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads((installed.home / "state.json").read_text(encoding="utf-8"))
    folder = state["launcher"]["path"].rpartition("\\")[0]
    assert folder.lower() in _user_path(installed).lower()
    assert installed.run("uninstall", "--yes", timeout=300).returncode == 0
    assert not wine.processes_running("llama-server.exe", str(wine.windows_path(installed.home)))
    assert folder.lower() in _user_path(installed).lower()  # the second home's qwenkit is still there
    gone = wine.run_until_exit(["wine", str(installed.exe), "uninstall", "--yes"], other, 300)
    assert gone.returncode == 0, gone.stderr[-2000:]
    assert folder.lower() not in _user_path(installed).lower(), gone.stdout
