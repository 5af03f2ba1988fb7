"""Issue 24, item 1, through the real CLI: a stranger on the recorded port gets nothing, and is named.

The home is hand-built (``tests/support/install_records.py``: the record a verified install leaves, in
milliseconds) with its server down; on its port a separate real process answers ``/health``, ``/v1/models`` and
``/props`` exactly as a healthy llama-server would, and records every request (``tests/support/stranger.py``).
Before: ``qwenkit status`` printed "healthy" (exit 0) and sent it ``Authorization: Bearer <key>``. Now every
command that talks to the server asks the OS who holds the port first: the stranger is named by its PID, exit 6,
and it receives no request at all. The installs with the real engine are in ``tests/e2e/test_own_server.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from bootstrap.core.home import Home
from bootstrap.record.state import save_state
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_records import file_record, install_state, place_engine, write_scripts
from tests.support.llama import free_port
from tests.support.stranger import Stranger

KEY = "sk-qwenkit-test-0123456789abcdefghijklmnop"


def built_home(root: Path, port: int) -> Home:
    """An installed home (engine folder, model, key, start script, state.json) whose server runs on ``port``."""
    home = Home(root)
    engine = place_engine(home)
    model = home.models_dir / "tiny.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF" + bytes(60))
    state = install_state(home, engine, [file_record(home, model, "0" * 64)], model="tiny-chat", model_id="tiny-chat",
                          quant="Q8_0")
    save_state(home, replace(state, server=replace(state.server, port=port)))
    write_scripts(home)
    home.api_key_file.write_text(KEY + "\n", encoding="ascii")
    home.api_key_file.chmod(0o600)
    home.secrets_dir.chmod(0o700)
    return home


def qwenkit(home: Home, *argv: str, lang: str = "en", **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, on ``home``, with no browser and no display (as over SSH)."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("QWENKIT_") and k not in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY")}
    clean.update({"QWENKIT_HOME": str(home.root), "QWENKIT_LANG": lang, "PYTHONPATH": str(REPO_ROOT), **env})
    return subprocess.run([sys.executable, "-m", "bootstrap", *argv], cwd=REPO_ROOT, env=clean, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture(params=[200, 503], ids=["answers-healthy", "answers-loading"])
def stranger(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Home, Stranger]:
    port = free_port()
    home = built_home(tmp_path / "Qwen 家 home", port)
    with Stranger(port, tmp_path / "seen.jsonl", health=request.param) as program:
        yield home, program


def _named(program: Stranger) -> str:
    return f"port {program.port} is held by PID {program.pid} ({psutil.Process(program.pid).name()}), not by this " \
           "install's server; nothing was sent to it"


def test_status_names_the_stranger_and_sends_it_nothing(stranger: tuple[Home, Stranger]) -> None:
    home, program = stranger
    proc = qwenkit(home, "status")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 6, both
    assert "Traceback" not in both and not any(line.startswith("healthy:") for line in both.splitlines())
    assert f"error: not healthy: {_named(program)}" in proc.stderr
    assert "hint: Stop that program, or move this install to another port: 'qwenkit install --port " in proc.stderr
    assert program.requests() == []  # not even /health: the key least of all

    doc = json.loads(qwenkit(home, "status", "--json").stdout)
    assert doc["healthy"] is False and doc["health"] == "stranger" and doc["server"] is None
    assert doc["port_holder"] == {"state": "stranger", "port": program.port, "pid": program.pid,
                                  "name": psutil.Process(program.pid).name()}
    assert program.requests() == []


def test_status_open_opens_nothing_for_a_stranger(stranger: tuple[Home, Stranger], tmp_path: Path) -> None:
    home, program = stranger
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > "{opened}"\n', encoding="utf-8")
    browser.chmod(0o755)
    proc = qwenkit(home, "status", "--open", BROWSER=f"{browser} %s")
    assert proc.returncode == 6 and _named(program) in proc.stderr
    assert not opened.exists() and program.requests() == []


def test_service_status_and_start_name_the_stranger(stranger: tuple[Home, Stranger]) -> None:
    """``service status`` says in one sentence who holds the port (exit 6); ``service start`` refuses to start
    beside it (exit 6) and starts nothing."""
    home, program = stranger
    status = qwenkit(home, "service", "status")
    assert status.returncode == 6, status.stderr
    said = (status.stdout + status.stderr).strip().splitlines()
    assert said == [f"This install's server cannot answer there: {_named(program)}. "
                    "It does not start by itself at boot. Start it with 'qwenkit service start'."]
    doc = json.loads(qwenkit(home, "service", "status", "--json").stdout)
    assert doc["port_holder"]["pid"] == program.pid and doc["active"] is False

    start = qwenkit(home, "service", "start")
    assert start.returncode == 6
    assert f"error: {_named(program)}" in start.stderr and "Traceback" not in start.stderr
    assert not (home.run_dir / "server.pid").exists()  # nothing was started
    assert program.requests() == []


def test_chinese_names_the_stranger_too(stranger: tuple[Home, Stranger]) -> None:
    home, program = stranger
    proc = qwenkit(home, "status", lang="zh")
    assert proc.returncode == 6
    name = psutil.Process(program.pid).name()
    named = f"端口 {program.port} 被进程 {program.pid}（{name}）占用，它不是本安装的服务器；未向它发送任何内容"
    assert named in proc.stderr
    assert program.requests() == []


def test_a_key_file_that_is_a_link_is_never_read(tmp_path: Path) -> None:
    """A planted ``secrets/api-key`` link (issue 24, low): ``status`` names it and reads nothing through it; the
    FIFO it points to would block any open for ever, so a status that returns at all did not follow it."""
    home = built_home(tmp_path / "home", free_port())
    home.api_key_file.unlink()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    home.api_key_file.symlink_to(fifo)
    proc = qwenkit(home, "status")
    assert proc.returncode == 6
    assert f"{home.api_key_file} is a link; the API key is never read or written through a link" in proc.stderr


def test_a_world_writable_home_and_start_script_are_warned(tmp_path: Path) -> None:
    """``status`` and ``doctor`` warn about a home or start script every user may change; a private one is quiet."""
    home = built_home(tmp_path / "home", free_port())
    for argv in (("status",), ("doctor",)):
        assert "can be changed by every user" not in qwenkit(home, *argv).stderr
    home.root.chmod(0o777)
    home.run_sh.chmod(0o666)
    for argv in (("status",), ("doctor",), ("doctor", "--json")):
        proc = qwenkit(home, *argv)
        for path in (home.root, home.run_sh):
            assert f"warning: {path} can be changed by every user of this machine" in proc.stderr, argv
    assert json.loads(qwenkit(home, "doctor", "--json").stdout)["os"]  # --json's stdout is still the profile alone
