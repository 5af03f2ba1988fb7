"""Is the program listening on the recorded port this home's llama-server? Asked of the OS before anything
calls the server "healthy" or "serving", and before any request carries the API key.

Why: a port is only a number. While this install's server is down, any local program can listen on 127.0.0.1:8080
and answer ``/health``, ``/v1/models`` and ``/props`` as llama-server does; judged by its answers alone, ``status``
called it healthy and sent it ``Authorization: Bearer <key>``, and a rerun called another home's server "serving"
(issue 24). So the socket's owner comes from the OS, never from what the socket says: psutil's ``net_connections``
reads it from ``/proc/net/tcp{,6}`` and each process's socket inodes on Linux, ``GetExtendedTcpTable`` on Windows
and ``proc_pidinfo`` on macOS (psutil documentation, "Network").

The owner is ours when its executable — the file the kernel runs (``/proc/<pid>/exe`` on Linux), which no process
can rename for itself the way it can rewrite its command line — is this home's engine (the recorded
``llama-server``, or a ``llama-server`` under ``<home>/engine/``) and, on POSIX, it runs as the home's owner
(another user could run our engine file with a key file of their own).

With several models the port's owner is the kit's front (``register/router_front.py``), a Python process: it is
ours when it runs as the home's owner and its child is this home's engine (``is_our_front``).

A pid from the service manager is not enough and is not asked: the manager's process may be alive while its
server failed to bind and a stranger holds the port, exactly the case to catch; the socket's owner is the authority
whoever started it (the service, the start script, a user's terminal). Where the OS does not tell the owner (a
socket of another user's process: Linux shows no pid for it; macOS lists other processes' sockets only to root),
the holder is not ours, and the message says its owner could not be seen.

Wine answers ``GetExtendedTcpTable`` with owner pid 0 for every socket (measured with Wine 8.0 and psutil 7; the
sockets belong to ``wineserver`` as Linux sees them). Windows itself never does: its own services always hold
listening sockets with their pids (RPC on 135, SMB on 445…). A table in which no listening socket has an owner is
read as "this OS tells no owners" (``owners_untold``), and then the holder is judged by the processes that can be
seen: ours when one of this home's engine processes runs (judged by its command line: Wine does not tell program
files either) and the port takes connections. That is weaker — a
stranger binding the port while our server runs on another would pass — and only ever applies there.

The check is one look (~15–30 ms: psutil walks the process table once). The moment between it and the request
that follows is not closed (a stranger would have to bind the port in the instant our server dies); each request
that carries the key is preceded by its own look.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from bootstrap.core.console import t
from bootstrap.core.errors import ServerError
from bootstrap.core.input_checks import decimal_int
from bootstrap.plan.launch_spec import WILDCARD_HOSTS, LaunchSpec, connect_host, url_host

SERVER_NAME = "llama-server"  # the engine's server binary (``llama-server.exe`` on Windows)
HOLDER_STATES = ("ours", "free", "stranger", "hidden")
PORT_SEARCH = 100  # how far past a held port to look for a free one to suggest


@dataclass(frozen=True)
class PortHolder:
    """Who listens on the port a spec names.

    ``ours``: this home's engine (``pid`` is the server process); ``free``: nothing listens there; ``stranger``:
    another program, named by ``pid`` and ``name``; ``hidden``: something listens whose owner the OS does not show
    to this user (treated as not ours)."""

    state: str  # one of HOLDER_STATES
    port: int
    pid: int | None = None
    name: str = ""  # the process name as the OS reports it ("python3", "llama-server")

    @property
    def ours(self) -> bool:
        return self.state == "ours"

    @property
    def foreign(self) -> bool:
        """Something that is not this install's server holds the port: nothing is sent to it."""
        return self.state in ("stranger", "hidden")

    def describe(self) -> str:
        """The one line that names a foreign holder (``""`` when the port is ours or free)."""
        if self.state == "stranger":
            return t("identity.stranger", port=self.port, pid=self.pid, name=self.name or "?")
        if self.state == "hidden":
            return t("identity.hidden", port=self.port)
        return ""

    def to_json(self) -> dict[str, object]:
        return {"state": self.state, "port": self.port, "pid": self.pid, "name": self.name}


