"""OS probe: name, release, machine, and whether we run inside WSL or a container (services behave differently)."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from bootstrap.detect.hardware import OsInfo

# cgroup v1 paths of containerised processes name the runtime; v2 shows "0::/" and needs the marker files instead.
_CONTAINER_MARKERS = ("docker", "kubepods", "containerd", "lxc", "libpod")


@dataclass(frozen=True)
class OsReadings:
    """What the OS says about itself: ``platform.uname()`` plus Linux's /proc and container marker files."""

    system: str
    release: str
    version: str
    machine: str
    proc_version: str | None = None  # /proc/version: WSL kernels say "microsoft"
    dockerenv: bool = False  # /.dockerenv (Docker) or /run/.containerenv (Podman)
    cgroup: str | None = None  # /proc/1/cgroup


def probe_os(r: OsReadings) -> OsInfo:
    wsl = r.system == "Linux" and "microsoft" in (r.proc_version or "").lower()
    cgroup = (r.cgroup or "").lower()
    container = r.dockerenv or any(marker in cgroup for marker in _CONTAINER_MARKERS)
    return OsInfo(system=r.system, release=r.release, version=r.version, machine=r.machine, wsl=wsl,
                  container=container)


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")[:65536]
    except OSError:
        return None


def read_os() -> OsReadings:
    u = platform.uname()
    if u.system != "Linux":
        return OsReadings(system=u.system, release=u.release, version=u.version, machine=u.machine)
    return OsReadings(system=u.system, release=u.release, version=u.version, machine=u.machine,
                      proc_version=_read_text("/proc/version"),
                      dockerenv=Path("/.dockerenv").exists() or Path("/run/.containerenv").exists(),
                      cgroup=_read_text("/proc/1/cgroup"))
