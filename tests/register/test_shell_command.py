"""The ``qwenkit`` launcher: written into a real bin folder, run by a real shell with arguments holding spaces and
Chinese, never replacing a qwenkit it did not write, saying which one runs, removed only while intact. Windows: the
rendered ``qwenkit.cmd`` and the user PATH through the stand-in ``winreg`` of ``test_user_path``."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.core.hashing import sha256_bytes
from bootstrap.core.home import Home
from bootstrap.register.launcher_record import launcher_intact
from bootstrap.register.shell_command import MARKER, invoked_as, is_ours, kept_program, put_on_path, remove_launcher
from bootstrap.register.user_path import WinregEnvironment
from tests.register.test_user_path import DEFAULT, FakeWinreg

posix_only = pytest.mark.skipif(os.name == "nt", reason="runs the launcher with /bin/sh")
# The stand-in for the venv's qwenkit: prints what it was given, one line each, and the home it was pointed at.
ECHO = '#!/bin/sh\nprintf "home=%s\\n" "$QWENKIT_HOME"\nfor a in "$@"; do printf "arg=%s\\n" "$a"; done\n'


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """A home (space and Chinese in its path) whose runtime venv holds a qwenkit."""
    home = Home(tmp_path / "我的 家" / "qwen home")
    script = home.venv_dir / "bin" / "qwenkit"
    script.parent.mkdir(parents=True)
    script.write_text(ECHO, encoding="utf-8")
    script.chmod(0o755)
    return home


def _env(tmp_path: Path, *path: Path, shell: str = "/bin/bash") -> dict[str, str]:
    return {"PATH": os.pathsep.join([*map(str, path), "/usr/bin", "/bin"]), "SHELL": shell,
            "HOME": str(tmp_path / "user")}


def _run(launcher: Path, *argv: str, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "QWENKIT_HOME"}
    out = subprocess.run([str(launcher), *argv], capture_output=True, text=True, check=True, env={**clean, **env})
    return out.stdout.splitlines()


@posix_only
def test_launcher_runs_the_venvs_qwenkit_with_every_argument_intact(home: Home, tmp_path: Path) -> None:
    user = tmp_path / "user"
    done = put_on_path(home, "Linux", env=_env(tmp_path), user_home=user)
    launcher = user / ".local" / "bin" / "qwenkit"
    assert done.launcher == launcher and stat.S_IMODE(launcher.stat().st_mode) == 0o755
    assert MARKER in launcher.read_text(encoding="utf-8")
    assert done.record is not None and done.record.sha256 == sha256_bytes(launcher.read_bytes())
    assert done.record.target == str(home.venv_dir / "bin" / "qwenkit") and done.record.path_entry is None
    assert _run(launcher, "status", "--json", "a b 中文", "$HOME", "it's") == [
        f"home={home.root}", "arg=status", "arg=--json", "arg=a b 中文", "arg=$HOME", "arg=it's"]
    assert _run(launcher, QWENKIT_HOME="/elsewhere")[0] == "home=/elsewhere"  # the user's choice wins
    # not on PATH: the one line for this user's shell
    assert done.runs is None and done.command == str(launcher)
    assert done.line == ("qwenkit is in " + str(launcher.parent) + ", which your shell does not search yet; add it "
                         """to PATH with: echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.bashrc""")
    assert launcher_intact(done.record)


def test_no_launcher_written_names_the_command_that_ran(tmp_path: Path) -> None:
    """Issue 24: a run from a source checkout whose home has no venv writes no launcher, yet the closing line said
    "Rerun '<bin>/qwenkit install'", a file that does not exist. It names how this run was started instead."""
    home = Home(tmp_path / "home")  # no venv: from this checkout, nothing outlives the run
    user = tmp_path / "user"
    done = put_on_path(home, "Linux", env=_env(tmp_path), user_home=user, frozen=False,
                       executable=Path(sys.executable))
    assert done.launcher is None and not (user / ".local" / "bin" / "qwenkit").exists()
    assert "source checkout" in done.line
    assert done.command == f"{sys.executable} -m bootstrap"  # pytest's argv[0] is no qwenkit script
    script = tmp_path / "bin" / "qwenkit"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    assert invoked_as(Path(sys.executable), frozen=False, argv0=str(script)) == str(script)
    assert invoked_as(tmp_path / "QwenClientKit-Setup", frozen=True) == str(tmp_path / "QwenClientKit-Setup")
    on_path = tmp_path / "other"
    (on_path / "qwenkit").parent.mkdir()
    (on_path / "qwenkit").write_text("#!/bin/sh\n", encoding="utf-8")
    (on_path / "qwenkit").chmod(0o755)
    found = put_on_path(home, "Linux", env=_env(tmp_path, on_path), user_home=user, frozen=False,
                        executable=Path(sys.executable))
    assert found.command == "qwenkit"  # a qwenkit the shell finds is the one to name


@posix_only
def test_on_path_it_says_so_once_and_a_rerun_rewrites_nothing(home: Home, tmp_path: Path) -> None:
    folder = tmp_path / "user" / ".local" / "bin"
    env = _env(tmp_path, folder)
    first = put_on_path(home, "Linux", env=env, user_home=tmp_path / "user")
    assert first.line == f"qwenkit is on your PATH: {folder / 'qwenkit'}" and first.command == "qwenkit"
    before = (folder / "qwenkit").stat().st_mtime_ns
    again = put_on_path(home, "Linux", env=env, user_home=tmp_path / "user", prior=first.record)
    assert again.record == first.record and (folder / "qwenkit").stat().st_mtime_ns == before


@posix_only
def test_a_qwenkit_this_installer_did_not_write_is_left_alone(home: Home, tmp_path: Path) -> None:
    """pipx's ``~/.local/bin/qwenkit`` is a link into its own venv: kept, and the report says it is what runs."""
    folder = tmp_path / "user" / ".local" / "bin"
    folder.mkdir(parents=True)
    pipx = tmp_path / "pipx venv" / "bin" / "qwenkit"
    pipx.parent.mkdir(parents=True)
    pipx.write_text("#!/bin/sh\necho pipx\n", encoding="utf-8")
    pipx.chmod(0o755)
    (folder / "qwenkit").symlink_to(pipx)
    done = put_on_path(home, "Linux", env=_env(tmp_path, folder), user_home=tmp_path / "user")
    assert done.record is None and (folder / "qwenkit").resolve() == pipx
    assert done.line == (f"{folder / 'qwenkit'} was not written by QwenClientKit's installer, so it was left alone; "
                         f"typing qwenkit runs {folder / 'qwenkit'}")
    assert not is_ours(folder / "qwenkit", None)


