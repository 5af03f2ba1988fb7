"""``qwenkit uninstall`` on a real home built by hand: only our entries go, links are never followed out of the home,
the user's own files (and then the home) stay, the prompt defaults to No, and a running start-script server is
stopped first. The service managers that cannot run here (systemd is not PID 1) get a recording runner."""

from __future__ import annotations

import argparse
import io
import os
import pty
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from bootstrap.app.commands import uninstall
from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.home import Home
from bootstrap.core.home_lock import HomeLocked
from bootstrap.core.sizes import human_size
from bootstrap.install import uninstall as uninstall_stage
from bootstrap.install.uninstall import HomeLeft, Removal, tidy_home
from bootstrap.register.managers import FallbackManager, HostProbe
from bootstrap.register.systemd import UNIT
from tests.core.test_home_lock import REPO, hold_lock

pytestmark = pytest.mark.usefixtures("english")

OUR_FILES = {
    "state.json": b'{"schema": 1}\n',
    "run_qwen.sh": b"#!/bin/sh\nexit 0\n",
    "run_qwen.bat": b"@echo off\r\n",
    ".state.json.x1y2.tmp": b"{",  # left by a crash between write and rename
    "engine/b10434-ubuntu-x64/llama-server": b"\x7fELF" + b"\0" * 4000,
    "engine/b10434-ubuntu-x64/libggml.so": b"\0" * 2500,
    "cache/partial/ab12.part": b"\1" * 1234,
    "cache/staging/x/readme.txt": b"staged\n",
    "venv/bin/python": b"#!python\n",
    "venv/lib/site.py": b"# site\n" * 10,
    "secrets/api-key": b"sk-local-0123456789\n",
    "logs/server.log": b"started\n" * 50,
    "service/manager.txt": b"notes\n",
    "run/readme": b"x",
}
MODEL_FILES = {"models/unsloth/Qwen3.6-GGUF/model.gguf": b"GGUF" + b"\2" * 6000}


def write_files(root: Path, files: dict[str, bytes]) -> int:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return sum(len(data) for data in files.values())


def snapshot(*roots: Path) -> dict[str, bytes | str]:
    """Every file and link under ``roots`` (links by target, never followed)."""
    seen: dict[str, bytes | str] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                path = Path(dirpath, name)
                if path.is_symlink():
                    seen[str(path)] = f"-> {os.readlink(path)}"
                elif path.is_file():
                    seen[str(path)] = path.read_bytes()
    return seen


