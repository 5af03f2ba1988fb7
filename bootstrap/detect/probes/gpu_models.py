"""What a PCI id says about a GPU: its vendor, whether it is the processor's own (integrated) GPU, and the memory
bandwidth its maker publishes. Shared by the sysfs probe (``drm``), the Windows registry probe
(``display_adapters``) and the engine's device list (``tune/devices.py``).

Integrated or discrete (docs/gpus.md has the reasoning and the sources):

- **Intel**: discrete only when the device id is one of Intel's discrete GPUs — DG1, DG2 (Arc A-series, desktop and
  mobile), ATS-M (Flex) and BMG (Arc B-series), the lists ``INTEL_DG1_IDS`` … ``INTEL_BMG_IDS`` of the Linux
  kernel's ``include/drm/intel/pciids.h`` — or when the driver reports memory of its own (xe's per-tile
  ``physical_vram_size_bytes``, i915's ``lmem_total_bytes``, 1 GiB or more in the Windows registry). Everything
  else Intel makes is integrated, the "Intel Arc Graphics" of Meteor/Lunar Lake included: the name cannot tell.
- **AMD**: integrated when the device id is one of AMD's APUs (the ``AMD_IS_APU`` entries of the kernel's
  ``drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c`` and the APU names of the PCI id database, e.g. ``1900`` Hawk Point,
  ``1586`` Strix Halo), else when it reports less than 1 GiB of VRAM (Ollama's rule, ``IGPUMemLimit`` in its
  ``discover/gpu.go``: an APU's carve-out is typically 512 MiB). The id comes first because an APU's carve-out can
  be set to 8 GiB or more in the BIOS (a Radeon 780M reporting 8448 MiB: AlexsJones/llmfit#810).
"""

from __future__ import annotations

import re

GIB = 1 << 30
VENDORS = {0x1002: "amd", 0x8086: "intel", 0x10DE: "nvidia"}
BRAND = {"amd": "AMD", "intel": "Intel", "nvidia": "NVIDIA"}

# Linux include/drm/intel/pciids.h: INTEL_DG1_IDS, INTEL_DG2_G10/G11/G12_IDS, INTEL_ATS_M_IDS, INTEL_BMG_IDS.
INTEL_DISCRETE_IDS = frozenset({
    0x4905, 0x4906, 0x4907, 0x4908, 0x4909,  # DG1
    0x5690, 0x5691, 0x5692, 0x56A0, 0x56A1, 0x56A2, 0x56BE, 0x56BF,  # DG2-G10 (A770, A750, A580; mobile A770M…)
    0x5693, 0x5694, 0x5695, 0x56A5, 0x56A6, 0x56B0, 0x56B1, 0x56BA, 0x56BB, 0x56BC, 0x56BD,  # DG2-G11 (A380…)
    0x5696, 0x5697, 0x56A3, 0x56A4, 0x56B2, 0x56B3,  # DG2-G12
    0x56C0, 0x56C1, 0x56C2,  # ATS-M (Data Center GPU Flex)
    0xE202, 0xE209, 0xE20B, 0xE20C, 0xE20D, 0xE210, 0xE211, 0xE212, 0xE215, 0xE216,  # BMG (B580, B570…)
    0xE220, 0xE221, 0xE222, 0xE223,  # BMG-G31
})

# AMD APUs: amdgpu_drv.c's AMD_IS_APU ids (Kaveri … Renoir) and the APUs of the PCI id database (pci.ids):
AMD_APU_IDS = frozenset({
    *range(0x1304, 0x131E),  # Kaveri
    *range(0x9830, 0x9840), *range(0x9850, 0x9860),  # Kabini, Mullins
    0x9870, 0x9874, 0x9875, 0x9876, 0x9877, 0x98E4,  # Carrizo, Stoney
    0x15DD, 0x15D8, 0x1636, 0x1638, 0x164C, 0x15E7,  # Raven, Picasso, Renoir, Cezanne, Lucienne, Barcelo
    0x163F, 0x1435, 0x1681, 0x164D, 0x1506, 0x13FE, 0x143F,  # Van Gogh, Custom, Rembrandt, Mendocino, Cyan Skillfish
    0x164E, 0x13C0,  # Raphael, Granite Ridge (the desktop Ryzen 7000/9000 "Radeon Graphics")
    0x15BF, 0x15C8, 0x164F, 0x1900, 0x1901,  # Phoenix (Radeon 740M/760M/780M), Hawk Point
    0x150E, 0x1114, 0x1902, 0x1586,  # Strix Point (880M/890M), Krackan (840M/860M), Strix Halo (8050S/8060S)
})
IGPU_VRAM_LIMIT = GIB  # Ollama's IGPUMemLimit: less than this is an integrated GPU

