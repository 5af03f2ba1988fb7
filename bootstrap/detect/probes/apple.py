"""Apple Silicon probe: the GPU shares the machine's memory, so its "VRAM" is ``hw.memsize`` (unified memory).

Readings are ``sysctl`` lines (``key: value``), as ``sysctl hw.memsize machdep.cpu.brand_string …`` prints them;
tests feed dumps published from real Macs. Metal may only use part of unified memory (its recommended working set
is below the total); the planner, not this probe, decides how much to budget.
"""

from __future__ import annotations

from collections.abc import Mapping

from bootstrap.core.processes import run_command
from bootstrap.detect.hardware import GpuInfo

SYSCTL = "/usr/sbin/sysctl"
# Keys read in one sysctl call: memory and brand for this probe, cores and feature flags for the CPU probe.
SYSCTL_KEYS = ("hw.memsize", "machdep.cpu.brand_string", "hw.optional.arm64", "hw.physicalcpu", "hw.logicalcpu",
               "hw.optional.neon", "hw.optional.avx2_0", "hw.optional.avx512f")


# Unified-memory bandwidth per chip, GB/s, as Apple publishes it (apple.com tech specs and newsroom posts of each
# chip's launch; docs/speed.md). Where a chip comes in two memory configurations (M3 Max, M4 Max) the lower one.
CHIP_BANDWIDTH_GBPS: dict[str, float] = {
    "Apple M1": 68.25, "Apple M1 Pro": 200, "Apple M1 Max": 400, "Apple M1 Ultra": 800,
    "Apple M2": 100, "Apple M2 Pro": 200, "Apple M2 Max": 400, "Apple M2 Ultra": 800,
    "Apple M3": 100, "Apple M3 Pro": 150, "Apple M3 Max": 300, "Apple M3 Ultra": 819,
    "Apple M4": 120, "Apple M4 Pro": 273, "Apple M4 Max": 410,
    "Apple M5": 153,
}


def chip_bandwidth(brand: str) -> int | None:
    """Bytes/s of the chip named in ``machdep.cpu.brand_string`` ("Apple M2 Pro"); None for an unknown chip."""
    gbps = CHIP_BANDWIDTH_GBPS.get(" ".join(brand.split()))
    return int(gbps * 1e9) if gbps else None


def parse_sysctl(text: str) -> dict[str, str]:
    """``key: value`` lines → dict (later duplicates ignored; ``sysctl: unknown oid`` lines skipped)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and "." in key and " " not in key and key not in values:  # "sysctl: unknown oid" is no key
            values[key] = value.strip()
    return values


def probe_apple(sysctl: Mapping[str, str], system: str, machine: str, available_bytes: int) -> tuple[GpuInfo, ...]:
    """One unified-memory GPU on Apple Silicon macOS; nothing elsewhere (Intel Macs: unknown until an engine lists)."""
    brand = sysctl.get("machdep.cpu.brand_string", "")
    arm = machine.lower() in ("arm64", "aarch64") or sysctl.get("hw.optional.arm64") == "1"
    if system != "Darwin" or not arm:
        return ()
    try:
        memsize = int(sysctl.get("hw.memsize", "0"))
    except ValueError:
        memsize = 0
    if memsize <= 0:
        return ()
    return (GpuInfo(index=0, vendor="apple", name=f"{brand or 'Apple Silicon'} GPU", vram_total_bytes=memsize,
                    vram_free_bytes=min(max(0, available_bytes), memsize), unified_memory=True,
                    memory_bandwidth_bytes_per_s=chip_bandwidth(brand), source="apple"),)


def read_sysctl() -> dict[str, str]:
    """Run sysctl once (absolute path, no shell, 5 s cap); unknown keys are simply absent."""
    proc = run_command([SYSCTL, *SYSCTL_KEYS], timeout=5)
    return parse_sysctl(proc.stdout)  # unknown keys are simply absent (sysctl still prints the rest)
