"""No service manager (containers, WSL without systemd, Wine, ``--no-service``): run the start script detached and
track it by a pid file.

The script (``run_qwen.sh``; ``run_qwen.bat`` on Windows) runs under ``qwenkit supervise`` (``register/supervisor``),
which restarts a server that died or stalled after it served and keeps its log bounded; nothing starts it at boot
or logon, which the user is told (``service.no_manager``). The pid file ``<home>/run/server.pid`` (the supervisor's)
is the only state; stop ends that pid's session (POSIX) or process tree (Windows) only while its command line is
still ours (the supervisor of this home's script, ``llama-server``, or the start script before its ``exec``), so a
pid the OS reused is never killed.

Windows has no signals to ask with: a stop there is ``TerminateProcess`` of the supervisor and everything it
started (llama-server keeps nothing on disk, so a hard stop loses nothing; ``core.processes``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import requests

from bootstrap.core import console
from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import ServerError, UsageError
from bootstrap.core.home import Home
from bootstrap.core.processes import SERVER_STOP_TIMEOUT_S, detached_options, kill_tree
from bootstrap.fetch.http_session import local_session
from bootstrap.place.engine_failure import ExitInfo
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.base import SERVER_LOG, ServiceManager, ServiceStatus
from bootstrap.register.shell_command import kept_program

PID_NAME = "server.pid"
SHELL = "/bin/sh"
SERVER_NAME = "llama-server"
SUPERVISE = "supervise"  # the hidden command (app/commands/supervise.py)
SUPERVISOR_LOG = "supervisor.log"  # the supervisor's own output: empty unless it failed
WINDOWS = os.name == "nt"


def start_script(home: Home) -> Path:
    """The script this system runs: ``run_qwen.bat`` on Windows, ``run_qwen.sh`` elsewhere."""
    return home.start_script("Windows" if WINDOWS else "")


def script_argv(script: Path) -> list[str]:
    """How the supervisor runs ``script``, from the script's own folder (its working directory).

    Windows: ``cmd /d /c .\\run_qwen.bat``. Named relative to the working directory, the command line holds no
    character cmd would read (the home's path may hold ``&``, ``(``, ``!``, spaces, Chinese); ``.\\`` because cmd
    skips the current folder where ``NoDefaultCurrentDirectoryInExePath`` is set; ``/d``: no AutoRun commands."""
    if WINDOWS:
        comspec = os.environ.get("COMSPEC") or str(Path(os.environ.get("SYSTEMROOT", r"C:\Windows"), "System32",
                                                           "cmd.exe"))
        return [comspec, "/d", "/c", f".\\{script.name}"]
    return [SHELL, str(script)]


def supervise_argv(home: Home) -> list[str]:
    """``qwenkit supervise --home HOME SCRIPT`` run by this very kit: this Python, or the frozen setup's copy in the
    home. The setup itself may sit on a USB drive about to be unplugged, or in Downloads: the supervisor outlives it."""
    if getattr(sys, "frozen", False):
        return [str(kept_program(home)), SUPERVISE, "--home", str(home.root), str(start_script(home))]
    return [sys.executable, "-m", "bootstrap", SUPERVISE, "--home", str(home.root), str(start_script(home))]


def supervisor_env() -> dict[str, str] | None:
    """The supervisor's environment. A one-file PyInstaller program started by another takes itself for the other's
    worker and runs from the other's unpacked folder, which that one deletes when it exits (seen under Wine as
    "Failed to remove temporary directory"); ``PYINSTALLER_RESET_ENVIRONMENT=1`` makes it unpack its own
    (PyInstaller 6.10+, "Run-time information": independent subprocess)."""
    if not getattr(sys, "frozen", False):
        return None
    return {**os.environ, "PYINSTALLER_RESET_ENVIRONMENT": "1"}


class FallbackManager(ServiceManager):
    """The start script as a detached process; ``health_url`` (``…/health``) makes ``status`` ask the server too."""

    name = "script"

    def __init__(self, home: Home, *, health_url: str | None = None,
                 stop_timeout: float = SERVER_STOP_TIMEOUT_S) -> None:
        super().__init__(home)
        self.health_url = health_url
        self.stop_timeout = stop_timeout
        # The server this manager started, kept so its exit status is ours to read: a dropped Popen is reaped by
        # subprocess's own clean-up, and a plain waitpid elsewhere would throw the status away.
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid_file(self) -> Path:
        return self.home.run_dir / PID_NAME

    @property
    def log_file(self) -> Path:
        return self.home.logs_dir / SERVER_LOG

    def last_exit(self) -> ExitInfo | None:
        """The exit status of the server this manager started, once it has ended."""
        if self._proc is None:
            return None
        return ExitInfo.from_returncode(self._proc.poll())

    def _collect(self, pid: int) -> bool | None:
        """Reap an exited child: through its Popen when it is the one we started (keeping its status).

        True: it has ended and is collected; False: it is our child and has not ended; None: not our child."""
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll() is not None
        return _reap(pid)

    @property
    def definition_paths(self) -> list[Path]:
        return [self.pid_file]

    @property
    def start_script(self) -> Path:
        return start_script(self.home)

    def available(self) -> tuple[bool, str]:
        if WINDOWS:
            return True, "cmd.exe"
        return Path(SHELL).exists(), SHELL

    def install(self, spec: LaunchSpec) -> None:
        """Nothing to register: only check that the start script is there."""
        self._require_script()

    def _require_script(self) -> None:
        if not self.start_script.is_file():
            raise UsageError(t("service.err_no_script", path=self.start_script), t("service.hint_install"))

    # -- the recorded process ------------------------------------------------------------------------------
    def _recorded_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            return None

    def _ours(self, pid: int) -> psutil.Process | None:
        """The live process ``pid`` if it is still our server (not a zombie, not a reused pid)."""
        self._collect(pid)
        try:
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            cmdline = proc.cmdline()
        except (psutil.Error, OSError):
            return None
        script = str(self.start_script)
        if any(Path(word).name.startswith(SERVER_NAME) for word in cmdline[:1]) or script in cmdline:
            return proc
        return None

    def _spawn(self) -> subprocess.Popen[bytes]:
        """The supervisor, detached in its own session; its own output (a traceback, if it ever failed) goes to
        ``logs/supervisor.log``, the server's through it to ``logs/server.log``."""
        # O_NOFOLLOW: a link planted after the check in prepare_logs is refused here rather than written through.
        fd = os.open(self.home.logs_dir / SUPERVISOR_LOG,
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "ab") as log:
            return subprocess.Popen(supervise_argv(self.home), cwd=self.home.root, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=log, close_fds=True, env=supervisor_env(),
                                    **detached_options())

    def start(self) -> None:
        """(Re)start: an old instance of ours is stopped first (docs/field-failures.md, failure mode 8)."""
        self._require_script()
        self.stop()
        self.home.run_dir.mkdir(parents=True, exist_ok=True)
        self.prepare_logs()
        try:
            proc = self._spawn()
        except OSError as exc:
            raise ServerError(t("service.err_spawn", path=self.start_script, detail=exc)) from exc
        self._proc = proc
        write_atomic(self.pid_file, f"{proc.pid}\n".encode("ascii"), mode=0o644)

    def stop(self) -> None:
        """SIGTERM the recorded server's session, SIGKILL after ``stop_timeout``; a no-op when none runs.

        The grace is short on purpose (``SERVER_STOP_TIMEOUT_S``: once it got SIGTERM, llama-server never finishes
        a generation in flight, it only waits for the client to hang up), so a stop takes about ``stop_timeout`` at
        most per server, and a client mid-answer gets a reset connection instead of a request that hangs.

        Also stops a server of this home that no pid file names: an installer killed between starting it and
        writing the pid file leaves one (the crash harness's review found the window), and it would hold the port.
        """
        pid = self._recorded_pid()
        procs = []
        if pid is not None:
            proc = self._ours(pid)
            if proc is None and psutil.pid_exists(pid) and not _is_zombie(pid):
                console.warn(t("service.warn_foreign_pid", pid=pid))
            if proc is not None:
                procs.append(proc)
            else:  # the supervisor was killed on its own: the server it ran is still in its session
                procs += self._left_in_session(pid)
        procs += [p for p in self._unrecorded() if p.pid != pid and p not in procs]
        for proc in procs:
            self._end(proc)
        self.pid_file.unlink(missing_ok=True)

    def _end(self, proc: psutil.Process) -> None:
        """Graceful first (SIGTERM), then SIGKILL; the wait after SIGKILL only covers the kernel tearing the process
        down (unmapping a large model), and a process still there after it is an error, never a hang."""
        _signal_session(proc, signal.SIGTERM)
        if not _ended(proc, self.stop_timeout, self._collect):
            _signal_session(proc, signal.SIGKILL)
            if not _ended(proc, self.stop_timeout, self._collect):
                raise ServerError(t("service.err_not_stopped", pid=proc.pid))
        self._collect(proc.pid)

    def _left_in_session(self, pid: int) -> list[psutil.Process]:
        """Servers still running in the session the recorded supervisor led (it was killed alone, SIGKILL).

        Windows has no sessions to ask: a server the dead supervisor left is found by its path (``_unrecorded``)."""
        if WINDOWS:
            return []
        found = []
        for proc in psutil.process_iter(["pid", "cmdline"]):
            cmdline = proc.info.get("cmdline") or []
            with contextlib.suppress(OSError):
                if (cmdline and os.getsid(proc.pid) == pid and Path(cmdline[0]).name.startswith(SERVER_NAME)
                        and not _is_zombie(proc.pid)):
                    found.append(proc)
        return found

    def _unrecorded(self) -> list[psutil.Process]:
        """Servers started from this home's engine folder or start script (no other home's, no other program)."""
        engines, script = self.home.engines_dir, str(self.start_script)
        found = []
        for proc in psutil.process_iter(["pid", "cmdline"]):
            cmdline = proc.info.get("cmdline") or []
            if not cmdline or proc.pid == os.getpid():
                continue
            first = Path(cmdline[0])
            ours = ((engines in first.parents and first.name.startswith(SERVER_NAME)) or script in cmdline[1:2]
                    or (SUPERVISE in cmdline and cmdline[-1] == script))
            if ours and not _is_zombie(proc.pid):
                found.append(proc)
        return found

    def status(self) -> ServiceStatus:
        pid = self._recorded_pid()
        proc = self._ours(pid) if pid is not None else None
        if proc is None and pid is not None:
            proc = next(iter(self._left_in_session(pid)), None)
            pid = proc.pid if proc is not None else pid
        detail = t("service.detail_pid", pid=pid) if proc is not None else t("service.detail_not_running")
        if proc is not None and self.health_url:
            detail = t("service.detail_pid_health", pid=pid, health=_health(self.health_url))
        return ServiceStatus(self.name, self.start_script.is_file(), proc is not None, False, detail)

    def uninstall(self) -> None:
        """Stop, then remove ``run/`` (the pid file) and nothing else: the script belongs to the render stage."""
        self.stop()
        self.pid_file.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # missing, or holds something that is not ours
            self.home.run_dir.rmdir()