def port_holder(spec: LaunchSpec) -> PortHolder:
    """Who listens where a local client of ``spec`` connects (``spec.connect_host``:``spec.port``)."""
    targets = _addresses(spec.connect_host)
    try:
        listeners = _listeners()
    except (psutil.Error, OSError):  # macOS: only root sees every socket (AccessDenied); ours are still readable
        return _holder_by_own_processes(spec, targets)
    if owners_untold(listeners):
        return _holder_by_engine_process(spec)
    listening = [(ip, pid) for ip, port, pid in listeners if port == spec.port and _covers(ip, targets)]
    if not listening:
        return PortHolder("free", spec.port)
    for _ip, pid in listening:  # every socket that could take the connection must be ours (Windows lets a specific
        if pid is None:  # bind sit beside a wildcard one of another program)
            return PortHolder("hidden", spec.port)
        proc = _process(pid)
        if proc is None or not (is_our_server(proc, spec) or is_our_front(proc, spec)):
            return PortHolder("stranger", spec.port, pid, _name(proc))
    pid = listening[0][1]
    return PortHolder("ours", spec.port, pid, _name(_process(pid)))


def require_ours(spec: LaunchSpec) -> PortHolder:
    """``port_holder``, and a ``ServerError`` (exit 6) naming a foreign holder: what each caller does before it
    sends the key or says "serving". A free port is returned as such (the caller says "down")."""
    holder = port_holder(spec)
    if holder.foreign:
        raise ServerError(holder.describe(), foreign_hint(spec))
    return holder


def foreign_hint(spec: LaunchSpec) -> str:
    """What to do about a stranger on the port: stop it, or move the install to a port nothing holds."""
    return t("identity.hint", other=free_port_after(spec))


def free_port_after(spec: LaunchSpec, tries: int = PORT_SEARCH) -> int:
    """The first port after ``spec.port`` that nothing accepts connections on (``spec.port + 1`` if none is)."""
    for candidate in range(spec.port + 1, min(spec.port + 1 + tries, 65536)):
        if not _accepts(spec.connect_host, candidate, timeout=0.2):
            return candidate
    return spec.port + 1


def is_our_server(proc: psutil.Process, spec: LaunchSpec, *, argv_ok: bool = False) -> bool:
    """Whether ``proc`` runs this home's engine as the home's owner; anything the OS will not tell is "no".
    ``argv_ok``: where the OS tells no program files either (Wine: ``NtQuerySystemInformation`` fails for the
    image name), the first word of the command line stands in for it."""
    try:
        uid = proc.uids().real if os.name != "nt" else None
        try:
            exe = proc.exe()
        except (psutil.Error, OSError):
            if not argv_ok:
                raise
            exe = next(iter(proc.cmdline()), "")
    except (psutil.Error, OSError):
        return False
    if not exe or (uid is not None and uid != _owner_uid(spec.home)):
        return False
    exe_path = _norm(exe)
    if exe_path == _norm(os.path.realpath(spec.server)):
        return True
    engines = _norm(os.path.realpath(spec.home / "engine"))
    return Path(exe_path).name.startswith(SERVER_NAME) and exe_path.startswith(engines + os.sep)


def is_our_front(proc: psutil.Process, spec: LaunchSpec) -> bool:
    """Several models: whether ``proc`` is the kit's front of this home (``register/router_front.py``), judged by
    what the OS tells: it runs as the home's owner and a process it started is this home's engine (its router).
    Its own program is a Python (or the frozen setup), which proves nothing alone."""
    if not spec.fronted:
        return False
    try:
        uid = proc.uids().real if os.name != "nt" else None
        children = proc.children()
    except (psutil.Error, OSError):
        return False
    if uid is not None and uid != _owner_uid(spec.home):
        return False
    return any(is_our_server(child, spec) for child in children)


def server_process(spec: LaunchSpec) -> psutil.Process | None:
    """This home's server process when it holds the port (for the figures ``status`` shows), else None."""
    holder = port_holder(spec)
    return _process(holder.pid) if holder.ours and holder.pid is not None else None


def uptime_s(proc: psutil.Process) -> float | None:
    """Seconds since the process started (None when the OS does not say)."""
    try:
        return max(0.0, time.time() - proc.create_time())
    except (psutil.Error, OSError):
        return None


# -- the OS's answers ------------------------------------------------------------------------------------------
def _listeners() -> list[tuple[str, int, int | None]]:
    """(address, port, pid or None) of every listening TCP socket on this machine."""
    found = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr:
            found.append((str(conn.laddr.ip), int(conn.laddr.port), conn.pid))
    return found


def owners_untold(listeners: list[tuple[str, int, int | None]] | None = None) -> bool:
    """Windows only: no listening socket has an owner pid (Wine; module docstring). ``None``: look now."""
    if os.name != "nt":
        return False
    try:
        listeners = _listeners() if listeners is None else listeners
    except (psutil.Error, OSError):
        return False
    return bool(listeners) and all(not pid for _ip, _port, pid in listeners)