@posix_only
def test_another_qwenkit_first_on_path_is_named(home: Home, tmp_path: Path) -> None:
    other = tmp_path / "opt bin"
    other.mkdir()
    (other / "qwenkit").write_text("#!/bin/sh\n", encoding="utf-8")
    (other / "qwenkit").chmod(0o755)
    folder = tmp_path / "user" / ".local" / "bin"
    done = put_on_path(home, "Linux", env=_env(tmp_path, other, folder), user_home=tmp_path / "user")
    assert done.record is not None and done.runs == other / "qwenkit"
    assert done.line == (f"Another qwenkit comes first on your PATH and is the one that runs: {other / 'qwenkit'}; "
                         f"this install's is {folder / 'qwenkit'}")


@posix_only
def test_without_a_venv_the_frozen_setup_is_kept_in_the_home(tmp_path: Path) -> None:
    """No runtime venv (no Python here): the setup copies itself into <home>/app; with no arguments the launcher
    asks it for --help (a bare setup would start an install)."""
    home = Home(tmp_path / "home 家")
    setup = tmp_path / "Downloads" / "QwenClientKit-Setup"
    setup.parent.mkdir()
    setup.write_text(ECHO, encoding="utf-8")
    setup.chmod(0o755)
    done = put_on_path(home, "Linux", frozen=True, executable=setup, env=_env(tmp_path),
                       user_home=tmp_path / "user")
    kept = home.app_dir / "QwenClientKit-Setup"
    assert done.record is not None and done.record.target == str(kept)
    setup.unlink()  # the user deletes the download
    assert _run(done.launcher)[1:] == ["arg=--help"]
    assert _run(done.launcher, "status")[1:] == ["arg=status"]


