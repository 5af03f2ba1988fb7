"""``remove-after-exit.bat`` (templates/; ``install.uninstall``) run by a real cmd.exe (Wine's) while a real Windows
program runs from the folder it must delete, as ``qwenkit uninstall`` leaves it on Windows.

Wine refuses to delete a running program as Windows does (``os.remove`` of a running ``python.exe``: WinError 5,
tried here), so the script has to wait: the folder goes once the program exits, then the lock file, the script and
the home. A home that holds a file of the user's is kept, with that file. Wine's cmd holds the batch file open until
it ends, so there the emptied home folder itself stays (Windows' cmd reads the file line by line, and the script's
last line removes the folder it has emptied).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bootstrap.core.templating import render_template, write_rendered
from bootstrap.install.uninstall import AFTER_EXIT_SCRIPT
from tests.support import wine

HOME_DIR = "张三 A&B ! (x)"
WAIT_S = 60  # Wine starting cmd and python, and the script's one-second waits: a bound, not a speed check


def _home_with_running_program(tmp_path: Path, windows_python: Path, prefix: Path,
                               seconds: int) -> tuple[Path, subprocess.Popen[bytes]]:
    home = tmp_path / HOME_DIR / "QwenClientKit"
    app = home / "app"
    shutil.copytree(windows_python.parent, app)
    (home / ".lock").write_text("", encoding="ascii")
    code = f"import time; print('ready', flush=True); time.sleep({seconds})"
    program = subprocess.Popen(["wine", str(app / windows_python.name), "-c", code], env=wine.wine_env(prefix),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert program.stdout is not None and program.stdout.readline().strip() == b"ready"
    return home, program


def _run_script(home: Path, prefix: Path) -> None:
    script = home / AFTER_EXIT_SCRIPT
    write_rendered(script, render_template("remove-after-exit.bat.j2", entries=["app"], tries=60, lock=".lock"),
                   newline="\r\n")
    assert script.read_bytes().isascii()
    subprocess.Popen(["wine", "cmd", "/d", "/c", f".\\{AFTER_EXIT_SCRIPT}"], cwd=home, env=wine.wine_env(prefix),
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _gone(path: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not path.exists():
            return True
        time.sleep(0.5)
    return False


@pytest.mark.parametrize("user_file", [False, True])
def test_the_folder_goes_once_the_program_exits(tmp_path: Path, windows_python: Path, wine_prefix: Path,
                                               user_file: bool) -> None:
    home, program = _home_with_running_program(tmp_path, windows_python, wine_prefix, seconds=8)
    if user_file:
        (home / "notes 笔记.txt").write_text("mine", encoding="utf-8")
    _run_script(home, wine_prefix)
    time.sleep(2)
    assert program.poll() is None and (home / "app").is_dir()  # still running: nothing deleted yet
    program.wait(timeout=WAIT_S)
    assert _gone(home / "app", WAIT_S) and _gone(home / AFTER_EXIT_SCRIPT, WAIT_S)
    assert _gone(home / ".lock", WAIT_S)
    left = sorted(p.name for p in home.iterdir()) if home.exists() else []
    assert left == (["notes 笔记.txt"] if user_file else [])
    assert home.parent.is_dir()  # the user's folder above the home stays
