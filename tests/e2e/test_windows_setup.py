"""The real ``QwenClientKit-Setup-windows-x64.exe``, built here from this checkout by ``build_installer.py`` with a
Windows CPython under Wine (the ``windows_setup`` fixture; tests/support/windows_python.py), run under Wine as a
Windows user meets it: a PE file with its version resource, a first start that finds what the build carries, the
machine read as Windows (CPU flags included), the plan for the ``win-cpu`` engine, and a double-click with no
console that installs nothing and says how to go on.

What only a real Windows shows (a console window, SmartScreen, the Task Scheduler) is listed in
docs/windows-setup.md. Each command's stdout is a pipe, so Python writes it in the ANSI code page (cp1252 under
Wine's English locale): text lines are read in that code page here, and ``--json`` documents must stay exact.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bootstrap import __version__
from tests.support import wine

HOME_DIR = "张三 A&B ! (x)"
TIMEOUT_S = 300  # a onefile exe unpacks itself under Wine on a busy 2-core machine: a bound, not a speed check


def _run(exe: Path, args: list[str], prefix: Path, home: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    """``exe ARGS`` under Wine with the user's home set, stdin a pipe holding ``stdin``; output decoded as cp1252."""
    env = {k: v for k, v in wine.wine_env(prefix).items() if not k.startswith("QWENKIT_")}
    env.update(QWENKIT_HOME=str(wine.windows_path(home)), QWENKIT_LANG="en")
    done = subprocess.run(["wine", str(exe), *args], input=stdin, capture_output=True, timeout=TIMEOUT_S, env=env)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("cp1252", errors="replace"),
                                       done.stderr.decode("cp1252", errors="replace"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / HOME_DIR / "QwenClientKit"


def test_the_setup_is_a_windows_program_with_its_version(windows_setup: Path, windows_python: Path,
                                                         wine_prefix: Path, home: Path) -> None:
    """The release asset's name; ``--version`` from the frozen exe; Explorer's Properties > Details (the version
    resource) read back with pefile by the Windows CPython."""
    assert windows_setup.name == "QwenClientKit-Setup-windows-x64.exe"
    assert windows_setup.read_bytes()[:2] == b"MZ"
    shown = _run(windows_setup, ["--version"], wine_prefix, home)
    assert shown.returncode == 0 and shown.stdout.strip() == f"qwenkit {__version__}", shown.stderr[-1500:]
    code = ("import json, sys, pefile; pe = pefile.PE(sys.argv[1]); print(json.dumps({k.decode(): v.decode() "
            "for info in pe.FileInfo[0] if info.Key == b'StringFileInfo' for table in info.StringTable "
            "for k, v in table.entries.items()}))")
    read = subprocess.run(["wine", str(windows_python), "-c", code, str(wine.windows_path(windows_setup))],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=wine.wine_env(wine_prefix))
    assert read.returncode == 0, read.stderr[-1500:]
    strings = json.loads(read.stdout)
    assert strings["FileVersion"] == strings["ProductVersion"] == __version__
    assert strings["ProductName"] == "QwenClientKit" and strings["OriginalFilename"] == "QwenClientKit-Setup.exe"


def test_the_first_start_finds_what_the_build_carries(windows_setup: Path, wine_prefix: Path, home: Path) -> None:
    done = _run(windows_setup, ["selfcheck"], wine_prefix, home)
    assert done.returncode == 0, done.stderr[-1500:]
    report = json.loads(done.stdout)
    assert report["frozen"] is True and report["first_start_checks"] == [] and report["version"] == __version__
    assert report["templates"].endswith("\\templates") and report["payload"].endswith("\\payload")
    assert "_MEI" in report["templates"]  # unpacked from the one file, not read from this checkout


def _linux_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def test_doctor_reads_this_machine_as_windows_with_its_cpu_flags(windows_setup: Path, wine_prefix: Path,
                                                                 home: Path) -> None:
    """py-cpuinfo reads CPUID in a spawned child; a frozen exe that does not hand that child to multiprocessing
    (``freeze_support``) ran the setup as the child ("Unknown command 'parent_pid=...'") and reported no AVX2 on a
    machine that has it. The home's Chinese name survives the cp1252 stdout inside the JSON document."""
    home.parent.mkdir()
    done = _run(windows_setup, ["doctor", "--json"], wine_prefix, home)
    assert "Unknown command" not in done.stderr and "parent_pid" not in done.stderr, done.stderr[-1500:]
    report = json.loads(done.stdout)
    assert report["os"]["system"] == "Windows" and report["os"]["machine"] == "AMD64"
    flags = _linux_flags()
    assert report["cpu"]["flags"]["avx2"] == ("avx2" in flags)
    assert report["cpu"]["flags"]["avx512"] == ("avx512f" in flags)
    assert report["cpu"]["logical_cores"] == os.cpu_count()
    assert report["disk"]["path"] == str(wine.windows_path(home.parent))  # the nearest folder that exists
    assert report["gpus"] == []


def test_the_plan_is_the_windows_cpu_engine(windows_setup: Path, wine_prefix: Path, home: Path) -> None:
    done = _run(windows_setup, ["plan", "--json"], wine_prefix, home)
    assert done.returncode == 0, done.stderr[-1500:]
    plan = json.loads(done.stdout)
    assert plan["engine"]["variant"] == "win-cpu" and plan["settings"]["n_gpu_layers"] == 0
    shown = _run(windows_setup, ["plan"], wine_prefix, home)
    assert shown.returncode == 0 and shown.stdout.startswith("Plan: ") and "on the CPU" in shown.stdout


def test_a_double_click_without_a_console_installs_nothing_and_says_what_to_do(
        windows_setup: Path, wine_prefix: Path, home: Path) -> None:
    """No arguments means ``install``; with no console to ask in, it stops before touching the machine (exit 2,
    the hint names ``--yes``) and still keeps the window open for the user to read it. The home it made for its
    lock is gone again: Windows deletes no open file, so that cleanup has to wait for the lock's close."""
    done = _run(windows_setup, [], wine_prefix, home, stdin=b"\n")
    assert done.returncode == 2, done.stderr[-1500:]
    assert "there is no terminal to confirm the install in" in done.stderr and "--yes" in done.stderr
    assert "Press Enter to close this window." in done.stderr
    assert not home.exists()


def test_a_chinese_windows_reads_the_plan_and_the_errors_in_its_code_page(windows_setup: Path, wine_prefix: Path,
                                                                          home: Path, tmp_path: Path) -> None:
    """A Chinese Windows: Wine in the zh_CN.UTF-8 locale (``wine.chinese_windows``) has ANSI and OEM code page 936
    (GBK) and a Chinese UI language, as a zh-CN Windows has. With no ``QWENKIT_LANG`` the setup speaks Chinese, and
    its redirected output, written in that code page, reads back in GBK without one lost character: the plan, the
    doctor's report (with the home's Chinese name) and a one-line error. A console is not tested: Python writes
    a console in UTF-16 (PEP 528), whatever its code page."""
    env = {k: v for k, v in wine.wine_env(wine_prefix).items() if not k.startswith("QWENKIT_")}
    chinese = wine.chinese_windows(tmp_path)
    if chinese is None:
        pytest.skip("needs localedef and the zh_CN locale source (Debian's locales package)")
    env.update(QWENKIT_HOME=str(wine.windows_path(home)), **chinese)

    def run(*args: str) -> tuple[int, str, str]:
        done = subprocess.run(["wine", str(windows_setup), *args], capture_output=True, timeout=TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout.decode("gbk"), done.stderr.decode("gbk")  # strict: no stray byte

    rc, out, err = run("plan")
    assert rc == 0, err[-1500:]
    assert out.startswith("方案：") and "运行于处理器（CPU）" in out, out[:500]
    home.parent.mkdir()
    rc, out, err = run("doctor")
    disk = [line for line in out.splitlines() if line.startswith("磁盘")]
    assert disk and str(wine.windows_path(home.parent)) in disk[0], out
    rc, out, err = run("install", "--port", "99999", "--yes")
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == ["错误：端口 99999 不是有效的 TCP 端口（1-65535）"], err
    assert not home.exists()
