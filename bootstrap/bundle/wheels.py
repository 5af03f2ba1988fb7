"""The runtime venv's wheels for an offline bundle: ``payload/wheels/<folder>/`` per target platform.

``pip download`` does the resolving, once per wheels folder and Python version, with the platform's exact wheel
tags (``bundle_platforms``) and ``--only-binary=:all:`` (pip refuses ``--platform`` without it: an sdist would have
to be built on this machine). Each run lands in a fresh staging folder, so what it leaves there is exactly the set
that version needs; the folder's files are the union over the versions.

Why a second pass: pip evaluates environment markers against the machine it runs on, not the ``--platform`` asked
for (pip issue 11664, still open with pip 26.3: ``pip download tqdm --platform win_amd64`` on Linux leaves out
``colorama; platform_system == "Windows"``). The staged wheels' ``Requires-Dist`` lines are therefore evaluated
again with the target's markers and whatever is missing is downloaded too, until nothing is.

The source of packages: ``QWENKIT_WHEELS`` (a local wheelhouse, no index at all), else ``QWENKIT_PIP_INDEX_URL``,
else pip's own configuration (a ``pip.conf`` mirror is common where PyPI is slow).

pip itself: this interpreter's when it has one (a source checkout's venv). The frozen setup carries no pip, so
there (and for a Python without pip) a throwaway venv is made with the system's Python: ``python -m venv`` installs
pip from the standard library's ``ensurepip`` with no network (measured here: 6.5 s, 25 MiB with Python 3.11). It
goes in the system's temporary folder, not in the bundle's work folder: a FAT32 USB stick mounted by udisks2 has
``showexec`` (udisks ``data/builtin_mount_options.conf``: only ``.exe``/``.com``/``.bat`` files are executable), so a
venv's ``bin/python`` there could not run; it is removed before any model byte is fetched.
"""

from __future__ import annotations

import email.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bootstrap.catalog.bundle_platforms import TargetPlatform
from bootstrap.core import settings
from bootstrap.core.atomic_file import copy_atomic
from bootstrap.core.console import info, t, warn
from bootstrap.core.errors import SourceError, UnsupportedMachine
from bootstrap.core.hashing import sha256_file
from bootstrap.core.processes import run_captured, run_command
from bootstrap.fetch.download import holds
from bootstrap.place.runtime_venv import (
    KIT_DIST,
    child_env,
    default_kit_source,
    find_python,
    last_error,
    make_venv,
    requirements_file,
    venv_python,
)

