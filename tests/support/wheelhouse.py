"""A local wheelhouse for the runtime venv's offline path: ``payload/requirements.txt``, the kit and its deps.

Two parts, both under ``~/.cache/qwenkit-testbed/wheels/`` (shared by every checkout on the machine):

- ``<key>/``: the third-party wheels, downloaded once with pip (``pip download`` from the configured index; the test
  machine's only network). The key hashes the requirements, the kit's declared dependencies and the interpreter tag
  (wheels such as pydantic-core are per Python version).
- ``<key>.kit-<source>/``: what tests get. Hard links of those wheels plus the kit's own wheel, built from the
  checkout whose source files hash to ``<source>`` (``kit_source_key``). Published once by rename and never changed
  after: two checkouts (or two pytest processes) running at once each install their own code. Before, the kit wheel
  was rebuilt inside ``<key>/`` on every call, so one run could install another checkout's kit mid-test.

Each part is built under ``testbed.cache_lock`` in a staging folder renamed into place, so a killed run leaves no
half-filled wheelhouse behind; a folder of the same source is reused (no rebuild when nothing changed), and folders
unused for ``PRUNE_AFTER_S`` are removed.

On a Linux x86_64 machine the wheelhouse also holds the same set for the portable ``linux-x64`` bundle tags
(``bundle_platforms``: manylinux up to glibc 2.28). pip picks the newest tag it may, so the host-tagged set can
hold wheels an older glibc refuses (cryptography's ``manylinux_2_34``); with both sets, ``bundle create`` tests can
run ``pip download --no-index --find-links <wheelhouse> --platform …`` offline, as a bundle maker behind a
firewall would with their own wheel mirror. On every machine it also holds the ``windows-x64`` set for CPython 3.13
(the test bed's Windows CPython), for the bundle made for Windows and installed under Wine.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from bootstrap.bundle.wheels import missing_requirements, target_markers
from bootstrap.catalog.bundle_platforms import PLATFORMS
from tests.support import testbed

REPO = Path(__file__).resolve().parents[2]
KIT_DIST = "qwenclientkit"
_COMPLETE = ".complete"
PORTABLE = "linux-x64"  # the bundle platform whose wheels are added on a Linux x86_64 machine
WINDOWS = ("windows-x64", "3.13")  # and everywhere: the Windows bundle's wheels, for the test bed's Windows CPython
# What the kit's wheel is built from (pyproject.toml: the package, and templates/ and payload/ force-included; the
# metadata reads the README and the licence).
KIT_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "bootstrap", "templates", "payload")
PRUNE_AFTER_S = 7 * 24 * 3600  # a kit wheelhouse no run asked for in a week


def _kit_dependencies(repo: Path = REPO) -> list[str]:
    with open(repo / "pyproject.toml", "rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"])


def wheelhouse_key(repo: Path = REPO) -> str:
    """What the downloaded wheels depend on: requirements, kit dependencies, Python version and platform."""
    h = hashlib.sha256((repo / "payload" / "requirements.txt").read_bytes())
    h.update("\n".join(_kit_dependencies(repo)).encode())
    h.update(f"{sys.implementation.cache_tag}-{sys.platform}-{platform.machine()}".encode())
    if _portable_tags():
        h.update(("portable:" + ",".join(_portable_tags())).encode())
    h.update(("windows:" + ",".join(WINDOWS)).encode())
    return h.hexdigest()[:16]


def kit_source_key(repo: Path = REPO) -> str:
    """A hash of every file the kit's wheel is built from (paths and bytes; caches skipped): equal keys, equal
    wheels. Cheap enough to compute on every call (a few hundred small files)."""
    h = hashlib.sha256()
    for name in KIT_SOURCES:
        top = repo / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []
        for path in files:
            rel = path.relative_to(repo)
            if "__pycache__" in rel.parts or path.suffix in (".pyc", ".pyo"):
                continue
            data = path.read_bytes()
            h.update(f"{rel.as_posix()}\0{len(data)}\0".encode())
            h.update(data)
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


def build_kit_wheel(dest: Path, repo: Path = REPO) -> Path:
    """The checkout at ``repo`` as a wheel in ``dest`` (hatchling from the test venv: ``--no-build-isolation``, no
    network)."""
    with tempfile.TemporaryDirectory(prefix="kit-wheel-") as tmp:
        _pip("wheel", "--no-deps", "--no-build-isolation", "-w", tmp, str(repo))
        (built,) = Path(tmp).glob(f"{KIT_DIST}-*.whl")
        final = dest / built.name
        shutil.copyfile(built, dest / f".{built.name}.tmp")
        os.replace(dest / f".{built.name}.tmp", final)
    return final


@contextlib.contextmanager
def _staging(final: Path) -> Iterator[Path]:
    """A fresh sibling of ``final`` that becomes ``final`` (by rename) when the block succeeds, else vanishes."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    tmp.chmod(0o755)  # mkdtemp makes 0700; other users of the cache read it
    try:
        yield tmp
        (tmp / _COMPLETE).write_text("ok\n")
        if final.exists():  # an incomplete leftover (a complete one is never rebuilt)
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _third_party(root: Path, repo: Path) -> Path:
    """``<root>/<key>``: the third-party wheels, downloaded once (the caller holds the lock)."""
    final = root / wheelhouse_key(repo)
    if (final / _COMPLETE).is_file():
        return final
    with _staging(final) as tmp, tempfile.TemporaryDirectory(prefix="kit-for-deps-") as kit_dir:
        kit = build_kit_wheel(Path(kit_dir), repo)  # only to resolve what the kit declares; not kept here
        # One resolve for both, so the set is consistent: the pinned SDK and everything the kit declares.
        _pip("download", "-d", str(tmp), "-r", str(repo / "payload" / "requirements.txt"), str(kit))
        tags = _portable_tags()
        if tags:
            version = f"{sys.version_info.major}.{sys.version_info.minor}"
            _download_for(tags, version, tmp, repo, kit)
        _windows_set(tmp, repo, kit)
        for stray in tmp.glob(f"{KIT_DIST}-*.whl"):  # pip download copies the local kit wheel in
            stray.unlink()
    return final