def args(*, yes: bool = True, keep_models: bool = False) -> argparse.Namespace:
    return argparse.Namespace(command="uninstall", yes=yes, keep_models=keep_models)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    root = tmp_path / "Qwen 家"
    monkeypatch.setenv("QWENKIT_HOME", str(root))
    return Home(root)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Files outside the home that links inside it point to: they must survive."""
    folder = tmp_path / "outside"
    (folder / "logs").mkdir(parents=True)
    (folder / "keep.txt").write_text("mine\n", encoding="utf-8")
    (folder / "logs" / "old.log").write_text("my log\n", encoding="utf-8")
    return folder


def build_installed(home: Home, outside: Path) -> int:
    """A home as an install leaves it, with links out of it; returns the bytes our entries hold."""
    home.root.mkdir(parents=True)
    home.lock_file.write_bytes(b"")
    size = write_files(home.root, OUR_FILES) + write_files(home.root, MODEL_FILES)
    links = {home.engines_dir / "outside-file": outside / "keep.txt",  # a file link inside our folder
             home.venv_dir / "lib" / "outside-dir": outside,  # a folder link inside our folder
             home.logs_dir / "old": outside / "logs"}
    for link, target in links.items():
        link.symlink_to(target, target_is_directory=target.is_dir())
        size += len(os.readlink(link))  # a link's own size is its target's length (lstat)
    return size


def test_removes_only_our_entries_and_never_follows_links(home: Home, outside: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    ours = build_installed(home, outside)
    (home.root / "notes.txt").write_text("the user's own file\n", encoding="utf-8")
    (home.root / "my-data").mkdir()
    (home.root / "my-data" / "a.csv").write_text("1,2\n", encoding="utf-8")
    before_outside = snapshot(outside)

    assert uninstall.run(args()) == 0

    assert sorted(os.listdir(home.root)) == [".lock", "my-data", "notes.txt"]
    assert (home.root / "notes.txt").read_text(encoding="utf-8") == "the user's own file\n"
    assert (home.root / "my-data" / "a.csv").read_text(encoding="utf-8") == "1,2\n"
    assert snapshot(outside) == before_outside
    out = capsys.readouterr().out  # what went and what was freed: the command's output
    assert f"Freed {human_size(ours)} ({ours:,} bytes)." in out
    assert (f"Removed from {home.root}: state.json, run_qwen.sh, run_qwen.bat, service/, run/, engine/, venv/, "
            "secrets/, cache/, logs/, .state.json.x1y2.tmp, models/\n") in out
    assert f"{home.root} is kept: it still holds files that are not QwenClientKit's: my-data, notes.txt" in out


def test_the_stage_deletes_and_reports_without_asking(home: Home, outside: Path) -> None:
    """``install.uninstall`` is what the command calls after asking: the entries go under the lock, the result says
    what went, and the home is removed only once nothing but our lock is left."""
    ours = build_installed(home, outside)
    models = sum(len(data) for data in MODEL_FILES.values())
    removal = uninstall_stage.uninstall(home, keep_models=True, admin=False)
    assert removal is not None
    assert removal.removed[0] == "state.json" and "models/" not in removal.removed
    assert (removal.freed, removal.failed) == (ours - models, 0)
    assert tidy_home(home) == HomeLeft(removed=False, foreign=())  # the kept models hold it
    assert uninstall_stage.uninstall(home, keep_models=True, admin=False) is None  # only the models are left
    assert uninstall_stage.uninstall(home, keep_models=False, admin=False) == Removal(("models/",), models, 0)
    assert tidy_home(home) == HomeLeft(removed=True, foreign=())
    assert not home.root.exists()


def test_keep_models_leaves_the_models_and_says_where(home: Home, outside: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    build_installed(home, outside)
    models_before = snapshot(home.models_dir)

    assert uninstall.run(args(keep_models=True)) == 0

    assert sorted(os.listdir(home.root)) == [".lock", "models"]
    assert snapshot(home.models_dir) == models_before
    out = capsys.readouterr().out
    assert f"Models kept in {home.models_dir} (5.9 KiB)." in out
    assert "models/" not in out.split("Removed from", 1)[1].splitlines()[0]
    assert "is kept" not in out  # the models are ours, not a foreign file keeping the home


def test_a_home_holding_only_our_entries_is_removed(home: Home, outside: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    build_installed(home, outside)
    assert uninstall.run(args()) == 0
    assert not home.root.exists()
    assert f"Removed the empty folder {home.root}." in capsys.readouterr().out
    assert (outside / "keep.txt").read_text(encoding="utf-8") == "mine\n"


def test_without_yes_and_without_a_terminal_nothing_is_deleted(home: Home, outside: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    build_installed(home, outside)
    before = snapshot(home.root)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # piped input is not a terminal: "y" is not consent
    with pytest.raises(UsageError) as refused:
        uninstall.run(args(yes=False))
    assert refused.value.exit_code == ExitCode.USAGE
    assert refused.value.hint == "add --yes to uninstall without a prompt"
    assert snapshot(home.root) == before


def _run_on_a_terminal(home: Home, answer: bytes) -> subprocess.CompletedProcess[str]:
    """``uninstall`` in a child whose stdin is a real pseudo-terminal, answering the prompt with ``answer``."""
    code = ("import argparse, sys; from bootstrap.app.commands.uninstall import run; "
            "sys.exit(run(argparse.Namespace(yes=False, keep_models=False)))")
    env = dict(os.environ, QWENKIT_HOME=str(home.root), QWENKIT_LANG="en", PYTHONPATH=str(REPO))
    controller, terminal = pty.openpty()
    try:
        os.write(controller, answer)  # held by the terminal's line discipline until the child reads it
        return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, stdin=terminal, capture_output=True,
                              text=True, encoding="utf-8", timeout=120, check=False)
    finally:
        os.close(terminal)
        os.close(controller)


def test_the_prompt_defaults_to_no(home: Home, outside: Path) -> None:
    build_installed(home, outside)
    before = snapshot(home.root)
    refused = _run_on_a_terminal(home, b"\n")  # just Enter
    assert refused.returncode == 0, refused.stderr
    assert "Remove QwenClientKit from" in refused.stderr and "will be deleted [y/N]" in refused.stderr
    assert "Cancelled; nothing was removed." in refused.stderr
    assert snapshot(home.root) == before

    accepted = _run_on_a_terminal(home, b"y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert not home.root.exists()


def test_a_lock_held_by_another_process_refuses_and_deletes_nothing(home: Home, outside: Path) -> None:
    build_installed(home, outside)
    before = snapshot(home.root)
    with hold_lock(home.root, "install") as child, pytest.raises(HomeLocked) as refused:
        uninstall.run(args())
    assert (refused.value.pid, refused.value.exit_code) == (child.pid, ExitCode.USAGE)
    before[str(home.lock_file)] = f"{child.pid} install\n".encode()
    assert snapshot(home.root) == before


def test_a_folder_without_our_marker_is_not_touched(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    """``QWENKIT_HOME`` pointed at the user's own project: its ``venv/`` and ``logs/`` are not ours to delete."""
    write_files(home.root, {"venv/bin/python": b"#!", "logs/app.log": b"x", "models/m.bin": b"y", "README": b"z"})
    before = snapshot(home.root)
    assert uninstall.run(args()) == 0
    assert snapshot(home.root) == before
    assert not home.lock_file.exists()
    out = capsys.readouterr().out
    assert f"Nothing installed in {home.root}." in out
    assert "has no state.json or .lock of QwenClientKit" in out


