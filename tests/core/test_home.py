"""The install home's default location per OS (DESIGN.md §3), computed from recorded environments."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from bootstrap.core.home import Home, default_home, resolve_home


def test_windows_default_is_localappdata() -> None:
    env = {"LOCALAPPDATA": r"C:\Users\alice\AppData\Local", "SystemDrive": "C:"}
    assert default_home("Windows", env, PureWindowsPath(r"C:\Users\alice")) == PureWindowsPath(
        r"C:\Users\alice\AppData\Local\QwenClientKit")


def test_windows_non_ascii_profile_falls_back_to_system_drive() -> None:
    env = {"LOCALAPPDATA": r"C:\Users\张伟\AppData\Local", "SystemDrive": "D:"}
    assert default_home("Windows", env, PureWindowsPath(r"C:\Users\张伟")) == PureWindowsPath(r"D:\QwenClientKit")


def test_windows_without_localappdata_uses_profile() -> None:
    assert default_home("Windows", {}, PureWindowsPath(r"C:\Users\bob")) == PureWindowsPath(
        r"C:\Users\bob\AppData\Local\QwenClientKit")


def test_linux_honours_xdg_data_home() -> None:
    home = PurePosixPath("/home/u")
    assert default_home("Linux", {"XDG_DATA_HOME": "/data/x"}, home) == PurePosixPath("/data/x/qwenclientkit")
    assert default_home("Linux", {}, home) == PurePosixPath("/home/u/.local/share/qwenclientkit")
    # a relative XDG_DATA_HOME is invalid per the XDG spec and is ignored
    assert default_home("Linux", {"XDG_DATA_HOME": "rel"}, home) == PurePosixPath("/home/u/.local/share/qwenclientkit")


def test_macos_application_support() -> None:
    assert default_home("Darwin", {}, PurePosixPath("/Users/u")) == PurePosixPath(
        "/Users/u/Library/Application Support/QwenClientKit")


def test_layout_inside_the_home(tmp_path: Path) -> None:
    home = Home(tmp_path)
    assert home.state_file == tmp_path / "state.json"
    assert home.engine_dir("b10434", "ubuntu-vulkan-x64") == tmp_path / "engine" / "b10434-ubuntu-vulkan-x64"
    assert home.partial_dir == tmp_path / "cache" / "partial"
    assert home.api_key_file == tmp_path / "secrets" / "api-key"
    assert {home.run_sh.name, home.run_bat.name} == {"run_qwen.sh", "run_qwen.bat"}


def test_resolve_home_prefers_cli_then_env(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("QWENKIT_HOME", str(tmp_path / "env-home"))
    assert resolve_home(str(tmp_path / "cli-home")).root == tmp_path / "cli-home"
    assert resolve_home(None).root == tmp_path / "env-home"
    monkeypatch.delenv("QWENKIT_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert resolve_home(None).root == tmp_path / "xdg" / "qwenclientkit"
