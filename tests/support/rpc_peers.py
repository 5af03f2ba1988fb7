"""Peers a head meets on the way to its RPC workers: a tunnel like ``ssh -L`` and a worker of another build.

- ``tunnel(host, address, port)``: a port on this namespace's loopback that reaches ``address:port`` on ``host`` of
  the LAN (tests/support/lan.py). The listening socket is made here and handed to a relay started inside the
  host's network namespace, which connects onward from there: what ``ssh -L 127.0.0.1:P:worker:50052`` gives a
  head whose workers are reached only through SSH. Like sshd, it accepts, then closes when nothing is behind it.
- ``other_build_worker()``: a TCP server that answers llama.cpp's RPC HELLO with another protocol major version
  (ggml-rpc.cpp: request ``| cmd=14 | size u64 | conn_caps[24] |``, response ``| size u64 | major minor patch pad
  caps[24] |``), as a worker of an older llama.cpp build does; then it closes.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import sys
import threading
from collections.abc import Iterator

from tests.support import lan

_RELAY = """
import socket, sys, threading
listener = socket.socket(fileno=int(sys.argv[1]))
def pipe(a, b):
    try:
        while True:
            data = a.recv(1 << 16)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
while True:
    client, _ = listener.accept()
    try:
        upstream = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=5)
        upstream.settimeout(None)
    except OSError:
        client.close()
        continue
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
"""

CAPS = 24  # RPC_CONN_CAPS_SIZE, ggml-rpc/transport.h
HELLO = 14  # RPC_CMD_HELLO


@contextlib.contextmanager
def tunnel(host: lan.Host, address: str, port: int) -> Iterator[int]:
    """The local port of a relay to ``address:port`` as seen from ``host``."""
    listener = socket.create_server(("127.0.0.1", 0))
    relay = host.popen([sys.executable, "-I", "-c", _RELAY, str(listener.fileno()), address, str(port)],
                       pass_fds=[listener.fileno()])
    try:
        yield listener.getsockname()[1]
    finally:
        relay.kill()
        relay.wait(10)
        listener.close()


@contextlib.contextmanager
def other_build_worker(major: int = 6) -> Iterator[int]:
    """A port whose "worker" speaks RPC protocol ``major``.0.0."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    head = _recv(conn, 1 + 8)
                    if head[0] == HELLO:
                        _recv(conn, struct.unpack("<Q", head[1:])[0])
                        conn.sendall(struct.pack("<Q", 4 + CAPS) + bytes([major, 0, 0, 0]) + bytes(CAPS))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        done.set()
        thread.join(5)
        server.close()


def _recv(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data
