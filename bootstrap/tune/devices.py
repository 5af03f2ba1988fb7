"""The GPUs as the installed engine sees them: once an engine is in place, its own ``llama-server --list-devices``
is the truth (name, total, free), and the plan follows it where it differs from what detection found.

Detection reads what the OS publishes (NVML, sysfs, the Windows registry), which can be wrong for the engine: a
registry key of a card no longer plugged in, a driver that reports no memory (i915) or no usage (xe, the registry),
a free figure taken before the desktop grew. ``--list-devices`` (``place/engine_probe.parse_devices``; format:
llama.cpp ``common/arg.cpp``, ``common_print_available_devices``) is what the server will use. Rules:

- an engine device is paired with the detected GPU of the same vendor (the only one, else the one whose model
  words it shares); a device whose description names no maker, only with a detected GPU whose model words it
  shares; a discrete GPU then takes the engine's name, total and free memory and its device name ("Vulkan0");
  an integrated GPU keeps its detected carve-out, because llama.cpp's Vulkan backend counts every memory heap
  of an integrated GPU, the RAM it shares included (``ggml_backend_vk_get_device_memory``), and that RAM is the
  plan's already;
- a detected GPU the engine does not list is left out of the plan (the engine cannot use it);
- an engine device nobody detected is added when it is NVIDIA or an AMD/Intel model of the published-bandwidth
  table (a known discrete card); anything else (an integrated GPU, a software renderer such as llvmpipe) is kept
  as ``unknown``, which the planner never uses;
- with ``trust_free`` False (an upgrade: the running server holds its own memory on the GPU) only totals are taken;
- the devices of RPC workers (``with_rpc_workers``, from ``place/rpc_probe``) are kept as they are: the plain
  ``--list-devices`` does not list them.

``engine_view`` is pure; the installer calls it after the engine is placed and replans when ``changed``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bootstrap.core.console import t
from bootstrap.core.sizes import MIB, gib_text
from bootstrap.detect.hardware import GpuInfo, HardwareProfile
from bootstrap.detect.probes.gpu_models import plain_name, published_bandwidth
from bootstrap.place.engine_probe import EngineDevice
from bootstrap.plan.engine_variant import VariantChoice
from bootstrap.plan.planner import budget_for

# A budget that moves by less than this is the same plan: free memory drifts by a few MiB between two reads.
MATERIAL_BYTES = 256 * MIB
_STOP = frozenset({"amd", "intel", "nvidia", "corporation", "graphics", "gpu", "tm", "r", "series"})
_SOFTWARE = re.compile(r"llvmpipe|lavapipe|swiftshader|basic render|softpipe", re.IGNORECASE)


@dataclass(frozen=True)
class EngineView:
    """The profile with its GPUs as the engine lists them, and what that changes."""

    hardware: HardwareProfile
    changed: bool  # the plan's GPU budget differs: replan
    used: GpuInfo | None  # the GPU the plan uses now, with its engine device name
    notes: tuple[str, ...] = ()


def vendor_of_description(description: str) -> str:
    """The maker from a backend's device description ("AMD Radeon RX 7900 XTX (RADV NAVI31)" → "amd");
    "unknown" for software renderers and anything else."""
    text = description.lower()
    if _SOFTWARE.search(text):
        return "unknown"
    if any(word in text for word in ("nvidia", "geforce", "quadro", "tesla", "rtx")):
        return "nvidia"
    if "radeon" in text or re.search(r"\bamd\b", text):
        return "amd"
    if "intel" in text or re.search(r"\barc\b", text):
        return "intel"
    if text.startswith("apple"):
        return "apple"
    return "unknown"


def model_words(name: str) -> frozenset[str]:
    """The words that tell one model from another: no maker, no trademark marks, no driver suffix such as
    "(RADV NAVI31)" or "(DG2)" after the name."""
    text = plain_name(name)
    while re.search(r"\s*\([^()]*\)\s*$", text):
        text = re.sub(r"\s*\([^()]*\)\s*$", "", text)
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP)


def with_rpc_workers(hardware: HardwareProfile, devices: Sequence[EngineDevice]) -> HardwareProfile:
    """``hardware`` with the RPC workers' devices (``RPC0: IP:PORT (total, free)``) in place of any it had: one
    ``GpuInfo`` each, vendor "rpc", named by its worker's endpoint. Their speed is the network's, not a bandwidth
    the plan can know, so none is set."""
    local = [g for g in hardware.gpus if g.vendor != "rpc"]
    lent = [GpuInfo(index=0, vendor="rpc", name=d.description, vram_total_bytes=d.total_mib * MIB,
                    vram_free_bytes=min(d.free_mib, d.total_mib) * MIB, source="rpc", engine_device=d.name)
            for d in devices]
    return replace(hardware, gpus=tuple(replace(g, index=i) for i, g in enumerate([*local, *lent])))


def _pair(gpus: Sequence[GpuInfo], device: EngineDevice, taken: set[int]) -> GpuInfo | None:
    """The detected GPU this engine device is. A description that names no maker ("llvmpipe (LLVM 15.0.6, 256
    bits)") pairs only with a detected GPU of the same model words: detection named it, so the plan may use it."""
    vendor = vendor_of_description(device.description)
    words = model_words(device.description)
    free = [g for g in gpus if g.index not in taken and g.vendor != "rpc"]
    same = [g for g in free if g.vendor == vendor] if vendor != "unknown" else free
    if len(same) == 1 and vendor != "unknown":
        return same[0]
    scored = [(_similarity(words, model_words(g.name)), g) for g in same]
    best = max(scored, key=lambda pair: pair[0], default=(0.0, None))
    return best[1] if best[0] > 0 else None


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared words over all words (Jaccard): "Radeon" alone is closer to the integrated "AMD Radeon Graphics"
    than to "AMD Radeon RX 7900 XTX"."""
    return len(a & b) / len(a | b) if a | b else 0.0


def _seen(g: GpuInfo, d: EngineDevice, trust_free: bool) -> GpuInfo:
    """A detected GPU as the engine lists it (the module docstring's rules)."""
    if g.integrated:
        return replace(g, engine_device=d.name)
    total = d.total_mib * MIB
    free = min(d.free_mib * MIB, total) if trust_free else min(g.vram_free_bytes, total)
    bandwidth = g.memory_bandwidth_bytes_per_s or published_bandwidth(g.vendor, d.description)
    return replace(g, name=d.description, vram_total_bytes=total, vram_free_bytes=free, engine_device=d.name,
                   vram_free_reported=trust_free or g.vram_free_reported, memory_bandwidth_bytes_per_s=bandwidth)


def _unpaired(d: EngineDevice, index: int) -> GpuInfo:
    vendor = vendor_of_description(d.description)
    known = vendor == "nvidia" or (vendor in ("amd", "intel") and published_bandwidth(vendor, d.description))
    total = d.total_mib * MIB
    return GpuInfo(index=index, vendor=vendor if known else "unknown", name=d.description, vram_total_bytes=total,
                   vram_free_bytes=min(d.free_mib * MIB, total), source="engine", engine_device=d.name,
                   memory_bandwidth_bytes_per_s=published_bandwidth(vendor, d.description) if known else None)


def _material(before: HardwareProfile, after: HardwareProfile, variant: VariantChoice) -> bool:
    old, new = budget_for(before, variant), budget_for(after, variant)
    return (old.gpu_name is None) != (new.gpu_name is None) or abs(old.gpu_bytes - new.gpu_bytes) >= MATERIAL_BYTES


def engine_view(hardware: HardwareProfile, devices: Sequence[EngineDevice], variant: VariantChoice, *,
                trust_free: bool = True) -> EngineView:
    """``hardware`` with its GPUs replaced by what ``devices`` (the engine's ``--list-devices``) says; unchanged
    when the engine lists no device (a CPU build: it has nothing to say about GPUs)."""
    devices = [d for d in devices if d.total_mib > 0]  # "BLAS: Accelerate (0 MiB, 0 MiB free)" is no GPU
    if not devices:
        return EngineView(hardware, False, None)
    seen: dict[int, EngineDevice] = {}
    unpaired: list[EngineDevice] = []
    for d in devices:
        g = _pair(hardware.gpus, d, set(seen))
        if g is None:
            unpaired.append(d)
        else:
            seen[g.index] = d
    # Detected order first (indices stay stable), then what only the engine saw. An integrated GPU the engine
    # does not list stays in the profile: it was never planned on.
    kept = [_seen(g, seen[g.index], trust_free) if g.index in seen else g for g in hardware.gpus
            if g.index in seen or g.integrated or g.vendor in ("apple", "rpc")]
    gpus = [*kept, *(_unpaired(d, 0) for d in unpaired)]
    notes = [t("gpus.engine_missing", name=g.name) for g in hardware.gpus
             if g.index not in seen and g.vendor not in ("apple", "rpc") and not g.integrated]
    after = replace(hardware, gpus=tuple(replace(g, index=i) for i, g in enumerate(gpus)))
    budget = budget_for(after, variant)
    used = next((g for g in after.gpus if budget.gpu_name is not None and g.name == budget.gpu_name), None)
    if used is not None and used.engine_device:
        notes.append(t("gpus.engine_sees", device=used.engine_device, name=used.name,
                       total=gib_text(used.vram_total_bytes), free=gib_text(used.vram_free_bytes)))
    changed = _material(hardware, after, variant)
    if changed:
        notes.append(t("gpus.engine_replan"))
    return EngineView(after, changed, used, tuple(notes))
