"""Which llama.cpp release build a machine needs (DESIGN.md §4 variant names), and the NVIDIA driver floors.

Facts (docs/engine.md, "Release archives" and "NVIDIA driver floors"): the Windows CUDA 12.4 build wants
driver ≥ 550; the CUDA 13 build wants driver ≥ 580 and compute capability ≥ 7.5; upstream ships no Linux CUDA
tarball, so NVIDIA on Linux runs the Vulkan build; the CUDA builds carry SASS only for sm_86/sm_89 (+sm_120a/121a),
other GPUs JIT-compile PTX on the first run. A driver below the floor makes the CUDA build fall back to the CPU
silently (docs/field-failures.md, failure mode 4), so that case picks Vulkan and says so loudly instead. AMD and
Intel GPUs of their own run the Vulkan build; a machine whose only GPU is integrated runs the CPU build
(docs/gpus.md).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bootstrap.core import settings
from bootstrap.core.console import join_sentences, t
from bootstrap.core.errors import UnsupportedMachine
from bootstrap.core.input_checks import decimal_int
from bootstrap.detect.hardware import Check, GpuInfo, HardwareProfile

CUDA12_MIN_DRIVER = 550  # CUDA 12.4 runtime (Ollama's gate; NVIDIA's table says 525+ for 12.0)
CUDA13_MIN_DRIVER = 580  # CUDA 13 (Jan/NVIDIA compatibility table)
CUDA13_MIN_CC = (7, 5)
SASS_CC = {(8, 6), (8, 9), (12, 0), (12, 1)}



@dataclass(frozen=True)
class VariantChoice:
    name: str  # one of VARIANTS
    reason: str  # one line, in the UI language
    warnings: tuple[str, ...] = ()
    min_driver: str | None = None  # the NVIDIA driver floor that applies (for the CUDA build, or to reach it)
    hint: str | None = None  # the next step for the doctor's engine row when there are warnings (else its own)


def driver_major(version: str | None) -> int | None:
    """``"550.54.14"`` → 550, ``"591.86"`` → 591; None when absent or unreadable."""
    if not version:
        return None
    head = version.strip().split(".", 1)[0]
    return decimal_int(head)


def parse_cc(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    major, _, minor = text.strip().partition(".")
    major_n, minor_n = decimal_int(major), decimal_int(minor)
    return None if major_n is None or minor_n is None else (major_n, minor_n)


def _arch(profile: HardwareProfile) -> str:
    return profile.cpu.arch


def _jit_warnings(nvidia: list[GpuInfo]) -> tuple[str, ...]:
    out = []
    for gpu in nvidia:
        cc = parse_cc(gpu.compute_capability)
        if cc is not None and cc not in SASS_CC:
            out.append(t("doctor.variant_jit", name=gpu.name, cc=gpu.compute_capability))
    return tuple(out)


def _discrete_others(profile: HardwareProfile) -> list[GpuInfo]:
    """AMD and Intel GPUs of their own (not the processor's integrated one): the Vulkan build's."""
    return [g for g in profile.gpus if g.vendor in ("amd", "intel") and not g.integrated]


# An integrated GPU's carve-out worth telling the user about: more than the 512 MiB APUs ship with.
RESERVED_WARN_BYTES = 2 << 30


def _integrated_only(profile: HardwareProfile, cpu_variant: str) -> VariantChoice | None:
    """The CPU build for a machine whose only GPU is the processor's own (docs/gpus.md, "Integrated GPUs"): it
    reads the same RAM, so decoding gains little, and llama.cpp's Vulkan backend is least reliable there (its
    maintainers leave integrated GPUs out whenever a discrete one exists, llama.cpp PR #15793). Its RAM is never
    counted twice: the plan counts the RAM the OS has, and the carve-out is neither RAM nor planned VRAM; when the
    carve-out is large, the user is told how to get it back."""
    integrated = [g for g in profile.gpus if g.integrated]
    if not integrated:
        return None
    gpu = max(integrated, key=lambda g: g.vram_total_bytes)
    reason = t("gpus.variant_integrated", name=gpu.name)
    if gpu.vram_total_bytes >= RESERVED_WARN_BYTES:
        warning = t("gpus.warn_reserved", name=gpu.name, reserved=f"{gpu.vram_total_bytes / (1 << 30):.1f}")
        return VariantChoice(cpu_variant, reason, (warning,), hint=t("gpus.hint_reserved"))
    return VariantChoice(cpu_variant, reason)


def _windows(profile: HardwareProfile) -> VariantChoice:
    nvidia = [g for g in profile.gpus if g.vendor == "nvidia"]
    others = _discrete_others(profile)
    if nvidia:
        driver = nvidia[0].driver_version
        major = driver_major(driver)
        ccs = [parse_cc(g.compute_capability) for g in nvidia]
        min_cc = min((cc for cc in ccs if cc is not None), default=None)
        if major is None:
            return VariantChoice("win-vulkan", t("doctor.variant_win_vulkan_nodriver"),
                                 (t("doctor.variant_driver_unknown", minimum=CUDA12_MIN_DRIVER),),
                                 str(CUDA12_MIN_DRIVER))
        if major >= CUDA13_MIN_DRIVER and min_cc is not None and min_cc >= CUDA13_MIN_CC:
            return VariantChoice("win-cuda-13", t("doctor.variant_win_cuda13", driver=driver),
                                 _jit_warnings(nvidia), str(CUDA13_MIN_DRIVER))
        if major >= CUDA12_MIN_DRIVER:
            return VariantChoice("win-cuda-12.4", t("doctor.variant_win_cuda12", driver=driver),
                                 _jit_warnings(nvidia), str(CUDA12_MIN_DRIVER))
        return VariantChoice("win-vulkan", t("doctor.variant_win_vulkan_old", driver=driver),
                             (t("doctor.variant_driver_old", driver=driver, minimum=CUDA12_MIN_DRIVER),),
                             str(CUDA12_MIN_DRIVER))
    if others:
        return VariantChoice("win-vulkan", t("doctor.variant_vulkan_other", name=others[0].name))
    return _integrated_only(profile, "win-cpu") or VariantChoice("win-cpu", t("doctor.variant_cpu"))


def _linux(profile: HardwareProfile) -> VariantChoice:
    if _arch(profile) != "x86_64":
        raise UnsupportedMachine(t("doctor.variant_unsupported", system="Linux", arch=_arch(profile)),
                                 t("doctor.hint_variant_unsupported"))
    nvidia = [g for g in profile.gpus if g.vendor == "nvidia"]
    others = _discrete_others(profile)
    if nvidia:
        return VariantChoice("ubuntu-vulkan-x64", t("doctor.variant_linux_nvidia", name=nvidia[0].name))
    if others:
        return VariantChoice("ubuntu-vulkan-x64", t("doctor.variant_vulkan_other", name=others[0].name))
    return _integrated_only(profile, "ubuntu-x64") or VariantChoice("ubuntu-x64", t("doctor.variant_cpu"))


def _macos(profile: HardwareProfile) -> VariantChoice:
    if _arch(profile) == "arm64":
        return VariantChoice("macos-arm64", t("doctor.variant_metal"))
    if _arch(profile) == "x86_64":
        return VariantChoice("macos-x64", t("doctor.variant_macos_x64"))
    raise UnsupportedMachine(t("doctor.variant_unsupported", system="macOS", arch=_arch(profile)),
                             t("doctor.hint_variant_unsupported"))


def choose_variant(profile: HardwareProfile) -> VariantChoice:
    """The release variant for this profile; ``UnsupportedMachine`` (exit 3) for an OS/CPU with no build."""
    system = profile.os.system
    if system == "Windows":
        if _arch(profile) not in ("x86_64", "arm64"):  # arm64 Windows runs the x64 builds under emulation
            raise UnsupportedMachine(t("doctor.variant_unsupported", system="Windows", arch=_arch(profile)),
                                     t("doctor.hint_variant_unsupported"))
        return _windows(profile)
    if system == "Linux":
        return _linux(profile)
    if system == "Darwin":
        return _macos(profile)
    raise UnsupportedMachine(t("doctor.variant_unsupported", system=system, arch=_arch(profile)),
                             t("doctor.hint_variant_unsupported"))


def cuda_toolkit_hint(profile: HardwareProfile, env: Mapping[str, str],
                      which: Callable[[str], str | None] = shutil.which) -> str | None:
    """A one-line offer to build a CUDA llama.cpp, when Linux + NVIDIA + a CUDA toolkit are all present.

    Upstream ships no Linux CUDA tarball (llama.cpp ``.github/workflows/release.yml``; docs/engine.md), so the kit
    installs the Vulkan build and only *offers* the faster from-source build; it never compiles on the user's
    behalf. ``env`` is the environment to look in (``os.environ`` from the caller) for ``CUDA_PATH`` /
    ``CUDA_HOME``.
    """
    if profile.os.system != "Linux" or not any(g.vendor == "nvidia" for g in profile.gpus):
        return None
    nvcc = which("nvcc")
    toolkit = nvcc or settings.first_set(env, "CUDA_PATH", "CUDA_HOME")
    if not toolkit:
        return None
    return t("engine.cuda_build_offer", toolkit=toolkit)


def check_engine(p: HardwareProfile) -> Check:
    """The doctor's engine row: the build this machine needs, and loudly when its driver is below the CUDA build's
    floor (llama.cpp would otherwise fall back to the CPU in silence)."""
    try:
        choice = choose_variant(p)
    except UnsupportedMachine as exc:
        return Check(id="engine", verdict="fail", reason=exc.message, hint=exc.hint or "")
    reason = t("doctor.engine_reason", variant=choice.name, why=choice.reason)
    if choice.warnings:
        driver_too_old = choice.name == "win-vulkan" and choice.min_driver is not None
        hint = choice.hint or (t("doctor.engine_hint_driver", minimum=choice.min_driver) if driver_too_old
                               else t("doctor.engine_hint_jit"))
        return Check(id="engine", verdict="warn", reason=join_sentences(reason, *choice.warnings), hint=hint)
    return Check(id="engine", verdict="ok", reason=reason, hint="")
