"""Running another program and capturing what it says: the one way the kit starts a short-lived process.

Always an argument list (never a shell), stdin closed (a child that asks a question fails instead of hanging), no
console window flashing up on Windows, and a timeout. ``run_captured`` raises like ``subprocess.run`` for callers
that name each failure; ``run_command`` never raises, for callers to whom any failure is only a return code.
Long-running children (the server, a streamed pip) are started where they are watched, with ``subprocess.Popen``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

DEFAULT_TIMEOUT_S = 60.0
NOT_FOUND = 127  # the shell's codes: a missing program, one that could not start, and ``timeout(1)``'s hang
NOT_STARTED = 126
TIMED_OUT = 124

NO_WINDOW = getattr(subprocess, "CREATE_NO_WINDOW", 0)
"""Windows: a console program started from the kit gets a hidden console, not a window flashing up (0 elsewhere)."""

SERVER_STOP_TIMEOUT_S = 1
"""Seconds from asking llama-server to stop (SIGTERM; Ctrl+C under WinSW) to killing it (SIGKILL; TerminateProcess).

The one bound of every stop of the server, for an upgrade, a restart, an uninstall or the engine's self-test: the
fallback manager (``bootstrap.register.fallback``) and the self-test (``bootstrap.place.engine_selftest``) wait
this long, and the register stage passes the same value into each service definition (systemd ``TimeoutStopSec=``,
launchd ``ExitTimeOut``, WinSW ``<stoptimeout>``; the Task Scheduler has no such setting, see
``templates/task-scheduler.xml.j2``). Whole seconds, because launchd takes an integer.

Why a hard stop at all: llama-server's SIGTERM handler ends its task loop at once (``tools/server/server.cpp``,
``shutdown_handler`` → ``server_context::terminate``), so a generation in flight makes no more progress; its
clean-up then joins the HTTP workers (``server_http_context::join``, ``tools/server/server-http.cpp``), and the
worker streaming that generation polls for results that never come until its client hangs up
(``server_response_reader::next``, ``tools/server/server-queue.cpp``). Without a kill, a stop with a request in
flight lasts as long as the manager's own timeout (the fallback's old 20 s, launchd's default 20 s, WinSW's 15 s,
our units' old 30 s) and holds the client's request open all that time; the kill resets its connection instead.
Why 1 s: waiting longer cannot let a request in flight finish (see above), so the grace only serves a server with
nothing in flight, whose graceful stop ends in 0.2–0.3 s (``scripts/bench_stop.py``); and every second here is a
second of an upgrade's outage (the switch-over's gap is this stop plus the new server's load, ``install.switch_over``).
A kill loses nothing: llama-server keeps no state on disk, and the OS frees its memory and GPU context either way.
(5 s was tried first: under load, an upgrade that met a chat in flight was out for load + 5 s.)
"""


def detached_options() -> dict[str, Any]:
    """``Popen`` arguments for a process that outlives the kit (the start-script install's supervisor).

    POSIX: its own session (``setsid``), so a terminal closing does not hang it up and its group can be signalled
    as one. Windows ignores ``start_new_session``; there the process gets its own process group (Ctrl+C in the
    installer's window does not reach it) and no console at all (``DETACHED_PROCESS``: closing that window does not
    end it; Microsoft Learn, "Process Creation Flags")."""
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS}
    return {"start_new_session": True}


def kill_tree(pid: int) -> None:
    """Kill ``pid`` and every process it started, the parent first (so it starts nothing new): on Windows a
    process's children outlive it, and ``TerminateProcess`` is the only stop a process without a console gets."""
    try:
        parent = psutil.Process(pid)
        tree = [parent, *parent.children(recursive=True)]
    except psutil.Error:
        return
    for proc in tree:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def _options(env: Mapping[str, str] | None, text: bool) -> dict[str, Any]:
    options: dict[str, Any] = {"capture_output": True, "check": False, "stdin": subprocess.DEVNULL,
                               "creationflags": NO_WINDOW}
    if env is not None:
        options["env"] = dict(env)
    if text:
        options.update(text=True, encoding="utf-8", errors="replace")
    return options


def run_captured(argv: Sequence[str | Path], *, timeout: float, env: Mapping[str, str] | None = None,
                 text: bool = True) -> subprocess.CompletedProcess[Any]:
    """Run ``argv`` and capture its output (UTF-8 text, undecodable bytes replaced; bytes with ``text=False``).

    Raises ``OSError`` when the program cannot start and ``subprocess.TimeoutExpired`` when it outlives ``timeout``
    (the child is killed first), so the caller can say which happened.
    """
    return subprocess.run([str(a) for a in argv], timeout=timeout, **_options(env, text))


def run_command(argv: Sequence[str | Path], timeout: float = DEFAULT_TIMEOUT_S,
                env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``run_captured`` that never raises: a missing program is rc 127, one that cannot start 126, a hang 124,
    with the reason as stderr. Callers decide what a non-zero rc means (a refused ``loginctl enable-linger`` is
    only a warning)."""
    args = [str(a) for a in argv]
    try:
        return run_captured(args, timeout=timeout, env=env)
    except FileNotFoundError as exc:
        return subprocess.CompletedProcess(args, NOT_FOUND, "", str(exc))
    except OSError as exc:
        return subprocess.CompletedProcess(args, NOT_STARTED, "", exc.strerror or str(exc))
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, TIMED_OUT, "", f"timed out after {timeout:g} s")


def live_pid(pid_file: Path, name: str) -> int | None:
    """The pid ``pid_file`` names while a process of that pid runs a program called ``name`` (a prefix: Linux
    keeps 15 characters of it, Windows adds ``.exe``); None when the file is missing or stale (the pid reused)."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    with contextlib.suppress(psutil.Error):
        if psutil.pid_exists(pid) and psutil.Process(pid).name().startswith(name[:15]):
            return pid
    return None


def end_as(returncode: int) -> int:
    """End as the server ended: the same exit code, or the same signal (no core file of our own)."""
    if returncode >= 0:
        return returncode
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP cannot be handled: nothing to reset
        signal.signal(-returncode, signal.SIG_DFL)
    os.kill(os.getpid(), -returncode)
    return 128 - returncode  # not reached for a deadly signal