def test_a_source_checkout_without_a_venv_writes_nothing(tmp_path: Path) -> None:
    done = put_on_path(Home(tmp_path / "home"), "Linux", frozen=False, executable=Path(sys.executable),
                       env=_env(tmp_path), user_home=tmp_path / "user")
    assert done.record is None and done.line.startswith("qwenkit was not put on your PATH: this run is a source")
    assert not (tmp_path / "user" / ".local" / "bin").exists()


@posix_only
def test_uninstall_removes_only_an_intact_launcher(home: Home, tmp_path: Path) -> None:
    done = put_on_path(home, "Linux", env=_env(tmp_path), user_home=tmp_path / "user")
    assert done.record is not None and done.launcher is not None
    assert remove_launcher(done.record, "Linux") == [f"Removed the qwenkit command {done.launcher}."]
    assert not done.launcher.exists()
    again = put_on_path(home, "Linux", env=_env(tmp_path), user_home=tmp_path / "user")
    assert again.record is not None and again.launcher is not None
    with open(again.launcher, "a", encoding="utf-8") as fh:
        fh.write("# the user's own line\n")
    assert remove_launcher(again.record, "Linux") == [
        f"Kept {again.launcher}: it is no longer the qwenkit command this install wrote."]
    assert again.launcher.exists()


def _windows_home(tmp_path: Path) -> Home:
    home = Home(tmp_path / "C" / "Qwen 100% 家")
    exe = home.venv_dir / "Scripts" / "qwenkit.exe"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(b"MZ")
    return home


def test_windows_launcher_and_user_path(tmp_path: Path) -> None:
    home = _windows_home(tmp_path)
    profile = tmp_path / "Users" / "张 三"
    reg, sent = FakeWinreg(DEFAULT), []
    env = {"USERPROFILE": str(profile), "PATH": "C:\\Windows"}
    done = put_on_path(home, "Windows", env=env, registry=WinregEnvironment(reg), broadcast=lambda: sent.append(1))
    launcher = profile / ".local" / "bin" / "qwenkit.cmd"
    data = launcher.read_bytes()
    assert done.launcher == launcher and b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    text = data.decode("utf-8")
    head = text.split("chcp 65001", 1)[0]
    assert head.isascii()  # cmd.exe reads the lines before chcp 65001 in the OEM code page
    assert f'if not defined QWENKIT_HOME set "QWENKIT_HOME={str(home.root).replace("%", "%%")}"' in text
    assert f'"{home.venv_dir / "Scripts" / "qwenkit.exe"}" %*'.replace("100%", "100%%") in text
    assert reg.values["Path"] == (DEFAULT + str(launcher.parent), 2) and sent == [1]
    assert done.record is not None and done.record.path_entry == str(launcher.parent)
    assert done.line.startswith(f"qwenkit is on your PATH: {launcher} (its folder was added to your user PATH")

    # uninstall: our file goes, and the entry with it once the folder is empty
    said = remove_launcher(done.record, "Windows", env=env, registry=WinregEnvironment(reg),
                           broadcast=lambda: sent.append(1))
    assert said == [f"Removed the qwenkit command {launcher}.", f"Removed {launcher.parent} from your user PATH."]
    assert reg.values["Path"] == (DEFAULT.rstrip(";"), 2)


