"""Several "machines" on this one: network namespaces joined by veth pairs to one bridge, a small office LAN.

For the team endpoint and the RPC workers (issue 28): a member, a gateway and a client must each have an address
of their own that the others reach over a network, and their loopbacks must stay their own (a server bound to
127.0.0.1 on one "machine" is not reachable from another).

How (util-linux ``unshare``/``nsenter`` and iproute2 ``ip``, no root needed):
- the *switch*: ``unshare --user --map-root-user --net sleep``, a user namespace in which this test is root and a
  network namespace holding the bridge ``br0`` (with no address of its own: the switch is not a host);
- each *host*: a ``sleep`` started in the switch's user namespace with a network namespace of its own
  (``unshare --net``); a veth pair joins it to the bridge: ``eth0`` inside with ``10.77.0.N/24``, its peer on
  ``br0`` outside;
- ``Host.popen``/``Host.run`` start a command in a host's network namespace (``nsenter --user --net``).

Nothing is changed outside the namespaces; killing the sleeps removes everything (a network namespace dies with
its last process, and the veth pairs with it).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUBNET = "10.77.0"
TOOLS = ("unshare", "nsenter", "ip")


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _enter(pid: int) -> list[str]:
    return ["nsenter", "-t", str(pid), "--user", "--net", "--preserve-credentials", "--"]


def _holder(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*argv, "sleep", "infinity"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _wait_for_namespace(proc: subprocess.Popen[bytes], *others: str) -> None:
    """Until ``proc`` has become the ``sleep`` it execs in the end, in a network namespace none of ``others``.

    The namespace appears with the ``unshare`` call, before ``--map-root-user`` writes the user namespace's uid
    map; entered in between, ``ip`` is not root there and fails (seen under load: "ip link add br0" exit 2). The
    exec of ``sleep`` comes after the map, so it is the sign that the namespace is ready."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            error = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"could not make a network namespace: {error.strip()}")
        with contextlib.suppress(OSError):
            if (Path(f"/proc/{proc.pid}/comm").read_text().strip() == "sleep"
                    and str(Path(f"/proc/{proc.pid}/ns/net").readlink()) not in others):
                return
        time.sleep(0.05)
    raise TimeoutError("the network namespace did not appear")


@dataclass
class Host:
    name: str
    address: str
    pid: int
    procs: list[subprocess.Popen[Any]] = field(default_factory=list)

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as run inside this host's network namespace."""
        return [*_enter(self.pid), *argv]

    def run(self, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        kwargs.setdefault("check", True)
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("timeout", 60)
        return subprocess.run(self.command(argv), **kwargs)

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """A long-running process on this host, stopped with the LAN."""
        proc = subprocess.Popen(self.command(argv), **kwargs)
        self.procs.append(proc)
        return proc


class Lan:
    """A bridge and the hosts on it; ``add(name)`` makes a host with the next address."""

    def __init__(self) -> None:
        self._own = str(Path("/proc/self/ns/net").readlink())
        self._switch = _holder(["unshare", "--user", "--map-root-user", "--net", "--"])
        _wait_for_namespace(self._switch, self._own)
        self._switch_ns = str(Path(f"/proc/{self._switch.pid}/ns/net").readlink())
        self.hosts: dict[str, Host] = {}
        self._holders: list[subprocess.Popen[bytes]] = [self._switch]
        self._ip("link", "add", "br0", "type", "bridge")
        self._ip("link", "set", "br0", "up")

    def _ip(self, *args: str, pid: int | None = None) -> None:
        subprocess.run([*_enter(pid or self._switch.pid), "ip", *args], check=True, capture_output=True, timeout=30)

    def add(self, name: str) -> Host:
        number = len(self.hosts) + 2  # .1 is left for a gateway address the tests may want
        holder = _holder([*_enter(self._switch.pid), "unshare", "--net", "--"])
        self._holders.append(holder)
        _wait_for_namespace(holder, self._own, self._switch_ns)
        pid = self._sleep_pid(holder)
        port = f"v{number}"
        self._ip("link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", str(pid))
        self._ip("link", "set", port, "master", "br0", "up")
        address = f"{SUBNET}.{number}"
        self._ip("addr", "add", f"{address}/24", "dev", "eth0", pid=pid)
        self._ip("link", "set", "eth0", "up", pid=pid)
        self._ip("link", "set", "lo", "up", pid=pid)
        host = Host(name, address, pid)
        self.hosts[name] = host
        return host

    @staticmethod
    def _sleep_pid(holder: subprocess.Popen[bytes]) -> int:
        """The ``sleep`` at the end of ``nsenter … unshare … sleep`` (nsenter forks; unshare execs)."""
        import psutil

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for proc in [psutil.Process(holder.pid), *psutil.Process(holder.pid).children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    if proc.name() == "sleep":
                        return proc.pid
            time.sleep(0.05)
        raise TimeoutError("the host's sleep did not start")

    def close(self) -> None:
        for host in self.hosts.values():
            for proc in host.procs:
                if proc.poll() is None:
                    proc.kill()
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=10)
        for holder in reversed(self._holders):
            holder.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                holder.wait(timeout=10)


@contextlib.contextmanager
def lan(*names: str) -> Iterator[Lan]:
    """A LAN with one host per name (``10.77.0.2``, ``.3``, …), torn down afterwards."""
    net = Lan()
    try:
        for name in names:
            net.add(name)
        yield net
    finally:
        net.close()
