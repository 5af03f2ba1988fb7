"""Build the double-click setup, ``dist/QwenClientKit-Setup`` (``.exe`` on Windows), with PyInstaller.

    python build_installer.py [--onedir] [--dist DIR] [--work DIR]

One file by default (templates/ and payload/ inside, found by ``bootstrap.core.resources``); ``--onedir`` gives a
folder that starts faster and trips fewer antivirus heuristics (docs/windows-setup.md). It must be built on
the OS it targets: a Windows setup is built on Windows (docs/windows-setup.md). On Linux PyInstaller needs
``objdump`` (binutils). A Windows build carries a version resource (Explorer's Properties → Details) generated from
``bootstrap.__version__``; the file is written on every OS so its content is tested everywhere.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
NAME = "QwenClientKit-Setup"
if str(ROOT) not in sys.path:  # an embeddable CPython's ._pth file fixes sys.path: no script folder, no PYTHONPATH
    sys.path.insert(0, str(ROOT))

# Installed in the build venv (test tools, the hub SDKs and their extras) but never imported by the product at run
# time; PyInstaller's analysis follows optional imports (numpy via huggingface_hub.inference, pytest, pygments,
# cryptography via urllib3.contrib.pyopenssl, hf_xet for Xet transfers we do not use, fsspec/click for the
# huggingface_hub filesystem and CLI) and would bundle them all. The hub SDKs stay in pyproject's dependencies (the
# design card names them; the tests check the loopback hub against them), but the kit does not run them:
# bootstrap/fetch/source_hf.py and source_modelscope.py speak the protocols with the kit's own bounded requests. So
# huggingface_hub and what only the SDKs bring (httpx, httpx2, anyio, yaml, filelock) are excluded too: a build
# that met one through some optional import would not carry it.
# What the product does import at run time: requests, urllib3, truststore, jinja2, tqdm, psutil, pynvml, cpuinfo,
# packaging. tests/app/test_setup_checks.py fails when bootstrap/ imports an excluded name (even lazily).
EXCLUDED_MODULES = (
    "numpy", "pytest", "_pytest", "pygments", "gguf", "modelscope", "tkinter", "_tkinter", "hf_xet", "fsspec",
    "cryptography", "click", "rich", "IPython", "PIL", "torch", "setuptools", "pkg_resources", "sqlite3",
    "huggingface_hub", "httpx", "httpx2", "anyio", "yaml", "filelock",
)


def version_tuple(version: str) -> tuple[int, int, int, int]:
    """``"0.1.0"`` → ``(0, 1, 0, 0)``: the four 16-bit words of a Windows file version (pre-release tags dropped)."""
    m = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?", version)
    if not m:
        raise ValueError(f"not a version: {version!r}")
    words = tuple(min(int(g or 0), 0xFFFF) for g in m.groups())
    return words[0], words[1], words[2], words[3]


def version_file_text(version: str) -> str:
    """PyInstaller's ``--version-file`` (a ``VSVersionInfo`` expression, the format ``pyi-grab_version`` writes).

    Constants (Microsoft Learn, VS_FIXEDFILEINFO / VarFileInfo): OS 0x40004 = VOS_NT_WINDOWS32, fileType 0x1 =
    VFT_APP, mask 0x3F = VS_FFI_FILEFLAGSMASK; the string table 040904B0 is US English (0x0409) in Unicode (1200),
    and the Translation entry names the same pair.
    """
    words = version_tuple(version)
    strings = {
        "CompanyName": "QwenClientKit",
        "FileDescription": "QwenClientKit setup: a local OpenAI-compatible Qwen server",
        "FileVersion": version,
        "InternalName": NAME,
        "LegalCopyright": "Apache-2.0",
        "OriginalFilename": f"{NAME}.exe",
        "ProductName": "QwenClientKit",
        "ProductVersion": version,
    }
    table = "".join(f"        StringStruct({k!r}, {v!r}),\n" for k, v in strings.items())
    return (
        "# UTF-8\n"
        "VSVersionInfo(\n"
        f"  ffi=FixedFileInfo(filevers={words!r}, prodvers={words!r}, mask=0x3F, flags=0x0, OS=0x40004,\n"
        "                    fileType=0x1, subtype=0x0, date=(0, 0)),\n"
        "  kids=[\n"
        "    StringFileInfo([\n"
        "      StringTable('040904B0', [\n"
        f"{table}"
        "      ])\n"
        "    ]),\n"
        "    VarFileInfo([VarStruct('Translation', [0x0409, 1200])]),\n"
        "  ]\n"
        ")\n"
    )


def write_version_file(work: Path) -> Path:
    """Write ``<work>/version-info.txt`` for this checkout's version (atomically: write, fsync, rename)."""
    from bootstrap import __version__

    work.mkdir(parents=True, exist_ok=True)
    path = work / "version-info.txt"
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(version_file_text(__version__))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def pyinstaller_args(onedir: bool, dist: Path, work: Path, version_file: Path,
                     platform: str = sys.platform) -> list[str]:
    """PyInstaller's command line for this build (kept apart from running it, so it can be read and tested)."""
    args = [
        str(ROOT / "bootstrap" / "app" / "setup_main.py"),
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
        *(arg for name in EXCLUDED_MODULES for arg in ("--exclude-module", name)),
    ]
    if platform == "win32":  # a version resource exists only in PE files; PyInstaller writes it with pefile
        args += ["--version-file", str(version_file)]
    return args


def build(onedir: bool = False, dist: Path = ROOT / "dist", work: Path = ROOT / "build" / "pyinstaller") -> Path:
    """Run PyInstaller and return the built executable."""
    if sys.platform.startswith("linux") and shutil.which("objdump") is None:
        sys.exit("objdump not found: install binutils (apt-get install binutils), then rerun.")
    import PyInstaller.__main__  # imported late: only the build needs it

    PyInstaller.__main__.run(pyinstaller_args(onedir, dist, work, write_version_file(work)))
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
