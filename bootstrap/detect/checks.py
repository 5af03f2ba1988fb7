"""The doctor's verdicts: each check reads the profile and answers ok / warn / fail with a reason and a next step.

Verdicts inform; they never stop anything (``install`` decides what a ``fail`` means for it). Thresholds:
- RAM below 8 GiB fails: even the smallest catalog fallback plus the OS does not fit (sizes: docs/models.md).
- Free disk below the default model (Qwen3.6-35B-A3B UD-Q4_K_M 22,134,528,992 B + mmproj-F16 899,283,680 B,
  docs/models.md) warns: a smaller quant may still fit.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bootstrap.core.console import aside, join_items, join_sentences, t
from bootstrap.core.sizes import GIB, gib_text
from bootstrap.detect.hardware import Check, GpuInfo, HardwareProfile

MIN_RAM_BYTES = 8 * GIB
DEFAULT_MODEL_BYTES = 22_134_528_992 + 899_283_680  # UD-Q4_K_M + mmproj-F16 (docs/models.md)
SUPPORTED_SYSTEMS = ("Linux", "Windows", "Darwin")
Judge = Callable[[HardwareProfile], Check]
CHECK_IDS = ("os", "cpu", "ram", "disk", "gpu", "engine", "python", "network")


def _check(check_id: str, verdict: str, reason: str, hint: str = "") -> Check:
    return Check(id=check_id, verdict=verdict, reason=reason, hint=hint)


def check_os(p: HardwareProfile) -> Check:
    o = p.os
    text = t("doctor.os_reason", system=o.system, release=o.release, machine=o.machine)
    if o.system not in SUPPORTED_SYSTEMS:
        return _check("os", "fail", text, t("doctor.os_hint_unsupported"))
    if o.container:
        return _check("os", "warn", t("doctor.os_reason_container", base=text), t("doctor.os_hint_container"))
    if o.wsl:
        return _check("os", "warn", t("doctor.os_reason_wsl", base=text), t("doctor.os_hint_wsl"))
    return _check("os", "ok", text)


def check_cpu(p: HardwareProfile) -> Check:
    c = p.cpu
    flags = [name.upper() for name in ("avx2", "avx512", "amx", "neon") if getattr(c.flags, name)]
    text = t("doctor.cpu_reason", brand=c.brand, physical=c.physical_cores, logical=c.logical_cores,
             flags=" ".join(flags) or "-")
    if c.arch == "x86_64" and not c.flags.avx2:
        return _check("cpu", "warn", text, t("doctor.cpu_hint_no_avx2"))
    return _check("cpu", "ok", text)


def check_ram(p: HardwareProfile) -> Check:
    m = p.memory
    text = t("doctor.ram_reason", total=gib_text(m.total_bytes), available=gib_text(m.available_bytes))
    if m.bandwidth_bytes_per_s and m.bandwidth_threads:
        text = join_items((text, t("doctor.ram_bandwidth", gbps=f"{m.bandwidth_bytes_per_s / 1e9:.1f}",
                                  threads=m.bandwidth_threads)))
    if m.total_bytes < MIN_RAM_BYTES:
        return _check("ram", "fail", text, t("doctor.ram_hint_low", minimum=MIN_RAM_BYTES // GIB))
    return _check("ram", "ok", text)


def check_disk(p: HardwareProfile, model_bytes: int = DEFAULT_MODEL_BYTES) -> Check:
    d = p.disk
    text = t("doctor.disk_reason", free=gib_text(d.free_bytes), path=d.path)
    if d.free_bytes < model_bytes:
        return _check("disk", "warn", text, t("doctor.disk_hint_low", need=gib_text(model_bytes)))
    return _check("disk", "ok", text)


def check_gpu(p: HardwareProfile) -> Check:
    if not p.gpus:
        return _check("gpu", "ok", t("doctor.gpu_none"), t("doctor.gpu_hint_none"))
    parts = []
    for g in p.gpus:
        if g.vendor == "nvidia":
            parts.append(t("doctor.gpu_nvidia", name=g.name, total=gib_text(g.vram_total_bytes),
                           free=gib_text(g.vram_free_bytes), driver=g.driver_version or "?",
                           cuda=g.cuda_driver_version or "?", cc=g.compute_capability or "?"))
        elif g.unified_memory:
            parts.append(t("doctor.gpu_unified", name=g.name, total=gib_text(g.vram_total_bytes)))
        else:
            parts.append(_other_gpu(g))
    return _check("gpu", "ok", join_items(parts))


def _other_gpu(g: GpuInfo) -> str:
    """An AMD or Intel GPU by name: its own memory and what is free, or that it is integrated and shares RAM."""
    if g.integrated:
        text = t("gpus.doctor_integrated", name=g.name, reserved=gib_text(g.vram_total_bytes)) \
            if g.vram_total_bytes > 0 else t("gpus.doctor_integrated_shared", name=g.name)
    elif g.vram_total_bytes <= 0:
        text = t("gpus.doctor_vram_unknown", name=g.name)
    elif g.vram_free_reported:
        text = t("gpus.doctor_vram", name=g.name, total=gib_text(g.vram_total_bytes),
                 free=gib_text(g.vram_free_bytes))
    else:
        text = t("gpus.doctor_vram_nofree", name=g.name, total=gib_text(g.vram_total_bytes))
    return t("gpus.doctor_engine", text=text, device=g.engine_device) if g.engine_device else text


def check_python(p: HardwareProfile) -> Check:
    if not p.pythons:
        return _check("python", "warn", t("doctor.python_none"), t("doctor.python_hint_none"))
    listed = join_items(f"{py.version}{aside(str(py.path))}" for py in p.pythons[:3])  # （）； in Chinese
    more = len(p.pythons) - 3
    return _check("python", "ok", listed + (t("doctor.python_more", count=more) if more > 0 else ""))


def check_network(p: HardwareProfile) -> Check:
    """Proxy, CA bundle and trust store as configured; with ``doctor``'s probe, each source as it answers (no source
    answering, or TLS intercepted, is a warning even when the configuration looks right)."""
    n = p.network
    proxy = n.https_proxy or n.http_proxy
    text = t("doctor.net_proxy", proxy=proxy) if proxy else t("doctor.net_direct")
    hint = None
    if n.ca_bundle:
        text = join_sentences(text, t("doctor.net_ca", path=n.ca_bundle))
        if not Path(n.ca_bundle).is_file():
            hint = t("doctor.net_hint_ca_missing", path=n.ca_bundle)
    if n.truststore:
        text = join_sentences(text, t("doctor.net_truststore"))
    else:
        text = join_sentences(text, t("doctor.net_no_truststore"))
        hint = hint or t("doctor.net_hint_truststore")
    if n.sources:
        listed = join_items(t(f"doctor.reach_{s.state}", name=s.name, ms=s.ms) for s in n.sources)
        text = join_sentences(text, t("doctor.net_sources", list=listed))
        if any(s.state == "tls" for s in n.sources):
            hint = hint or t("doctor.net_hint_truststore")
        elif not any(s.state == "reachable" for s in n.sources):
            hint = hint or t("doctor.net_hint_no_source")
    return _check("network", "warn", text, hint) if hint else _check("network", "ok", text)


def run_checks(p: HardwareProfile, model_bytes: int = DEFAULT_MODEL_BYTES,
               engine: Judge | None = None) -> tuple[Check, ...]:
    """Every check, in ``CHECK_IDS`` order. The engine verdict is a plan decision (which build this machine needs,
    ``plan.engine_variant.check_engine``): the caller passes it in, and without it that row is left out."""
    engine_row = (engine(p),) if engine is not None else ()
    return (check_os(p), check_cpu(p), check_ram(p), check_disk(p, model_bytes), check_gpu(p), *engine_row,
            check_python(p), check_network(p))