# Peak memory bandwidth, GB/s, as the makers publish it (amd.com and intel.com product specifications: bus width ×
# data rate). Keys are the model as it appears in every spelling of the name — amdgpu.ids ("AMD Radeon RX 7900
# XTX"), pci.ids ("Navi 31 [Radeon RX 7900 XT/7900 XTX/7900M]"), the driver's ("Intel(R) Arc(TM) A770 Graphics");
# where one name lists several models, the lowest figure is used (like apple.CHIP_BANDWIDTH_GBPS).
BANDWIDTH_GBPS: dict[str, dict[str, float]] = {
    "amd": {
        "9070 XT": 640, "9070": 640, "9060 XT": 320, "R9700": 640,
        "7900 XTX": 960, "7900 XT": 800, "7900 GRE": 576, "7800 XT": 624, "7700 XT": 432, "7600 XT": 288,
        "7600": 288, "W7900": 864, "W7800": 576,
        "6950 XT": 576, "6900 XT": 512, "6800 XT": 512, "6800": 512, "6750 XT": 432, "6700 XT": 384, "6700": 320,
        "6650 XT": 280, "6600 XT": 256, "6600": 224, "6500 XT": 144, "W6800": 512,
        "5700 XT": 448, "5700": 448, "5600 XT": 288, "5500 XT": 224,
        "Radeon VII": 1024, "Vega 64": 484, "Vega 56": 410, "590": 256, "580": 256, "570": 224,
    },
    "intel": {
        "A770": 512, "A750": 512, "A580": 512, "A380": 186, "A310": 124,
        "A770M": 512, "A730M": 336, "A550M": 224, "A370M": 112, "A350M": 112,
        "B580": 456, "B570": 380, "B60": 456, "B50": 224,
    },
}
_TRADEMARKS = re.compile(r"\((?:TM|R)\)|[™®]", re.IGNORECASE)


def vendor_of(vendor_id: int) -> str | None:
    """"amd", "intel", "nvidia"; None for any other maker (a server's ASPEED, a VM's virtual display)."""
    return VENDORS.get(vendor_id)


def parse_hex(text: str | None) -> int | None:
    """``0x744c`` / ``744C`` → 0x744C; None when absent or not hexadecimal."""
    if not text:
        return None
    try:
        return int(text.strip(), 16)
    except ValueError:
        return None


def is_integrated(vendor: str, device_id: int | None, vram_bytes: int, own_memory: bool = False) -> bool:
    """The rule in the module docstring. ``own_memory``: the driver reported memory of the GPU's own (Intel)."""
    if vendor == "intel":
        return not (own_memory or (device_id is not None and device_id in INTEL_DISCRETE_IDS))
    if vendor == "amd":
        return (device_id is not None and device_id in AMD_APU_IDS) or vram_bytes < IGPU_VRAM_LIMIT
    return False


def plain_name(name: str) -> str:
    """The name without trademark marks and repeated spaces: "Intel(R) Arc(TM) A770" → "Intel Arc A770"."""
    return " ".join(_TRADEMARKS.sub(" ", name).split())


def published_bandwidth(vendor: str, name: str) -> int | None:
    """Bytes/s its maker publishes for the model ``name`` names; None for a model not in the table."""
    table = BANDWIDTH_GBPS.get(vendor, {})
    text = plain_name(name)
    found = [gbps for key, gbps in table.items()
             if re.search(rf"(?<![\w]){re.escape(key)}(?![\w]|\s+(?:XTX|XT|GRE)\b)", text)]
    return int(min(found) * 1e9) if found else None


def display_name(vendor: str, listed: str | None, device_id: int | None) -> str:
    """A name to show: the database's retail name (the bracket of a pci.ids entry, "Navi 31 [Radeon RX 7900
    XT/7900 XTX/7900M]"), with the maker in front; the device id when no database knows it."""
    brand = BRAND.get(vendor, vendor)
    if not listed:
        return f"{brand} GPU {device_id:04x}" if device_id is not None else f"{brand} GPU"
    text = plain_name(listed)
    bracket = re.search(r"\[([^\]]+)\]", text)
    if bracket:
        text = bracket.group(1)
    return text if text.lower().startswith(brand.lower()) else f"{brand} {text}"