def test_a_missing_home_is_nothing_installed_and_not_created(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    assert uninstall.run(args()) == 0
    assert not home.root.exists()
    assert f"Nothing installed in {home.root}." in capsys.readouterr().out


def test_a_running_start_script_server_is_stopped_first(home: Home, outside: Path) -> None:
    """The fallback manager recorded at install: its server (here the start script, still ours before ``exec``)
    is signalled and reaped, then its files go."""
    build_installed(home, outside)
    home.run_sh.write_text("#!/bin/sh\nsleep 300\nexit 0\n", encoding="utf-8")
    (home.services_dir / "manager").write_text("script\n", encoding="utf-8")
    manager = FallbackManager(home)
    manager.start()
    server = psutil.Process(int(manager.pid_file.read_text(encoding="ascii")))
    try:
        assert server.is_running() and str(home.run_sh) in server.cmdline()

        assert uninstall.run(args()) == 0

        assert not server.is_running()
        assert not home.root.exists()
    finally:
        if server.is_running():
            server.kill()


class RecordingTools:
    """Stands in for systemctl/loginctl, which cannot run here (systemd is not PID 1): records argv, answers rc 0."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append([str(a) for a in argv])
        return subprocess.CompletedProcess(list(argv), 0, "", "")


def _systemd_user_probe(tmp_path: Path) -> HostProbe:
    return HostProbe(systemd_booted=True, is_root=False, user="li", uid=1000, user_home=tmp_path / "li")


def test_the_recorded_service_is_uninstalled(home: Home, outside: Path, tmp_path: Path) -> None:
    build_installed(home, outside)
    probe = _systemd_user_probe(tmp_path)
    unit = probe.user_home / ".config" / "systemd" / "user" / UNIT
    write_files(probe.user_home, {str(unit.relative_to(probe.user_home)): b"[Service]\n"})
    (home.services_dir / "manager").write_text("systemd-user\n", encoding="utf-8")
    tools = RecordingTools()

    assert uninstall.run(args(), probe=probe, runner=tools) == 0

    assert not unit.exists()
    assert ["systemctl", "--user", "disable", "--now", UNIT] in tools.calls
    assert not home.root.exists()


def test_a_service_that_cannot_be_removed_is_a_warning_and_the_files_still_go(
        home: Home, outside: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_installed(home, outside)
    probe = _systemd_user_probe(tmp_path)
    unit = probe.user_home / ".config" / "systemd" / "user" / UNIT
    unit.mkdir(parents=True)  # a folder where the unit file should be: unlinking it fails, even as root
    (home.services_dir / "manager").write_text("systemd-user\n", encoding="utf-8")

    assert uninstall.run(args(), probe=probe, runner=RecordingTools()) == 0

    assert "Could not remove the service (systemd-user)" in capsys.readouterr().err
    assert not home.root.exists()
    assert unit.is_dir()  # outside the home: left as it was


def test_a_second_run_finds_nothing(home: Home, outside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_installed(home, outside)
    (home.root / "notes.txt").write_bytes(b"mine")
    assert uninstall.run(args()) == 0
    capsys.readouterr()
    assert uninstall.run(args()) == 0
    assert f"Nothing installed in {home.root}." in capsys.readouterr().out
    assert sorted(os.listdir(home.root)) == [".lock", "notes.txt"]


def test_on_windows_the_running_programs_folder_is_left_to_a_script_that_runs_after_exit(
        home: Home, outside: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Windows deletes no running program and ``qwenkit uninstall`` runs from the home's venv: that folder is not
    even begun (a half-deleted venv fails the next import) but handed to ``remove-after-exit.bat``, started detached.
    Here the two Windows facts stand in: which folder holds the running program, and cmd.exe (``true`` runs instead);
    tests/render/test_remove_after_exit_under_wine.py runs the script itself under Wine."""
    build_installed(home, outside)
    venv_files = snapshot(home.venv_dir)
    monkeypatch.setattr(uninstall_stage, "_holds_this_program", lambda path: path == home.venv_dir)
    started: list[list[str]] = []
    monkeypatch.setattr(uninstall_stage, "script_argv", lambda script: started.append([str(script)]) or ["true"])
    assert uninstall.run(args()) == 0
    out = capsys.readouterr().out
    assert "venv/ hold this running program" in out and "a few seconds after it exits" in out
    assert "is kept" not in out  # neither the venv nor the script counts as the user's
    assert snapshot(home.venv_dir) == venv_files
    script = home.root / uninstall_stage.AFTER_EXIT_SCRIPT
    assert started == [[str(script)]]
    text = script.read_bytes()
    assert text.isascii() and b'rmdir /s /q "%~dp0venv"' in text and b"\r\n" in text
    assert sorted(p.name for p in home.root.iterdir()) == [".lock", script.name, "venv"]
