"""The wheelhouse is shared by every checkout on the machine; the kit's own wheel in it must be each checkout's own.

Each test lays out small checkouts (the files the kit's wheel is built from, and ``tests/support`` with this very
``wheelhouse.py``) and runs ``provide_wheelhouse()`` in them as separate processes, as two worktrees' pytest runs
do. The cache is a temporary one, seeded with hard links of the real third-party wheels (no download). Before,
the kit wheel was rebuilt inside the one shared folder on every call: the second checkout's call replaced the
first's wheel under it, and the first went on installing the second's code.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.support.hub_fixtures import REPO_ROOT
from tests.support.wheelhouse import _COMPLETE, KIT_DIST, KIT_SOURCES, kit_wheel, wheelhouse_key

MARKER = "bootstrap/_checkout_marker.py"
_PROBE = (
    "import hashlib, json, sys\n"
    "from tests.support.wheelhouse import provide_wheelhouse, kit_wheel\n"
    "folder = provide_wheelhouse()\n"
    "wheel = kit_wheel(folder)\n"
    "print(json.dumps({'folder': str(folder), 'wheel': str(wheel),\n"
    "                  'sha': hashlib.sha256(wheel.read_bytes()).hexdigest()}))\n"
)


@pytest.fixture
def cache(tmp_path: Path, wheelhouse: Path) -> Path:
    """A test-bed cache holding the third-party wheels (hard links of the real ones) and nothing else."""
    root = tmp_path / "cache"
    shared = root / "wheels" / wheelhouse_key()
    shared.mkdir(parents=True)
    for wheel in wheelhouse.glob("*.whl"):
        if not wheel.name.startswith(f"{KIT_DIST}-"):
            os.link(wheel, shared / wheel.name)
    (shared / _COMPLETE).write_text("ok\n")
    return root


def checkout(where: Path) -> Path:
    """A checkout: the kit's sources and the test support, with a marker of its own (so its source key is new)."""
    where.mkdir()
    for name in KIT_SOURCES:
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, where / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src.is_file():
            shutil.copy2(src, where / name)
    shutil.copytree(REPO_ROOT / "tests" / "support", where / "tests" / "support",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(REPO_ROOT / "tests" / "__init__.py", where / "tests" / "__init__.py")
    (where / MARKER).write_text(f"CHECKOUT = {where.name!r}  # {uuid.uuid4()}\n", encoding="utf-8")
    return where


def start(tree: Path, cache: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "QWENKIT_TESTBED_CACHE": str(cache), "PYTHONPATH": str(tree)}
    return subprocess.Popen([sys.executable, "-c", _PROBE], cwd=tree, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def answer(proc: subprocess.Popen[str]) -> dict[str, str]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def marker_in(wheel: Path) -> str | None:
    with zipfile.ZipFile(wheel) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        return zf.read(MARKER).decode() if MARKER in names else None


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_two_checkouts_each_get_their_own_kit_wheel(tmp_path: Path, cache: Path) -> None:
    a, b = checkout(tmp_path / "a"), checkout(tmp_path / "b")
    got_a = answer(start(a, cache))
    got_b = answer(start(b, cache))
    folder_a, folder_b = Path(got_a["folder"]), Path(got_b["folder"])
    assert folder_a != folder_b
    # a's wheelhouse is as a's run left it: the same wheel, with a's code in it
    assert kit_wheel(folder_a) == Path(got_a["wheel"]) and sha(kit_wheel(folder_a)) == got_a["sha"]
    assert "CHECKOUT = 'a'" in (marker_in(kit_wheel(folder_a)) or "")
    assert "CHECKOUT = 'b'" in (marker_in(kit_wheel(folder_b)) or "")
    # the third-party wheels are the shared ones, linked, not copied
    shared = cache / "wheels" / wheelhouse_key()
    for folder in (folder_a, folder_b):
        others = sorted(w.name for w in folder.glob("*.whl") if not w.name.startswith(f"{KIT_DIST}-"))
        assert others == sorted(w.name for w in shared.glob("*.whl")) and others
        assert all((folder / n).stat().st_ino == (shared / n).stat().st_ino for n in others)
    assert not list(shared.glob(f"{KIT_DIST}-*.whl"))  # no kit wheel in the shared part to be swapped
    # a second run of a, unchanged, reuses its wheelhouse as it is
    again = answer(start(a, cache))
    assert again == got_a and (folder_a / _COMPLETE).is_file()


def test_concurrent_runs_of_one_checkout_publish_one_intact_wheelhouse(tmp_path: Path, cache: Path) -> None:
    tree = checkout(tmp_path / "c")
    runs = [start(tree, cache) for _ in range(3)]
    got = [answer(p) for p in runs]
    assert len({g["folder"] for g in got}) == 1 and len({g["sha"] for g in got}) == 1
    folder = Path(got[0]["folder"])
    assert sha(kit_wheel(folder)) == got[0]["sha"] and "CHECKOUT = 'c'" in (marker_in(kit_wheel(folder)) or "")
    assert (folder / _COMPLETE).is_file()
    assert not [p.name for p in (cache / "wheels").iterdir() if p.name.startswith(".")]  # no staging left
