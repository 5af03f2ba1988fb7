"""A bundle's launchers and README (``bundle.launchers``), rendered for real targets and run where they can be here.

``payload/launch.py`` and ``install.sh`` run with this machine's Python and ``sh`` against a folder laid out as a
bundle; what cmd.exe needs of ``install.bat`` is checked on its bytes here (CRLF line endings, plain ASCII before
``chcp 65001``, nothing an unquoted ``echo`` would read as syntax) and it runs under Wine's cmd in
test_install_bat_under_wine.py. The whole path, made
by a pip-installed kit and installed offline, is tests/e2e/test_bundle_pip.py.
"""

from __future__ import annotations

import hashlib
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.bundle import launchers
from bootstrap.bundle.launchers import Setup
from bootstrap.catalog.bundle_platforms import PLATFORMS

HERE = f"{sys.version_info.major}.{sys.version_info.minor}"
LINUX, WINDOWS, MAC = PLATFORMS["linux-x64"], PLATFORMS["windows-x64"], PLATFORMS["macos-arm64"]


def _write(root: Path, targets: list, pythons: list[str]) -> dict[str, Path]:
    written = {}
    for want, data in launchers.launcher_files(targets, pythons):
        path = root / want.rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written[want.rel] = path
    return written


def _bundle(root: Path, wheels: dict[str, bytes], listed: dict[str, bytes] | None = None) -> None:
    """payload/wheels/linux-x64 holding ``wheels``; SHA256SUMS listing ``listed`` (default: the same bytes)."""
    folder = root / "payload" / "wheels" / "linux-x64"
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in wheels.items():
        (folder / name).write_bytes(data)
    lines = [f"{hashlib.sha256(data).hexdigest()}  payload/wheels/linux-x64/{name}"
             for name, data in (wheels if listed is None else listed).items()]
    (root / "payload" / "SHA256SUMS").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,  # type: ignore[call-overload]
                          stdin=subprocess.DEVNULL, **kw)


def test_what_each_target_gets(tmp_path: Path) -> None:
    assert set(_write(tmp_path / "a", [LINUX], [HERE])) == {"payload/launch.py", "install.sh"}
    assert set(_write(tmp_path / "b", [WINDOWS], [HERE])) == {"payload/launch.py", "install.bat"}
    assert set(_write(tmp_path / "c", [LINUX, WINDOWS, MAC], [HERE])) == {"payload/launch.py", "install.sh",
                                                                          "install.bat"}


def test_install_bat_is_what_cmd_exe_reads(tmp_path: Path) -> None:
    data = _write(tmp_path, [WINDOWS], ["3.10", "3.13"])["install.bat"].read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n") > 10  # CRLF throughout
    before, _, after = data.partition(b"chcp 65001 >nul")
    assert before.isascii() and after
    text = data.decode("utf-8")
    assert text.index("call :try py -3.13") < text.index("call :try py -3.10") < text.index("call :try python")
    assert '"%~dp0payload\\launch.py" %*' in text
    echoed = [line[5:] for line in text.splitlines() if line.startswith("echo ")]
    assert len(echoed) == 2 and not any(set(line) & set("&|<>^%\"") for line in echoed)  # en, zh


