"""``scripts/check_glibc.py`` on real binaries: the test bed's llama-server and this Python, whose requirements must
be what binutils reads and within this machine's glibc, and a planted ELF that needs more than the floor."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "check_glibc.py"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and ELF files: Linux only")


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_glibc", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_glibc"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


check_glibc = _module()


def _machine_glibc() -> tuple[int, ...]:
    """This machine's glibc (``os.confstr``: "glibc 2.36"), the same value ``ldd --version`` prints."""
    name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    assert name == "glibc"
    ldd = subprocess.run(["ldd", "--version"], capture_output=True, text=True, check=False).stdout
    assert version in ldd.splitlines()[0]
    return check_glibc.parse_version(version)


def _python_elves() -> list[Path]:
    """The interpreter, and ``libpython`` when it is a shared build (what PyInstaller bundles)."""
    found = [Path(os.path.realpath(sys.executable))]
    lib = Path(sysconfig.get_config_var("LIBDIR") or "/", sysconfig.get_config_var("INSTSONAME") or "-")
    if lib.is_file():
        found.append(lib)
    return found


def _readelf_versions(path: Path) -> set[tuple[int, ...]] | None:
    """binutils' reading of the same section, to check the parser against (None where readelf is absent)."""
    if shutil.which("readelf") is None:
        return None
    out = subprocess.run(["readelf", "-V", "-W", str(path)], capture_output=True, text=True, check=True).stdout
    need = out.split("Version needs section", 1)[1] if "Version needs section" in out else ""
    return {check_glibc.parse_version(v) for v in re.findall(r"Name: GLIBC_([\d.]+)", need)}


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("which", ["llama-server", "python"])
def test_real_binaries_need_at_most_this_machines_glibc(which: str, llama_server: Path) -> None:
    paths = [llama_server] if which == "llama-server" else _python_elves()
    machine = _machine_glibc()
    for path in paths:
        needs = check_glibc.glibc_needs(path)
        assert needs.highest is not None and (2, 2) <= needs.highest <= machine, (path, needs.versions)
        expected = _readelf_versions(path)
        if expected is not None:
            assert set(needs.versions) == expected, path
    ok = _run("--max", check_glibc.shown(machine), *map(str, paths))
    assert ok.returncode == 0, ok.stderr
    # the floor one step below what the files really need: the same files now fail, each named
    highest = max(check_glibc.glibc_needs(p).highest for p in paths)
    below = (highest[0], highest[1] - 1)
    failed = _run("--max", check_glibc.shown(below), *map(str, paths))
    assert failed.returncode == 1
    assert f"needs GLIBC_{check_glibc.shown(highest)} > {check_glibc.shown(below)}" in failed.stderr


def test_a_planted_requirement_above_the_floor_fails(llama_server: Path, tmp_path: Path) -> None:
    """A real binary whose highest requirement is rewritten in its string table to GLIBC_9.x, in a folder as a
    onedir build lays them out: the folder walk finds it among harmless files."""
    data = llama_server.read_bytes()
    real = check_glibc.glibc_needs(llama_server).highest
    old = f"\0GLIBC_{check_glibc.shown(real)}\0".encode()
    assert data.count(old) == 1
    planted = tmp_path / "onedir 安装" / "_internal" / "libplanted.so"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(data.replace(old, old.replace(b"GLIBC_2.", b"GLIBC_9.")))
    (planted.parent / "base_library.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # not an ELF: skipped
    shutil.copyfile(sys.executable, planted.parent.parent / "python-copy")

    assert check_glibc.glibc_needs(planted).highest == (9, real[1])
    proc = _run("--max", "2.28", "--json", str(planted.parent.parent))
    assert proc.returncode == 1
    assert f"libplanted.so: needs GLIBC_9.{real[1]} > 2.28" in proc.stderr
    assert f'"needs": "9.{real[1]}"' in proc.stdout and '"files": 2' in proc.stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not an ELF\n", encoding="utf-8")
    for argv in (["--max", "2.28", str(text)], ["--max", "two", str(text)], ["--max", "2.28", str(tmp_path)]):
        proc = _run(*argv)
        assert proc.returncode == 2, argv
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
