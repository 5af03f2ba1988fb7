"""Processes tied to another's life: what a long-lived helper of the kit (the router's front) starts ends with it,
and it ends with what started it, whichever way either ends (a crash, a kill from Task Manager, ``kill -9``).

- **Linux**: a child started with ``die_with_parent`` gets SIGTERM when its parent dies (prctl
  ``PR_SET_PDEATHSIG``), even by SIGKILL.
- **Windows** has no such signal, and a process's children outlive it. ``kill_on_close_job`` puts this process in
  a job object with ``JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE``; everything it starts afterwards is in the job too, and
  the OS ends them all when the job's last handle closes, which is when this process ends (Microsoft Learn,
  "JOBOBJECT_BASIC_LIMIT_INFORMATION"; a process may be in nested jobs since Windows 8, so one the Task Scheduler
  made is no obstacle). ``end_with_parent`` watches the process that started this one: a one-file PyInstaller
  program (the setup's copy in ``app/``) is two processes, and the first one killed leaves the second running
  (pyinstaller/pyinstaller#4858); a venv's ``qwenkit.exe`` launcher is two processes the same way.

Measured under Wine (tests/e2e/test_windows_install.py): a front killed with its router still running left the
router and both of its model servers running beside the ones the supervisor started next.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from collections.abc import Callable

import psutil

_PR_SET_PDEATHSIG = 1
_JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9  # JOBOBJECTINFOCLASS JobObjectExtendedLimitInformation
_JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000


def die_with_parent() -> None:
    """Linux, as a ``preexec_fn``: this (child) process gets SIGTERM when its parent dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class _BasicLimits(ctypes.Structure):
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                ("LimitFlags", ctypes.c_uint32), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", ctypes.c_uint32),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", ctypes.c_uint32), ("SchedulingClass", ctypes.c_uint32)]


class _ExtendedLimits(ctypes.Structure):
    _fields_ = [("BasicLimitInformation", _BasicLimits), ("IoInfo", ctypes.c_uint64 * 6),
                ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]


def kill_on_close_job() -> bool:
    """Windows: this process and all it starts from now on end together (module docstring). The job's handle is
    never closed by us (nor inheritable): it closes when this process ends. False where the OS refused (then the
    caller's children may outlive it, as before)."""
    if os.name != "nt":
        return False
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.CreateJobObjectW.restype = wintypes.HANDLE
    kernel32.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
    kernel32.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
    job = kernel32.CreateJobObjectW(None, None)
    if not job:
        return False
    limits = _ExtendedLimits()
    limits.BasicLimitInformation.LimitFlags = _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    if not kernel32.SetInformationJobObject(job, _JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(limits),
                                            ctypes.sizeof(limits)):
        kernel32.CloseHandle(job)
        return False
    if not kernel32.AssignProcessToJobObject(job, kernel32.GetCurrentProcess()):
        kernel32.CloseHandle(job)
        return False
    return True


def end_with_parent(on_end: Callable[[], None]) -> bool:
    """Windows: call ``on_end`` (from a daemon thread) once the process that started this one has ended. False
    when that process is gone already or is not the one that started us (its pid reused)."""
    if os.name != "nt":
        return False
    try:
        parent = psutil.Process(os.getppid())
        if parent.create_time() > psutil.Process().create_time():
            return False
    except (psutil.Error, OSError):
        return False

    def watch() -> None:
        with contextlib.suppress(psutil.Error, OSError):
            parent.wait()
        on_end()

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
    return True