def test_windows_keeps_a_shared_folder_on_path_and_a_foreign_exe(tmp_path: Path) -> None:
    home = _windows_home(tmp_path)
    profile = tmp_path / "Users" / "li"
    folder = profile / ".local" / "bin"
    reg = FakeWinreg(DEFAULT)
    env = {"USERPROFILE": str(profile), "PATH": "C:\\Windows"}
    done = put_on_path(home, "Windows", env=env, registry=WinregEnvironment(reg), broadcast=lambda: None)
    assert done.record is not None
    (folder / "uv.exe").write_bytes(b"MZ")  # installed there later by another tool
    said = remove_launcher(done.record, "Windows", env=env, registry=WinregEnvironment(reg), broadcast=lambda: None)
    assert said[-1] == f"Kept {folder} on your user PATH: other programs' commands are in it."
    assert str(folder) in reg.values["Path"][0]
    # uv's or pipx's qwenkit.exe would win over a .cmd (PATHEXT order): none is written beside it
    (folder / "qwenkit.exe").write_bytes(b"MZ")
    again = put_on_path(home, "Windows", env=env, registry=WinregEnvironment(reg), broadcast=lambda: None)
    assert again.record is None and not (folder / "qwenkit.cmd").exists()


@pytest.mark.parametrize("last", ["second", "first"])
def test_the_last_of_two_homes_to_go_takes_the_shared_path_entry(tmp_path: Path, last: str) -> None:
    """Two homes share the launcher folder: the first install added it to the user PATH, the second found it there
    and rewrote the launcher for itself. Before, the entry outlived both uninstalls when the second home went last
    (only the first home's record said "added"); now the folder's mark says it, and whichever uninstall leaves the
    folder empty removes the entry, in either order."""
    profile = tmp_path / "Users" / "li"
    folder = profile / ".local" / "bin"
    reg = FakeWinreg(DEFAULT)
    env = {"USERPROFILE": str(profile), "PATH": "C:\\Windows"}
    first = _windows_home(tmp_path / "a")
    second = _windows_home(tmp_path / "b")
    done = [put_on_path(home, "Windows", env=env, registry=WinregEnvironment(reg), broadcast=lambda: None)
            for home in (first, second)]
    records = [d.record for d in done]
    assert records[0] is not None and records[1] is not None
    assert records[0].path_entry == str(folder) and records[1].path_entry is None
    order = records if last == "second" else records[::-1]
    said = remove_launcher(order[0], "Windows", env=env, registry=WinregEnvironment(reg), broadcast=lambda: None)
    assert str(folder) in reg.values["Path"][0] or last == "first", said
    remove_launcher(order[1], "Windows", env=env, registry=WinregEnvironment(reg), broadcast=lambda: None)
    assert reg.values["Path"] == (DEFAULT.rstrip(";"), 2)
    assert sorted(p.name for p in folder.iterdir()) == []


def test_an_entry_the_user_made_is_never_taken(tmp_path: Path) -> None:
    """The folder on the user PATH before any install of ours: no mark, so no uninstall removes the entry."""
    profile = tmp_path / "Users" / "li"
    folder = profile / ".local" / "bin"
    reg = FakeWinreg(DEFAULT + str(folder))
    env = {"USERPROFILE": str(profile), "PATH": "C:\\Windows"}
    done = put_on_path(_windows_home(tmp_path), "Windows", env=env, registry=WinregEnvironment(reg),
                       broadcast=lambda: None)
    assert done.record is not None and done.record.path_entry is None
    remove_launcher(done.record, "Windows", env=env, registry=WinregEnvironment(reg), broadcast=lambda: None)
    assert reg.values["Path"] == (DEFAULT + str(folder), 2)


def test_long_lived_processes_run_the_setups_copy_in_the_home(tmp_path: Path) -> None:
    """The supervisor of a frozen setup runs ``app/<setup>``: copied once (same size and time: not again), the copy
    itself when that is what runs, and the setup where it is when no copy can be made."""
    setup = tmp_path / "USB" / "QwenClientKit-Setup"
    setup.parent.mkdir()
    setup.write_bytes(b"\x7fELF setup")
    home = Home(tmp_path / "home")
    kept = kept_program(home, setup)
    assert kept == home.app_dir / setup.name and kept.read_bytes() == setup.read_bytes()
    before = kept.stat().st_ino
    assert kept_program(home, setup) == kept and kept.stat().st_ino == before  # not copied again
    assert kept_program(home, kept) == kept  # run from the copy: nothing to do
    blocked = Home(tmp_path / "blocked")
    blocked.root.mkdir()
    blocked.app_dir.write_bytes(b"a file where the folder goes")
    assert kept_program(blocked, setup) == setup
