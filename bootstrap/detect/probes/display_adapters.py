"""Windows GPUs from the registry: the display-adapter class key, one subkey per adapter driver.

``HKLM\\SYSTEM\\CurrentControlSet\\Control\\Class\\{4d36e968-e325-11ce-bfc1-08002be10318}\\NNNN`` (the Display class
GUID, Microsoft's "System-Defined Device Setup Classes") holds, per adapter:

- ``DriverDesc`` (the name), ``MatchingDeviceId`` (``PCI\\VEN_1002&DEV_73DF&REV_C1``), ``DriverVersion``;
- ``HardwareInformation.qwMemorySize``: the dedicated memory as a 64-bit value, written by WDDM drivers of NVIDIA,
  AMD and Intel on Windows 10 and later (some write it as 8 binary bytes); ``HardwareInformation.MemorySize`` is
  the older 32-bit one (a DWORD or 4 binary bytes). WMI's ``Win32_VideoController.AdapterRAM`` is that 32-bit
  figure and stops at 4 GiB (sebhildebrandt/systeminformation#534, AlexsJones/llmfit#830), so it is not used.

The registry does not say how much is free, nor whether the adapter is still plugged in (a removed card's key can
stay): ``--list-devices`` of the installed engine settles both (``tune/devices.py``). ``read_display_adapters``
asks the machine (``winreg``, Windows only); ``probe_display_adapters`` is pure and fed recorded values in tests.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from bootstrap.detect.hardware import GpuInfo
from bootstrap.detect.probes.gpu_models import GIB, display_name, is_integrated, published_bandwidth, vendor_of

CLASS_KEY = r"SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"
_IDS = re.compile(r"VEN_([0-9A-F]{4})&DEV_([0-9A-F]{4})", re.IGNORECASE)
_VALUES = ("DriverDesc", "MatchingDeviceId", "DriverVersion", "HardwareInformation.qwMemorySize",
           "HardwareInformation.MemorySize")


@dataclass(frozen=True)
class AdapterKey:
    """One ``NNNN`` subkey's values as read (byte values already turned into integers, little-endian)."""

    key: str  # "0000"
    driver_desc: str | None = None
    matching_device_id: str | None = None
    driver_version: str | None = None
    qw_memory_size: int | None = None
    memory_size: int | None = None


def as_integer(value: Any) -> int | None:
    """A REG_QWORD/REG_DWORD (int) or REG_BINARY (bytes, little-endian) memory size; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value & 0xFFFFFFFFFFFFFFFF
    if isinstance(value, (bytes, bytearray)) and len(value) in (4, 8):
        return int.from_bytes(bytes(value), "little")
    return None


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def read_display_adapters(winreg: ModuleType | None = None) -> tuple[AdapterKey, ...]:
    """Every adapter subkey; ``winreg`` is the standard module (a test passes a stand-in with the same calls).
    Nothing when the class key cannot be opened."""
    if winreg is None:
        import winreg  # Windows only; imported on use
    try:
        root = winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, CLASS_KEY)
    except OSError:
        return ()
    found: list[AdapterKey] = []
    with root:
        index = 0
        while True:
            try:
                name = winreg.EnumKey(root, index)
            except OSError:
                break  # no more subkeys
            index += 1
            if not re.fullmatch(r"\d{4}", name):
                continue  # "Properties", "Configuration"
            values: dict[str, Any] = {}
            try:
                with winreg.OpenKey(root, name) as sub:
                    for value_name in _VALUES:
                        try:
                            values[value_name] = winreg.QueryValueEx(sub, value_name)[0]
                        except OSError:
                            continue
            except OSError:
                continue  # access denied to one subkey: the others still count
            found.append(AdapterKey(key=name, driver_desc=_text(values.get("DriverDesc")),
                                    matching_device_id=_text(values.get("MatchingDeviceId")),
                                    driver_version=_text(values.get("DriverVersion")),
                                    qw_memory_size=as_integer(values.get("HardwareInformation.qwMemorySize")),
                                    memory_size=as_integer(values.get("HardwareInformation.MemorySize"))))
    return tuple(found)


def probe_display_adapters(keys: Sequence[AdapterKey], nvml_found: bool) -> tuple[GpuInfo, ...]:
    """Registry values → GPU records for AMD, Intel (and NVIDIA when NVML found none); the Microsoft Basic Display
    Adapter, remote-desktop and virtual adapters are other vendors and left out. A key repeated for one adapter
    (same ids and name) counts once."""
    gpus: list[GpuInfo] = []
    seen: set[tuple[str, str, str]] = set()
    for k in keys:
        m = _IDS.search(k.matching_device_id or "")
        if m is None:
            continue
        vendor_id, device_id = int(m.group(1), 16), int(m.group(2), 16)
        vendor = vendor_of(vendor_id)
        if vendor is None or (vendor == "nvidia" and nvml_found):
            continue
        ident = (m.group(1).lower(), m.group(2).lower(), k.driver_desc or "")
        if ident in seen:
            continue
        seen.add(ident)
        total = k.qw_memory_size if k.qw_memory_size is not None else (k.memory_size or 0)
        integrated = is_integrated(vendor, device_id, total, own_memory=vendor == "intel" and total >= GIB)
        name = display_name(vendor, k.driver_desc, device_id)
        gpus.append(GpuInfo(index=len(gpus), vendor=vendor, name=name, vram_total_bytes=total,
                            vram_free_bytes=total, integrated=integrated,
                            # NVIDIA's Windows version (31.0.15.5186) is not its driver number (551.86): left out
                            driver_version=None if vendor == "nvidia" else k.driver_version,
                            vram_free_reported=False, source="registry", pci_id=f"{vendor_id:04x}:{device_id:04x}",
                            memory_bandwidth_bytes_per_s=None if integrated else published_bandwidth(vendor, name)))
    return tuple(gpus)
