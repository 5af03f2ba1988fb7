"""The head's RPC workers as its engine sees them: ``llama-server --list-devices --rpc IP:PORT``, one worker at a
time, so a worker that fails is named.

Each remote device is listed as ``RPC<N>: <host:port> (<total> MiB, <free> MiB free)``, N counting across every
``--rpc`` endpoint in order (llama.cpp ``ggml_backend_rpc_add_server``; ``common/arg.cpp`` prints the line). What a
failing worker makes the engine say (ggml-rpc.cpp, ``rpc_dispatcher::start`` and ``negotiate_hello``):

- nothing listening: ``Failed to connect to IP:PORT`` and an abort;
- another protocol version: ``RPC server version mismatch: A.B.C`` (logged from a thread, so an abort can beat it)
  and ``RPC handshake failed for IP:PORT``. The head and its workers must run the same engine build; installing
  every PC from one bundle gives that;
- a worker that accepts but never answers: it already serves a head (``ggml_backend_rpc_start_server`` serves one
  client at a time), so the probe times out.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from bootstrap.core.console import t
from bootstrap.core.errors import ServerError, SourceError
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.processes import run_captured
from bootstrap.place.engine_probe import MAX_OUTPUT, EngineDevice, child_env, parse_devices

PROBE_TIMEOUT_S = 20.0  # a HELLO and a memory query each; a worker in use never answers
_MISMATCH = re.compile(r"RPC server version mismatch:\s*(\d+\.\d+\.\d+)")


def probe_worker(server: Path, endpoint: str, *, timeout: float = PROBE_TIMEOUT_S) -> tuple[EngineDevice, ...]:
    """The devices one worker lends (named ``RPC0``… as if it were the only one); a named error when it cannot."""
    port = endpoint.rpartition(":")[2]
    try:
        # --rpc before --list-devices: the arguments are taken in order and --list-devices exits where it stands
        # (common/arg.cpp). An abort's backtrace (gdb attaching) is not wanted here (ggml.c GGML_NO_BACKTRACE).
        proc = run_captured([server, "--rpc", endpoint, "--list-devices"], timeout=timeout,
                            env={**child_env(), "GGML_NO_BACKTRACE": "1"}, text=False)
    except subprocess.TimeoutExpired as exc:
        raise SourceError(t("rpc.err_busy", endpoint=endpoint, seconds=int(timeout)), t("rpc.hint_busy")) from exc
    except OSError as exc:
        raise ServerError(t("engine.err_probe_start", server=str(server), arg="--rpc", detail=os_reason(exc)),
                          t("engine.hint_probe")) from exc
    text = (proc.stdout[:MAX_OUTPUT] + b"\n" + proc.stderr[:MAX_OUTPUT]).decode("utf-8", "replace")
    mismatch = _MISMATCH.search(text)  # logged from a thread: the abort may come first and it is lost
    if mismatch or "RPC handshake failed" in text:
        version = t("rpc.protocol", version=mismatch.group(1)) if mismatch else ""
        raise ServerError(t("rpc.err_version", endpoint=endpoint, version=version), t("rpc.hint_version"))
    if "RPC not supported" in text or "failed to find RPC" in text:  # common/arg.cpp, a build without GGML_RPC
        raise ServerError(t("rpc.err_engine_no_rpc", server=str(server)), t("rpc.hint_no_worker"))
    devices = tuple(d for d in parse_devices(text) if d.name.startswith("RPC"))
    if proc.returncode != 0 or not devices:
        raise SourceError(t("rpc.err_unreachable", endpoint=endpoint), t("rpc.hint_unreachable", port=port))
    return devices


def probe_workers(server: Path, endpoints: Sequence[str], *, known: Mapping[str, Sequence[EngineDevice]] | None = None,
                  timeout: float = PROBE_TIMEOUT_S) -> tuple[EngineDevice, ...]:
    """Every worker's devices, renamed ``RPC0``, ``RPC1``… across the list as the server started with
    ``--rpc A,B`` names them. ``known``: the devices of workers that must not be asked (this PC's running server
    holds them), by endpoint."""
    out: list[EngineDevice] = []
    for endpoint in endpoints:
        given = (known or {}).get(endpoint)
        for device in given if given else probe_worker(server, endpoint, timeout=timeout):
            out.append(EngineDevice(f"RPC{len(out)}", device.description, device.total_mib, device.free_mib))
    return tuple(out)
