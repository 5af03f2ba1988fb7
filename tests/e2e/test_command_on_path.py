"""Issue 16, item 2, end to end: after ``qwenkit install`` a ``qwenkit`` command exists in the user's bin folder and
runs the installed kit from anywhere, with nothing of the installer left in its environment; the report says
once how to put it on PATH and names it in its last line; ``uninstall`` through that same command removes it.

Real parts: the loopback hub's engine and model, the runtime venv built from the wheelhouse, a user HOME (space and
Chinese) whose ``~/.local/bin`` does not exist yet and is not on PATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.install_bed import InstallBed

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the POSIX launcher; Windows: tests/register")


@pytest.fixture
def bed(wheel_bed: InstallBed) -> InstallBed:
    return wheel_bed


def test_install_puts_qwenkit_in_the_users_bin_and_uninstall_takes_it_away(bed: InstallBed, tmp_path: Path) -> None:
    user = tmp_path / "用户 home"
    user.mkdir()
    bin_dir = user / ".local" / "bin"
    env = {k: v for k, v in bed.env().items() if k not in ("XDG_BIN_HOME", "QWENKIT_BIN_DIR")}
    env.update(HOME=str(user), SHELL="/bin/bash")

    installed = bed.run("install", "--yes", "--no-service", env=env)
    assert installed.returncode == 0, installed.stderr
    launcher = bin_dir / "qwenkit"
    add = (f"qwenkit is in {bin_dir}, which your shell does not search yet; add it to PATH with: "
           """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.bashrc""")
    assert installed.stderr.count(add) == 1
    assert installed.stdout.rstrip().splitlines()[-1].endswith(f"Rerun '{launcher} install' any time to upgrade.")
    record = json.loads(bed.home.state_file.read_text(encoding="utf-8"))["launcher"]
    assert record["path"] == str(launcher) and record["path_entry"] is None
    assert record["target"] == str(bed.home.venv_dir / "bin" / "qwenkit")

    # Typed in a new terminal: no QWENKIT_*, no PYTHONPATH pointing at this checkout, another folder.
    user_env = {k: v for k, v in os.environ.items()
                if not k.startswith("QWENKIT_") and k not in ("PYTHONPATH", "XDG_BIN_HOME")}
    user_env.update(HOME=str(user), QWENKIT_LANG="en", NO_PROXY="127.0.0.1,localhost")
    status = subprocess.run([str(launcher), "status", "--json"], capture_output=True, text=True, cwd=user,
                            env=user_env, timeout=120)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["healthy"] is True
    where = subprocess.run([str(launcher), "selfcheck"], capture_output=True, text=True, cwd=user, env=user_env,
                           timeout=120)
    assert str(bed.home.venv_dir) in json.loads(where.stdout)["payload"]  # the venv's kit, not the checkout
    bare = subprocess.run([str(launcher)], capture_output=True, text=True, cwd=user, env=user_env, timeout=60)
    assert bare.returncode == 2 and "usage: qwenkit" in bare.stderr  # not an install

    removed = subprocess.run([str(launcher), "uninstall", "--yes"], capture_output=True, text=True, cwd=user,
                             env=user_env, timeout=300)
    assert removed.returncode == 0, removed.stderr
    assert f"Removed the qwenkit command {launcher}." in removed.stderr
    assert not launcher.exists() and bin_dir.is_dir() and not bed.home.root.exists()


def test_the_frozen_setup_without_a_venv_leaves_a_command_that_outlives_it(frozen_setup: Path, bed: InstallBed,
                                                                             tmp_path: Path) -> None:
    """No runtime venv (``--no-venv``, as on a machine without Python): the setup keeps a copy of itself in
    ``<home>/app``, the launcher runs that copy, and the downloaded setup can be deleted."""
    downloads = tmp_path / "Downloads 下载"
    downloads.mkdir()
    setup = downloads / frozen_setup.name
    setup.write_bytes(frozen_setup.read_bytes())
    setup.chmod(0o755)
    folder = tmp_path / "user-bin 命令"
    env = {**bed.env(), "QWENKIT_BIN_DIR": str(folder)}
    installed = bed.run("install", "--yes", "--no-service", "--no-venv", exe=setup, env=env)
    assert installed.returncode == 0, installed.stderr
    launcher = folder / "qwenkit"
    assert installed.stderr.count(f"qwenkit is in {folder}, which your shell does not search yet") == 1
    kept = bed.home.app_dir / setup.name
    assert kept.read_bytes() == setup.read_bytes()
    setup.unlink()

    user_env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_") and k != "PYTHONPATH"}
    user_env.update(QWENKIT_LANG="en", NO_PROXY="127.0.0.1,localhost")
    status = subprocess.run([str(launcher), "status", "--json"], capture_output=True, text=True, cwd=tmp_path,
                            env=user_env, timeout=120)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["healthy"] is True
    helped = subprocess.run([str(launcher)], capture_output=True, text=True, cwd=tmp_path, env=user_env, timeout=120)
    assert helped.returncode == 0 and "usage:" in helped.stdout + helped.stderr  # --help, not an install

    removed = subprocess.run([str(launcher), "uninstall", "--yes"], capture_output=True, text=True, cwd=tmp_path,
                             env=user_env, timeout=300)
    assert removed.returncode == 0, removed.stderr
    assert not launcher.exists() and not bed.home.root.exists()


def test_a_pipx_install_of_the_kit_is_its_command_and_uninstall_says_how_to_remove_it(
        wheel_bed: InstallBed, wheelhouse: Path, tmp_path: Path) -> None:
    """Issue 41: a user who installed the kit with pipx got, at every install, "…/bin/qwenkit was not written by
    QwenClientKit's installer, so it was left alone…", and uninstall never said that the command stays. Here the
    kit's wheel is installed with the real pipx (offline, from the wheelhouse) into a user's ``~/.local``, and the
    install, status and uninstall are typed through pipx's ``qwenkit``, with the home in its default place."""
    from tests.support.wheelhouse import kit_wheel

    user = tmp_path / "用户 home"
    user.mkdir()
    bin_dir = user / ".local" / "bin"
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("QWENKIT_", "PIPX_", "XDG_")) and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pipx_env = {**clean, "HOME": str(user), "PIPX_HOME": str(user / ".local" / "share" / "pipx"),
                "PIPX_BIN_DIR": str(bin_dir), "PIPX_MAN_DIR": str(user / ".local" / "share" / "man"),
                "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse),
                "PIPX_DISABLE_SHARED_LIBS_AUTO_UPGRADE": "1"}  # offline: the pip ensurepip brings
    pipx = subprocess.run([sys.executable, "-m", "pipx", "install", str(kit_wheel(wheelhouse))], env=pipx_env,
                          capture_output=True, text=True, timeout=900)
    assert pipx.returncode == 0, pipx.stderr[-2000:]
    command = bin_dir / "qwenkit"
    assert command.is_symlink() and "pipx" in os.path.realpath(command)  # pipx's own layout

    home = user / ".local" / "share" / "qwenclientkit"  # the default home for this user
    env = {**clean, **{k: v for k, v in wheel_bed.env().items() if k.startswith("QWENKIT_")},
           "HOME": str(user), "PATH": f"{bin_dir}{os.pathsep}{clean.get('PATH', '')}", "QWENKIT_LANG": "en",
           "NO_PROXY": "127.0.0.1,localhost"}
    env.pop("QWENKIT_HOME")
    try:
        installed = subprocess.run([str(command), "install", "--yes", "--no-service", "--no-venv"], env=env,
                                   capture_output=True, text=True, timeout=900, cwd=user)
        assert installed.returncode == 0, installed.stderr[-3000:]
        assert "was not written by QwenClientKit's installer" not in installed.stderr
        assert "not put on your PATH" not in installed.stderr
        assert json.loads((home / "state.json").read_text(encoding="utf-8"))["launcher"] is None
        status = subprocess.run([str(command), "status", "--json"], env=env, capture_output=True, text=True,
                                timeout=120, cwd=user)
        assert status.returncode == 0 and json.loads(status.stdout)["healthy"] is True, status.stderr
        removed = subprocess.run([str(command), "uninstall", "--yes"], env=env, capture_output=True, text=True,
                                 timeout=300, cwd=user)
        assert removed.returncode == 0, removed.stderr
        assert (f"The qwenkit command ({command}) came with pipx and stays; remove it with: pipx uninstall "
                "qwenclientkit") in removed.stderr
        assert command.is_symlink() and not home.exists()
    finally:
        from bootstrap.core.home import Home
        from bootstrap.register.managers import FallbackManager

        if home.exists():
            FallbackManager(Home(home)).stop()
