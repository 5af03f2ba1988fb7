"""The zero-network harness: loopback works, everything else is refused (and logged by the Python guard).

No test sends a packet off this machine: the guard refuses before any DNS or TCP traffic, and the namespace has
no route but loopback. 192.0.2.1 is TEST-NET-1 (RFC 5737), reserved for documentation, never routed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.offline import BLOCKED, Offline, netns_available

MODES = ["guard", pytest.param("netns+guard", marks=pytest.mark.skipif(
    not netns_available(), reason="unprivileged network namespaces (unshare --user --net) are unavailable here"))]
NETNS = pytest.mark.skipif(not netns_available(),
                           reason="unprivileged network namespaces (unshare --user --net) are unavailable here")

LOOPBACK = textwrap.dedent("""
    import socket, threading
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    def serve():
        for _ in range(2):
            conn, _ = srv.accept()
            conn.sendall(conn.recv(5).upper())
            conn.close()
    threading.Thread(target=serve).start()
    for host in ("127.0.0.1", "localhost"):
        with socket.create_connection((host, port), timeout=10) as c:
            c.sendall(b"hello")
            print(c.recv(5).decode())
""")


REACH_OUT = textwrap.dedent("""
    import json, socket, sys
    results = {}
    def attempt(name, call):
        try:
            call()
            results[name] = "ok"
        except OSError as exc:
            results[name] = str(exc)
    def tcp(host):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.settimeout(5)
        try:
            s.connect((host, 9))
        finally:
            s.close()
    attempt("connect", lambda: tcp("192.0.2.1"))
    attempt("connect_v6", lambda: tcp("2001:db8::1"))
    attempt("connect_ex", lambda: socket.socket().connect_ex(("192.0.2.1", 9)))
    attempt("getaddrinfo", lambda: socket.getaddrinfo("example.com", 443))
    attempt("create_connection", lambda: socket.create_connection(("example.com", 80), timeout=5))
    attempt("sendto", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.1", 53)))
    for host in ("127.0.0.1", "127.8.9.10", "::1", "localhost", "::ffff:127.0.0.1"):
        attempt("lookup " + host, lambda: socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM))
    print(json.dumps(results))
""")


def run(offline: Offline, argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd, child_env = offline.wrap(argv, dict(env if env is not None else os.environ))
    return subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)


def make(tmp_path: Path, mode: str, **kwargs: bool) -> Offline:
    offline = Offline(tmp_path, netns=mode == "netns+guard", **kwargs)
    assert offline.mode == mode
    return offline


@pytest.mark.parametrize("mode", MODES)
def test_loopback_listen_and_connect_work(tmp_path: Path, mode: str) -> None:
    proc = run(make(tmp_path, mode), [sys.executable, "-c", LOOPBACK])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["HELLO", "HELLO"]


@pytest.mark.parametrize("mode", MODES)
def test_python_reaching_out_is_refused_and_logged(tmp_path: Path, mode: str) -> None:
    offline = make(tmp_path, mode)
    proc = run(offline, [sys.executable, "-c", REACH_OUT])
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    for name in ("connect", "connect_v6", "connect_ex", "getaddrinfo", "create_connection", "sendto"):
        assert results[name] == BLOCKED, name
    for host in ("127.0.0.1", "127.8.9.10", "::1", "localhost", "::ffff:127.0.0.1"):
        assert results[f"lookup {host}"] == "ok", host
    logged = [(a["op"], a["target"]) for a in offline.attempts()]
    assert logged == [("connect", "192.0.2.1:9"), ("connect", "2001:db8::1:9"), ("connect_ex", "192.0.2.1:9"),
                      ("getaddrinfo", "example.com:443"), ("create_connection", "example.com:80"),
                      ("sendto", "192.0.2.1:53")]
    assert {a["pid"] for a in offline.attempts()} != set()


def test_unix_sockets_pass_the_guard(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import socket
        path = {str(tmp_path / "s.sock")!r}
        srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen()
        c = socket.socket(socket.AF_UNIX); c.connect(path); print("ok")
    """)
    offline = make(tmp_path, "guard")
    proc = run(offline, [sys.executable, "-c", code])
    assert proc.stdout.strip() == "ok", proc.stderr
    assert offline.attempts() == []


def test_guard_keeps_the_existing_pythonpath(tmp_path: Path) -> None:
    offline = make(tmp_path, "guard")
    argv, env = offline.wrap(["x"], {"PYTHONPATH": "/somewhere"})
    assert argv == ["x"]
    assert env["PYTHONPATH"].split(os.pathsep) == [str(offline.guard_dir), "/somewhere"]


@NETNS
def test_argv_is_passed_positionally(tmp_path: Path) -> None:
    """Shell metacharacters in arguments arrive unchanged: the command is never spliced into shell text."""
    tricky = ["a b", "$(echo no)", "'; exit 3; '", "*"]
    proc = run(make(tmp_path, "netns+guard"), [sys.executable, "-c", "import sys; print(sys.argv[1:])", *tricky])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == repr(tricky)


@NETNS
def test_unguarded_processes_cannot_reach_out_in_the_namespace(tmp_path: Path) -> None:
    offline = make(tmp_path, "netns+guard")
    # -I -S: no PYTHONPATH, no site, so no guard: only the namespace stands in the way.
    code = textwrap.dedent("""
        import errno, socket
        s = socket.socket(); s.settimeout(5)
        try:
            s.connect(("192.0.2.1", 9)); print("reached")
        except OSError as exc:
            print(errno.errorcode.get(exc.errno, str(exc)))
        try:
            socket.getaddrinfo("example.com", 443); print("resolved")
        except OSError as exc:
            print("no-dns")
    """)
    proc = run(offline, [sys.executable, "-I", "-S", "-c", code])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ENETUNREACH", "no-dns"]
    bash = run(offline, ["bash", "-c", "echo > /dev/tcp/192.0.2.1/9"])
    assert bash.returncode != 0
    assert offline.attempts() == []  # the guard never ran: the namespace alone refused


@NETNS
def test_loopback_comes_up_without_iproute2(tmp_path: Path) -> None:
    """The ioctl fallback (SIOCGIFFLAGS/SIOCSIFFLAGS) brings loopback up as ``ip link set lo up`` does."""
    proc = run(make(tmp_path, "netns+guard", lo_via_ip=False), [sys.executable, "-c", LOOPBACK])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["HELLO", "HELLO"]


@NETNS
def test_loopback_is_down_without_the_wrapper_script(tmp_path: Path) -> None:
    """Control: a bare namespace has loopback down, so the tests above prove the wrapper brought it up."""
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--net", sys.executable, "-I", "-S", "-c",
                           "import socket; socket.create_server(('127.0.0.1', 0)).getsockname();"
                           "socket.create_connection(('127.0.0.1', 9), timeout=5)"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0
    assert "Network is unreachable" in proc.stderr or "Cannot assign" in proc.stderr
