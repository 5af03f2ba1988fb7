"""An install through the real ``QwenClientKit-Setup-windows-x64.exe`` under Wine, serving with a real
``llama-server.exe`` (the pinned sdist cross-compiled for Windows, served by the loopback hub as the ``win-cpu``
release asset), into a user folder named with Chinese characters, spaces, ``&``, ``!`` and parentheses.

Wine's Task Scheduler is a stub (``schtasks`` lists nothing and runs nothing, yet exits 0): the setup must see that,
say so, and fall back to ``run_qwen.bat`` under its own supervisor, as a Linux container without systemd does. Then
what a user does next, each through the exe: chat with the key, ``status``, a rerun with nothing to do, ``service
stop``/``start``, a server killed behind the kit's back coming back, ``uninstall``.

It needs the Windows engine the provisioning cross-builds (tests/testbed/test_windows_engine.py), and skips without it.
The install bed is tests/support/windows_install.py (the bench scripts/bench_windows_install.py uses it too).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support import testbed
from tests.support.install_bed import MODEL_FILE, MODEL_REPO, catalog_text, write_chat_model
from tests.support.windows_install import COMMAND_TIMEOUT_S, ChattingClient, WinInstall, answers, servers
from tests.support.windows_install import installed as installed_under_wine

HOME_DIR = "张三 A&B ! (x)"
ASCII_HOME_DIR = "Li's A&B ! (x)"
BACK_TIMEOUT_S = 120  # the supervisor's restart after a kill (1 s) plus Wine starting the exe: a bound


def _win_bin() -> Path:
    win_bin = testbed.windows_engine_dir()
    if win_bin is None:
        pytest.skip(f"the Windows engine is not provisioned (Wine or mingw-w64 missing, or {testbed.WINDOWS_OPT_IN}=0)")
    return win_bin


@pytest.fixture(scope="module")
def installed(windows_setup: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinInstall]:
    with installed_under_wine(windows_setup, _win_bin(), tmp_path_factory.mktemp("win-install"), HOME_DIR) as bed:
        yield bed


@pytest.fixture(scope="module")
def installed_ascii(windows_setup: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WinInstall]:
    """For the ``qwenkit.cmd`` launcher: Wine's cmd reads a batch file in the ANSI code page whatever ``chcp 65001``
    asks (it answers "invalid"), so the absolute Chinese path the launcher names cannot run there; Windows' cmd
    reads it as UTF-8 after that line (tests/register/test_shell_command.py checks the text)."""
    with installed_under_wine(windows_setup, _win_bin(), tmp_path_factory.mktemp("win-install-ascii"), ASCII_HOME_DIR,
                              double_click=True) as bed:
        yield bed


def test_the_setup_installs_and_falls_back_from_wines_task_scheduler(installed: WinInstall) -> None:
    first = installed.first
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Task Scheduler lists no tasks at all" in first.stderr
    assert "No service manager here" in first.stderr and "run_qwen.bat" in first.stderr
    assert f"127.0.0.1:{installed.port}/v1" in first.stdout
    state = json.loads((installed.home / "state.json").read_text(encoding="utf-8"))
    assert state["service"]["manager"] == "script" and state["system"] == "Windows"
    assert (installed.home / "run_qwen.bat").is_file() and not (installed.home / "run_qwen.sh").exists()
    assert "win-cpu" in " ".join(p.name for p in (installed.home / "engine").iterdir())


def test_the_server_answers_with_the_key_only(installed: WinInstall) -> None:
    answer = installed.chat(installed.key())
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["choices"][0]["message"]["content"]
    assert installed.chat(None).status_code == 401
    assert installed.chat("wrong").status_code == 401


def test_status_says_healthy(installed: WinInstall) -> None:
    done = installed.run("status")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "healthy: " in done.stdout and f"127.0.0.1:{installed.port}" in done.stdout


def test_a_rerun_with_nothing_new_keeps_the_server(installed: WinInstall) -> None:
    before = {p.pid for p in servers(installed.home)}
    done = installed.run("install", "--yes", "--port", str(installed.port))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Up to date: " in done.stdout, done.stderr[-3000:]
    assert {p.pid for p in servers(installed.home)} == before


def test_a_killed_server_is_serving_again(installed: WinInstall) -> None:
    """The supervisor (not a service manager: there is none under Wine) restarts llama-server.exe."""
    running = servers(installed.home)
    assert running
    for proc in running:
        proc.kill()
    assert answers(installed.url, installed.key(), BACK_TIMEOUT_S)
    log = (installed.home / "logs" / "server.log").read_text(encoding="utf-8", errors="replace")
    assert "starting it again" in log


def test_service_stop_and_start(installed: WinInstall) -> None:
    stopped = installed.run("service", "stop")
    assert stopped.returncode == 0, stopped.stderr[-2000:]
    assert not servers(installed.home)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{installed.url}/health", timeout=5)
    started = installed.run("service", "start")
    assert started.returncode == 0, started.stderr[-2000:]
    assert "Server ready after" in started.stdout
    assert installed.chat(installed.key()).status_code == 200


def test_an_upgrade_keeps_answering_a_chatting_client(installed: WinInstall, tmp_path: Path) -> None:
    """A new revision of the model: downloaded and verified while the old server keeps answering, then switched."""
    revision = installed.hub.commit(MODEL_REPO, {MODEL_FILE: write_chat_model(tmp_path / MODEL_FILE, seed=7)})
    installed.catalog.write_text(catalog_text(revision), encoding="utf-8")
    with ChattingClient(installed).running() as client:
        done = installed.run("install", "--yes", "--port", str(installed.port))
    codes = client.codes
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Switched over in " in done.stderr
    state = json.loads((installed.home / "state.json").read_text(encoding="utf-8"))
    assert revision in json.dumps(state)
    assert codes.count(200) >= 3, codes  # the old server answered while the new revision was fetched and tested
    assert installed.chat(installed.key()).status_code == 200


def test_uninstall_removes_the_home_and_stops_the_server(installed: WinInstall) -> None:
    done = installed.run("uninstall", "--yes", timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "QwenClientKit is uninstalled." in done.stdout
    assert not installed.home.exists()
    assert not servers(installed.home)


def _user_path(bed: WinInstall) -> str:
    done = subprocess.run(["wine", "reg", "query", r"HKCU\Environment", "/v", "Path"], capture_output=True,
                          env=bed.env, timeout=120, check=False)
    return done.stdout.decode("cp1252", errors="replace")


def _launcher(bed: WinInstall, *args: str) -> subprocess.CompletedProcess[str]:
    """``qwenkit ARGS`` typed in a new ``cmd`` window: found through the user PATH, with no QWENKIT_HOME set (the
    launcher supplies the home it was written for)."""
    env = {k: v for k, v in bed.env.items() if k != "QWENKIT_HOME"}
    done = subprocess.run(["wine", "cmd", "/d", "/c", "qwenkit", *args], capture_output=True, env=env,
                          timeout=COMMAND_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("cp1252", errors="replace"),
                                       done.stderr.decode("cp1252", errors="replace"))


def test_a_double_click_asks_once_installs_and_keeps_its_window_until_enter(installed_ascii: WinInstall) -> None:
    """The setup started with no arguments in a console of its own, as Explorer starts it: the checks and the plan,
    one question answered with Enter (the default: yes), the install and its proof, then "Press Enter to close this
    window." honoured: the program still runs 3 s after showing it, and ends with exit 0 on Enter."""
    console = installed_ascii.console
    assert console is not None
    assert console.returncode == 0, console.text[-3000:]
    text = console.text
    assert "Plan: Tiny chat (test) Q8_0" in text and text.count("Continue? [Y/n]") == 1
    assert text.index("Continue? [Y/n]") < text.index("The server answers")
    assert text.rstrip().endswith("Press Enter to close this window.")
    assert console.waited_to_close
    assert installed_ascii.chat(installed_ascii.key()).status_code == 200