def _download_for(tags: tuple[str, ...], version: str, dest: Path, repo: Path, kit: Path, *more: str) -> None:
    platforms = [arg for tag in tags for arg in ("--platform", tag)]
    _pip("download", "--only-binary=:all:", "--implementation", "cp", "--python-version", version, *platforms,
         "-d", str(dest), "-r", str(repo / "payload" / "requirements.txt"), str(kit), *more)


def _windows_set(dest: Path, repo: Path, kit: Path) -> None:
    """The ``windows-x64`` wheels for the Windows CPython of the test bed, for the bundle made for Windows and
    installed under Wine (tests/e2e/test_windows_bundle.py). pip reads markers against this machine, not the
    target (pip issue 11664), so what the Windows markers add (tqdm's colorama) is fetched in a second pass, as
    ``bundle create`` does (``bootstrap.bundle.wheels``)."""
    target, version = PLATFORMS[WINDOWS[0]], WINDOWS[1]
    with tempfile.TemporaryDirectory(prefix="win-wheels-") as work:
        staging = Path(work)
        _download_for(target.pip_platforms, version, staging, repo, kit)
        missing = missing_requirements(sorted(staging.glob("*.whl")), target_markers(target, version))
        if missing:
            _download_for(target.pip_platforms, version, staging, repo, kit, *missing)
        for wheel in staging.glob("*.whl"):
            if not (dest / wheel.name).exists():
                shutil.move(str(wheel), dest / wheel.name)


def _link(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def _prune(root: Path, keep: Path) -> None:
    """Remove kit wheelhouses no run asked for in ``PRUNE_AFTER_S`` (their ``.complete`` is touched on use), and
    staging folders a killed run left (the caller holds the lock, so none is in progress)."""
    now = time.time()
    for folder in root.glob("*.kit-*"):
        if folder.name.startswith("."):  # a staging folder: maybe another interpreter's build, under its own lock
            continue
        marker = folder / _COMPLETE
        try:
            stale = folder != keep and now - marker.stat().st_mtime > PRUNE_AFTER_S
        except FileNotFoundError:
            stale = True  # not published: a leftover
        if stale:
            shutil.rmtree(folder, ignore_errors=True)
    for leftover in root.glob(".*.*"):
        if leftover.is_dir() and now - leftover.stat().st_mtime > 3600:
            shutil.rmtree(leftover, ignore_errors=True)


def provide_wheelhouse(repo: Path = REPO) -> Path:
    """The wheelhouse for the checkout at ``repo``: the shared third-party wheels (downloaded on first use) and
    this checkout's kit wheel, in a folder of its own that no other checkout's run changes."""
    root = testbed.cache_dir() / "wheels"
    root.mkdir(parents=True, exist_ok=True)
    key = wheelhouse_key(repo)
    final = root / f"{key}.kit-{kit_source_key(repo)}"
    with testbed.cache_lock(f"wheels-{key}"):
        if (final / _COMPLETE).is_file():
            os.utime(final / _COMPLETE)  # in use: not pruned
            return final
        shared = _third_party(root, repo)
        with _staging(final) as tmp:
            for wheel in shared.glob("*.whl"):
                if not wheel.name.startswith(f"{KIT_DIST}-"):  # one an older test bed put there is not ours
                    _link(wheel, tmp / wheel.name)
            build_kit_wheel(tmp, repo)
        _prune(root, final)
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
