"""AMD and Intel GPUs: the sysfs probe on recorded ``/sys/class/drm`` trees, the Windows registry probe through a
stand-in for ``winreg`` answering recorded values, and the rules that tell an integrated GPU from a discrete one
and give each its published bandwidth. Sources of every reading: ``tests/data/gpus/README.md`` and the ``source``
entries of ``tests/data/hardware/raw/``.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bootstrap.detect.probes import display_adapters, drm, gpu_models
from bootstrap.detect.probes.display_adapters import AdapterKey, probe_display_adapters
from bootstrap.detect.probes.drm import DrmCard, probe_drm, read_drm
from tests.detect.test_hardware import load_readings, recorded_profile
from tests.support.paths import TEST_DATA

GPUS = TEST_DATA / "gpus"
GIB = 1 << 30
MIB = 1 << 20


def _raw(name: str) -> dict[str, Any]:
    return json.loads((TEST_DATA / "hardware" / "raw" / f"{name}.json").read_text(encoding="utf-8"))


# --- sysfs -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("machine", ["rx7900xtx_24gb_linux", "arc_a750_8gb_linux"])
def test_read_drm_reads_the_recorded_tree_as_recorded(machine: str) -> None:
    """The directory tree and the recorded readings are one machine: ``read_drm`` on the tree (names from the
    tables' excerpts) gives exactly the readings the stored profile was computed from. Connectors, the render node
    and ``version`` are not cards."""
    cards = read_drm(GPUS / "sysfs" / machine, amdgpu_ids=(GPUS / "amdgpu.ids",), pci_ids=(GPUS / "pci.ids",))
    assert cards == load_readings(machine).drm
    assert [c.card for c in cards] == ["card0", "card1"]


def test_read_drm_without_sysfs_or_tables(tmp_path: Path) -> None:
    assert read_drm(tmp_path / "absent") == ()  # a container, WSL: no DRM class at all
    tree = GPUS / "sysfs" / "arc_a750_8gb_linux"
    unnamed = read_drm(tree, amdgpu_ids=(tmp_path / "no.ids",), pci_ids=(tmp_path / "no.ids",))
    assert [c.name for c in unnamed] == [None, None]
    assert [g.name for g in probe_drm(unnamed, nvml_found=False)] == ["Intel GPU 4692", "Intel GPU 56a1"]


def _card(tmp_path: Path, name: str, **files: str) -> None:
    device = tmp_path / name / "device"
    device.mkdir(parents=True)
    for key, text in files.items():
        path = device / key.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def test_read_drm_keeps_gpu_makers_only_and_reads_xe_in_either_form(tmp_path: Path) -> None:
    """A server's ASPEED BMC display (0x1a03) is no GPU to plan for; xe has printed the tile size in decimal and in
    hexadecimal, under ``tileN/`` and ``tileN/memory/``."""
    _card(tmp_path, "card0", vendor="0x1a03", device="0x2000", **{"class": "0x030000"})
    _card(tmp_path, "card1", vendor="0x8086", device="0xe20b", tile0__physical_vram_size_bytes="0x300000000")
    _card(tmp_path, "card2", vendor="0x8086", device="0xe20b", tile0__memory__physical_vram_size_bytes="12884901888")
    _card(tmp_path, "card3", vendor="0x1002")  # no device file: not a PCI GPU
    cards = read_drm(tmp_path, amdgpu_ids=(), pci_ids=())
    assert [(c.card, c.tile_vram) for c in cards] == [("card1", (12 * GIB,)), ("card2", (12 * GIB,))]
    [b580, _] = probe_drm(cards, nvml_found=False)
    assert (b580.vendor, b580.integrated, b580.vram_total_bytes, b580.vram_free_reported) == ("intel", False, 12 * GIB,
                                                                                            False)


def test_probe_drm_on_the_recorded_amd_machine() -> None:
    igpu, xtx = probe_drm(load_readings("rx7900xtx_24gb_linux").drm, nvml_found=False)
    assert (igpu.name, igpu.integrated, igpu.vram_total_bytes) == ("AMD Raphael", True, 512 * MIB)
    assert igpu.memory_bandwidth_bytes_per_s is None  # never planned on: no bandwidth needed
    assert (xtx.name, xtx.integrated, xtx.pci_id, xtx.source) == ("AMD Radeon RX 7900 XTX", False, "1002:744c",
                                                                 "sysfs")
    assert xtx.vram_total_bytes == 24560 * MIB and xtx.vram_free_bytes == (24560 - 583) * MIB
    assert xtx.vram_free_reported and xtx.memory_bandwidth_bytes_per_s == 960_000_000_000


def test_nvidia_from_sysfs_only_without_nvml() -> None:
    """nouveau, or the NVIDIA driver without its management library: the card is still found (memory unknown until
    the engine lists it); with NVML answering, NVML's record is the one."""
    cards = (DrmCard(card="card0", vendor="0x10de", device="0x2484", pci_class="0x030000", driver="nouveau",
                     name="GA104 [GeForce RTX 3070]"),
             DrmCard(card="card0", vendor="0x10de", device="0x228b", pci_class="0x040300", driver="snd_hda_intel"))
    [gpu] = probe_drm(cards, nvml_found=False)  # the card's HDMI audio function (class 0x0403) is no GPU
    assert (gpu.vendor, gpu.name, gpu.vram_total_bytes, gpu.integrated) == ("nvidia", "NVIDIA GeForce RTX 3070", 0,
                                                                             False)
    assert probe_drm(cards, nvml_found=True) == ()


def test_name_tables() -> None:
    amd = (GPUS / "amdgpu.ids").read_text(encoding="utf-8")
    assert drm.amdgpu_ids_name(amd, 0x744C, 0xC8) == "AMD Radeon RX 7900 XTX"
    assert drm.amdgpu_ids_name(amd, 0x73DF, 0xC1) == "AMD Radeon RX 6700 XT"
    assert drm.amdgpu_ids_name(amd, 0x73DF, 0xCF) is None  # one id, several products: only the exact revision
    assert drm.amdgpu_ids_name(amd, 0x744C, None) is None
    pci = (GPUS / "pci.ids").read_text(encoding="utf-8")
    assert drm.pci_ids_name(pci, 0x1002, 0x744C) == "Navi 31 [Radeon RX 7900 XT/7900 XTX]"
    assert drm.pci_ids_name(pci, 0x8086, 0x56A1) == "DG2 [Arc A750]"
    assert drm.pci_ids_name(pci, 0x8086, 0x744C) is None  # ids are per vendor
    assert drm.pci_ids_name(pci, 0x1DA2, 0xE471) is None  # a subsystem line is not a device


# --- the Windows registry ----------------------------------------------------------------------------------------

class FakeWinreg(SimpleNamespace):
    """The ``winreg`` calls ``read_display_adapters`` makes, answering from a dict of subkeys → values (each value as
    ``winreg.QueryValueEx`` returns it: ints for REG_DWORD/REG_QWORD, bytes for REG_BINARY)."""

    def __init__(self, keys: dict[str, dict[str, Any]], denied: frozenset[str] = frozenset()) -> None:
        super().__init__(HKEY_LOCAL_MACHINE=object(), opened=[])
        self.keys, self.denied = keys, denied

    def OpenKey(self, parent: Any, name: str) -> Any:
        self.opened.append(name)
        if name in self.denied:
            raise PermissionError(5, "Access is denied")
        if parent is self.HKEY_LOCAL_MACHINE:
            if name != display_adapters.CLASS_KEY:
                raise FileNotFoundError(2, "The system cannot find the file specified")
            return _Key(None)
        return _Key(self.keys[name])

    def EnumKey(self, key: Any, index: int) -> str:
        names = [*self.keys, "Properties"]
        if index >= len(names):
            raise OSError(259, "No more data is available")
        return names[index]

    def QueryValueEx(self, key: Any, name: str) -> tuple[Any, int]:
        if name not in key.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return key.values[name], 0


class _Key:
    def __init__(self, values: dict[str, Any] | None) -> None:
        self.values = values or {}

    def __enter__(self) -> _Key:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _registry(name: str) -> dict[str, dict[str, Any]]:
    """A recorded machine's adapter keys as the registry holds them (value names as Windows spells them)."""
    out = {}
    for a in _raw(name)["adapters"]:
        values = {"DriverDesc": a["driver_desc"], "MatchingDeviceId": a["matching_device_id"],
                  "DriverVersion": a["driver_version"],
                  "HardwareInformation.qwMemorySize": a["qw_memory_size"],
                  "HardwareInformation.MemorySize": a["memory_size"]}
        out[a["key"]] = {k: v for k, v in values.items() if v is not None}
    return out


@pytest.mark.parametrize("machine", ["rx6700xt_12gb_windows", "radeon780m_igpu_windows"])
def test_read_display_adapters_through_winreg(machine: str) -> None:
    fake = FakeWinreg(_registry(machine))
    assert display_adapters.read_display_adapters(fake) == load_readings(machine).adapters
    assert fake.opened[0] == display_adapters.CLASS_KEY and "Properties" not in fake.opened


def test_registry_byte_values_a_denied_key_and_no_key_at_all() -> None:
    """Some drivers write the sizes as REG_BINARY (8 or 4 little-endian bytes); a subkey the user may not open is
    skipped, the others still count; no class key at all is no GPU, not an error."""
    keys = {"0000": {"DriverDesc": "AMD Radeon RX 6700 XT", "MatchingDeviceId": "pci\\ven_1002&dev_73df&rev_c1",
                     "HardwareInformation.qwMemorySize": (12272 * MIB).to_bytes(8, "little"),
                     "HardwareInformation.MemorySize": (4293918720).to_bytes(4, "little")},
            "0001": {"DriverDesc": "secret"}}
    [adapter] = display_adapters.read_display_adapters(FakeWinreg(keys, denied=frozenset({"0001"})))
    assert (adapter.qw_memory_size, adapter.memory_size) == (12272 * MIB, 4293918720)
    fake = FakeWinreg({})
    fake.OpenKey = lambda *_a: (_ for _ in ()).throw(FileNotFoundError(2, "not found"))
    assert display_adapters.read_display_adapters(fake) == ()
    assert display_adapters.as_integer(b"\x01\x02\x03") is None and display_adapters.as_integer(True) is None


def test_probe_display_adapters_on_the_recorded_machines() -> None:
    [radeon] = probe_display_adapters(load_readings("rx6700xt_12gb_windows").adapters, nvml_found=False)
    assert (radeon.name, radeon.vram_total_bytes, radeon.integrated, radeon.source) == (
        "AMD Radeon RX 6700 XT", 12272 * MIB, False, "registry")
    assert radeon.vram_free_bytes == radeon.vram_total_bytes and not radeon.vram_free_reported
    assert radeon.memory_bandwidth_bytes_per_s == 384_000_000_000 and radeon.driver_version == "31.0.24033.1003"
    [apu] = probe_display_adapters(load_readings("radeon780m_igpu_windows").adapters, nvml_found=False)
    assert apu.integrated and apu.vram_total_bytes == 8448 * MIB  # 8 GiB carve-out: the device id decides


def test_registry_keeps_gpus_only_and_each_once() -> None:
    keys = (AdapterKey("0000", "Microsoft Basic Display Adapter", "PCI\\VEN_1414&DEV_008E"),
            AdapterKey("0001", "NVIDIA GeForce RTX 3070", "PCI\\VEN_10DE&DEV_2484&SUBSYS_146710DE",
                       "31.0.15.5186", 8 * GIB),
            AdapterKey("0002", "NVIDIA GeForce RTX 3070", "PCI\\VEN_10DE&DEV_2484&SUBSYS_146710DE",
                       "31.0.15.5186", 8 * GIB),
            AdapterKey("0003", "Intel(R) UHD Graphics 770", "PCI\\VEN_8086&DEV_A780", memory_size=128 * MIB))
    nvidia, uhd = probe_display_adapters(keys, nvml_found=False)
    # Windows' DriverVersion of an NVIDIA driver is not its driver number (551.86): not passed on as one
    assert (nvidia.vendor, nvidia.driver_version, nvidia.vram_total_bytes) == ("nvidia", None, 8 * GIB)
    assert (uhd.name, uhd.integrated, uhd.vram_total_bytes) == ("Intel UHD Graphics 770", True, 128 * MIB)
    assert [g.vendor for g in probe_display_adapters(keys, nvml_found=True)] == ["intel"]


# --- integrated or discrete, and bandwidth -------------------------------------------------------------------------

@pytest.mark.parametrize(("vendor", "device", "vram", "own", "integrated"), [
    ("intel", 0x56A0, 0, False, False),  # Arc A770 (DG2) on i915: no memory figure, the id decides
    ("intel", 0xE20B, 12 * GIB, True, False),  # Arc B580 (BMG)
    ("intel", 0x7D55, 0, False, True),  # Meteor Lake's "Intel Arc Graphics": integrated whatever the name says
    ("intel", 0x64A0, 128 * MIB, False, True),  # Lunar Lake's Arc 140V (Windows: 128 MiB dedicated)
    ("intel", 0xFFFF, 8 * GIB, True, False),  # an Intel id not in the table but with memory of its own
    ("amd", 0x1900, 8448 * MIB, False, True),  # Radeon 780M with an 8 GB carve-out (llmfit#810)
    ("amd", 0x1586, 96 * GIB, False, True),  # Strix Halo with 96 GB given to it
    ("amd", 0x744C, 24 * GIB, False, False),
    ("amd", 0x9999, 512 * MIB, False, True),  # an unknown id with half a GiB: Ollama's IGPUMemLimit rule
    ("amd", 0x9999, 16 * GIB, False, False),
    ("nvidia", 0x2484, 0, False, False),
])
def test_integrated_or_discrete(vendor: str, device: int, vram: int, own: bool, integrated: bool) -> None:
    assert gpu_models.is_integrated(vendor, device, vram, own_memory=own) is integrated


@pytest.mark.parametrize(("vendor", "name", "gbps"), [
    ("amd", "AMD Radeon RX 7900 XTX", 960),  # amdgpu.ids
    ("amd", "AMD Radeon RX 7900 XTX (RADV NAVI31)", 960),  # the Vulkan backend's description
    ("amd", "AMD Radeon RX 7900 XT/7900 XTX", 800),  # pci.ids lists both: the lower one
    ("amd", "AMD Radeon RX 6700/6700 XT/6750 XT / 6800M/6850M XT", 320),
    ("amd", "AMD Radeon RX 6700 XT", 384),  # "6700" alone does not match inside "6700 XT"
    ("amd", "AMD Radeon PRO W6800", 512),
    ("amd", "AMD Radeon RX 580 2048SP", 256),
    ("intel", "Intel(R) Arc(TM) A770 Graphics", 512),
    ("intel", "Intel(R) Arc(tm) A750 Graphics (DG2)", 512),
    ("intel", "Intel Arc A770M", 512),
    ("intel", "Intel(R) Arc(TM) B580 Graphics", 456),
    ("intel", "Intel(R) Arc(TM) 140V GPU (16GB)", None),  # integrated: not in the table
    ("amd", "AMD Radeon 780M Graphics", None),
])
def test_published_bandwidth_in_every_spelling(vendor: str, name: str, gbps: int | None) -> None:
    got = gpu_models.published_bandwidth(vendor, name)
    assert got == (int(gbps * 1e9) if gbps else None)


def test_display_names() -> None:
    assert gpu_models.display_name("amd", "Navi 31 [Radeon RX 7900 XT/7900 XTX]", 0x744C) == \
        "AMD Radeon RX 7900 XT/7900 XTX"
    assert gpu_models.display_name("intel", "Intel(R) Arc(TM) A770 Graphics", 0x56A0) == "Intel Arc A770 Graphics"
    assert gpu_models.display_name("amd", None, 0x1586) == "AMD GPU 1586"


# --- the whole profile ---------------------------------------------------------------------------------------------

def test_recorded_profiles_find_the_gpus_and_keep_the_integrated_one_apart() -> None:
    found = {name: [(g.index, g.vendor, g.integrated, round(g.vram_total_bytes / GIB, 1)) for g in
                    recorded_profile(name).gpus]
             for name in ("rx7900xtx_24gb_linux", "rx6700xt_12gb_windows", "arc_a750_8gb_linux",
                          "radeon780m_igpu_windows")}
    assert found == {
        "rx7900xtx_24gb_linux": [(0, "amd", True, 0.5), (1, "amd", False, 24.0)],
        "rx6700xt_12gb_windows": [(0, "amd", False, 12.0)],  # the Remote Display Adapter is no GPU
        "arc_a750_8gb_linux": [(0, "intel", True, 0.0), (1, "intel", False, 8.0)],
        "radeon780m_igpu_windows": [(0, "amd", True, 8.2)],
    }


def test_older_profiles_without_the_new_fields_still_load(tmp_path: Path) -> None:
    """A ``doctor --json`` written before AMD/Intel GPUs were found lacks ``integrated`` and the rest: it loads with
    the defaults (a discrete GPU whose free memory was reported, as NVML's always is)."""
    from bootstrap.detect.hardware import load_profile

    doc = json.loads((TEST_DATA / "hardware" / "rtx3070_8gb_32gb.json").read_text(encoding="utf-8"))
    for gpu in doc["gpus"]:
        for key in ("integrated", "vram_free_reported", "source", "pci_id", "engine_device"):
            gpu.pop(key)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    [gpu] = load_profile(path).gpus
    assert (gpu.integrated, gpu.vram_free_reported, gpu.source) == (False, True, None)


def test_this_machine_read_as_it_is() -> None:
    """The real probe on this machine: whatever DRM cards it has are read without error (CI machines have none)."""
    cards = read_drm()
    assert all(isinstance(c, DrmCard) for c in cards)
    assert all(asdict(c)["vendor"].startswith("0x") for c in cards)
    if not Path("/sys/class/drm").exists():
        assert cards == ()
