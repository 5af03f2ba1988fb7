"""CPU probe: brand, cores and the SIMD flags llama.cpp's CPU backends care about (AVX2, AVX-512, AMX, NEON).

py-cpuinfo costs ~1.2 s here (it runs CPUID in a child process), so on Linux the same facts are read from
/proc/cpuinfo in about a millisecond and py-cpuinfo is only used where no cheaper source exists (Windows).
macOS answers through ``sysctl`` (see ``apple.read_sysctl``).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from bootstrap.detect.hardware import CpuFlags, CpuInfo

_X86 = {"x86_64", "amd64", "x64", "i686", "i386"}
_ARM64 = {"arm64", "aarch64", "armv8", "arm64e"}


@dataclass(frozen=True)
class CpuReadings:
    brand: str
    machine: str  # platform.machine()
    physical_cores: int | None
    logical_cores: int | None
    flags: tuple[str, ...]  # lower-case feature names as /proc/cpuinfo or py-cpuinfo spell them


def normalize_arch(machine: str) -> str:
    m = machine.strip().lower()
    if m in _X86:
        return "x86_64"
    if m in _ARM64:
        return "arm64"
    return m or "unknown"


def probe_cpu(r: CpuReadings) -> CpuInfo:
    arch = normalize_arch(r.machine)
    flags = {f.lower() for f in r.flags}
    logical = r.logical_cores if r.logical_cores and r.logical_cores > 0 else 1
    physical = r.physical_cores if r.physical_cores and r.physical_cores > 0 else logical
    return CpuInfo(
        brand=r.brand.strip() or "unknown",
        arch=arch,
        physical_cores=min(physical, logical),
        logical_cores=logical,
        flags=CpuFlags(
            avx2="avx2" in flags,
            avx512="avx512f" in flags,
            amx="amx_tile" in flags or "amx-tile" in flags,
            # every ARMv8-A core has Advanced SIMD; Linux calls it "asimd", macOS "neon".
            neon=arch == "arm64" or "neon" in flags or "asimd" in flags,
        ),
    )


def plan_threads(info: CpuInfo) -> int:
    """llama-server's ``-t`` in our plans: the physical cores (SMT siblings share the memory port and the SIMD units,
    so decode does not gain from them). The bandwidth probe measures with the same count."""
    return max(1, info.physical_cores or info.logical_cores or 1)


def parse_proc_cpuinfo(text: str) -> tuple[str, tuple[str, ...]]:
    """(brand, flags) from /proc/cpuinfo: x86 "model name"/"flags", Arm "Features" (brand may be absent there)."""
    brand, flags = "", ()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and not brand:
            brand = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = tuple(value.split())
        if brand and flags:
            break
    return brand, flags


def parse_cpuinfo_dict(info: Mapping[str, object]) -> tuple[str, tuple[str, ...]]:
    """(brand, flags) from py-cpuinfo's ``get_cpu_info()`` result."""
    brand = str(info.get("brand_raw") or "")
    raw_flags = info.get("flags") or ()
    flags = tuple(str(f) for f in raw_flags) if isinstance(raw_flags, Iterable) else ()
    return brand, flags


def read_cpu(sysctl: Mapping[str, str] | None = None) -> CpuReadings:
    """This machine's CPU; ``sysctl`` carries macOS's already-read values (one sysctl call serves two probes)."""
    machine = platform.machine()
    system = platform.system()
    if system == "Linux":
        try:
            brand, flags = parse_proc_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"))
        except OSError:
            brand, flags = "", ()
    elif system == "Darwin" and sysctl is not None:
        brand = sysctl.get("machdep.cpu.brand_string", "")
        flags = tuple(k.rsplit(".", 1)[-1].replace("_0", "").lower()
                      for k, v in sysctl.items() if k.startswith("hw.optional.") and v.strip() == "1")
    else:
        import cpuinfo  # slow (~1 s): only where nothing cheaper answers

        brand, flags = parse_cpuinfo_dict(cpuinfo.get_cpu_info())
    if not brand:
        brand = platform.processor()
    return CpuReadings(brand=brand, machine=machine, physical_cores=psutil.cpu_count(logical=False),
                       logical_cores=os.cpu_count(), flags=flags)
