"""The ``qwenkit.cmd`` launcher run by a real cmd.exe (Wine's; tests/support/wine.py), with a stand-in for the
frozen setup that records its argv and ``QWENKIT_HOME`` (tests/support/win/argv_recorder.c).

The paths hold a space, ``&``, ``!``, parentheses and ``^`` but stay ASCII and free of ``%``: the launcher writes
them in its text, and Wine's cmd decodes a batch file in the ANSI code page whatever ``chcp 65001`` says and drops
a lone ``%`` (tests/render/test_bat_under_wine.py lists what it does differently from Windows); those cases stay
with the text checks in test_shell_command.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.register.shell_command import LauncherTarget, render_launcher
from tests.support import wine

HOSTILE = "A&B ! (x)^ y"
RUN_TIMEOUT_S = 120  # a bound, not a speed check


@pytest.fixture
def launcher(tmp_path: Path) -> tuple[Path, Path, Home]:
    """(qwenkit.cmd, the stand-in program, the home it names) as an install of the frozen setup writes them."""
    home = Home(tmp_path / HOSTILE / "QwenClientKit")
    program = wine.build_recorder(home.root / "app" / "QwenClientKit-Setup.exe")
    target = LauncherTarget(wine.windows_path(program), no_args=("--help",), kind="frozen")  # type: ignore[arg-type]
    text = render_launcher("Windows", target, Home(wine.windows_path(home.root)))  # type: ignore[arg-type]
    cmd = tmp_path / "bin (x)" / "qwenkit.cmd"
    cmd.parent.mkdir()
    cmd.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    return cmd, program, home


def _run(cmd: Path, prefix: Path, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["wine", str(wine.windows_path(cmd)), *args], env=wine.wine_env(prefix, **env),
                          capture_output=True, timeout=RUN_TIMEOUT_S)


def test_the_users_words_reach_the_program_with_the_home(launcher: tuple[Path, Path, Home],
                                                          wine_prefix: Path) -> None:
    cmd, program, home = launcher
    proc = _run(cmd, wine_prefix, "install", "--ctx", "8192", "a b&c", QK_EXIT="3")
    assert proc.returncode == 3, proc.stderr  # the program's exit status is the launcher's
    record = wine.read_record(program)
    assert record.args == [str(wine.windows_path(program)), "install", "--ctx", "8192", "a b&c"]
    assert record.home == str(wine.windows_path(home.root))


def test_no_words_means_help_and_a_set_home_is_kept(launcher: tuple[Path, Path, Home], wine_prefix: Path) -> None:
    cmd, program, _ = launcher
    proc = _run(cmd, wine_prefix, QWENKIT_HOME=r"D:\other home")
    assert proc.returncode == 0, proc.stderr
    record = wine.read_record(program)
    assert record.args == [str(wine.windows_path(program)), "--help"] and record.home == r"D:\other home"
