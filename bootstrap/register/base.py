"""The register stage's shared records: the manager interface, its status record, and the one command runner.

Every OS command a manager runs (systemctl, loginctl, launchctl, schtasks, WinSW) goes through ``run_command`` with
an argv list, never a shell line. Managers take the runner as a constructor argument, so tests replace it for the
managers whose tools cannot run here (no systemd as PID 1, no macOS, no Windows) and assert the exact argv sequence.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bootstrap.core.atomic_file import copy_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import ServerError, UsageError
from bootstrap.core.home import Home
from bootstrap.core.log_files import roll_if_large
from bootstrap.core.messages import MESSAGES
from bootstrap.core.processes import DEFAULT_TIMEOUT_S, run_command
from bootstrap.place.engine_failure import ExitInfo, read_log_tail
from bootstrap.plan.launch_spec import LaunchSpec

if TYPE_CHECKING:
    from bootstrap.core.templating import RenderedFile  # Jinja: loaded only by the managers that render

SERVICE_ID = "qwenclientkit"  # systemd unit stem, WinSW id
SERVER_LOG = "server.log"  # in <home>/logs: where the managers that keep a log file put the server's output


@dataclass(frozen=True)
class ServiceStatus:
    """What ``qwenkit service status`` reports for one manager."""

    manager: str
    installed: bool  # a definition is registered with the OS (or, for the fallback, the start script exists)
    active: bool  # the server process is running now
    enabled: bool  # it will start again at boot/logon
    detail: str = ""  # the manager's own words (state, pid, last error)


Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]


def output_of(result: subprocess.CompletedProcess[str]) -> str:
    """The command's own words for an error line: stderr, else stdout, on one line."""
    text = (result.stderr or "").strip() or (result.stdout or "").strip()
    return " ".join(text.split())


def manager_label(name: str) -> str:
    """A manager's name as shown: the start script ("script") is no service, and says so in Chinese (启动脚本);
    the service managers keep their own names unless they have a Chinese one."""
    key = f"service.manager_{name}"
    return t(key) if key in MESSAGES else name


def port_busy(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something already accepts connections on ``host:port`` (an old instance: docs/field-failures.md, 8)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def safe_logs_dir(home: Home, *files: Path) -> Path:
    """``<home>/logs``, created when missing; a link there, or in place of one of ``files`` inside it, is refused
    (``UsageError``, exit 2, naming it): nothing is written or read through it."""
    folder = home.logs_dir
    for path in (folder, *files):
        if path.is_symlink():
            raise UsageError(t("logs.err_link", path=path), t("logs.hint_link"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass(frozen=True)
class Evidence:
    """What a manager can tell about a server that stopped: how it ended and its last log lines."""

    exit: ExitInfo | None  # None: the manager does not say (or the process never ran)
    log_text: str
    log_where: str | None  # a file, or the command that shows the log (journalctl)


def remove_files(paths: Sequence[Path]) -> None:
    """Delete what a manager wrote; missing files are fine (uninstall is idempotent)."""
    for path in paths:
        Path(path).unlink(missing_ok=True)


def remove_empty_dir(path: Path) -> None:
    """Remove ``<home>/service`` once the last definition is gone, so uninstall leaves no empty folder behind."""
    with contextlib.suppress(OSError):  # missing, or still holds another manager's files
        Path(path).rmdir()


def copy_file(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` through a temp name + rename, so the OS never reads a half-written file."""
    copy_atomic(source, target)


class ServiceManager(ABC):
    """One OS service manager: writes its definition for a ``LaunchSpec`` and drives it.

    ``install`` registers (boot/logon start) without starting; ``start`` (re)starts so a rerun replaces an old
    instance with the new definition; ``uninstall`` stops, unregisters and removes every file ``install`` wrote.
    """

    name: str = "?"

    def __init__(self, home: Home, *, runner: Runner = run_command) -> None:
        self.home = home
        self.runner = runner

    def run(self, *argv: str | Path, timeout: float = DEFAULT_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return self.runner([str(a) for a in argv], timeout)

    @property
    def log_file(self) -> Path | None:
        """The file the server's output goes to under this manager (None: the manager keeps it elsewhere)."""
        return None

    def last_exit(self) -> ExitInfo | None:
        """How the server's last process ended, when the manager records it (None otherwise)."""
        return None

    def evidence(self) -> Evidence:
        """Exit status and log tail, for naming the cause of a failed start (``engine_failure.classify``)."""
        log = self.log_file
        return Evidence(self.last_exit(), read_log_tail(log) if log is not None else "",
                        None if log is None else str(log))

    def log_command(self, lines: int | None, follow: bool, *, stamped: bool = False) -> list[str] | None:
        """The command that shows the server's log when the manager keeps it outside a file (the systemd journal);
        None: it is ``log_file``. ``lines`` None: all of it; ``stamped``: each line with its time of day."""
        return None

    rolls_its_log = False  # the manager bounds the log itself (WinSW's roll-by-size)

    def prepare_logs(self) -> None:
        """Before a start: ``<home>/logs`` made when missing, and neither it nor the log file a link, which would
        send the server's output (appended by us, launchd, WinSW or llama-server itself) wherever it points; a log
        past ``log_files.MAX_BYTES`` is rolled, so each start begins a bounded file (launchd and the Task Scheduler
        append without a bound while one server runs; the supervisor and WinSW roll as they write)."""
        if self.log_file is not None:
            safe_logs_dir(self.home, self.log_file)
            if not self.rolls_its_log:
                with contextlib.suppress(OSError):  # Windows: the file is still open in a server being replaced
                    roll_if_large(self.log_file)

    @property
    def start_script(self) -> Path:
        """The script to fall back on when the manager refuses (named in the error's hint)."""
        return self.home.run_sh

    def must(self, *argv: str | Path) -> None:
        """Run a manager command that has to succeed; a refusal is ``ServerError`` (exit 6) with its output."""
        result = self.run(*argv)
        if result.returncode != 0:
            raise ServerError(t("service.err_refused", manager=self.name, command=" ".join(map(str, argv)),
                                rc=result.returncode, detail=output_of(result)),
                              t("service.hint_refused", script=self.start_script))

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """(usable here, why not)."""

    @property
    @abstractmethod
    def definition_paths(self) -> list[Path]:
        """Every file ``install`` writes, the one the OS reads first (shown to the user)."""

    def rendered(self, spec: LaunchSpec) -> list[RenderedFile]:
        """The definition files ``install`` renders for ``spec``, as it writes them (the OS's copy included), so a
        start can see one changed since (``register/rendered_check.py``); none for a manager that renders none."""
        return []

    @abstractmethod
    def install(self, spec: LaunchSpec) -> None:
        """Write the definition and register it to start at boot/logon."""

    @abstractmethod
    def start(self) -> None:
        """Start, or restart when running; raise ``ServerError`` when the manager refuses."""

    @abstractmethod
    def stop(self) -> None:
        """Stop if running (idempotent)."""

    @abstractmethod
    def status(self) -> ServiceStatus:
        """Registered / running / enabled."""

    @abstractmethod
    def uninstall(self) -> None:
        """Stop, unregister, remove every file ``install`` wrote (idempotent)."""
