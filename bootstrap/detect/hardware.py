"""The hardware profile (detect stage, DESIGN.md §1): immutable records, their JSON form, and strict loading.

The JSON document is exactly what ``qwenkit doctor --json`` prints and what ``plan``/``install --hardware FILE.json``
read, so a plan can be made for another machine. Loading is strict because the file may come from anywhere: every
field is type- and range-checked and a bad one is reported as one line naming it (``UsageError``, exit 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.file_formats import load_json
from bootstrap.core.json_fields import FieldReader
from bootstrap.detect.kernel_rates import KernelRates, read_kernel_rates

SCHEMA_VERSION = 1
# A profile is a few KiB; refusing anything far larger keeps a hostile --hardware file from costing memory.
MAX_PROFILE_BYTES = 1 << 20
VERDICTS = ("ok", "warn", "fail")
# "rpc": a device lent by a llama.cpp RPC worker on another PC (``install --rpc``; its name is the worker's IP:PORT,
# its engine_device "RPC0"…), never detected here: the install adds it from the engine's view (tune/devices.py).
GPU_VENDORS = ("nvidia", "apple", "amd", "intel", "unknown", "rpc")


@dataclass(frozen=True)
class OsInfo:
    system: str  # platform.system(): Linux | Windows | Darwin
    release: str
    version: str
    machine: str  # platform.machine() as reported: x86_64 | AMD64 | arm64 | aarch64
    wsl: bool
    container: bool


@dataclass(frozen=True)
class CpuFlags:
    avx2: bool
    avx512: bool  # AVX-512 Foundation
    amx: bool  # Intel AMX tiles (llama.cpp's AMX repack buffer)
    neon: bool  # Arm Advanced SIMD (ASIMD)


@dataclass(frozen=True)
class CpuInfo:
    brand: str
    arch: str  # normalized: x86_64 | arm64 | other as reported
    physical_cores: int
    logical_cores: int
    flags: CpuFlags


@dataclass(frozen=True)
class MemoryInfo:
    total_bytes: int
    available_bytes: int
    # Measured RAM bandwidth (probes/bandwidth.py: bytes read per second) and the threads that measured
    # it; None in profiles recorded without the probe (the speed model then assumes a default, and says so).
    bandwidth_bytes_per_s: int | None = None
    bandwidth_threads: int | None = None


@dataclass(frozen=True)
class DiskInfo:
    path: str  # the install home, or its nearest existing parent when the home is not created yet
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class GpuInfo:
    index: int
    vendor: str  # one of GPU_VENDORS
    name: str
    vram_total_bytes: int  # Apple: the unified memory (hw.memsize)
    vram_free_bytes: int
    driver_version: str | None = None  # NVIDIA: "550.54.14"
    cuda_driver_version: str | None = None  # NVIDIA: highest CUDA the driver supports, "12.4"
    compute_capability: str | None = None  # NVIDIA: "8.6"
    unified_memory: bool = False
    # Memory bus: NVIDIA from NVML (bus width, highest memory clock); the speed model's bandwidth (probes/nvidia.py,
    # probes/apple.py: Apple's published figure per chip). None where unknown.
    memory_bus_width_bits: int | None = None
    memory_clock_max_mhz: int | None = None
    memory_bandwidth_bytes_per_s: int | None = None
    # AMD/Intel (probes/drm.py, probes/display_adapters.py) and the engine's own view (tune/devices.py):
    # - integrated: the GPU of the processor, sharing its RAM; ``vram_total_bytes`` is then only the memory the
    #   firmware reserved for it (the BIOS carve-out, already missing from the OS's RAM), never the shared part.
    # - vram_free_reported: False where the source does not report usage (the Windows registry, Intel's xe/i915
    #   sysfs): ``vram_free_bytes`` is then the total, until the engine's ``--list-devices`` says.
    # - source: where the record came from ("nvml", "apple", "sysfs", "registry", "engine").
    # - pci_id: "1002:744c" (vendor:device); engine_device: the name llama-server gives it ("Vulkan0", "CUDA0").
    integrated: bool = False
    vram_free_reported: bool = True
    source: str | None = None
    pci_id: str | None = None
    engine_device: str | None = None


@dataclass(frozen=True)
class PythonInfo:
    path: str
    version: str  # "3.11.7"


REACH_STATES = ("reachable", "dns", "timeout", "refused", "unreachable", "tls", "error")


@dataclass(frozen=True)
class SourceReach:
    """One download source as ``doctor`` found it: ``state`` is ``reachable`` (``ms``: connect, TLS and one
    answer), or why not: ``dns``, ``timeout``, ``refused``, ``unreachable`` (no route), ``tls`` (interception),
    ``error``."""

    name: str  # "hf", "modelscope", a mirror's host
    host: str
    state: str
    ms: int | None = None


@dataclass(frozen=True)
class NetworkInfo:
    https_proxy: str | None  # credentials redacted
    http_proxy: str | None
    no_proxy: str | None
    ca_bundle: str | None  # SSL_CERT_FILE / REQUESTS_CA_BUNDLE when set
    truststore: bool  # whether truststore could build a context over the OS certificate store
    sources: tuple[SourceReach, ...] = ()  # probed by ``doctor`` only (a network round trip); empty otherwise


@dataclass(frozen=True)
class Check:
    id: str
    verdict: str  # ok | warn | fail
    reason: str
    hint: str


@dataclass(frozen=True)
class HardwareProfile:
    schema: int
    kit_version: str
    created: str  # ISO 8601 UTC, "2026-11-30T10:00:00Z"
    os: OsInfo
    cpu: CpuInfo
    memory: MemoryInfo
    disk: DiskInfo
    gpus: tuple[GpuInfo, ...]
    pythons: tuple[PythonInfo, ...]
    network: NetworkInfo
    checks: tuple[Check, ...] = ()
    # The engine's measured rates (kernel_rates.py): made by an install before its download, None otherwise.
    kernel_rates: KernelRates | None = None

    def to_json(self) -> dict[str, Any]:
        """The profile document (plain dicts/lists, key order as documented)."""
        return {
            "schema": self.schema,
            "kit_version": self.kit_version,
            "created": self.created,
            "os": _fields(self.os),
            "cpu": {**_fields(self.cpu), "flags": _fields(self.cpu.flags)},
            "memory": _fields(self.memory),
            "disk": _fields(self.disk),
            "gpus": [_fields(g) for g in self.gpus],
            "pythons": [_fields(p) for p in self.pythons],
            "network": _network_fields(self.network),
            "checks": [_fields(c) for c in self.checks],
            **({"kernel_rates": self.kernel_rates.to_json()} if self.kernel_rates is not None else {}),
        }

    @classmethod
    def from_json(cls, doc: Any) -> HardwareProfile:
        """Validate and build a profile; raises ``UsageError`` naming the first bad field."""
        r = FieldReader(doc, "", _bad)
        schema = r.integer("schema", minimum=0)
        if schema != SCHEMA_VERSION:
            raise _bad("schema", t("doctor.err_schema", found=schema, expected=SCHEMA_VERSION))
        return cls(
            schema=schema,
            kit_version=r.text("kit_version"),
            created=r.text("created"),
            os=_read_os(r.obj("os")),
            cpu=_read_cpu(r.obj("cpu")),
            memory=_read_memory(r.obj("memory")),
            disk=_read_disk(r.obj("disk")),
            gpus=tuple(_read_gpu(g) for g in r.items("gpus")),
            pythons=tuple(PythonInfo(path=p.text("path"), version=p.text("version")) for p in r.items("pythons")),
            network=_read_network(r.obj("network")),
            checks=tuple(_read_check(c) for c in r.items("checks")),
            kernel_rates=read_kernel_rates(r.opt_obj("kernel_rates")),
        )


def _network_fields(n: NetworkInfo) -> dict[str, Any]:
    """The network record; ``sources`` only when ``doctor`` probed them (profiles of plan/install stay as they were)."""
    out = {name: value for name, value in _fields(n).items() if name != "sources"}
    return {**out, "sources": [_fields(s) for s in n.sources]} if n.sources else out


def _fields(record: Any) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__ if name != "flags"}


def _bad(field: str, detail: str) -> UsageError:
    return UsageError(t("doctor.err_field", field=field or "(document)", detail=detail), t("doctor.hint_profile"))



def _read_os(r: FieldReader) -> OsInfo:
    return OsInfo(system=r.text("system"), release=r.text("release"), version=r.text("version"),
                  machine=r.text("machine"), wsl=r.flag("wsl"), container=r.flag("container"))


def _read_cpu(r: FieldReader) -> CpuInfo:
    f = r.obj("flags")
    return CpuInfo(brand=r.text("brand"), arch=r.text("arch"), physical_cores=r.integer("physical_cores", minimum=1),
                   logical_cores=r.integer("logical_cores", minimum=1),
                   flags=CpuFlags(avx2=f.flag("avx2"), avx512=f.flag("avx512"), amx=f.flag("amx"),
                                  neon=f.flag("neon")))


def _read_memory(r: FieldReader) -> MemoryInfo:
    return MemoryInfo(total_bytes=r.integer("total_bytes"), available_bytes=r.integer("available_bytes"),
                      bandwidth_bytes_per_s=r.opt_integer("bandwidth_bytes_per_s", minimum=1),
                      bandwidth_threads=r.opt_integer("bandwidth_threads", minimum=1))


def _read_disk(r: FieldReader) -> DiskInfo:
    return DiskInfo(path=r.text("path"), free_bytes=r.integer("free_bytes"), total_bytes=r.integer("total_bytes"))


def _read_gpu(r: FieldReader) -> GpuInfo:
    return GpuInfo(index=r.integer("index"), vendor=r.choice("vendor", GPU_VENDORS), name=r.text("name"),
                   vram_total_bytes=r.integer("vram_total_bytes"), vram_free_bytes=r.integer("vram_free_bytes"),
                   driver_version=r.opt_text("driver_version"), cuda_driver_version=r.opt_text("cuda_driver_version"),
                   compute_capability=r.opt_text("compute_capability"), unified_memory=r.flag("unified_memory"),
                   memory_bus_width_bits=r.opt_integer("memory_bus_width_bits"),
                   memory_clock_max_mhz=r.opt_integer("memory_clock_max_mhz"),
                   memory_bandwidth_bytes_per_s=r.opt_integer("memory_bandwidth_bytes_per_s"),
                   integrated=_opt_flag(r, "integrated", False),
                   vram_free_reported=_opt_flag(r, "vram_free_reported", True),
                   source=r.opt_text("source"), pci_id=r.opt_text("pci_id"),
                   engine_device=r.opt_text("engine_device"))


def _opt_flag(r: FieldReader, key: str, default: bool) -> bool:
    """A flag later schema-1 documents carry; older ones (written before AMD/Intel GPUs were found) lack it."""
    value = r.opt_flag(key)
    return default if value is None else value


def _read_network(r: FieldReader) -> NetworkInfo:
    return NetworkInfo(https_proxy=r.opt_text("https_proxy"), http_proxy=r.opt_text("http_proxy"),
                       no_proxy=r.opt_text("no_proxy"), ca_bundle=r.opt_text("ca_bundle"),
                       truststore=r.flag("truststore"),
                       sources=tuple(SourceReach(name=s.text("name"), host=s.text("host"),
                                                 state=s.choice("state", REACH_STATES), ms=s.opt_integer("ms"))
                                     for s in r.opt_items("sources")))


def _read_check(r: FieldReader) -> Check:
    return Check(id=r.text("id"), verdict=r.choice("verdict", VERDICTS), reason=r.text("reason"), hint=r.text("hint"))


def load_profile(path: str | Path) -> HardwareProfile:
    """Read a ``doctor --json`` document (``--hardware FILE.json``); any defect is one ``UsageError`` line."""
    path = Path(path)

    def bad(detail: str) -> UsageError:
        return UsageError(t("doctor.err_read", path=path, detail=detail), t("doctor.hint_profile"))

    doc = load_json(path, MAX_PROFILE_BYTES, bad)
    try:
        return HardwareProfile.from_json(doc)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc.message}", exc.hint) from exc


def save_profile(profile: HardwareProfile, path: str | Path) -> None:
    """Write the profile atomically (temp file in the same folder, fsync, rename)."""
    path = Path(path)
    data = json.dumps(profile.to_json(), ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    write_atomic(path, data)


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_checks(profile: HardwareProfile, checks: tuple[Check, ...]) -> HardwareProfile:
    """The same profile with its checks set (the doctor computes them from the rest)."""
    return replace(profile, checks=checks)
