"""``qwenkit uninstall`` on a PC that is a team gateway or an RPC worker (issue 41): nothing the kit started outlives
it.

Before: on the gateway PC, uninstall said "…/qwenclientkit is kept: it still holds files that are not
QwenClientKit's: team", nginx kept running with every member's and user's key in ``team/team.json``, and the
``qwenkit`` command that could have stopped it was gone; a PC that was only a gateway got "Nothing installed". Each
test runs on a host of the LAN of network namespaces (tests/support/lan.py), so the gateway's and the worker's
ports are that host's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from bootstrap.core.home import Home
from bootstrap.team import rpc_worker
from bootstrap.team.gateway import stop_gateway
from tests.support import lan
from tests.support.install_bed import InstallBed
from tests.support.offline import netns_available

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not any(Path(p, "nginx").is_file() for p in ("/usr/sbin", "/usr/bin")),
                                reason="needs nginx (scripts/setup_env.sh installs it)")


def _leave_nothing(home: Path) -> None:
    """Whatever a failed run left running is stopped (a gateway outlives its network namespace's holder)."""
    if home.is_dir():
        stop_gateway(Home(home))
        rpc_worker.stop(Home(home))


@pytest.fixture
def pc() -> Iterator[lan.Host]:
    if not netns_available() or lan.missing_tools():
        pytest.skip("network namespaces or their tools are unavailable here")
    with lan.lan("gateway") as net:
        yield net.hosts["gateway"]


def _runner(host: lan.Host, env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    def kit(*args: str) -> subprocess.CompletedProcess[str]:
        return host.run([sys.executable, "-m", "bootstrap", *args], check=False, text=True, env=env, cwd=ROOT,
                        timeout=300)
    return kit


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _gateway(kit: Callable[..., subprocess.CompletedProcess[str]], home: Path, key_file: Path) -> int:
    """A running gateway with one member (down: nginx starts all the same) and one user; its master's pid."""
    assert kit("team", "add-member", "http://127.0.0.1:8080", "--key-file", str(key_file), "--slots", "2",
               "--name", "pc1").returncode == 0
    assert kit("team", "add-user", "alice").returncode == 0
    started = kit("team", "start", "--port", "8090")
    assert started.returncode == 0, started.stderr
    return int((home / "team" / "run" / "nginx.pid").read_text())


def test_uninstall_stops_the_gateway_and_the_worker_and_deletes_every_team_key(
        pc: lan.Host, make_bed: Callable[..., InstallBed], tmp_path: Path) -> None:
    bed = make_bed()
    installed = bed.install()
    assert installed.returncode == 0, installed.stderr[-2000:]
    bed.run("service", "stop")
    kit = _runner(pc, {**bed.env(), "HOME": str(tmp_path / "user-home")})
    try:
        gateway = _gateway(kit, bed.home.root, bed.home.root / "secrets" / "api-key")
        started = kit("team", "worker-start", "--host", "127.0.0.1", "--accept-rpc-risk")
        assert started.returncode == 0, started.stderr
        worker = int((bed.home.team_dir / "run" / "rpc-worker.pid").read_text())
        done = kit("uninstall", "--yes")
        assert done.returncode == 0, done.stderr
        assert f"the team gateway (pid {gateway}) is stopped" in done.stderr  # said before anything goes
        assert f"stopped the gateway (pid {gateway}); stopped the RPC worker (pid {worker})" in done.stdout
        assert _gone(gateway) and _gone(worker)
        assert not bed.home.root.exists(), list(bed.home.root.iterdir())
        assert "QwenClientKit is uninstalled." in done.stdout
        said = done.stdout + done.stderr
        assert "qwenkit team" not in said and "qwenkit service" not in said  # no hint names a command now gone
    finally:
        _leave_nothing(bed.home.root)


def test_a_pc_that_is_only_a_gateway_is_uninstalled_too(pc: lan.Host, tmp_path: Path) -> None:
    home = tmp_path / "gateway only"
    key_file = tmp_path / "pc1-key"
    key_file.write_text("member-key-0123456789\n")
    kit = _runner(pc, {**{k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")},
                       "QWENKIT_HOME": str(home), "QWENKIT_LANG": "en", "HOME": str(tmp_path / "user-home")})
    try:
        gateway = _gateway(kit, home, key_file)
        asked = kit("uninstall")  # no terminal to ask on: nothing is touched
        assert asked.returncode == 2 and not _gone(gateway)
        assert "the team gateway" in asked.stderr and "deleted with the members' and users' keys" in asked.stderr
        done = kit("uninstall", "--yes")
        assert done.returncode == 0, done.stderr
        assert f"Removed the team room: stopped the gateway (pid {gateway}); deleted {home / 'team'}." in done.stdout
        assert _gone(gateway) and not home.exists()
    finally:
        _leave_nothing(home)
