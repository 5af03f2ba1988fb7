"""``status``'s check of an RPC worker: a real ``ggml-rpc-server`` answers; a closed port and a tunnel with nothing
behind it (it accepts, then closes) do not; the server's ``--rpc`` list is read from its arguments."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

from bootstrap.verify.rpc_workers import endpoints_in, reach
from tests.support.llama import free_port


def test_endpoints_are_read_from_the_arguments() -> None:
    assert endpoints_in(["-c", "512", "--rpc", "10.0.0.2:50052,10.0.0.3:50052", "-ngl", "3"]) == (
        "10.0.0.2:50052", "10.0.0.3:50052")
    assert endpoints_in(["-c", "512"]) == ()
    assert endpoints_in(["--rpc"]) == ()


def test_a_closed_port_does_not_answer() -> None:
    assert not reach(f"127.0.0.1:{free_port()}").answers


def test_a_tunnel_with_nothing_behind_does_not_answer() -> None:
    server = socket.create_server(("127.0.0.1", 0))

    def close_each() -> None:
        conn, _ = server.accept()
        conn.close()

    thread = threading.Thread(target=close_each, daemon=True)
    thread.start()
    try:
        assert not reach(f"127.0.0.1:{server.getsockname()[1]}").answers
    finally:
        thread.join(5)
        server.close()


def test_a_real_worker_answers_and_keeps_serving(engine_bin_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    worker = subprocess.Popen([str(engine_bin_dir / "ggml-rpc-server"), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not reach(f"127.0.0.1:{port}").answers:
            time.sleep(0.1)
        assert reach(f"127.0.0.1:{port}").answers
        assert reach(f"127.0.0.1:{port}").answers  # the check leaves the worker serving
        assert worker.poll() is None
    finally:
        worker.kill()
        worker.wait(10)
