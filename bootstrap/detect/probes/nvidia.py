"""NVIDIA probe through NVML (``pynvml`` from the nvidia-ml-py package), the library nvidia-smi itself uses.

``read_nvml`` makes the NVML calls and keeps what they returned (``NvmlReadings``); ``probe_nvidia`` turns those
readings into GPU records. Tests feed readings recorded from real machines, or a stand-in for the pynvml functions.
No NVIDIA driver is a normal answer (``NVMLError_LibraryNotFound`` / ``DriverNotLoaded``), not an error.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from bootstrap.detect.hardware import GpuInfo


@dataclass(frozen=True)
class NvmlDevice:
    name: str
    memory_total: int  # nvmlDeviceGetMemoryInfo(h).total, bytes
    memory_free: int  # .free, bytes
    cc_major: int | None  # nvmlDeviceGetCudaComputeCapability(h)
    cc_minor: int | None
    bus_width: int | None = None  # nvmlDeviceGetMemoryBusWidth(h), bits
    mem_clock_max_mhz: int | None = None  # nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_MEM), MHz


@dataclass(frozen=True)
class NvmlReadings:
    available: bool  # nvmlInit succeeded
    error: str | None = None  # why not: "library_not_found", "driver_not_loaded", or the NVML message
    driver_version: str | None = None  # nvmlSystemGetDriverVersion(): "550.54.14"
    cuda_driver_version: int | None = None  # nvmlSystemGetCudaDriverVersion(): 12040 = 12.4
    devices: tuple[NvmlDevice, ...] = ()


def cuda_version_text(value: int | None) -> str | None:
    """NVML encodes CUDA versions as 1000*major + 10*minor (12040 → "12.4"; CUDA_VERSION convention)."""
    if not value or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


# NVML's memory clock is half the data rate per pin for every memory type (GDDR6/6X/7, HBM): bus bits / 8 × clock × 2
# gives the published bandwidth: RTX 3090 384-bit × 9751 MHz → 936 GB/s, RTX 4060 Ti 128-bit × 9001 MHz → 288 GB/s,
# T4 256-bit × 5001 MHz → 320 GB/s, A100 40 GB 5120-bit × 1215 MHz → 1555 GB/s (NVIDIA's spec pages; docs/speed.md).
TRANSFERS_PER_CLOCK = 2


def memory_bandwidth(bus_width: int | None, mem_clock_mhz: int | None) -> int | None:
    """Peak memory bandwidth in bytes/s from NVML's bus width and highest memory clock; None when either is unknown."""
    if not bus_width or bus_width <= 0 or not mem_clock_max_ok(mem_clock_mhz):
        return None
    return bus_width // 8 * int(mem_clock_mhz or 0) * 1_000_000 * TRANSFERS_PER_CLOCK


def mem_clock_max_ok(value: int | None) -> bool:
    return value is not None and value > 0


def probe_nvidia(r: NvmlReadings) -> tuple[GpuInfo, ...]:
    if not r.available:
        return ()
    gpus = []
    for index, d in enumerate(r.devices):
        cc = f"{d.cc_major}.{d.cc_minor}" if d.cc_major is not None and d.cc_minor is not None else None
        total = max(0, int(d.memory_total))
        gpus.append(GpuInfo(index=index, vendor="nvidia", name=d.name.strip() or "NVIDIA GPU",
                            vram_total_bytes=total, vram_free_bytes=min(max(0, int(d.memory_free)), total),
                            driver_version=r.driver_version, cuda_driver_version=cuda_version_text(
                                r.cuda_driver_version), compute_capability=cc, unified_memory=False,
                            memory_bus_width_bits=d.bus_width if d.bus_width and d.bus_width > 0 else None,
                            memory_clock_max_mhz=d.mem_clock_max_mhz if mem_clock_max_ok(d.mem_clock_max_mhz)
                            else None,
                            memory_bandwidth_bytes_per_s=memory_bandwidth(d.bus_width, d.mem_clock_max_mhz),
                            source="nvml"))
    return tuple(gpus)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _error_kind(lib: ModuleType, exc: Exception) -> str:
    if isinstance(exc, getattr(lib, "NVMLError_LibraryNotFound", ())):
        return "library_not_found"
    if isinstance(exc, getattr(lib, "NVMLError_DriverNotLoaded", ())):
        return "driver_not_loaded"
    return " ".join(str(exc).split()) or type(exc).__name__


def _memory_bus(lib: ModuleType, handle: Any) -> tuple[int | None, int | None]:
    """(bus width bits, highest memory clock MHz); old drivers or pynvml without the call answer None."""
    try:
        bus = int(lib.nvmlDeviceGetMemoryBusWidth(handle))
    except (lib.NVMLError, AttributeError):
        bus = None
    try:
        clock = int(lib.nvmlDeviceGetMaxClockInfo(handle, lib.NVML_CLOCK_MEM))
    except (lib.NVMLError, AttributeError):
        clock = None
    return bus, clock


def read_nvml(lib: ModuleType | None = None) -> NvmlReadings:
    """Ask NVML; ``lib`` is the pynvml module (a test passes a stand-in with the same functions)."""
    if lib is None:
        import pynvml as lib  # imported on use; the library itself loads in nvmlInit
    try:
        lib.nvmlInit()
    except lib.NVMLError as exc:
        return NvmlReadings(available=False, error=_error_kind(lib, exc))
    try:
        driver = _text(lib.nvmlSystemGetDriverVersion())
        try:
            cuda = int(lib.nvmlSystemGetCudaDriverVersion())
        except lib.NVMLError:
            cuda = None
        devices = []
        for i in range(int(lib.nvmlDeviceGetCount())):
            handle = lib.nvmlDeviceGetHandleByIndex(i)
            mem = lib.nvmlDeviceGetMemoryInfo(handle)
            try:
                major, minor = lib.nvmlDeviceGetCudaComputeCapability(handle)
            except lib.NVMLError:
                major = minor = None
            bus, clock = _memory_bus(lib, handle)
            devices.append(NvmlDevice(name=_text(lib.nvmlDeviceGetName(handle)), memory_total=int(mem.total),
                                      memory_free=int(mem.free), cc_major=major, cc_minor=minor, bus_width=bus,
                                      mem_clock_max_mhz=clock))
        return NvmlReadings(available=True, driver_version=driver, cuda_driver_version=cuda, devices=tuple(devices))
    except lib.NVMLError as exc:
        return NvmlReadings(available=False, error=_error_kind(lib, exc))
    finally:
        with contextlib.suppress(lib.NVMLError):
            lib.nvmlShutdown()
