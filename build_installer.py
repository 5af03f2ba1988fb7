"""Build the double-click setup, ``dist/QwenClientKit-Setup`` (``.exe`` on Windows), with PyInstaller.

    python build_installer.py [--onedir]

One file by default (templates/ and payload/ inside, found by ``bootstrap.resources``); ``--onedir`` gives a
folder that starts faster and trips fewer antivirus heuristics (``reference/field-notes.md``). It must be built on
the OS it targets: a Windows setup is built on Windows. On Linux PyInstaller needs ``objdump`` (binutils).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
NAME = "QwenClientKit-Setup"


def build(onedir: bool = False, dist: Path = ROOT / "dist", work: Path = ROOT / "build" / "pyinstaller") -> Path:
    """Run PyInstaller and return the built executable."""
    if sys.platform.startswith("linux") and shutil.which("objdump") is None:
        sys.exit("objdump not found: install binutils (apt-get install binutils), then rerun.")
    import PyInstaller.__main__  # imported late: only the build needs it

    args = [
        str(ROOT / "bootstrap" / "setup_main.py"),
        "--name", NAME,
        "--onedir" if onedir else "--onefile",
        "--noconfirm",
        "--distpath", str(dist),
        "--workpath", str(work),
        "--specpath", str(work),
        "--paths", str(ROOT),
        "--collect-submodules", "bootstrap",
        "--add-data", f"{ROOT / 'templates'}{os.pathsep}templates",
        "--add-data", f"{ROOT / 'payload'}{os.pathsep}payload",
        "--log-level", "WARN",
    ]
    PyInstaller.__main__.run(args)
    exe = dist / (NAME if not onedir else f"{NAME}/{NAME}")
    return exe.with_suffix(".exe") if sys.platform == "win32" else exe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onedir", action="store_true", help="build a folder instead of one file")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder (default dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller", help="scratch folder")
    opts = parser.parse_args()
    exe = build(opts.onedir, opts.dist.resolve(), opts.work.resolve())
    print(f"{exe} ({exe.stat().st_size / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