def _reap(pid: int) -> bool | None:
    """Collect our own exited child (a test, or a CLI that outlives it) so it does not linger as a zombie.

    True: collected now; False: our child, not ended yet; None: not our child (or already collected). Windows
    keeps no zombies (and its ``waitpid`` takes a process handle): always None there."""
    if WINDOWS:
        return None
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except OSError:  # ChildProcessError: not our child, or already collected
        return None


def _ended(proc: psutil.Process, timeout: float, collect: Callable[[int], bool | None] = _reap) -> bool:
    """Whether the process ended within ``timeout``.

    Our own child has ended once it is collected. A zombie state is not enough there: a multi-threaded process
    killed by a signal shows ``Z`` for its main thread while its other threads are still being torn down, and
    ``waitpid`` cannot collect it until they are (Linux ``kernel/exit.c``, ``delay_group_leader``; measured: ~20 ms
    for Gemma 270M after SIGKILL); until then it still holds its memory and files. Another parent's child has ended
    when it is gone or a zombie (only that parent, which may be another long-lived program, can collect it)."""
    deadline = time.monotonic() + timeout
    while True:
        collected = collect(proc.pid)
        if collected or (collected is None and (not proc.is_running() or _is_zombie(proc.pid))):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _is_zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _signal_session(proc: psutil.Process, sig: signal.Signals) -> None:
    """Signal the server's whole session (it leads one: ``start_new_session``), else just the process.

    Windows: ``TerminateProcess`` for the process and every process it started (the supervisor, cmd.exe running the
    script, llama-server and a router's children; a onefile setup's bootloader and the setup it unpacked), the
    parent first so that nothing is restarted, whatever ``sig`` asked."""
    if WINDOWS:
        kill_tree(proc.pid)
        return
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except (ProcessLookupError, psutil.NoSuchProcess):
        pass


def _health(url: str) -> str:
    """``/health``'s status code, or the error's class (the server may still be loading: 503)."""
    with local_session() as session:
        try:
            return str(session.get(url, timeout=3).status_code)
        except requests.RequestException as exc:
            return type(exc).__name__
