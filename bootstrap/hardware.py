"""The hardware profile (detect stage, DESIGN.md §1): immutable records, their JSON form, and strict loading.

The JSON document is exactly what ``qwenkit doctor --json`` prints and what ``plan``/``install --hardware FILE.json``
read, so a plan can be made for another machine. Loading is strict because the file may come from anywhere: every
field is type- and range-checked and a bad one is reported as one line naming it (``UsageError``, exit 2).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .console import t
from .errors import UsageError

if TYPE_CHECKING:
    from .probes import Readings

SCHEMA_VERSION = 1
# A profile is a few KiB; refusing anything far larger keeps a hostile --hardware file from costing memory.
MAX_PROFILE_BYTES = 1 << 20
VERDICTS = ("ok", "warn", "fail")
GPU_VENDORS = ("nvidia", "apple", "amd", "intel", "unknown")


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


@dataclass(frozen=True)
class PythonInfo:
    path: str
    version: str  # "3.11.7"


@dataclass(frozen=True)
class NetworkInfo:
    https_proxy: str | None  # credentials redacted
    http_proxy: str | None
    no_proxy: str | None
    ca_bundle: str | None  # SSL_CERT_FILE / REQUESTS_CA_BUNDLE when set
    truststore: bool  # whether truststore could build a context over the OS certificate store


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
            "network": _fields(self.network),
            "checks": [_fields(c) for c in self.checks],
        }

    @classmethod
    def from_json(cls, doc: Any) -> HardwareProfile:
        """Validate and build a profile; raises ``UsageError`` naming the first bad field."""
        r = _Reader(doc, "")
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
        )


def _fields(record: Any) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__ if name != "flags"}


def _bad(field: str, detail: str) -> UsageError:
    return UsageError(t("doctor.err_field", field=field or "(document)", detail=detail), t("doctor.hint_profile"))



class _Reader:
    """Typed access to one JSON object; every error names the dotted path of the field."""

    def __init__(self, doc: Any, path: str) -> None:
        if not isinstance(doc, dict):
            raise _bad(path, t("doctor.err_type", expected="object"))
        self.doc: dict[str, Any] = doc
        self.path = path

    def _name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _get(self, key: str, check: Callable[[Any], bool], expected: str, optional: bool = False) -> Any:
        if key not in self.doc:
            if optional:
                return None
            raise _bad(self._name(key), t("doctor.err_missing"))
        value = self.doc[key]
        if value is None and optional:
            return None
        if not check(value):
            raise _bad(self._name(key), t("doctor.err_type", expected=expected))
        return value

    def text(self, key: str) -> str:
        return self._get(key, lambda v: isinstance(v, str), "string")

    def opt_text(self, key: str) -> str | None:
        return self._get(key, lambda v: isinstance(v, str), "string or null", optional=True)

    def flag(self, key: str) -> bool:
        return self._get(key, lambda v: isinstance(v, bool), "true/false")

    def integer(self, key: str, minimum: int = 0) -> int:
        value = self._get(key, lambda v: isinstance(v, int) and not isinstance(v, bool), "integer")
        if value < minimum:
            raise _bad(self._name(key), t("doctor.err_range", minimum=minimum, value=value))
        return value

    def obj(self, key: str) -> _Reader:
        return _Reader(self._get(key, lambda v: isinstance(v, dict), "object"), self._name(key))

    def items(self, key: str) -> list[_Reader]:
        items = self._get(key, lambda v: isinstance(v, list), "list")
        return [_Reader(item, f"{self._name(key)}[{i}]") for i, item in enumerate(items)]

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self.text(key)
        if value not in allowed:
            raise _bad(self._name(key), t("doctor.err_choice", allowed=", ".join(allowed), value=value))
        return value


def _read_os(r: _Reader) -> OsInfo:
    return OsInfo(system=r.text("system"), release=r.text("release"), version=r.text("version"),
                  machine=r.text("machine"), wsl=r.flag("wsl"), container=r.flag("container"))


def _read_cpu(r: _Reader) -> CpuInfo:
    f = r.obj("flags")
    return CpuInfo(brand=r.text("brand"), arch=r.text("arch"), physical_cores=r.integer("physical_cores", minimum=1),
                   logical_cores=r.integer("logical_cores", minimum=1),
                   flags=CpuFlags(avx2=f.flag("avx2"), avx512=f.flag("avx512"), amx=f.flag("amx"),
                                  neon=f.flag("neon")))


def _read_memory(r: _Reader) -> MemoryInfo:
    return MemoryInfo(total_bytes=r.integer("total_bytes"), available_bytes=r.integer("available_bytes"))


def _read_disk(r: _Reader) -> DiskInfo:
    return DiskInfo(path=r.text("path"), free_bytes=r.integer("free_bytes"), total_bytes=r.integer("total_bytes"))


def _read_gpu(r: _Reader) -> GpuInfo:
    return GpuInfo(index=r.integer("index"), vendor=r.choice("vendor", GPU_VENDORS), name=r.text("name"),
                   vram_total_bytes=r.integer("vram_total_bytes"), vram_free_bytes=r.integer("vram_free_bytes"),
                   driver_version=r.opt_text("driver_version"), cuda_driver_version=r.opt_text("cuda_driver_version"),
                   compute_capability=r.opt_text("compute_capability"), unified_memory=r.flag("unified_memory"))


def _read_network(r: _Reader) -> NetworkInfo:
    return NetworkInfo(https_proxy=r.opt_text("https_proxy"), http_proxy=r.opt_text("http_proxy"),
                       no_proxy=r.opt_text("no_proxy"), ca_bundle=r.opt_text("ca_bundle"),
                       truststore=r.flag("truststore"))


def _read_check(r: _Reader) -> Check:
    return Check(id=r.text("id"), verdict=r.choice("verdict", VERDICTS), reason=r.text("reason"), hint=r.text("hint"))


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def load_profile(path: str | Path) -> HardwareProfile:
    """Read a ``doctor --json`` document (``--hardware FILE.json``); any defect is one ``UsageError`` line."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_PROFILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(t("doctor.err_read", path=path, detail=exc.strerror or exc), t("doctor.hint_profile")) \
            from exc
    if len(raw) > MAX_PROFILE_BYTES:
        raise UsageError(t("doctor.err_too_big", path=path, limit=MAX_PROFILE_BYTES), t("doctor.hint_profile"))
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise UsageError(t("doctor.err_json", path=path, detail=_one_line(exc)), t("doctor.hint_profile")) from exc
    try:
        return HardwareProfile.from_json(doc)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc.message}", exc.hint) from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def save_profile(profile: HardwareProfile, path: str | Path) -> None:
    """Write the profile atomically (temp file in the same folder, fsync, rename)."""
    path = Path(path)
    data = json.dumps(profile.to_json(), ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def detect(home: Path, env: Mapping[str, str] | None = None) -> HardwareProfile:
    """Run every probe on this machine and the doctor's checks; the result is the profile document.

    ``env`` defaults to the process environment (proxy and CA variables, Windows install dirs); it is passed down
    as data, like ``home.default_home`` does, so probes stay testable.
    """
    from .probes import read_all

    return profile_from_readings(read_all(home, os.environ if env is None else env), created=utc_now())


def profile_from_readings(readings: Readings, created: str, kit_version: str = __version__) -> HardwareProfile:
    """The full profile (records + the doctor's checks) from a ``probes.Readings``: live or recorded."""
    from . import doctor_checks  # late: both build on these records
    from .probes import probe_all

    profile = probe_all(readings, created=created, kit_version=kit_version)
    return with_checks(profile, doctor_checks.run_checks(profile))


def with_checks(profile: HardwareProfile, checks: tuple[Check, ...]) -> HardwareProfile:
    """The same profile with its checks set (the doctor computes them from the rest)."""
    return replace(profile, checks=checks)


def gib(n: int) -> float:
    """Bytes → GiB, for messages."""
    return n / float(1 << 30)

