"""``place.rpc_probe``: the head's engine asked for each RPC worker's devices, with the real llama-server and
``ggml-rpc-server``; each way a worker can fail is named with its endpoint."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootstrap.core.errors import ServerError, SourceError
from bootstrap.place.rpc_probe import probe_workers
from bootstrap.verify.rpc_workers import reach
from tests.support.llama import free_port
from tests.support.rpc_peers import other_build_worker

pytestmark = pytest.mark.usefixtures("english")


@pytest.fixture
def worker(engine_bin_dir: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([str(engine_bin_dir / "ggml-rpc-server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    endpoint = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not reach(endpoint).answers:
        time.sleep(0.1)
    yield endpoint
    proc.kill()
    proc.wait(10)


def test_a_worker_lends_its_devices_named_across_the_list(llama_server: Path, worker: str) -> None:
    devices = probe_workers(llama_server, [worker, worker])
    assert [d.name for d in devices] == ["RPC0", "RPC1"]  # as --rpc A,B numbers them
    assert all(d.description == worker and 0 < d.free_mib <= d.total_mib for d in devices)


def test_a_worker_that_does_not_listen_is_named(llama_server: Path) -> None:
    nobody = f"127.0.0.1:{free_port()}"
    with pytest.raises(SourceError) as caught:
        probe_workers(llama_server, [nobody])
    assert caught.value.message == f"the RPC worker {nobody} does not answer"


def test_a_worker_of_another_build_is_named(llama_server: Path) -> None:
    with other_build_worker(6) as port, pytest.raises(ServerError) as caught:
        probe_workers(llama_server, [f"127.0.0.1:{port}"])
    assert f"the RPC worker 127.0.0.1:{port} failed the handshake" in caught.value.message
    assert "same engine build" in (caught.value.hint or "")


def test_a_worker_serving_another_head_is_named(llama_server: Path, worker: str) -> None:
    host, _, port = worker.rpartition(":")
    with socket.create_connection((host, int(port))):  # another client holds it (one at a time)
        time.sleep(0.2)
        with pytest.raises(SourceError) as caught:
            probe_workers(llama_server, [worker], timeout=3)
    assert f"the RPC worker {worker} took the connection but did not answer in 3 s" == caught.value.message
    assert "one head at a time" in (caught.value.hint or "")
