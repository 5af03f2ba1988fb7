"""llama.cpp's RPC worker on a member install: ``ggml-rpc-server`` from the installed engine, on a private address.

The worker lends this PC's memory and compute to a head whose ``llama-server --rpc host:port`` treats it as one
more device (llama.cpp ``tools/rpc/README.md``). Its protocol has no authentication and no encryption, and its
history has remote-code-execution fixes (llama.cpp PR #20908), so the kit:

- never binds it to a wildcard address, nor to one that is not private (RFC 1918, 100.64/10 shared space as
  WireGuard/Tailscale overlays use it, IPv6 unique-local or link-local) or loopback (for an SSH tunnel);
- starts it only after an explicit opt-in (``--accept-rpc-risk``), with upstream's warning said once and the
  opt-in recorded in ``<home>/team/rpc-risk-accepted``;
- keeps its tensor cache (``-c``) inside the home (``LLAMA_CACHE=<home>/cache/llama.cpp``: rpc-server.cpp puts it in
  ``$LLAMA_CACHE/rpc``), so nothing is written outside the home.

The same engine build on head and worker is required by the protocol's handshake (ggml-rpc.cpp, HELLO); installing
every PC from one bundle gives that.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

import psutil

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t, warn
from bootstrap.core.errors import ServerError, UnsupportedMachine, UsageError
from bootstrap.core.home import Home
from bootstrap.core.processes import detached_options, kill_tree, live_pid
from bootstrap.record.state import launch_spec, load_state

WORKER = "ggml-rpc-server"
DEFAULT_PORT = 50052  # rpc-server.cpp's default
OPT_IN = "rpc-risk-accepted"
PID_FILE = Path("run") / "rpc-worker.pid"
LOG_FILE = Path("logs") / "rpc-worker.log"


def opt_in(home: Home, accepted: bool) -> None:
    """Upstream's warning, said once: without ``accepted`` (and no earlier opt-in) it is exit 2 with the warning."""
    record = home.team_dir / OPT_IN
    if record.is_file():
        return
    if not accepted:
        raise UsageError(t("rpc.err_opt_in"), t("rpc.hint_opt_in"))
    warn(t("rpc.warning"))
    home.team_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(record, (t("rpc.warning") + "\n").encode("utf-8"))


def worker_binary(home: Home) -> Path:
    """``ggml-rpc-server`` of the engine installed in ``home`` (the head must run the same build)."""
    state = load_state(home)
    if state is None:
        raise UsageError(t("rpc.err_not_installed", home=home.root), t("rpc.hint_not_installed"))
    spec = launch_spec(state, home)
    binary = spec.engine_dir / (WORKER + (".exe" if spec.system == "Windows" else ""))
    if not binary.is_file():
        raise UnsupportedMachine(t("rpc.err_no_worker", engine=spec.engine_dir), t("rpc.hint_no_worker"))
    return binary


def running_pid(home: Home) -> int | None:
    return live_pid(home.team_dir / PID_FILE, WORKER)


def start(home: Home, host: str, port: int, *, threads: int | None = None) -> int:
    """Start the worker detached (its own session: it outlives this command); its pid. One per home."""
    if running_pid(home) is not None:
        raise UsageError(t("rpc.err_running", pid=running_pid(home)), t("rpc.hint_running"))
    binary = worker_binary(home)
    for folder in ("run", "logs"):
        (home.team_dir / folder).mkdir(parents=True, exist_ok=True)
    cache = home.root / "cache" / "llama.cpp"
    cache.mkdir(parents=True, exist_ok=True)
    argv = [str(binary), "-H", host, "-p", str(port), "-c"]
    if threads:
        argv += ["-t", str(threads)]
    env = {**os.environ, "LLAMA_CACHE": str(cache)}
    with (home.team_dir / LOG_FILE).open("ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                **detached_options())
    write_atomic(home.team_dir / PID_FILE, f"{proc.pid}\n".encode())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # listening, or ended (port taken, address not this PC's)
        if proc.poll() is not None:
            (home.team_dir / PID_FILE).unlink(missing_ok=True)
            tail = (home.team_dir / LOG_FILE).read_text(errors="replace").strip().splitlines()[-1:]
            raise ServerError(t("rpc.err_start", detail=" ".join(tail) or f"exit {proc.returncode}"),
                              t("rpc.hint_start", log=home.team_dir / LOG_FILE))
        with contextlib.suppress(psutil.Error):
            if any(c.status == psutil.CONN_LISTEN and c.laddr.port == port
                   for c in psutil.Process(proc.pid).net_connections("tcp")):
                return proc.pid
        time.sleep(0.1)
    return proc.pid


def stop(home: Home) -> bool:
    pid = running_pid(home)
    if pid is not None:
        kill_tree(pid)
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(10)
    (home.team_dir / PID_FILE).unlink(missing_ok=True)
    return pid is not None
