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
                                r.cuda_driver_version), compute_capability=cc, unified_memory=False))
    return tuple(gpus)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _error_kind(lib: ModuleType, exc: Exception) -> str:
    if isinstance(exc, getattr(lib, "NVMLError_LibraryNotFound", ())):
        return "library_not_found"
    if isinstance(exc, getattr(lib, "NVMLError_DriverNotLoaded", ())):
        return "driver_not_loaded"
    return " ".join(str(exc).split()) or type(exc).__name__


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
            devices.append(NvmlDevice(name=_text(lib.nvmlDeviceGetName(handle)), memory_total=int(mem.total),
                                      memory_free=int(mem.free), cc_major=major, cc_minor=minor))
        return NvmlReadings(available=True, driver_version=driver, cuda_driver_version=cuda, devices=tuple(devices))
    except lib.NVMLError as exc:
        return NvmlReadings(available=False, error=_error_kind(lib, exc))
    finally:
        with contextlib.suppress(lib.NVMLError):
            lib.nvmlShutdown()
