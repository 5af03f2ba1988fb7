"""An install through the real ``QwenClientKit-Setup-windows-x64.exe`` under Wine, serving with a real
``llama-server.exe`` (the pinned sdist cross-compiled for Windows, served by the loopback hub as the ``win-cpu``
release asset), into a user folder named with Chinese characters, spaces, ``&``, ``!`` and parentheses.

Wine's Task Scheduler is a stub (``schtasks`` lists nothing and runs nothing, yet exits 0): the setup must see that,
say so, and fall back to ``run_qwen.bat`` under its own supervisor, as a Linux container without systemd does. Then
what a user does next, each through the exe: chat with the key, ``status``, a rerun with nothing to do, ``service
stop``/``start``, a server killed behind the kit's back coming back, ``uninstall``.

Several models (docs/several-models.md), as a Windows user without Python adds one: ``qwenkit install tiny-embed``
typed in a new ``cmd`` window runs the ``qwenkit.cmd`` launcher, which runs the setup's frozen copy in the home's
``app\\``; the start script then runs that copy as the kit's front before llama-server.exe's router. Through the
endpoint with the key: a chat naming no model is the default's, the embedding model answers when named, the model
list names no folder of the home, nothing answers without the key; ``status`` lists both; a killed llama-server.exe,
and either process of the killed front, is serving again with nothing of the old one left; ``remove`` goes back to
one model and no front; the uninstall, from a home with two models, leaves no process of it.

It needs the Windows engine the provisioning cross-builds (tests/testbed/test_windows_engine.py), and skips without it.
The install bed is tests/support/windows_install.py (the bench scripts/bench_windows_install.py uses it too).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests

from tests.support import testbed, wine
from tests.support.install_bed import EMBED_MODEL_ID, MODEL_FILE, MODEL_ID, MODEL_REPO, write_chat_model
from tests.support.windows_install import ChattingClient, WinInstall, answers, fronts, servers
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



def test_run_command_answers_one_question_under_wine(installed: WinInstall) -> None:
    """``qwenkit run`` (issue 40) through the exe: a question as arguments, and one on stdin (a pipe, as ``echo … |
    qwenkit run`` in cmd), each answered on stdout alone, with the install's endpoint and key read from the home;
    an unknown model is exit 2 naming the installed one."""
    one_shot = installed.run("run", MODEL_ID, "Hello")
    assert one_shot.returncode == 0, one_shot.stderr[-2000:]
    assert one_shot.stdout.strip() and one_shot.stderr == "", one_shot.stderr[-2000:]
    piped = subprocess.run(["wine", str(installed.exe), "run"], input=b"Hello\r\n", env=installed.env,
                           capture_output=True, timeout=300, check=False)
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert piped.stdout.strip() and b"Chatting" not in piped.stdout + piped.stderr
    unknown = installed.run("run", "nosuch", "Hello")
    assert unknown.returncode == 2 and f"(installed: {MODEL_ID})" in unknown.stderr, unknown.stderr[-2000:]


def test_run_command_chats_in_a_wine_console(installed: WinInstall) -> None:
    """The interactive chat in a console (Wine gives a program started on a terminal a console of its own): the
    banner, the prompt, a question answered and the prompt back, ``/bye`` exits 0 (after the Enter the setup asks
    for when it is alone on its console). No POSIX-only module on the way
    (``readline`` is not there on Windows)."""
    import pexpect

    child = pexpect.spawn("wine", [str(installed.exe), "run"], env=installed.env, timeout=300, encoding="utf-8",
                          codec_errors="replace")
    try:
        child.expect_exact(f"Chatting with {MODEL_ID}")
        child.expect_exact(">>>")  # Wine's console draws the prompt's space as a cursor move
        time.sleep(1)  # Wine's console drops what is typed before the program reads (wine.run_in_console)
        child.send("Hello\r")
        child.expect_exact(">>>")
        time.sleep(1)
        child.send("/bye\r")
        # the exe alone on its console (Wine gives it one, as a double-click does) keeps the window until Enter
        child.expect_exact("Press Enter to close this window.")
        time.sleep(1)
        child.send("\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, (child.exitstatus, child.before)
    assert "Traceback" not in str(child.before)

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
    installed.pin(revision)
    with ChattingClient(installed).running() as client:
        done = installed.run("install", "--yes", "--port", str(installed.port))
    codes = client.codes
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Switched over in " in done.stderr
    state = json.loads((installed.home / "state.json").read_text(encoding="utf-8"))
    assert revision in json.dumps(state)
    assert codes.count(200) >= 3, codes  # the old server answered while the new revision was fetched and tested
    assert installed.chat(installed.key()).status_code == 200


def test_a_second_model_serves_from_a_chinese_home(installed: WinInstall) -> None:
    """The front's start script line names the setup's copy relative to the home (``%~dp0app\\…``), as it names the
    engine: from a home whose path holds Chinese, ``&``, ``!`` and parentheses it starts, and serves both models."""
    added = installed.run("install", EMBED_MODEL_ID, "--yes")
    assert added.returncode == 0, added.stderr[-3000:] + installed.logs_tail()
    assert f"Added {EMBED_MODEL_ID}: 2 models served" in added.stdout, added.stdout[-2000:]
    assert fronts(installed.home)
    _both_answer(installed)


def test_uninstall_removes_the_home_and_stops_the_server(installed: WinInstall) -> None:
    """With two models (the test above): the front, the router and both model servers end with it."""
    done = installed.run("uninstall", "--yes", timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "QwenClientKit is uninstalled." in done.stdout
    assert not installed.home.exists()
    assert not servers(installed.home) and not fronts(installed.home)


def _user_path(bed: WinInstall) -> str:
    done = subprocess.run(["wine", "reg", "query", r"HKCU\Environment", "/v", "Path"], capture_output=True,
                          env=bed.env, timeout=120, check=False)
    return done.stdout.decode("cp1252", errors="replace")


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
    done = installed_ascii.launcher("status")
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert "healthy: " in done.stdout


def _both_answer(bed: WinInstall) -> None:
    """Through the endpoint with the key: a chat naming no model is the default's (as before the second model came),
    the embedding model answers when named; nothing answers without the key."""
    key = bed.key()
    answer = bed.chat(key)
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["model"] == MODEL_ID and answer.json()["choices"][0]["message"]["content"]
    vectors = bed.post("/v1/embeddings", {"model": EMBED_MODEL_ID, "input": ["你好", "hello"]}, key)
    assert vectors.status_code == 200, vectors.text[:300]
    assert len(vectors.json()["data"]) == 2 and vectors.json()["data"][0]["embedding"]
    assert bed.chat(None).status_code == 401
    assert bed.post("/v1/embeddings", {"model": EMBED_MODEL_ID, "input": "x"}, None).status_code == 401


def _gone(pids: set[int], timeout: float = BACK_TIMEOUT_S) -> set[int]:
    """Which of ``pids`` still run after waiting up to ``timeout`` for all of them to end."""
    deadline = time.monotonic() + timeout
    while (left := {pid for pid in pids if psutil.pid_exists(pid)}) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def test_a_second_model_added_through_the_launcher_serves_behind_the_kits_front(installed_ascii: WinInstall) -> None:
    """Before: the add ended with exit 3, "cannot write to …\\.run_qwen.bat.….tmp: Permission denied" (the start
    script was written while the server it runs was running: Wine's cmd keeps it open); with that fixed, the test
    bed's llama-server.exe router crashed after its first proxied answer (testbed.WINDOWS_TLS_ORDER_CPP)."""
    bed = installed_ascii
    added = bed.launcher("install", EMBED_MODEL_ID, "--yes")
    assert added.returncode == 0, (added.stdout + added.stderr)[-3000:]
    assert f"Added {EMBED_MODEL_ID}: 2 models served at {bed.url}/v1" in added.stdout, added.stdout[-2000:]
    assert fronts(bed.home)
    _both_answer(bed)
    listed = requests.get(f"{bed.url}/v1/models", headers={"Authorization": f"Bearer {bed.key()}"}, timeout=60)
    assert listed.status_code == 200, listed.text[:300]
    models = listed.json()["data"]
    assert sorted(m["id"] for m in models) == sorted([MODEL_ID, EMBED_MODEL_ID])
    assert [m["status"]["args"][0] for m in models] == ["llama-server.exe"] * 2  # the engine's own path, cut
    home = str(wine.windows_path(bed.home))
    for mark in (home, json.dumps(home)[1:-1], ASCII_HOME_DIR):  # as written, as JSON escapes it, the user's folder
        assert mark not in listed.text
    status = bed.launcher("status")
    assert status.returncode == 0, (status.stdout + status.stderr)[-2000:]
    rows = [line.split() for line in status.stdout.splitlines() if line.startswith("    ")]
    assert [row[:2] for row in rows if row[0] in (MODEL_ID, EMBED_MODEL_ID)] == [[MODEL_ID, "chat"],
                                                                                   [EMBED_MODEL_ID, "embeddings"]]
    assert "healthy: " in status.stdout


def test_killed_llama_servers_behind_the_front_are_serving_again(installed_ascii: WinInstall) -> None:
    """The router and both model servers killed behind the kit's back: the front ends with its router, and the
    supervisor starts the start script again (as for one model, above)."""
    bed = installed_ascii
    running = servers(bed.home)
    assert len(running) == 3, [p.cmdline() for p in running]  # the router and one server per model
    for proc in running:
        proc.kill()
    assert answers(bed.url, bed.key(), BACK_TIMEOUT_S)
    _both_answer(bed)
    log = (bed.home / "logs" / "server.log").read_text(encoding="utf-8", errors="replace")
    assert "starting it again" in log


def test_either_process_of_a_killed_front_takes_the_router_and_models_along(installed_ascii: WinInstall) -> None:
    """The frozen front is two processes (the one-file bootloader, then the program it unpacked), both shown in Task
    Manager as the setup. Whichever is killed, the router and its two model servers end too, and the supervisor's
    new start serves alone. Before: Windows has no parent-death signal, so the old router and both model servers
    kept running beside the new ones (and with the bootloader killed, the old front too, holding the port)."""
    bed = installed_ascii
    for victim in ("program", "bootloader"):
        assert answers(bed.url, bed.key(), BACK_TIMEOUT_S)
        front = sorted(fronts(bed.home), key=lambda p: p.create_time())
        assert len(front) == 2, [p.cmdline() for p in front]
        old = {p.pid for p in [*front, *servers(bed.home)]}
        (front[1] if victim == "program" else front[0]).kill()
        assert not _gone(old), (victim, [p.cmdline() for p in servers(bed.home)])
        assert answers(bed.url, bed.key(), BACK_TIMEOUT_S), victim
        assert bed.chat(bed.key()).status_code == 200


def test_remove_goes_back_to_one_model_without_the_front(installed_ascii: WinInstall) -> None:
    bed = installed_ascii
    removed = bed.launcher("remove", EMBED_MODEL_ID, "--yes")
    assert removed.returncode == 0, (removed.stdout + removed.stderr)[-3000:]
    assert f"{MODEL_ID} is the one model behind the endpoint again." in removed.stdout, removed.stdout  # "1 models"
    assert not fronts(bed.home)
    running = servers(bed.home)
    assert len(running) == 1 and "--models-preset" not in " ".join(running[0].cmdline())
    assert not (bed.home / "models.ini").exists()
    answer = bed.chat(bed.key())
    assert answer.status_code == 200 and answer.json()["model"] == MODEL_ID


def test_uninstall_through_the_launcher_removes_the_home_and_the_launcher(installed_ascii: WinInstall) -> None:
    """The launcher runs the setup's copy in the home (no Python on this "PC"), which Windows will not delete while
    it runs: ``app\\`` is left to ``remove-after-exit.bat``, and goes once the uninstall has ended. (Wine's cmd keeps
    that script open while it runs, so there the emptied home folder itself stays.)"""
    state = json.loads((installed_ascii.home / "state.json").read_text(encoding="utf-8"))
    bin_dir = state["launcher"]["path"].rpartition("\\")[0]
    done = installed_ascii.launcher("uninstall", "--yes")
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert "app/ hold this running program" in done.stdout and "QwenClientKit is uninstalled." in done.stdout
    assert not servers(installed_ascii.home) and not fronts(installed_ascii.home)
    deadline = time.monotonic() + BACK_TIMEOUT_S
    while installed_ascii.home.exists() and any(installed_ascii.home.iterdir()) and time.monotonic() < deadline:
        time.sleep(1)
    left = sorted(p.name for p in installed_ascii.home.iterdir()) if installed_ascii.home.exists() else []
    assert left == []
    assert bin_dir.lower() not in _user_path(installed_ascii).lower()
    assert installed_ascii.launcher("status").returncode != 0  # no qwenkit any more
