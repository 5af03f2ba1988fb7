"""``run_qwen.bat`` run by a real cmd.exe (Wine's), with a stand-in llama-server.exe that records its argv.

The script is rendered by the product for a home whose path holds a space, ``&``, ``!``, parentheses, ``^`` and
Chinese characters, and a model outside the home with the same (bar the Chinese); the stand-in
(``tests/support/win/argv_recorder.c``) writes down every argument as the C runtime split it and which
``LLAMA_*`` variables reached it, and exits with a chosen status. ``test_start_scripts.py`` checks the text
against cmd's rules; this runs it.

Where Wine's cmd differs from Windows' (seen with Wine 8.0, Debian 12), the case stays with the text tests:
- a lone ``%`` in the command line that starts the script is dropped, so ``%~dp0`` of a folder named
  ``100%`` loses it (Windows keeps an unpaired ``%`` outside a batch file), also when the script is started
  relative to its folder as the supervisor starts it: a home holding ``%`` is written out in the script instead
  (``start_scripts.bat_names_home``), which ``test_a_home_with_percent_is_written_out_and_runs`` runs here;
- the batch file's bytes are decoded in the ANSI code page whatever ``chcp 65001`` says, so non-ASCII text
  written in the file (a model path outside the home) is garbled; inside the home the script writes only
  ``%~dp0``-relative ASCII, which is why a Chinese home works here;
- ``call x.bat`` loses the status of ``exit /b N`` (1 instead of N): the script is started directly, as a
  double-click or a typed name starts it;
- ``set NAME 2>nul`` still prints "Environment variable NAME not defined".
Found here and changed in the template for every cmd: a continued command whose last line expanded to nothing
(``%*`` alone, a double-click) did not run at all, and ``'set LLAMA_ARG_ 2^>nul'`` inside ``for /f`` listed
nothing, so stray ``LLAMA_ARG_*`` variables reached the server.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from bootstrap.core import console
from bootstrap.core.home import Home
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.render.start_scripts import render_start_scripts
from tests.support import wine

pytestmark = pytest.mark.usefixtures("english")

HOME_DIR = "张三 A&B ! (x)^ y"
MODEL_DIR = "D &x! (y)^ z"
ARGS = ("-c", "32768", "-np", "1", "-fa", "on", "--n-cpu-moe", "30", "-ot", r"blk\.(2|3)\.ffn_.*_exps=CPU",
        "--reasoning-budget", "-1")
RUN_TIMEOUT_S = 120  # cmd and a stand-in under Wine: seconds; a bound, not a speed check


@dataclass(frozen=True)
class WinInstall:
    home: Home
    spec: LaunchSpec
    server: Path  # the stand-in, on the Linux side
    prefix: Path


def _win_install(tmp_path: Path, wine_prefix: Path, home_dir: str = HOME_DIR) -> WinInstall:
    """A Windows home (on Wine's Z: drive) with the stand-in as its engine, a model outside it, the script."""
    console.set_language("en")
    home = Home(tmp_path / home_dir / "QwenClientKit")
    engine = home.root / "engine" / "b10434-win-cpu"
    server = wine.build_recorder(engine / "llama-server.exe")
    model = tmp_path / MODEL_DIR / "qwen^1!.gguf"
    mmproj = home.root / "models" / "unsloth" / "mmproj-F16.gguf"
    key = home.root / "secrets" / "api-key"
    for path in (model, mmproj, key):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    w = wine.windows_path
    spec = LaunchSpec(home=w(home.root), system="Windows", engine_dir=w(engine),  # type: ignore[arg-type]
                      server=w(server), model=w(model), mmproj=w(mmproj), args=ARGS,  # type: ignore[arg-type]
                      alias="qwen3.6-35b-a3b", api_key_file=w(key))  # type: ignore[arg-type]
    assert render_start_scripts(spec, home).bat == home.run_bat
    return WinInstall(home, spec, server, wine_prefix)


@pytest.fixture
def win_install(tmp_path: Path, wine_prefix: Path) -> WinInstall:
    return _win_install(tmp_path, wine_prefix)


def _run(install: WinInstall, *extra: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    argv = ["wine", str(wine.windows_path(install.home.run_bat)), *extra]
    return subprocess.run(argv, env=wine.wine_env(install.prefix, **env), capture_output=True, timeout=RUN_TIMEOUT_S)


def test_the_server_gets_every_argument_as_planned(win_install: WinInstall) -> None:
    """argv as the C runtime splits it is the plan's, word for word, with the user's extra arguments last."""
    proc = _run(win_install, "--verbose", "a b&c")
    assert proc.returncode == 0, proc.stderr
    args = wine.read_record(win_install.server).args
    assert args == [*win_install.spec.argv(), "--verbose", "a b&c"]
    assert HOME_DIR in args[0] and MODEL_DIR in args[args.index("-m") + 1]


def test_llama_variables_do_not_reach_the_server(win_install: WinInstall) -> None:
    """``LLAMA_ARG_*`` and ``LLAMA_API_KEY`` set around the script are cleared before the server starts."""
    proc = _run(win_install, LLAMA_API_KEY="sk-from-the-environment", LLAMA_ARG_CTX_SIZE="1",
                LLAMA_ARG_ENDPOINT_METRICS="1")
    assert proc.returncode == 0, proc.stderr
    seen = wine.read_record(win_install.server).seen
    assert seen == {"LLAMA_API_KEY": False, "LLAMA_ARG_CTX_SIZE": False, "LLAMA_ARG_ENDPOINT_METRICS": False}


def test_the_servers_exit_status_is_the_scripts(win_install: WinInstall) -> None:
    proc = _run(win_install, QK_EXIT="7")
    assert proc.returncode == 7, proc.stderr
    assert wine.read_record(win_install.server).args[0] == str(win_install.spec.server)


def test_a_home_with_percent_is_written_out_and_runs(tmp_path: Path, wine_prefix: Path) -> None:
    """A home named ``100% A&B!``: before, ``%~dp0`` lost the ``%`` under Wine's cmd, every file of the home was
    "not found" and the install ended with "llama-server ended before it served (exit code 1)" after the whole
    download. Now the server gets the home's real paths, started as the supervisor starts it (``cmd /d /c
    .\\run_qwen.bat`` in the home) and as a double-click does (the script's full path)."""
    install = _win_install(tmp_path, wine_prefix, "Li 100% A&B!")
    home = install.home.root
    env = wine.wine_env(install.prefix)
    for argv, cwd in ((["wine", "cmd", "/d", "/c", ".\\run_qwen.bat"], home),
                      (["wine", str(wine.windows_path(install.home.run_bat))], tmp_path)):
        (install.server.parent / "record.txt").unlink(missing_ok=True)
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=RUN_TIMEOUT_S)
        assert proc.returncode == 0, proc.stderr
        assert wine.read_record(install.server).args == install.spec.argv()
        assert "100% A&B!" in wine.read_record(install.server).args[0]


def test_a_missing_file_is_named_and_nothing_starts(win_install: WinInstall) -> None:
    shutil.rmtree(win_install.home.root / "models")
    proc = _run(win_install)
    assert proc.returncode == 1
    err = proc.stderr.decode("utf-8", errors="replace")
    assert "run_qwen.bat: file not found:" in err and "mmproj-F16.gguf" in err and "run qwenkit install again" in err
    assert not (win_install.server.parent / "record.txt").exists()
