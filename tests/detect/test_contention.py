"""The contention probe behind a slow-speed warning: causes from readings (pure), NVML through a stand-in for
pynvml's functions (no NVIDIA GPU here), and the psutil readings of this machine for real."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bootstrap.detect.probes import contention
from bootstrap.detect.probes.contention import ContentionReadings, GpuProcess, probe_contention

SERVER = Path("/home/u/.local/share/qwenclientkit/engine/b10434-ubuntu-vulkan-x64/llama-server")
IDLE = ContentionReadings(cpu_percent=3.0, cpu_mhz=4200.0, cpu_max_mhz=4500.0)


def _with(**kw: Any) -> ContentionReadings:
    return ContentionReadings(**{**IDLE.__dict__, **kw})


@pytest.mark.parametrize(("readings", "causes"), [
    (IDLE, ()),
    # our own server's VRAM is not a cause, whatever its size
    (_with(gpu_processes=(GpuProcess(0, 4242, 7 << 30, str(SERVER)),)), ()),
    # a game or another model holding 3 GiB on the GPU
    (_with(gpu_processes=(GpuProcess(0, 4242, 7 << 30, str(SERVER)),
                          GpuProcess(0, 977, 3 << 30, "C:\\Games\\game.exe"))), ("gpu_process",)),
    # a compositor's 120 MiB is everywhere: not a cause
    (_with(gpu_processes=(GpuProcess(0, 1200, 120 << 20, "/usr/lib/xorg/Xorg"),)), ()),
    # Windows (WDDM) gives no size: a named other process counts, an unnamed one does not
    (_with(gpu_processes=(GpuProcess(0, 977, None, "C:\\Games\\game.exe"),)), ("gpu_process",)),
    (_with(gpu_processes=(GpuProcess(0, 977, None, ""),)), ()),
    # throttle reasons: idle (0x1) and application clocks (0x2) are normal; power cap (0x4), thermal (0x20) not
    (_with(gpu_throttle=(0x1 | 0x2,)), ()),
    (_with(gpu_throttle=(0x1, 0x4)), ("gpu_throttle",)),
    (_with(gpu_throttle=(0x20,)), ("gpu_throttle",)),
    (_with(cpu_percent=85.0), ("cpu_busy",)),
    (_with(cpu_mhz=1200.0), ("cpu_slow_clock",)),  # a laptop on battery: 1.2 of 4.5 GHz
    (_with(cpu_mhz=1200.0, cpu_max_mhz=None), ()),  # the OS does not know the rated clock: no claim
    (_with(cpu_percent=85.0, gpu_throttle=(0x40,), gpu_processes=(GpuProcess(1, 5, 1 << 30, "python"),)),
     ("gpu_process", "gpu_throttle", "cpu_busy")),
])
def test_causes_from_readings(readings: ContentionReadings, causes: tuple[str, ...]) -> None:
    assert probe_contention(readings, SERVER) == causes


def _fake_nvml(processes: list[list[Any]], reasons: list[int], names: dict[int, bytes]) -> Any:
    import pynvml

    def name(pid: int) -> bytes:
        if pid not in names:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return names[pid]

    return SimpleNamespace(
        NVMLError=pynvml.NVMLError, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: len(processes), nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: reasons[h],
        nvmlDeviceGetComputeRunningProcesses=lambda h: processes[h], nvmlSystemGetProcessName=name)


def test_nvml_processes_and_throttle_reasons_are_read_per_gpu() -> None:
    # pynvml answers with c_nvmlProcessInfo_t records (pid, usedGpuMemory; None where not available)
    ours = SimpleNamespace(pid=10, usedGpuMemory=6 << 30)
    other = SimpleNamespace(pid=11, usedGpuMemory=2 << 30)
    unsized = SimpleNamespace(pid=12, usedGpuMemory=None)
    lib = _fake_nvml([[ours, other], [unsized]], [0x1, 0x4], {10: str(SERVER).encode(), 11: b"/usr/bin/ollama"})
    readings = contention.read_contention((3000.0, 3500.0), window_s=0.05, lib=lib)
    assert readings.gpu_processes == (GpuProcess(0, 10, 6 << 30, str(SERVER)),
                                      GpuProcess(0, 11, 2 << 30, "/usr/bin/ollama"), GpuProcess(1, 12, None, ""))
    assert readings.gpu_throttle == (0x1, 0x4)
    assert (readings.cpu_mhz, readings.cpu_max_mhz) == (3000.0, 3500.0)
    assert probe_contention(readings, SERVER)[:2] == ("gpu_process", "gpu_throttle")


def test_no_nvidia_driver_is_no_gpu_cause_and_the_cpu_is_read_for_real() -> None:
    import pynvml

    def missing() -> None:
        raise pynvml.NVMLError_LibraryNotFound()

    lib = SimpleNamespace(NVMLError=pynvml.NVMLError, nvmlInit=missing)
    readings = contention.read_contention(contention.read_cpu_clock(), window_s=0.1, lib=lib)
    assert readings.gpu_processes == () and readings.gpu_throttle == ()
    assert readings.cpu_percent is not None and 0.0 <= readings.cpu_percent <= 100.0
