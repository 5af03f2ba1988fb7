"""Why a server can run slower than planned: other work on this machine, read right after a slow measurement.

``read_contention`` asks the machine (psutil; NVML through ``pynvml`` where an NVIDIA driver answers);
``probe_contention`` turns those readings into cause kinds, pure, so tests feed recorded readings:
- ``gpu_process``: another process holds memory on a GPU (NVML ``nvmlDeviceGetComputeRunningProcesses``; our own
  llama-server is told apart by its executable path, ``nvmlSystemGetProcessName``);
- ``gpu_throttle``: the GPU clocks are held down by power or thermal limits
  (``nvmlDeviceGetCurrentClocksThrottleReasons``: SW power cap, HW slowdown, thermal, power brake; idle ignored);
- ``cpu_busy``: other programs kept the CPU busy (``psutil.cpu_percent`` over a short window while our server is
  idle, so its own work is not counted);
- ``cpu_slow_clock``: the CPU ran well below its rated frequency (``psutil.cpu_freq``: current vs max; read right
  after the measured request, before the governor lowers an idle clock): power saving or thermal throttling.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil

CPU_BUSY_PERCENT = 50.0  # other programs using half the CPU take about half of llama.cpp's threads' time
SLOW_CLOCK_RATIO = 0.7  # below 70 % of the rated clock: a power plan or heat, not turbo steps
GPU_PROCESS_MIN_BYTES = 256 << 20  # a desktop compositor holds some VRAM everywhere; a few hundred MiB is a user
# nvmlClocksThrottleReasons (nvml.h): SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake.
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


@dataclass(frozen=True)
class GpuProcess:
    gpu: int
    pid: int
    used_bytes: int | None  # None where the driver does not say (Windows WDDM)
    name: str  # executable path as NVML gives it ("" when unknown)


@dataclass(frozen=True)
class ContentionReadings:
    cpu_percent: float | None  # system-wide, over a short idle window of our server
    cpu_mhz: float | None  # psutil.cpu_freq().current
    cpu_max_mhz: float | None  # psutil.cpu_freq().max (0 where the OS does not know it)
    gpu_processes: tuple[GpuProcess, ...] = ()
    gpu_throttle: tuple[int, ...] = ()  # throttle-reason bitmask per GPU


def read_cpu_clock() -> tuple[float | None, float | None]:
    """(current, max) MHz; read right after the measured request while the clock is still up."""
    try:
        freq = psutil.cpu_freq()
    except (OSError, NotImplementedError, RuntimeError):
        return None, None
    if freq is None:
        return None, None
    return float(freq.current) or None, float(freq.max) or None


def read_contention(clock: tuple[float | None, float | None], *, window_s: float = 0.5,
                    lib: ModuleType | None = None) -> ContentionReadings:
    """Readings for ``probe_contention``: the CPU's other work over ``window_s``, the given clock reading, and what
    NVML says (``lib``: the pynvml module; a test passes a stand-in with the same functions)."""
    try:
        cpu = float(psutil.cpu_percent(interval=window_s))
    except (OSError, RuntimeError):
        cpu = None
    processes, throttle = _read_nvml(lib)
    return ContentionReadings(cpu, clock[0], clock[1], processes, throttle)


def _read_nvml(lib: ModuleType | None) -> tuple[tuple[GpuProcess, ...], tuple[int, ...]]:
    if lib is None:
        try:
            import pynvml as lib  # imported on use; the library itself loads in nvmlInit
        except ImportError:
            return (), ()
    try:
        lib.nvmlInit()
    except lib.NVMLError:  # no library, no driver: no NVIDIA GPU to blame
        return (), ()
    processes: list[GpuProcess] = []
    throttle: list[int] = []
    try:
        for index in range(int(lib.nvmlDeviceGetCount())):
            handle = lib.nvmlDeviceGetHandleByIndex(index)
            with contextlib.suppress(lib.NVMLError):
                throttle.append(int(lib.nvmlDeviceGetCurrentClocksThrottleReasons(handle)))
            with contextlib.suppress(lib.NVMLError):
                for p in lib.nvmlDeviceGetComputeRunningProcesses(handle):
                    processes.append(GpuProcess(index, int(p.pid), _used(p), _process_name(lib, int(p.pid))))
    except lib.NVMLError:
        pass
    finally:
        with contextlib.suppress(lib.NVMLError):
            lib.nvmlShutdown()
    return tuple(processes), tuple(throttle)


def _used(process: Any) -> int | None:
    used = getattr(process, "usedGpuMemory", None)
    return int(used) if isinstance(used, int) and used >= 0 else None  # NVML_VALUE_NOT_AVAILABLE reads as None


def _process_name(lib: ModuleType, pid: int) -> str:
    try:
        name = lib.nvmlSystemGetProcessName(pid)
    except lib.NVMLError:
        return ""
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)


def probe_contention(r: ContentionReadings, server: Path | None = None) -> tuple[str, ...]:
    """The likely causes of a slow measurement, most specific first; ``server`` is our llama-server's path."""
    causes: list[str] = []
    others = [p for p in r.gpu_processes if not _same_program(p.name, server)]
    # a known size must be a real share of VRAM; an unknown one (Windows) counts when NVML at least names it
    if any((p.used_bytes or 0) >= GPU_PROCESS_MIN_BYTES or (p.used_bytes is None and p.name) for p in others):
        causes.append("gpu_process")
    if any(mask & THROTTLE_MASK for mask in r.gpu_throttle):
        causes.append("gpu_throttle")
    if r.cpu_percent is not None and r.cpu_percent >= CPU_BUSY_PERCENT:
        causes.append("cpu_busy")
    if r.cpu_mhz and r.cpu_max_mhz and r.cpu_mhz < SLOW_CLOCK_RATIO * r.cpu_max_mhz:
        causes.append("cpu_slow_clock")
    return tuple(causes)


def _same_program(name: str, server: Path | None) -> bool:
    if server is None or not name:
        return False
    return os.path.normcase(os.path.abspath(name)) == os.path.normcase(os.path.abspath(server))
