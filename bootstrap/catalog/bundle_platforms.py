"""The target platforms an offline bundle can be made for, and which of them this machine is.

A platform names what a bundle must carry for one kind of machine: the engine variants (``payload/engines.toml``
names; the first that the machine's hardware selects and the bundle holds is installed) and the runtime venv's
wheels, which ``pip download`` fetches for the platform's wheel tags (``payload/wheels/<wheels>/``; machines that
share an OS and CPU share the folder).

Wheel tags: ``pip download --platform`` takes exact tags and does not expand a manylinux level to the older ones
(checked with pip 26.3: ``manylinux_2_28_x86_64`` alone does not accept jiter's ``manylinux2014_x86_64`` wheel), so
each platform lists every level it accepts. Baselines: glibc 2.28 (RHEL 8, Debian 10, Ubuntu 20.04 has 2.31),
macOS 11 on arm64 (the first arm64 macOS), macOS 10.9 on x86_64.
"""

from __future__ import annotations

from dataclasses import dataclass

from bootstrap.core.console import join_names, t
from bootstrap.core.errors import UsageError


def _manylinux_x86_64() -> tuple[str, ...]:
    levels = [f"manylinux_2_{minor}_x86_64" for minor in range(28, 4, -1)]
    return (*levels, "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")


def _macos(arch: str, oldest: tuple[int, int]) -> tuple[str, ...]:
    """macOS wheel tags from ``oldest`` up to 11.0 (what every supported macOS accepts), newest first."""
    versions = [(11, 0)] + [(10, minor) for minor in range(16, oldest[1] - 1, -1)] if oldest[0] == 10 else [(11, 0)]
    tags = []
    for major, minor in versions:
        tags += [f"macosx_{major}_{minor}_{arch}", f"macosx_{major}_{minor}_universal2"]
    return tuple(tags)


@dataclass(frozen=True)
class TargetPlatform:
    """One kind of target machine."""

    name: str
    system: str  # platform.system(): "Linux" | "Windows" | "Darwin"
    variants: tuple[str, ...]  # engine variants carried, preferred first
    wheels: str  # the wheels folder: payload/wheels/<wheels>/
    pip_platforms: tuple[str, ...]


_LINUX_TAGS = _manylinux_x86_64()
_WIN_TAGS = ("win_amd64",)
PLATFORMS: dict[str, TargetPlatform] = {p.name: p for p in (
    TargetPlatform("linux-x64", "Linux", ("ubuntu-vulkan-x64", "ubuntu-x64"), "linux-x64", _LINUX_TAGS),
    TargetPlatform("linux-x64-cpu", "Linux", ("ubuntu-x64",), "linux-x64", _LINUX_TAGS),
    TargetPlatform("linux-x64-vulkan", "Linux", ("ubuntu-vulkan-x64",), "linux-x64", _LINUX_TAGS),
    TargetPlatform("windows-x64", "Windows", ("win-cuda-12.4", "win-vulkan", "win-cpu"), "windows-x64", _WIN_TAGS),
    TargetPlatform("windows-x64-cuda12", "Windows", ("win-cuda-12.4",), "windows-x64", _WIN_TAGS),
    TargetPlatform("windows-x64-cuda13", "Windows", ("win-cuda-13",), "windows-x64", _WIN_TAGS),
    TargetPlatform("windows-x64-vulkan", "Windows", ("win-vulkan",), "windows-x64", _WIN_TAGS),
    TargetPlatform("windows-x64-cpu", "Windows", ("win-cpu",), "windows-x64", _WIN_TAGS),
    TargetPlatform("macos-arm64", "Darwin", ("macos-arm64",), "macos-arm64", _macos("arm64", (11, 0))),
    TargetPlatform("macos-x64", "Darwin", ("macos-x64",), "macos-x64", _macos("x86_64", (10, 9))),
)}

# When the variant this machine's hardware selects is not in the bundle, the next one that still runs here
# (a newer driver runs the CUDA 12.4 build; Vulkan runs on any GPU driver; the CPU build runs everywhere).
VARIANT_FALLBACK: dict[str, str] = {
    "win-cuda-13": "win-cuda-12.4", "win-cuda-12.4": "win-vulkan", "win-vulkan": "win-cpu",
    "ubuntu-vulkan-x64": "ubuntu-x64",
}


def target(name: str) -> TargetPlatform:
    """The platform called ``name``; ``UsageError`` listing the known ones."""
    found = PLATFORMS.get(name.strip().lower())
    if found is None:
        raise UsageError(t("bundle.err_platform", platform=name, known=join_names(PLATFORMS)))
    return found


def _arch(machine: str) -> str:
    m = machine.lower()
    return {"amd64": "x64", "x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(m, m)


def wheels_folder(system: str, machine: str) -> str | None:
    """This machine's wheels folder name (``linux-x64`` …), ``None`` for an OS/CPU no bundle carries.

    Windows on arm64 runs the x64 engine and x64 Python under emulation, so it takes the x64 wheels.
    """
    arch = _arch(machine)
    if system == "Windows":
        return "windows-x64" if arch in ("x64", "arm64") else None
    if system == "Linux":
        return "linux-x64" if arch == "x64" else None
    if system == "Darwin":
        return f"macos-{arch}" if arch in ("x64", "arm64") else None
    return None


def host_platform(system: str, machine: str) -> str | None:
    """The default ``--platform`` for a bundle made on this machine (it can install itself from it)."""
    folder = wheels_folder(system, machine)
    return folder if folder in PLATFORMS else None


def usable_variant(wanted: str, available: frozenset[str] | set[str]) -> str | None:
    """``wanted`` when available, else the first fallback that is; ``None`` when none is."""
    variant: str | None = wanted
    while variant is not None and variant not in available:
        variant = VARIANT_FALLBACK.get(variant)
    return variant
