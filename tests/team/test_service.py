"""The gateway's systemd user unit: it passes ``systemd-analyze verify`` from a home with awkward characters, and
the kit drives it with the exact systemctl sequence (recorded: systemd is not PID 1 on these machines)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.core.templating import systemd_quote
from bootstrap.team.gateway import Gateway, Nginx
from bootstrap.team.service import UNIT, TeamService, render_unit

pytestmark = pytest.mark.usefixtures("english")
POSIX_WEIRD = "Qwen 家 %h$HOME\"q'\\b&<x>!"
NGINX = next((p for p in ("/usr/sbin/nginx", "/usr/bin/nginx") if Path(p).is_file()), "/usr/sbin/nginx")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None or not Path(NGINX).is_file(),
                    reason="needs systemd-analyze and nginx")
def test_the_unit_passes_systemd_analyze_verify_from_an_awkward_home(tmp_path: Path) -> None:
    home = Home(tmp_path / POSIX_WEIRD)
    home.team_dir.mkdir(parents=True)
    argv = Gateway(home, Nginx(Path(NGINX), "1.22.1", frozenset())).argv()
    text = render_unit(home, argv)
    unit = tmp_path / "units" / UNIT
    unit.parent.mkdir()
    unit.write_text(text)
    runtime = tmp_path / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    runtime.chmod(0o700)
    result = subprocess.run(["systemd-analyze", "--user", "verify", str(unit)], capture_output=True, text=True,
                            env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)}, timeout=60, check=False)
    assert (result.returncode, result.stderr) == (0, "")
    assert '"-g" "daemon off;"' in text and "Restart=always" in text
    assert f"{systemd_quote('-p')} {systemd_quote(f'{home.team_dir}/')}" in text  # the home as one word


class Recorder:
    def __init__(self, running: str = "running") -> None:
        self.calls: list[list[str]] = []
        self.running = running

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        out = self.running if argv[-1] == "is-system-running" else ""
        return subprocess.CompletedProcess(list(argv), 0, out + "\n", "")


def test_with_a_user_manager_the_gateway_is_enabled_and_restarted_as_a_unit(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    runner = Recorder()
    service = TeamService(home, runner=runner, booted=True, unit_dir=tmp_path / "units")
    assert service.start(["/usr/sbin/nginx", "-p", f"{home.team_dir}/", "-c", "nginx.conf"])
    assert runner.calls == [["systemctl", "--user", "is-system-running"],
                            ["systemctl", "--user", "daemon-reload"],
                            ["systemctl", "--user", "enable", UNIT],
                            ["systemctl", "--user", "restart", UNIT]]
    assert (tmp_path / "units" / UNIT).read_text() == (home.team_dir / UNIT).read_text()
    runner.calls.clear()
    service.stop()
    assert runner.calls[1:] == [["systemctl", "--user", "disable", "--now", UNIT],
                                ["systemctl", "--user", "daemon-reload"]]
    assert not (tmp_path / "units" / UNIT).exists()


def test_without_one_it_says_the_gateway_will_not_come_back_after_a_restart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runner = Recorder(running="offline")
    service = TeamService(Home(tmp_path / "home"), runner=runner, booted=True, unit_dir=tmp_path / "units")
    assert service.start(["/usr/sbin/nginx"]) is False
    assert "runs until this PC restarts" in capsys.readouterr().err
    assert not (tmp_path / "units").exists()
    assert TeamService(Home(tmp_path / "h"), runner=runner, booted=False).systemd() is False


def test_uninstall_takes_the_unit_away_even_where_its_manager_is_not_running_now(tmp_path: Path) -> None:
    """A unit registered while a user manager ran, then ``qwenkit uninstall`` where none runs (a session without
    systemd): the unit file still goes, so no unit of the kit's is left to start a gateway whose files are gone."""
    home = Home(tmp_path / "home")
    TeamService(home, runner=Recorder(), booted=True, unit_dir=tmp_path / "units").start(["/usr/sbin/nginx"])
    assert (tmp_path / "units" / UNIT).is_file()
    later = TeamService(home, runner=Recorder(running="offline"), booted=True, unit_dir=tmp_path / "units")
    later.remove()
    assert not (tmp_path / "units" / UNIT).exists()