def test_install_sh_without_a_fitting_python_is_exit_3_in_both_languages(tmp_path: Path) -> None:
    script = _write(tmp_path, [LINUX], ["2.7"])["install.sh"]
    assert _run(["sh", "-n", str(script)]).returncode == 0
    proc = _run(["sh", str(script), "--yes"], env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == [
        "No Python 2.7 found here. Install one from python.org and run this again, or use a setup program built "
        "for this system.",
        "本机未找到 Python 2.7。请从 python.org 安装后重新运行，或使用为本系统构建的安装程序。"]


def test_install_sh_hands_over_to_the_launcher_with_the_options(tmp_path: Path) -> None:
    """With a fitting Python, install.sh runs payload/launch.py with it and the user's words unchanged (here the
    wheels are damaged, so the launcher stops at its check: exit 5)."""
    root = tmp_path / "USB 盘 $(x) 'q'"
    _write(root, [LINUX], [HERE])
    _bundle(root, {"qwenclientkit-0-py3-none-any.whl": b"changed"}, {"qwenclientkit-0-py3-none-any.whl": b"as made"})
    proc = _run(["sh", str(root / "install.sh"), "--yes", "--port", "8081"],
                env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.splitlines()[0] == ("Files of this bundle are missing or differ from payload/SHA256SUMS: "
                                           "payload/wheels/linux-x64/qwenclientkit-0-py3-none-any.whl. Copy the "
                                           "bundle again.")


def test_launch_py_refuses_another_python(tmp_path: Path) -> None:
    launch = _write(tmp_path, [LINUX], ["2.7"])["payload/launch.py"]
    proc = _run([sys.executable, str(launch)])
    assert proc.returncode == 3
    assert proc.stderr.splitlines()[0] == (f"This Python ({sys.executable}, version {HERE}) does not match this "
                                           "bundle: its packages are for Python 2.7.")


def test_launch_py_copies_only_listed_wheels_and_checks_them(tmp_path: Path) -> None:
    """A wheel added to the folder (not in SHA256SUMS) is never offered to pip; a listed one that is missing is
    named. Nothing is installed: pip is given a folder with the checked copies only."""
    root = tmp_path / "bundle"
    launch = _write(root, [LINUX], [HERE])["payload/launch.py"]
    _bundle(root, {"a-1-py3-none-any.whl": b"a", "planted-9-py3-none-any.whl": b"x"},
            {"a-1-py3-none-any.whl": b"a", "b-1-py3-none-any.whl": b"b"})
    copy_checked = runpy.run_path(str(launch), run_name="launch")["copy_checked"]
    dest = tmp_path / "copied"
    bad = copy_checked("linux-x64", dest)
    assert bad == ["payload/wheels/linux-x64/b-1-py3-none-any.whl"]
    assert sorted(p.name for p in dest.iterdir()) == ["a-1-py3-none-any.whl"]  # the planted one stayed behind
    assert (dest / "a-1-py3-none-any.whl").read_bytes() == b"a"


@pytest.mark.parametrize(("targets", "setups", "expected"), [
    ([LINUX], [], ['  Linux: in a terminal, run  sh "<this folder>/install.sh"  (it needs Python 3.11/3.12: \'python3 '
                   "--version' says which one you have)."]),
    ([WINDOWS], [Setup("QwenClientKit-Setup.exe", "Windows")],
     ["  Windows: double-click QwenClientKit-Setup.exe in this folder."]),
    ([WINDOWS, LINUX, MAC], [Setup("QwenClientKit-Setup", "Linux")],
     ["  Windows: double-click install.bat in this folder (it needs Python 3.11/3.12 from python.org).",
      '  Linux: in a terminal, run "<this folder>/QwenClientKit-Setup"',
      '  macOS: in a terminal, run  sh "<this folder>/install.sh"  (it needs Python 3.11/3.12: \'python3 --version\' '
      'says which one you have).']),
])
def test_readme_says_per_os_what_to_run(targets: list, setups: list[Setup], expected: list[str]) -> None:
    text = launchers.readme_text(targets, ["3.11", "3.12"], setups)
    english, chinese = text.split("\n\nQwenClientKit 离线安装包\n")
    lines = english.splitlines()
    at = lines.index("Install, on the machine that will run the server (nothing is downloaded):")
    assert lines[at + 1:at + 1 + len(expected)] == expected
    assert "double-click the setup program" not in text
    assert ("copy the setup to /tmp" in text) == any(s.system == "Linux" for s in setups)
    assert chinese.count("\n  ") >= len(expected) and "（" in chinese


def test_no_launcher_runs_unless_readable_by_all(tmp_path: Path) -> None:
    """The launchers are listed as setups: create.publish_modes makes install.sh and launch.py 0755 (the .bat 0644)."""
    from bootstrap.bundle.create import publish_modes

    root = tmp_path / "out"
    files = launchers.launcher_files([LINUX, WINDOWS], [HERE])
    launchers.write_launchers(root, files)
    publish_modes(root, [want.entry() for want, _ in files], include_root=True)
    modes = {want.rel: os.stat(root / want.rel).st_mode & 0o777 for want, _ in files}
    assert modes == {"payload/launch.py": 0o755, "install.sh": 0o755, "install.bat": 0o644}
