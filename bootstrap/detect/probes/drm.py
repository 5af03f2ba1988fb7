"""Linux GPUs from sysfs: every DRM card (``/sys/class/drm/cardN``) of AMD, Intel or NVIDIA, with the memory its
kernel driver reports. NVML already covers NVIDIA where its driver runs; a card of 0x10de is kept from here only
when NVML found nothing (nouveau, or the NVIDIA driver without its management library).

What each driver publishes in ``cardN/device/`` (the PCI device):

- amdgpu: ``mem_info_vram_total`` / ``mem_info_vram_used`` (bytes; an APU's are its BIOS carve-out) and
  ``mem_info_vis_vram_total`` (the CPU-visible part), Linux ``drivers/gpu/drm/amd/amdgpu/amdgpu_vram_mgr.c``.
- xe (Intel Arc B-series, and A-series where xe drives them): ``tileN/physical_vram_size_bytes`` on discrete GPUs
  (``drivers/gpu/drm/xe/xe_tile_sysfs.c``; igt's ``xe_sysfs_tile`` reads it); no usage figure.
- i915: nothing for integrated GPUs; ``lmem_total_bytes`` in ``cardN/`` on builds with Intel's backports only.

sysfs carries no names, so the reading looks the device up where the distribution keeps the tables: libdrm's
``amdgpu.ids`` (device, revision → "AMD Radeon RX 7900 XTX") and the PCI id database (``pci.ids``). ``read_drm``
asks the machine; ``probe_drm`` is pure and is fed recorded readings in tests.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bootstrap.detect.hardware import GpuInfo
from bootstrap.detect.probes.gpu_models import (
    display_name,
    is_integrated,
    parse_hex,
    published_bandwidth,
    vendor_of,
)

SYS_DRM = Path("/sys/class/drm")
AMDGPU_IDS = (Path("/usr/share/libdrm/amdgpu.ids"),)
PCI_IDS = (Path("/usr/share/hwdata/pci.ids"), Path("/usr/share/misc/pci.ids"), Path("/usr/share/pci.ids"))
_CARD = re.compile(r"card\d+")
MAX_IDS_BYTES = 8 << 20  # pci.ids is about 1.4 MB; a larger file is not the database


@dataclass(frozen=True)
class DrmCard:
    """One DRM card as sysfs shows it: the values as the kernel writes them (hex ids, decimal byte counts)."""

    card: str  # "card1"
    vendor: str  # "0x1002"
    device: str  # "0x744c"
    revision: str | None = None  # "0xc8"
    pci_class: str | None = None  # "0x030000" (VGA), "0x038000" (display controller)
    driver: str | None = None  # "amdgpu", "xe", "i915", "nouveau", "nvidia"
    vram_total: int | None = None  # amdgpu mem_info_vram_total
    vram_used: int | None = None  # amdgpu mem_info_vram_used
    vis_vram_total: int | None = None  # amdgpu mem_info_vis_vram_total
    tile_vram: tuple[int, ...] = ()  # xe: tileN/physical_vram_size_bytes, one per tile
    lmem_total: int | None = None  # i915 lmem_total_bytes (backport builds)
    name: str | None = None  # amdgpu.ids' product name, else the pci.ids entry


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None


def _number(path: Path) -> int | None:
    """A sysfs byte count: decimal, or hexadecimal with ``0x`` (xe has printed both)."""
    text = _text(path)
    if not text:
        return None
    try:
        return int(text, 0) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return None


def _tiles(device: Path) -> tuple[int, ...]:
    try:
        tiles = sorted(p for p in device.iterdir() if re.fullmatch(r"tile\d+", p.name))
    except OSError:
        return ()
    found = []
    for tile in tiles:
        for place in (tile / "physical_vram_size_bytes", tile / "memory" / "physical_vram_size_bytes"):
            value = _number(place)
            if value:
                found.append(value)
                break
    return tuple(found)


def read_card(card: Path) -> DrmCard | None:
    """The readings of one ``cardN`` folder (None when it has no PCI device: a virtual or platform display)."""
    device = card / "device"
    vendor, dev = _text(device / "vendor"), _text(device / "device")
    if not vendor or not dev:
        return None
    driver = None
    with contextlib.suppress(OSError):
        driver = os.path.basename(os.readlink(device / "driver"))
    return DrmCard(card=card.name, vendor=vendor, device=dev, revision=_text(device / "revision"),
                   pci_class=_text(device / "class"), driver=driver,
                   vram_total=_number(device / "mem_info_vram_total"),
                   vram_used=_number(device / "mem_info_vram_used"),
                   vis_vram_total=_number(device / "mem_info_vis_vram_total"), tile_vram=_tiles(device),
                   lmem_total=_number(card / "lmem_total_bytes") or _number(device / "lmem_total_bytes"))


def _readable(paths: Sequence[Path]) -> str:
    for path in paths:
        try:
            if path.stat().st_size <= MAX_IDS_BYTES:
                return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return ""


def amdgpu_ids_name(table: str, device: int, revision: int | None) -> str | None:
    """libdrm's ``amdgpu.ids``: ``device_id,\\trevision_id,\\tproduct_name`` lines, hex without ``0x``. Only an
    exact (device, revision) pair names a card: one device id covers several products (73DF: RX 6700 XT, RX 6750
    XT, RX 6800M by revision)."""
    for line in table.splitlines():
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) == 3 and not line.startswith("#") and parse_hex(parts[0]) == device \
                and revision is not None and parse_hex(parts[1]) == revision:
            return parts[2]
    return None


def pci_ids_name(table: str, vendor: int, device: int) -> str | None:
    """The PCI id database: a vendor line at the margin, its devices one tab in (``\\t744c  Navi 31 [...]``)."""
    inside = False
    for line in table.splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            inside = parse_hex(line.split(" ", 1)[0]) == vendor
            continue
        if inside and not line.startswith("\t\t"):
            code, _, name = line.strip().partition("  ")
            if parse_hex(code) == device:
                return name.strip() or None
    return None


def _named(cards: Iterable[DrmCard], amdgpu_ids: Sequence[Path], pci_ids: Sequence[Path]) -> list[DrmCard]:
    """Each card with the name the distribution's tables give it (the tables are read once, only if needed)."""
    cards = list(cards)
    if not cards:
        return cards
    amd_table = _readable(amdgpu_ids) if any(parse_hex(c.vendor) == 0x1002 for c in cards) else ""
    pci_table = _readable(pci_ids)
    out = []
    for c in cards:
        vendor, device = parse_hex(c.vendor), parse_hex(c.device)
        name = None
        if vendor == 0x1002 and device is not None and amd_table:
            name = amdgpu_ids_name(amd_table, device, parse_hex(c.revision))
        if name is None and vendor is not None and device is not None and pci_table:
            name = pci_ids_name(pci_table, vendor, device)
        out.append(DrmCard(**{**c.__dict__, "name": name}))
    return out


