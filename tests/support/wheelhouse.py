"""A local wheelhouse for the runtime venv's offline path: ``payload/requirements.txt``, the kit and its deps.

Built once with pip (``pip download`` from the configured index; the test machine's only network) and cached under
``~/.cache/qwenkit-testbed/wheels/<key>``, where the key hashes the requirements, the kit's declared dependencies
and the interpreter tag (wheels such as pydantic-core are per Python version). The kit's own wheel is rebuilt
from this checkout on every call (~2 s with hatchling, no build isolation) so tests install the code under test.
Both steps publish by rename, so a killed run leaves no half-filled wheelhouse behind.

On a Linux x86_64 machine the wheelhouse also holds the same set for the portable ``linux-x64`` bundle tags
(``bundle_platforms``: manylinux up to glibc 2.28). pip picks the newest tag it may, so the host-tagged set can
hold wheels an older glibc refuses (cryptography's ``manylinux_2_34``); with both sets, ``bundle create`` tests can
run ``pip download --no-index --find-links <wheelhouse> --platform …`` offline, as a bundle maker behind a
firewall would with their own wheel mirror.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from bootstrap.catalog.bundle_platforms import PLATFORMS
from tests.support import testbed

REPO = Path(__file__).resolve().parents[2]
KIT_DIST = "qwenclientkit"
_COMPLETE = ".complete"
PORTABLE = "linux-x64"  # the bundle platform whose wheels are added on a Linux x86_64 machine


def _kit_dependencies() -> list[str]:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"])


def wheelhouse_key() -> str:
    """What the downloaded wheels depend on: requirements, kit dependencies, Python version and platform."""
    h = hashlib.sha256((REPO / "payload" / "requirements.txt").read_bytes())
    h.update("\n".join(_kit_dependencies()).encode())
    h.update(f"{sys.implementation.cache_tag}-{sys.platform}-{platform.machine()}".encode())
    if _portable_tags():
        h.update(("portable:" + ",".join(_portable_tags())).encode())
    return h.hexdigest()[:16]


def _portable_tags() -> tuple[str, ...]:
    """The ``linux-x64`` bundle platform's wheel tags when this machine is one, else none."""
    if sys.platform != "linux" or platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    return PLATFORMS[PORTABLE].pip_platforms


def _pip(*args: str) -> None:
    """``python -m pip`` of the test interpreter (the venv under test is built from the same Python)."""
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")


def build_kit_wheel(dest: Path) -> Path:
    """This checkout as a wheel (hatchling from the test venv: ``--no-build-isolation``, no network)."""
    with tempfile.TemporaryDirectory(prefix="kit-wheel-") as tmp:
        _pip("wheel", "--no-deps", "--no-build-isolation", "-w", tmp, str(REPO))
        (built,) = Path(tmp).glob(f"{KIT_DIST}-*.whl")
        final = dest / built.name
        shutil.copyfile(built, dest / f".{built.name}.tmp")
        os.replace(dest / f".{built.name}.tmp", final)
    return final


def provide_wheelhouse() -> Path:
    """The cached wheelhouse (downloaded on first use), with a fresh kit wheel in it."""
    final = testbed.cache_dir() / "wheels" / wheelhouse_key()
    if not (final / _COMPLETE).is_file():
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            kit = build_kit_wheel(tmp)
            # One resolve for both, so the set is consistent: the pinned SDK and everything the kit declares.
            _pip("download", "-d", str(tmp), "-r", str(REPO / "payload" / "requirements.txt"), str(kit))
            tags = _portable_tags()
            if tags:
                version = f"{sys.version_info.major}.{sys.version_info.minor}"
                platforms = [arg for tag in tags for arg in ("--platform", tag)]
                _pip("download", "--only-binary=:all:", "--implementation", "cp", "--python-version", version,
                     *platforms, "-d", str(tmp), "-r", str(REPO / "payload" / "requirements.txt"), str(kit))
            (tmp / _COMPLETE).write_text("ok\n")
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    # Replace the kit wheel by rename (another process may be installing from this folder right now), then drop
    # wheels of other kit versions.
    fresh = build_kit_wheel(final)
    for old in final.glob(f"{KIT_DIST}-*.whl"):
        if old != fresh:
            old.unlink(missing_ok=True)
    return final


def kit_wheel(wheelhouse: Path) -> Path:
    """The kit's wheel inside ``wheelhouse``."""
    (wheel,) = wheelhouse.glob(f"{KIT_DIST}-*.whl")
    return wheel


def wheelhouse_size(wheelhouse: Path) -> tuple[int, int]:
    """(number of wheel files, total bytes)."""
    files = [p for p in wheelhouse.iterdir() if p.suffix == ".whl"]
    return len(files), sum(p.stat().st_size for p in files)


@pytest.fixture(scope="session")
def wheelhouse() -> Path:
    """Folder of wheels covering ``payload/requirements.txt`` and the kit, for ``--no-index --find-links``."""
    return provide_wheelhouse()