PIP_TIMEOUT = 3600  # seconds for one pip run: a slow mirror and ~40 wheels
MAX_ROUNDS = 4  # marker passes; each adds a missing dependency's own dependencies
# Room kept for one wheels folder and Python version before pip has said what it fetches (measured: openai 2.54 +
# the kit's dependencies for cp311 manylinux are 42 files, ~25 MiB; the margin covers bigger Windows wheels).
ESTIMATE = 64 << 20
_NORMALIZE = re.compile(r"[-_.]+")
# Marker values per OS (PEP 508 "Environment Markers"; values as CPython reports them on x86_64).
_OS_MARKERS: dict[str, dict[str, str]] = {
    "Windows": {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt"},
    "Linux": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"},
    "Darwin": {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix"},
}


@dataclass(frozen=True)
class WheelFile:
    """A wheel placed in the bundle."""

    folder: str  # payload/wheels/<folder>
    path: Path
    size: int
    sha256: str


def normalize(name: str) -> str:
    """PEP 503 name normalization (wheel file names use ``_``, requirements ``-``)."""
    return _NORMALIZE.sub("-", name).lower()


def target_markers(target: TargetPlatform, python_version: str) -> dict[str, str]:
    """PEP 508 marker environment of a machine of ``target`` running CPython ``python_version``."""
    machine = "AMD64" if target.system == "Windows" else ("arm64" if "arm64" in target.name else "x86_64")
    return {**_OS_MARKERS[target.system], "platform_machine": machine, "python_version": python_version,
            "python_full_version": f"{python_version}.0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": ""}


def _requires(wheel: Path) -> list[str]:
    """``Requires-Dist`` lines of a wheel's METADATA (PEP 566)."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            name = next((n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None)
            if name is None:
                return []
            text = zf.read(name).decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile):
        return []
    return email.parser.Parser().parsestr(text, headersonly=True).get_all("Requires-Dist") or []


def missing_requirements(wheels: Sequence[Path], markers: Mapping[str, str]) -> list[str]:
    """Requirements the wheels need on the target (markers evaluated for it) that no wheel here provides."""
    from packaging.requirements import InvalidRequirement, Requirement  # a dependency of huggingface_hub

    have = {normalize(w.name.split("-", 1)[0]) for w in wheels}
    missing: dict[str, str] = {}
    for wheel in wheels:
        for line in _requires(wheel):
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate(dict(markers)):
                continue
            key = normalize(req.name)
            if key not in have and key not in missing:
                extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
                missing[key] = f"{req.name}{extras}{req.specifier}"
    return list(missing.values())


def _last_error(text: str) -> str:
    return (last_error(text.splitlines()) or "?")[:300]


def _has_pip(python: str, env: dict[str, str]) -> bool:
    return run_command([python, "-I", "-m", "pip", "--version"], timeout=120, env=env).returncode == 0


@contextmanager
def pip_python(env: dict[str, str]) -> Iterator[str]:
    """The interpreter that runs pip while the wheels are made: this one when it has pip, else a throwaway venv's
    (made with the system's Python, removed on the way out)."""
    if not getattr(sys, "frozen", False) and _has_pip(sys.executable, env):
        yield sys.executable
        return
    found = find_python()  # never the frozen setup itself
    if found is None:
        raise UnsupportedMachine(t("bcreate.err_no_python"), t("bcreate.hint_no_python"))
    info(t("bcreate.pip_venv", python=found.path))
    with tempfile.TemporaryDirectory(prefix="qwenkit-pip-", ignore_cleanup_errors=True) as tmp:
        venv = Path(tmp) / "venv"
        make_venv(found.path, venv, env)
        yield str(venv_python(venv))


def index_args(env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """pip's package source: the offline wheelhouse, the configured index, or pip's defaults."""
    wheels = settings.wheels_dir(env)
    if wheels:
        return ("--no-index", "--find-links", wheels)
    index = settings.pip_index_url(env)
    return ("--index-url", index) if index else ()


def _run(argv: list[str], env: dict[str, str], what: str) -> None:
    try:
        proc = run_captured(argv, timeout=PIP_TIMEOUT, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SourceError(t("bcreate.err_pip", what=what, detail=str(exc).splitlines()[0][:300]),
                          t("bcreate.hint_pip")) from exc
    if proc.returncode != 0:
        raise SourceError(t("bcreate.err_pip", what=what, detail=_last_error(proc.stdout + proc.stderr)),
                          t("bcreate.hint_pip"))


def kit_wheel(python: str, work: Path, env: dict[str, str]) -> Path:
    """This kit as a wheel: found among the offline wheels or shipped ones, else built from this checkout, else
    (pip or pipx installed it: no checkout, no wheel at hand) packed again from its installed files."""
    wheels = settings.wheels_dir()
    source = default_kit_source(Path(wheels) if wheels else None) or installed_wheel(work / "installed")
    if source is None:
        raise SourceError(t("bcreate.err_no_kit"), t("bcreate.hint_no_kit"))
    if source.suffix == ".whl":
        return source
    out = work / "kit"
    out.mkdir(parents=True, exist_ok=True)
    _run([python, "-I", "-m", "pip", "wheel", "--disable-pip-version-check", "--no-input", "--no-deps",
          *index_args(), "-w", str(out), str(source)], env, KIT_DIST)
    built = sorted(out.glob(f"{KIT_DIST}-*.whl"))
    if not built:
        raise SourceError(t("bcreate.err_no_kit"), t("bcreate.hint_no_kit"))
    return built[-1]


# Files of an installed distribution that the installer wrote, not the wheel (PEP 376, PEP 610, PEP 627).
_INSTALLER_FILES = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")


def installed_wheel(dest: Path, dist_name: str = KIT_DIST) -> Path | None:
    """The installed kit packed again as the wheel it was installed from: its files under site-packages and its
    ``.dist-info`` (``METADATA``, ``WHEEL``, ``entry_points.txt``…) with a new ``RECORD`` (PEP 427: urlsafe base64
    SHA-256 without padding, and the size). Bytecode, console scripts (pip writes them again from
    ``entry_points.txt``) and the installer's own records are left out. None when the kit is not installed that way
    (an editable install lists no package files: it runs from its checkout, which ``default_kit_source`` takes)."""
    import base64
    import hashlib
    from importlib import metadata

    try:
        dist = metadata.distribution(dist_name)
        tag = next((line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines()
                    if line.startswith("Tag:")), None)
    except metadata.PackageNotFoundError:
        return None
    files = [f for f in dist.files or () if ".." not in f.parts and "__pycache__" not in f.parts
             and f.suffix != ".pyc" and not (f.parts[0].endswith(".dist-info") and f.name in _INSTALLER_FILES)]
    if tag is None or not any(f.parts[0] == "bootstrap" for f in files):
        return None
    info_dir = next((f.parts[0] for f in files if f.parts[0].endswith(".dist-info")), None)
    if info_dir is None:
        return None
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / f"{dist_name}-{dist.version}-{tag}.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(files, key=str):
            data = Path(str(dist.locate_file(f))).read_bytes()
            zf.writestr(f.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{f.as_posix()},sha256={digest},{len(data)}")
        record.append(f"{info_dir}/RECORD,,")
        zf.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return wheel


def _download(python: str, target: TargetPlatform, version: str, dest: Path, reqs: Sequence[str],
              env: dict[str, str]) -> None:
    tags = [arg for tag in target.pip_platforms for arg in ("--platform", tag)]
    argv = [python, "-I", "-m", "pip", "download", "--disable-pip-version-check", "--no-input", "--progress-bar",
            "off", "--only-binary=:all:", "--implementation", "cp", "--python-version", version, *tags,
            *index_args(), "-d", str(dest), *reqs]
    _run(argv, env, f"{target.wheels} / Python {version}")


def _stage(python: str, target: TargetPlatform, version: str, kit: Path, staging: Path,
           env: dict[str, str]) -> list[Path]:
    """Every wheel ``version`` needs on ``target``, in ``staging`` (emptied first)."""
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    _download(python, target, version, staging, ["-r", str(requirements_file()), str(kit)], env)
    if not (staging / kit.name).is_file():
        copy_atomic(kit, staging / kit.name)
    markers = target_markers(target, version)
    for _ in range(MAX_ROUNDS):
        missing = missing_requirements(sorted(staging.glob("*.whl")), markers)
        if not missing:
            break
        _download(python, target, version, staging, missing, env)
    else:
        warn(t("bcreate.wheels_markers", folder=target.wheels, python=version))
    return sorted(staging.glob("*.whl"))


def download_wheels(out: Path, targets: Sequence[TargetPlatform], pythons: Sequence[str],
                    work: Path) -> list[WheelFile]:
    """Fill ``out/payload/wheels/<folder>`` for each target's folder and each Python version; the placed wheels."""
    explicit = bool(index_args())
    env = child_env(os.environ, isolate_config=explicit, frozen=bool(getattr(sys, "frozen", False)))
    work.mkdir(parents=True, exist_ok=True)
    folders = list({tp.wheels: tp for tp in targets}.values())
    placed: dict[Path, WheelFile] = {}
    with pip_python(env) as python, tempfile.TemporaryDirectory(prefix="kit-", dir=work) as tmp:
        kit = kit_wheel(python, Path(tmp), env)
        for target in folders:
            final_dir = out / "payload" / "wheels" / target.wheels
            final_dir.mkdir(parents=True, exist_ok=True)
            for version in pythons:
                info(t("bcreate.wheels", folder=target.wheels, python=version))
                staging = work / f"wheels-{target.wheels}-{version}"
                for staged in _stage(python, target, version, kit, staging, env):
                    final = final_dir / staged.name
                    if final not in placed:
                        size, digest = staged.stat().st_size, sha256_file(staged)
                        if not holds(final, size, digest):
                            os.replace(staged, final)
                        placed[final] = WheelFile(target.wheels, final, size, digest)
                shutil.rmtree(staging, ignore_errors=True)
    return list(placed.values())
