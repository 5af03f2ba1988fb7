"""Which service manager runs the server on this machine, and which one was installed (DESIGN.md §5).

| OS | without admin | with admin |
|---|---|---|
| Linux | systemd user unit (+ linger) | system unit running as the home's owner |
| macOS | LaunchAgent | — |
| Windows | Task Scheduler task at logon | WinSW service (when the WinSW exe is at hand) |

Where no manager runs (containers, WSL without systemd) the fallback runs the start script detached. The manager
used at install is recorded in ``<home>/service/manager`` so later ``start``/``stop``/``status``/``uninstall``
drive that one even when run without the admin rights the install had.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.home import Home
from bootstrap.core.processes import run_command
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.base import Runner, ServiceManager, ServiceStatus, remove_empty_dir
from bootstrap.register.fallback import FallbackManager
from bootstrap.register.launchd import LaunchdManager
from bootstrap.register.systemd import BOOTED_MARKER, SystemdManager, home_owner, user_unit_dir
from bootstrap.register.windows_task import TaskSchedulerManager
from bootstrap.register.winsw import WinswManager

__all__ = [
    "FallbackManager",
    "HostProbe",
    "LaunchdManager",
    "ManagerChoice",
    "ServiceManager",
    "ServiceStatus",
    "SystemdManager",
    "TaskSchedulerManager",
    "WinswManager",
    "choose_for_install",
    "choose_manager",
    "install_service",
    "manager_named",
    "recorded_manager",
    "uninstall_service",
]

RECORD_NAME = "manager"


@dataclass(frozen=True)
class HostProbe:
    """The facts about this machine that choose a manager (given as data in tests)."""

    systemd_booted: bool  # /run/systemd/system exists (sd_booted(3))
    is_root: bool
    user: str
    uid: int
    user_home: Path

    @classmethod
    def detect(cls) -> HostProbe:
        import getpass

        uid = os.getuid() if hasattr(os, "getuid") else -1
        return cls(BOOTED_MARKER.is_dir(), uid == 0, getpass.getuser(), uid, Path.home())


def _windows_user(runner: Runner) -> str:
    """``DOMAIN\\user`` as Task Scheduler's ``UserId`` wants it (``whoami`` prints exactly that)."""
    import getpass

    result = runner(["whoami"], 15)
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else getpass.getuser()


def _build(name: str, home: Home, probe: HostProbe, runner: Runner, winsw: Path | None,
           health_url: str | None, winsw_offered: bool = False) -> ServiceManager:
    if name == "systemd-system":
        return SystemdManager(home, scope="system", user=home_owner(home), runner=runner,
                              booted=probe.systemd_booted)
    if name == "systemd-user":
        return SystemdManager(home, scope="user", user=probe.user, runner=runner,
                              unit_dir=user_unit_dir(probe.user_home), booted=probe.systemd_booted)
    if name == "launchd":
        return LaunchdManager(home, uid=probe.uid, agents_dir=probe.user_home / "Library" / "LaunchAgents",
                              runner=runner)
    if name == "winsw":
        return WinswManager(home, winsw_source=winsw, runner=runner, offered=winsw_offered)
    if name == "task-scheduler":
        return TaskSchedulerManager(home, user_id=_windows_user(runner), runner=runner)
    return FallbackManager(home, health_url=health_url)


def manager_named(name: str, home: Home, *, runner: Runner = run_command, winsw: Path | None = None) -> ServiceManager:
    """The manager recorded (or chosen, ``ManagerChoice``) under ``name`` (``systemd-user``, ``script``, …);
    ``winsw``: WinSW's exe for a ``winsw`` service being installed."""
    return _build(name, home, HostProbe.detect(), runner, winsw, None)


def recorded_manager(home: Home) -> str | None:
    """The manager name ``install_service`` recorded, if any."""
    try:
        return (home.services_dir / RECORD_NAME).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def choose_manager(system: str, home: Home, *, admin: bool, probe: HostProbe | None = None,
                   runner: Runner = run_command, winsw: Path | None = None,
                   health_url: str | None = None, winsw_offered: bool = False) -> ServiceManager:
    """The installed manager if one is recorded, else the best one this machine runs (table above). ``winsw``:
    WinSW's exe at hand; ``winsw_offered``: an install's bundle carries it (fetched after the confirmation)."""
    probe = probe or HostProbe.detect()
    recorded = recorded_manager(home)
    if recorded:
        return _build(recorded, home, probe, runner, winsw, health_url)
    if system == "Darwin":
        return _build("launchd", home, probe, runner, winsw, health_url)
    if system == "Windows":
        usable = admin and (winsw_offered or (winsw is not None and Path(winsw).is_file()))
        return _build("winsw" if usable else "task-scheduler", home, probe, runner, winsw, health_url,
                      winsw_offered)
    if system == "Linux" and probe.systemd_booted:
        names = ["systemd-system", "systemd-user"] if admin and probe.is_root else ["systemd-user"]
        for name in names:
            manager = _build(name, home, probe, runner, winsw, health_url)
            if manager.available()[0]:
                return manager
    return _build("script", home, probe, runner, winsw, health_url)


@dataclass(frozen=True)
class ManagerChoice:
    """Which manager runs the server after an install, decided once per install before its confirmation screen:
    the screen names it, the fetch stage gets WinSW only for it, and the register stage installs it (one answer,
    so the screen cannot promise the start script while the install registers a service)."""

    name: str  # a manager's name ("systemd-user", "winsw", …) or "script": the start script under the supervisor
    fallback: str | None = None  # why the manager this machine would use cannot run here (the script runs instead)
    asked: bool = True  # False: --no-service, the start script as asked (nothing to warn about)


def choose_for_install(system: str, home: Home, *, service: bool, admin: bool, winsw_offered: bool = False,
                       winsw: Path | None = None, probe: HostProbe | None = None,
                       runner: Runner = run_command) -> ManagerChoice:
    """The manager an install registers: none with ``--no-service``; else ``choose_manager``'s, or the start script
    where that one cannot run here (DESIGN.md §5), with the reason."""
    if not service:
        return ManagerChoice("script", asked=False)
    manager = choose_manager(system, home, admin=admin, probe=probe, runner=runner, winsw=winsw,
                             winsw_offered=winsw_offered)
    available, why = manager.available()
    return ManagerChoice(manager.name) if available else ManagerChoice("script", why or manager.name)


def install_service(manager: ServiceManager, spec: LaunchSpec) -> None:
    """Install with ``manager`` and record its name for later commands. The prompt cache's folder is made here too:
    llama-server will not start with a ``--slot-save-path`` that is not a directory (WinSW starts it directly)."""
    for folder in spec.cache_dirs():
        folder.mkdir(parents=True, exist_ok=True)
    manager.install(spec)
    manager.home.services_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(manager.home.services_dir / RECORD_NAME, f"{manager.name}\n".encode(), mode=0o644)


def uninstall_service(manager: ServiceManager) -> None:
    """Uninstall with ``manager`` and forget it; nothing of the register stage stays in the home."""
    manager.uninstall()
    (manager.home.services_dir / RECORD_NAME).unlink(missing_ok=True)
    remove_empty_dir(manager.home.services_dir)


def this_system() -> str:
    """``platform.system()``: the OS whose manager is used."""
    return platform.system()
