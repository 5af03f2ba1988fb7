"""Detect stage: probes on readings recorded from real machines, the real probes here, and the profile document.

Recorded machines live in ``tests/data/hardware/raw/<name>.json`` (each with its source URL and which parts are
composed); the full profiles the planner's scenario tests load are ``tests/data/hardware/<name>.json``, computed
from those readings. Regenerate them after a deliberate change with ``python -m tests.detect.test_hardware``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bootstrap.core import console
from bootstrap.core.errors import UsageError
from bootstrap.detect.hardware import HardwareProfile, load_profile, save_profile
from bootstrap.detect.probes import (
    Readings,
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
from bootstrap.detect.profile import detect, profile_from_readings
from bootstrap.plan.engine_variant import check_engine
from tests.support.paths import TEST_DATA

DATA = TEST_DATA / "hardware"
MACHINES = ("no_gpu_16gb", "rtx3070_8gb_32gb", "rtx4060_8gb_16gb", "rtx3060_12gb", "t4_16gb", "rtx4090_24gb",
            "apple_m2_16gb", "rx7900xtx_24gb_linux", "rx6700xt_12gb_windows", "arc_a750_8gb_linux",
            "radeon780m_igpu_windows", "no_gpu_2core_24gb")
NVML_MACHINES = MACHINES[:7]
CREATED = "2026-11-30T10:00:00Z"
GIB = 1 << 30


pytestmark = pytest.mark.usefixtures("english")


def load_readings(name: str) -> Readings:
    """A recorded machine's raw readings as the probes' input records."""
    raw: dict[str, Any] = json.loads((DATA / "raw" / f"{name}.json").read_text(encoding="utf-8"))
    nv = raw["nvml"]
    return Readings(
        os=system.OsReadings(**raw["os"]),
        cpu=cpu.CpuReadings(**{**raw["cpu"], "flags": tuple(raw["cpu"]["flags"])}),
        memory=memory.MemoryReadings(**raw["memory"]),
        disk=disk.DiskReadings(**raw["disk"]),
        nvml=nvidia.NvmlReadings(**{**nv, "devices": tuple(nvidia.NvmlDevice(**d) for d in nv["devices"])}),
        sysctl=raw["sysctl"],
        pythons=tuple((p, v) for p, v in raw["pythons"]),
        network=network.NetworkReadings(env=raw["network"]["env"], truststore=raw["network"]["truststore"]),
        drm=tuple(drm.DrmCard(**{**c, "tile_vram": tuple(c["tile_vram"])}) for c in raw.get("drm", ())),
        adapters=tuple(display_adapters.AdapterKey(**a) for a in raw.get("adapters", ())),
    )


def recorded_profile(name: str) -> HardwareProfile:
    return profile_from_readings(load_readings(name), created=CREATED, kit_version="0.1.0", engine=check_engine)


# --- recorded machines -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MACHINES)
def test_stored_profile_matches_its_readings(name: str) -> None:
    """The JSON the planner loads is exactly what the probes compute from the recorded readings."""
    stored = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    assert recorded_profile(name).to_json() == stored
    assert load_profile(DATA / f"{name}.json").to_json() == stored
    assert "source" in json.loads((DATA / "raw" / f"{name}.json").read_text(encoding="utf-8"))


# name → (gpu vendor, name, VRAM GiB rounded, driver, CUDA, CC, RAM GiB rounded)
EXPECTED_GPUS = {
    "no_gpu_16gb": None,
    "rtx3070_8gb_32gb": ("nvidia", "NVIDIA GeForce RTX 3070", 7.8, "470.57.02", "11.4", "8.6", 31.3),
    "rtx4060_8gb_16gb": ("nvidia", "NVIDIA GeForce RTX 4060", 8.0, "591.86", "13.1", "8.9", 15.9),
    "rtx3060_12gb": ("nvidia", "NVIDIA GeForce RTX 3060", 12.0, "580.95.05", "13.0", "8.6", 31.2),
    "t4_16gb": ("nvidia", "Tesla T4", 14.7, "418.67", "10.1", "7.5", 14.7),
    "rtx4090_24gb": ("nvidia", "NVIDIA GeForce RTX 4090 D", 24.0, "550.107.02", "12.4", "8.9", 62.6),
    "apple_m2_16gb": ("apple", "Apple M2 GPU", 16.0, None, None, None, 16.0),
}


@pytest.mark.parametrize("name", NVML_MACHINES)
def test_probes_read_recorded_machines(name: str) -> None:
    p = recorded_profile(name)
    expected = EXPECTED_GPUS[name]
    if expected is None:
        assert p.gpus == ()
        gpu_check = next(c for c in p.checks if c.id == "gpu")
        assert "No GPU found" in gpu_check.reason
        return
    vendor, gpu_name, vram, driver, cuda, cc, ram = expected
    (gpu,) = p.gpus
    assert (gpu.index, gpu.vendor, gpu.name) == (0, vendor, gpu_name)
    assert round(gpu.vram_total_bytes / GIB, 1) == vram
    assert 0 < gpu.vram_free_bytes <= gpu.vram_total_bytes
    assert (gpu.driver_version, gpu.cuda_driver_version, gpu.compute_capability) == (driver, cuda, cc)
    assert gpu.unified_memory is (vendor == "apple")
    assert round(p.memory.total_bytes / GIB, 1) == ram


def test_recorded_cpu_flags_and_os() -> None:
    laptop = recorded_profile("no_gpu_16gb")
    assert laptop.cpu.arch == "x86_64" and laptop.os.machine == "AMD64"
    assert (laptop.cpu.flags.avx2, laptop.cpu.flags.avx512, laptop.cpu.flags.amx) == (True, True, False)
    mac = recorded_profile("apple_m2_16gb")
    assert mac.cpu.arch == "arm64" and mac.cpu.flags.neon and not mac.cpu.flags.avx2
    assert mac.gpus[0].vram_total_bytes == 17_179_869_184  # hw.memsize as published
    # only interpreters 3.10–3.13 are kept, newest first
    assert [py.version for py in recorded_profile("t4_16gb").pythons] == ["3.10.13"]
    assert [py.version for py in mac.pythons] == ["3.12.1"]


# --- probe details -----------------------------------------------------------------------------------------------

def test_proc_cpuinfo_parsing() -> None:
    x86 = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx avx2 avx512f amx_tile\n\n" \
          "processor\t: 1\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n"
    brand, flags = cpu.parse_proc_cpuinfo(x86)
    assert brand == "AMD EPYC 7B13" and "amx_tile" in flags
    info = cpu.probe_cpu(cpu.CpuReadings(brand, "x86_64", 8, 16, flags))
    assert (info.flags.avx2, info.flags.avx512, info.flags.amx, info.flags.neon) == (True, True, True, False)
    arm = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes crc32\n"
    brand, flags = cpu.parse_proc_cpuinfo(arm)
    info = cpu.probe_cpu(cpu.CpuReadings(brand, "aarch64", None, 4, flags))
    assert info.arch == "arm64" and info.flags.neon and info.brand == "unknown" and info.physical_cores == 4


def test_os_probe_sees_wsl_and_containers() -> None:
    wsl = system.probe_os(system.OsReadings("Linux", "5.15.167.4-microsoft-standard-WSL2", "#1 SMP", "x86_64",
                                            proc_version="Linux version 5.15.167.4-microsoft-standard-WSL2"))
    assert wsl.wsl and not wsl.container
    docker = system.probe_os(system.OsReadings("Linux", "6.1", "#1", "x86_64", cgroup="12:cpu:/docker/abc\n"))
    assert docker.container and not docker.wsl
    windows = system.probe_os(system.OsReadings("Windows", "11", "10.0.22631", "AMD64"))
    assert not windows.wsl and not windows.container


def test_sysctl_parsing_and_apple_probe_only_on_apple_silicon() -> None:
    values = apple.parse_sysctl("hw.memsize: 17179869184\nsysctl: unknown oid 'hw.foo'\n"
                                "machdep.cpu.brand_string: Apple M2\n")
    assert values == {"hw.memsize": "17179869184", "machdep.cpu.brand_string": "Apple M2"}
    assert apple.probe_apple(values, "Darwin", "arm64", 8 * GIB)[0].vram_free_bytes == 8 * GIB
    assert apple.probe_apple(values, "Darwin", "x86_64", GIB) == ()  # Intel Mac: no unified-memory GPU
    assert apple.probe_apple(values, "Linux", "arm64", GIB) == ()


def test_python_launcher_and_versions() -> None:
    listing = (" -V:3.13 *        C:\\Python313\\python.exe\n"
               " -V:3.12          C:\\Users\\li\\AppData\\Local\\Programs\\Python\\Python312\\python.exe\n"
               " -3.10-64         C:\\Python310\\python.exe\n")
    assert pythons.parse_launcher(listing) == [
        "C:\\Python313\\python.exe", "C:\\Users\\li\\AppData\\Local\\Programs\\Python\\Python312\\python.exe",
        "C:\\Python310\\python.exe"]
    found = pythons.probe_pythons([("/a", "3.9.18"), ("/b", "3.12.1"), ("/c", None), ("/d", "3.13.0"),
                                   ("/e", "garbage"), ("/b", "3.12.1")])
    assert [(p.path, p.version) for p in found] == [("/d", "3.13.0"), ("/b", "3.12.1")]
    win = pythons.common_locations("Windows", {"LOCALAPPDATA": "C:\\Users\\li\\AppData\\Local"})
    assert "C:\\Users\\li\\AppData\\Local\\Programs\\Python\\Python312\\python.exe" in win


def test_network_redacts_proxy_credentials() -> None:
    info = network.probe_network(network.NetworkReadings(
        env={"https_proxy": "http://alice:s3cret@proxy.corp:3128", "NO_PROXY": "localhost,127.0.0.1",
             "REQUESTS_CA_BUNDLE": "/etc/corp-ca.pem"}, truststore=True))
    assert info.https_proxy == "http://alice:***@proxy.corp:3128" and "s3cret" not in json.dumps(info.__dict__)
    assert (info.no_proxy, info.ca_bundle, info.http_proxy) == ("localhost,127.0.0.1", "/etc/corp-ca.pem", None)


# --- NVML at its narrowest boundary ------------------------------------------------------------------------------

class _FakeNvml(SimpleNamespace):
    """The pynvml functions read_nvml calls, answering with the RTX 3070 recording (bellperson #227)."""


def _fake_nvml(recorded: nvidia.NvmlReadings, calls: list[str]) -> Any:
    import pynvml

    dev = recorded.devices[0]

    def logged(name: str, value: Any) -> Any:
        def fn(*_args: Any) -> Any:
            calls.append(name)
            return value
        return fn

    return _FakeNvml(
        NVMLError=pynvml.NVMLError, NVMLError_LibraryNotFound=pynvml.NVMLError_LibraryNotFound,
        NVMLError_DriverNotLoaded=pynvml.NVMLError_DriverNotLoaded,
        nvmlInit=logged("init", None), nvmlShutdown=logged("shutdown", None),
        nvmlSystemGetDriverVersion=logged("driver", recorded.driver_version),
        nvmlSystemGetCudaDriverVersion=logged("cuda", recorded.cuda_driver_version),
        nvmlDeviceGetCount=logged("count", 1), nvmlDeviceGetHandleByIndex=logged("handle", object()),
        nvmlDeviceGetName=logged("name", dev.name),
        nvmlDeviceGetMemoryInfo=logged("memory", SimpleNamespace(total=dev.memory_total, free=dev.memory_free,
                                                                 used=dev.memory_total - dev.memory_free)),
        nvmlDeviceGetCudaComputeCapability=logged("cc", (dev.cc_major, dev.cc_minor)),
        nvmlDeviceGetMemoryBusWidth=logged("bus", dev.bus_width), NVML_CLOCK_MEM=pynvml.NVML_CLOCK_MEM,
        nvmlDeviceGetMaxClockInfo=lambda _h, kind: calls.append(f"clock{kind}") or dev.mem_clock_max_mhz,
    )


def test_read_nvml_through_pynvml_functions() -> None:
    recorded = load_readings("rtx3070_8gb_32gb").nvml
    calls: list[str] = []
    assert nvidia.read_nvml(_fake_nvml(recorded, calls)) == recorded
    assert calls[0] == "init" and calls[-1] == "shutdown"


def test_read_nvml_asks_for_the_memory_clock_not_the_graphics_clock() -> None:
    import pynvml

    calls: list[str] = []
    nvidia.read_nvml(_fake_nvml(load_readings("rtx3070_8gb_32gb").nvml, calls))
    assert f"clock{pynvml.NVML_CLOCK_MEM}" in calls and "bus" in calls


def test_read_nvml_without_the_bus_calls_keeps_the_rest() -> None:
    """An old pynvml (no nvmlDeviceGetMemoryBusWidth) or a driver that refuses: bandwidth unknown, GPU still listed."""
    import pynvml

    def refused(*_args: Any) -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    fake = _fake_nvml(load_readings("rtx3070_8gb_32gb").nvml, [])
    del fake.nvmlDeviceGetMemoryBusWidth
    fake.nvmlDeviceGetMaxClockInfo = refused
    readings = nvidia.read_nvml(fake)
    assert readings.available and readings.devices[0].bus_width is None
    [gpu] = nvidia.probe_nvidia(readings)
    assert gpu.memory_bandwidth_bytes_per_s is None and gpu.vram_total_bytes > 0


@pytest.mark.parametrize(("bus", "clock", "published_gbps"), [
    (384, 9751, 936),  # RTX 3090, GDDR6X (NVIDIA spec page)
    (128, 9001, 288),  # RTX 4060 Ti, GDDR6
    (256, 5001, 320),  # T4
    (5120, 1215, 1555),  # A100 40 GB, HBM2
])
def test_bus_width_times_memory_clock_gives_the_published_bandwidth(bus: int, clock: int,
                                                                   published_gbps: int) -> None:
    assert nvidia.memory_bandwidth(bus, clock) / 1e9 == pytest.approx(published_gbps, rel=0.005)
    assert nvidia.memory_bandwidth(None, clock) is None and nvidia.memory_bandwidth(bus, 0) is None


@pytest.mark.parametrize("name", [m for m in NVML_MACHINES if m != "no_gpu_16gb"])
def test_recorded_gpus_carry_their_bandwidth(name: str) -> None:
    [gpu] = recorded_profile(name).gpus
    assert gpu.memory_bandwidth_bytes_per_s and 100e9 <= gpu.memory_bandwidth_bytes_per_s <= 1100e9


def test_apple_bandwidth_comes_from_the_chip_name() -> None:
    assert apple.chip_bandwidth("Apple M2") == 100_000_000_000
    assert apple.chip_bandwidth("Apple  M4 Pro") == 273_000_000_000
    assert apple.chip_bandwidth("Apple M99") is None


def test_read_nvml_reports_missing_library_as_no_gpu() -> None:
    import pynvml

    def missing() -> None:
        raise pynvml.NVMLError_LibraryNotFound()

    fake = _fake_nvml(load_readings("rtx3070_8gb_32gb").nvml, [])
    fake.nvmlInit = missing
    readings = nvidia.read_nvml(fake)
    assert readings == nvidia.NvmlReadings(available=False, error="library_not_found")
    assert nvidia.probe_nvidia(readings) == ()


def test_cuda_version_encoding() -> None:
    assert [nvidia.cuda_version_text(v) for v in (12040, 13010, 11040, 10010, 0, None)] == \
        ["12.4", "13.1", "11.4", "10.1", None, None]


# --- the real probes on this machine -----------------------------------------------------------------------------

def test_real_probes_on_this_machine(tmp_path: Path) -> None:
    p = detect(tmp_path / "not-created-yet" / "home", engine=check_engine)
    assert p.cpu.logical_cores >= 1 and 1 <= p.cpu.physical_cores <= p.cpu.logical_cores
    assert p.memory.total_bytes > p.memory.available_bytes > 0
    assert p.disk.free_bytes > 0 and Path(p.disk.path) == tmp_path  # nearest existing parent of the home
    assert p.os.system in ("Linux", "Windows", "Darwin")
    assert any(py.path == sys.executable or Path(py.path).resolve() == Path(sys.executable).resolve()
               for py in p.pythons)
    if not Path("/dev/nvidiactl").exists():  # the dev machines and CI have no NVIDIA GPU
        assert nvidia.read_nvml().error in ("library_not_found", "driver_not_loaded")
        assert not [g for g in p.gpus if g.vendor == "nvidia"]
        if not drm.read_drm() and not p.gpus:  # no DRM card in this container either
            assert "No GPU found" in next(c for c in p.checks if c.id == "gpu").reason
    assert [c.id for c in p.checks] == ["os", "cpu", "ram", "disk", "gpu", "engine", "python", "network"]


# --- loading --hardware files ------------------------------------------------------------------------------------

def _write(tmp_path: Path, doc: Any, name: str = "hw.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def _doc() -> dict[str, Any]:
    return json.loads((DATA / "rtx3070_8gb_32gb.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d.pop("memory"), "'memory': missing"),
    (lambda d: d["memory"].update(total_bytes=-1), "'memory.total_bytes': must be at least 0, got -1"),
    (lambda d: d["gpus"][0].update(vram_total_bytes="8 GB"), "'gpus[0].vram_total_bytes': expected integer"),
    (lambda d: d["gpus"][0].update(vendor="3dfx"), "'gpus[0].vendor': must be one of"),
    (lambda d: d["cpu"]["flags"].pop("avx2"), "'cpu.flags.avx2': missing"),
    (lambda d: d["cpu"].update(logical_cores=0), "'cpu.logical_cores': must be at least 1"),
    (lambda d: d.update(schema=2), "'schema': schema 2 is not supported"),
    (lambda d: d["checks"][0].update(verdict="maybe"), "'checks[0].verdict': must be one of ok, warn, fail"),
    (lambda d: d["memory"].update(total_bytes=True), "'memory.total_bytes': expected integer"),
    (lambda d: d.update(gpus={}), "'gpus': expected list"),
])
def test_malformed_profiles_name_the_field(tmp_path: Path, mutate: Any, field: str) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(UsageError) as err:
        load_profile(_write(tmp_path, doc))
    assert err.value.exit_code == 2
    assert field in err.value.message and "\n" not in err.value.message
    assert err.value.hint and "doctor --json" in err.value.hint


@pytest.mark.parametrize(("content", "needle"), [
    ("{not json", "not valid JSON"), ("[1, 2]", "'(document)': expected object"), ("", "not valid JSON"),
    ('{"schema": NaN}', "not valid JSON"), (b"\xff\xfe{}", "not valid JSON"),
])
def test_unreadable_profiles(tmp_path: Path, content: str | bytes, needle: str) -> None:
    path = tmp_path / "hw.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(UsageError) as err:
        load_profile(path)
    assert needle in err.value.message and "\n" not in err.value.message


def test_missing_and_oversized_profiles(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="Cannot read hardware profile"):
        load_profile(tmp_path / "absent.json")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2 << 20))
    with pytest.raises(UsageError, match="larger than 1048576 bytes"):
        load_profile(big)


def test_save_profile_round_trips_atomically(tmp_path: Path) -> None:
    profile = recorded_profile("apple_m2_16gb")
    target = tmp_path / "m2.json"
    save_profile(profile, target)
    assert load_profile(target) == profile
    assert [p.name for p in tmp_path.iterdir()] == ["m2.json"]  # no temp file left behind


def regenerate() -> None:
    """Rewrite the stored profiles from the raw readings (run after a deliberate change, then review the diff)."""
    console.set_language("en")
    for name in MACHINES:
        save_profile(recorded_profile(name), DATA / f"{name}.json")
        print(f"wrote {DATA / name}.json", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("QWENKIT_LANG", "en")
    regenerate()