def test_the_qwenkit_command_is_on_the_user_path(installed_ascii: WinInstall) -> None:
    state = json.loads((installed_ascii.home / "state.json").read_text(encoding="utf-8"))
    launcher = state["launcher"]["path"]
    assert launcher.endswith("\\.local\\bin\\qwenkit.cmd")
    assert launcher.rpartition("\\")[0].lower() in _user_path(installed_ascii).lower()
    done = _launcher(installed_ascii, "status")
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert "healthy: " in done.stdout


def test_uninstall_through_the_launcher_removes_the_home_and_the_launcher(installed_ascii: WinInstall) -> None:
    """The launcher runs the setup's copy in the home (no Python on this "PC"), which Windows will not delete while
    it runs: ``app\\`` is left to ``remove-after-exit.bat``, and goes once the uninstall has ended. (Wine's cmd keeps
    that script open while it runs, so there the emptied home folder itself stays.)"""
    state = json.loads((installed_ascii.home / "state.json").read_text(encoding="utf-8"))
    bin_dir = state["launcher"]["path"].rpartition("\\")[0]
    done = _launcher(installed_ascii, "uninstall", "--yes")
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert "app/ hold this running program" in done.stdout and "QwenClientKit is uninstalled." in done.stdout
    assert not servers(installed_ascii.home)
    deadline = time.monotonic() + BACK_TIMEOUT_S
    while installed_ascii.home.exists() and any(installed_ascii.home.iterdir()) and time.monotonic() < deadline:
        time.sleep(1)
    left = sorted(p.name for p in installed_ascii.home.iterdir()) if installed_ascii.home.exists() else []
    assert left == []
    assert bin_dir.lower() not in _user_path(installed_ascii).lower()
    assert _launcher(installed_ascii, "status").returncode != 0  # no qwenkit any more