def _holder_by_engine_process(spec: LaunchSpec) -> PortHolder:
    """Where the OS tells no socket owners: ours when this home's engine runs and the port takes connections."""
    if not _accepts(spec.connect_host, spec.port):
        return PortHolder("free", spec.port)
    for proc in psutil.process_iter():
        if is_our_server(proc, spec, argv_ok=True):
            return PortHolder("ours", spec.port, proc.pid, _name(proc) or SERVER_NAME)
    return PortHolder("hidden", spec.port)


def _holder_by_own_processes(spec: LaunchSpec, targets: set[str]) -> PortHolder:
    """Where the OS lists only our own processes' sockets: ours when one of this home's servers listens there;
    otherwise anything that accepts connections is of an owner we cannot see."""
    for proc in psutil.process_iter():
        if not (is_our_server(proc, spec) or is_our_front(proc, spec)):
            continue
        try:
            conns = _connections(proc)
        except (psutil.Error, OSError):
            continue
        for conn in conns:
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == spec.port \
                    and _covers(str(conn.laddr.ip), targets):
                return PortHolder("ours", spec.port, proc.pid, _name(proc))
    return PortHolder("hidden" if _accepts(spec.connect_host, spec.port) else "free", spec.port)


def listening_url(pid: int) -> str | None:
    """``http://HOST:PORT`` where this machine reaches the TCP socket process ``pid`` listens on (a wildcard bind
    through loopback), or None while it listens on none."""
    proc = _process(pid)
    if proc is None:
        return None
    try:
        conns = _connections(proc)
    except (psutil.Error, OSError):
        return None
    for conn in conns:
        if conn.status == psutil.CONN_LISTEN and conn.laddr:
            return f"http://{url_host(connect_host(str(conn.laddr.ip)))}:{conn.laddr.port}"
    return None


def argv_url(pid: int) -> tuple[str, int] | None:
    """``http://HOST:PORT`` from the ``--host``/``--port`` of the llama-server that is ``pid`` or runs under it, and
    that llama-server's PID: where the OS tells no socket owners (``owners_untold``), the only account of where our
    own child listens."""
    try:
        parent = psutil.Process(pid)
        tree = [parent, *parent.children(recursive=True)]
    except (psutil.Error, OSError):
        return None
    for proc in tree:
        try:
            argv = proc.cmdline()
        except (psutil.Error, OSError):
            continue
        if not argv or not Path(argv[0].replace("\\", "/")).name.startswith(SERVER_NAME):
            continue
        values = {flag: argv[i + 1] for i, flag in enumerate(argv[:-1]) if flag in ("--host", "--port")}
        port = decimal_int(values.get("--port"))
        if port is not None:
            return f"http://{url_host(connect_host(values.get('--host', '127.0.0.1')))}:{port}", proc.pid
    return None


def _connections(proc: psutil.Process) -> Iterable[psutil._common.pconn]:
    """``Process.net_connections`` (psutil ≥ 6), ``connections`` before it."""
    method = getattr(proc, "net_connections", None) or proc.connections
    return method(kind="tcp")  # type: ignore[no-any-return]


def _accepts(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _process(pid: int | None) -> psutil.Process | None:
    if pid is None:
        return None
    try:
        return psutil.Process(pid)
    except (psutil.Error, OSError):
        return None


def _name(proc: psutil.Process | None) -> str:
    if proc is None:
        return ""
    try:
        return proc.name()
    except (psutil.Error, OSError):
        return ""


def _owner_uid(home: Path) -> int | None:
    """The uid owning the home (a system unit runs the server as that user, whoever asks)."""
    try:
        return os.stat(home).st_uid
    except OSError:
        return os.getuid() if hasattr(os, "getuid") else None


def _norm(path: str) -> str:
    return os.path.normcase(os.path.normpath(path))


def _addresses(host: str) -> set[str]:
    """The IP addresses a client connecting to ``host`` may reach (a name resolves to several)."""
    try:
        return {str(ipaddress.ip_address(host))}
    except ValueError:
        pass
    try:
        return {str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except OSError:
        return {host}


def _covers(listen_ip: str, targets: set[str]) -> bool:
    """Whether a socket bound to ``listen_ip`` takes connections made to one of ``targets``: the same address, an
    IPv4-mapped IPv6 form of it, or a wildcard (``::`` counted as dual-stack: over-cautious is safe here)."""
    if listen_ip in WILDCARD_HOSTS:
        return True
    try:
        address = ipaddress.ip_address(listen_ip.split("%")[0])
    except ValueError:
        return listen_ip in targets
    mapped = getattr(address, "ipv4_mapped", None)
    return str(address) in targets or (mapped is not None and str(mapped) in targets)
