"""Hardware probes (detect stage): one module per subject, each split into ``read_*`` (asks this machine for raw
readings) and ``probe_*`` (turns readings into profile records). Tests feed the ``probe_*`` functions readings
recorded from real machines (``probe_all``); ``read_all`` reads this machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from bootstrap.detect.hardware import SCHEMA_VERSION, GpuInfo, HardwareProfile
from bootstrap.detect.probes import (
    apple,
    cpu,
    disk,
    display_adapters,
    drm,
    memory,
    network,
    nvidia,
    pythons,
    system,
)


def merge_gpus(*groups: tuple[GpuInfo, ...]) -> tuple[GpuInfo, ...]:
    """All GPUs, renumbered 0..n-1 in probe order (NVIDIA first, then Apple, then AMD/Intel from sysfs or the
    Windows registry)."""
    flat = [gpu for group in groups for gpu in group]
    return tuple(replace(gpu, index=i) for i, gpu in enumerate(flat))


@dataclass(frozen=True)
class Readings:
    """Everything the probes read from one machine, as data (recorded machines are stored in this shape)."""

    os: system.OsReadings
    cpu: cpu.CpuReadings
    memory: memory.MemoryReadings
    disk: disk.DiskReadings
    nvml: nvidia.NvmlReadings
    sysctl: Mapping[str, str]
    pythons: tuple[tuple[str, str | None], ...]
    network: network.NetworkReadings
    drm: tuple[drm.DrmCard, ...] = ()  # Linux sysfs DRM cards
    adapters: tuple[display_adapters.AdapterKey, ...] = ()  # Windows display-adapter registry keys


def read_all(home: Path, env: Mapping[str, str], reach: bool = False) -> Readings:
    """Read this machine (``reach``: also whether each download source answers, for ``doctor`` and an install's
    check before its question; probed while the rest is read), RAM bandwidth with the plan's thread count included
    (< 1 s). AMD/Intel GPUs: sysfs on Linux, the registry on Windows; the installed engine's ``--list-devices``
    corrects them later (``tune/devices.py``)."""
    network_readings = network.read_network_later(env, reach)  # first: its answers come in during the rest
    os_readings = system.read_os()
    sysctl = apple.read_sysctl() if os_readings.system == "Darwin" else {}
    cpu_readings = cpu.read_cpu(sysctl or None)
    threads = cpu.plan_threads(cpu.probe_cpu(cpu_readings))
    return Readings(os=os_readings, cpu=cpu_readings, memory=memory.read_memory(threads),
                    disk=disk.read_disk(home), nvml=nvidia.read_nvml(), sysctl=sysctl,
                    pythons=tuple(pythons.read_pythons(os_readings.system, env)),
                    network=network_readings(),
                    drm=drm.read_drm() if os_readings.system == "Linux" else (),
                    adapters=display_adapters.read_display_adapters() if os_readings.system == "Windows" else ())


def probe_all(r: Readings, *, created: str, kit_version: str) -> HardwareProfile:
    """Readings → the profile, without the doctor's checks (pure: no I/O)."""
    os_info = system.probe_os(r.os)
    mem = memory.probe_memory(r.memory)
    nvml_gpus = nvidia.probe_nvidia(r.nvml)
    gpus = merge_gpus(nvml_gpus, apple.probe_apple(r.sysctl, os_info.system, os_info.machine, mem.available_bytes),
                      drm.probe_drm(r.drm, nvml_found=bool(nvml_gpus)),
                      display_adapters.probe_display_adapters(r.adapters, nvml_found=bool(nvml_gpus)))
    return HardwareProfile(schema=SCHEMA_VERSION, kit_version=kit_version, created=created, os=os_info,
                           cpu=cpu.probe_cpu(r.cpu), memory=mem, disk=disk.probe_disk(r.disk), gpus=gpus,
                           pythons=pythons.probe_pythons(r.pythons), network=network.probe_network(r.network))