def read_drm(root: Path = SYS_DRM, amdgpu_ids: Sequence[Path] = AMDGPU_IDS,
             pci_ids: Sequence[Path] = PCI_IDS) -> tuple[DrmCard, ...]:
    """Every ``cardN`` under ``root`` of a GPU maker we plan for (connectors such as ``card0-HDMI-A-1`` and
    render nodes are not cards); empty where sysfs has no DRM class (containers, WSL)."""
    try:
        entries = sorted((p for p in root.iterdir() if _CARD.fullmatch(p.name)), key=lambda p: int(p.name[4:]))
    except OSError:
        return ()
    cards = [c for c in (read_card(p) for p in entries)
             if c is not None and vendor_of(parse_hex(c.vendor) or 0) is not None]
    return tuple(_named(cards, amdgpu_ids, pci_ids))


def probe_drm(cards: Sequence[DrmCard], nvml_found: bool) -> tuple[GpuInfo, ...]:
    """Readings → GPU records (index 0..n-1 here; ``probes.merge_gpus`` renumbers). ``nvml_found``: NVML listed
    NVIDIA GPUs already, so sysfs's NVIDIA cards are the same ones."""
    gpus: list[GpuInfo] = []
    for c in cards:
        vendor_id, device_id = parse_hex(c.vendor), parse_hex(c.device)
        vendor = vendor_of(vendor_id or 0)
        if vendor is None or (vendor == "nvidia" and nvml_found):
            continue
        if c.pci_class and not c.pci_class.lower().startswith("0x03"):
            continue  # not a display controller (an audio function of the same card, an accelerator)
        own = sum(c.tile_vram) or (c.lmem_total or 0)
        if vendor == "amd":
            total = max(0, c.vram_total or 0)
            free = max(0, total - max(0, c.vram_used or 0)) if c.vram_used is not None else total
            reported = c.vram_used is not None
        else:
            total, free, reported = own, own, False
        integrated = is_integrated(vendor, device_id, total, own_memory=own > 0)
        name = display_name(vendor, c.name, device_id)
        gpus.append(GpuInfo(index=len(gpus), vendor=vendor, name=name, vram_total_bytes=total,
                            vram_free_bytes=min(free, total), integrated=integrated,
                            vram_free_reported=reported and total > 0, source="sysfs",
                            pci_id=f"{vendor_id:04x}:{device_id:04x}" if device_id is not None else None,
                            memory_bandwidth_bytes_per_s=None if integrated else published_bandwidth(vendor, name)))
    return tuple(gpus)
