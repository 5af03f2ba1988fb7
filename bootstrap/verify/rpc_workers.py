"""Whether the RPC workers a head's server was started with still listen: the one thing ``status`` can say about
them without a connection of its own that could delay the server.

A worker that dies takes its head down (ggml-rpc.cpp ``RPC_STATUS_ASSERT`` aborts: "Remote RPC server crashed or
returned malformed response"; llama.cpp PR #26724 to change that is open), so a head that stopped answering is
explained by naming the worker that no longer listens. The check is a TCP connect closed at once: a worker serves
one client at a time and drops a connection that sends no HELLO (ggml-rpc.cpp ``rpc_serve_client``), so the
server's own connection is never disturbed.

A connection that is taken and then closed at once is not a worker: an SSH ``-L`` tunnel (the way to reach a worker
on loopback) accepts and closes when the worker behind it is gone. A worker keeps the connection open, waiting for a
HELLO (idle) or for its turn (serving its head), so "open after ``LISTEN_S``" is the answer.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass

CONNECT_TIMEOUT_S = 2.0
LISTEN_S = 1.0  # a tunnel closes at once when nothing is behind it


@dataclass(frozen=True)
class WorkerReach:
    endpoint: str  # "IP:PORT" as ``--rpc`` names it
    answers: bool


def endpoints_in(args: Sequence[str]) -> tuple[str, ...]:
    """The ``--rpc A,B`` endpoints of a server's arguments (none when it has no workers)."""
    flags = list(args)
    if "--rpc" not in flags or flags.index("--rpc") + 1 >= len(flags):
        return ()
    return tuple(e for e in flags[flags.index("--rpc") + 1].split(",") if e)


def reach(endpoint: str, timeout: float = CONNECT_TIMEOUT_S) -> WorkerReach:
    """Whether ``endpoint`` takes a connection and keeps it open (nothing is sent: the worker gets no command)."""
    host, _, port = endpoint.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            sock.settimeout(LISTEN_S)
            try:
                closed = sock.recv(1) == b""
            except TimeoutError:
                closed = False  # still open: a worker waiting for a HELLO, or serving its head
            return WorkerReach(endpoint, not closed)
    except (OSError, ValueError):
        return WorkerReach(endpoint, False)
