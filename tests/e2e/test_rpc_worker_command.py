"""``qwenkit team worker-start``: a member install lends itself to a head as llama.cpp's RPC worker (issue 28).

The member is a real install (the test bed's engine, which carries ``ggml-rpc-server``); the worker runs on a host
of the LAN of network namespaces, a head on another host serves the install's model with ``--rpc``. Refused: a
wildcard or public address, and any start before the explicit opt-in; the cache stays inside the home.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bootstrap.core.errors import UsageError
from bootstrap.core.private_address import check_private_ip as check_address
from tests.support import lan
from tests.support.install_bed import InstallBed
from tests.support.offline import netns_available
from tests.support.team_bed import PORT, member_url, wait_ready

KEY = "head-key-0123456789abcdef"


@pytest.mark.parametrize("host", ["10.1.2.3", "172.16.0.9", "192.168.1.20", "100.100.1.1", "127.0.0.1", "fd00::5",
                                  "fe80::1"])
def test_a_worker_binds_private_and_loopback_addresses(host: str) -> None:
    assert check_address(host) == host


@pytest.mark.usefixtures("english")
@pytest.mark.parametrize(("host", "said"), [("0.0.0.0", "never listens on every network"),
                                            ("::", "never listens on every network"),
                                            ("8.8.8.8", "not a private address"),
                                            ("2001:4860::8888", "not a private address"),
                                            ("pc-2.lan", "not an IP address")])
def test_a_wildcard_public_or_named_address_is_refused(host: str, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_address(host)
    assert said in caught.value.message


@pytest.fixture
def office() -> Iterator[lan.Lan]:
    if not netns_available() or lan.missing_tools():
        pytest.skip("network namespaces or their tools are unavailable here")
    with lan.lan("head", "worker") as net:
        yield net


def test_a_member_install_serves_a_head_as_its_rpc_worker(office: lan.Lan, make_bed: Callable[..., InstallBed],
                                                         llama_server: Path, tmp_path: Path) -> None:
    bed = make_bed()
    installed = bed.install()
    assert installed.returncode == 0, installed.stderr[-2000:]
    bed.run("service", "stop")
    head, worker = office.hosts["head"], office.hosts["worker"]
    env = {**bed.env(), "HOME": str(tmp_path / "user-home")}

    def kit(*args: str) -> subprocess.CompletedProcess[str]:
        return worker.run([sys.executable, "-m", "bootstrap", "team", *args], check=False, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[2], timeout=120)

    wild = kit("worker-start", "--host", "0.0.0.0", "--accept-rpc-risk")
    assert wild.returncode == 2 and "never listens on every network" in wild.stderr
    unasked = kit("worker-start", "--host", worker.address)
    assert unasked.returncode == 2 and "unauthenticated and unencrypted" in unasked.stderr
    assert "--accept-rpc-risk" in unasked.stderr
    started = kit("worker-start", "--host", worker.address, "--accept-rpc-risk")
    try:
        assert started.returncode == 0, started.stderr
        assert "Never run the RPC server on an open network" in started.stderr
        assert f"--rpc {worker.address}:50052" in started.stderr
        again = kit("worker-start", "--host", worker.address)  # the opt-in is kept; one worker per home
        assert again.returncode == 2 and "already runs" in again.stderr
        assert "Never run the RPC server" not in again.stderr
        model = next(bed.home.models_dir.rglob("*.gguf"))
        with (tmp_path / "head.log").open("ab") as sink:
            server = head.popen([str(llama_server), "-m", str(model), "--host", head.address, "--port", str(PORT),
                                 "--api-key", KEY, "-c", "512", "-t", "1", "--rpc", f"{worker.address}:50052", "-ngl",
                                 "99"], stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_ready(head, f"{member_url(head)}/health", timeout=120, server=server)
        chat = head.run([sys.executable, "-I", "-c", _CHAT, member_url(head), KEY], text=True, timeout=120)
        assert chat.stdout.strip() == "200", chat.stdout + chat.stderr
        worker_log = (bed.home.team_dir / "logs" / "rpc-worker.log").read_text(errors="replace")
        assert "Accepted client connection" in worker_log and f"endpoint       : {worker.address}:50052" in worker_log
        status = kit("status")
        assert "RPC worker: running" in status.stdout
        assert (bed.home.root / "cache" / "llama.cpp" / "rpc").is_dir()  # its cache is inside the home
        assert not (tmp_path / "user-home" / ".cache").exists()
        stopped = kit("worker-stop")
        assert stopped.returncode == 0 and "RPC worker stopped" in stopped.stderr
        assert kit("worker-stop").stderr.strip().endswith("no RPC worker was running")
    finally:
        kit("worker-stop")


_CHAT = """
import json, sys, urllib.request as u
req = u.Request(sys.argv[1] + "/v1/chat/completions", method="POST", data=json.dumps({"messages": [{"role": "user",
    "content": "hi"}], "max_tokens": 4}).encode(), headers={"Authorization": "Bearer " + sys.argv[2],
    "Content-Type": "application/json"})
print(u.build_opener(u.ProxyHandler({})).open(req, timeout=60).status)
"""
