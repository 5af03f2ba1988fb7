"""The Windows user PATH edit through a stand-in ``winreg`` (the narrowest boundary: the same ``WinregEnvironment``
code runs, only the registry calls are answered from memory), and the POSIX lines that put a folder on PATH.

The values are shaped as Windows writes them: a fresh Windows 10/11 profile holds ``Path`` =
``%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps;`` as REG_EXPAND_SZ; the python.org installer with "Add to
PATH" prepends its ``Scripts\\`` and install folders with trailing backslashes, expanded, under the user's name.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest

from bootstrap.register.user_path import (
    REG_EXPAND_SZ,
    REG_SZ,
    WinregEnvironment,
    add_to_user_path,
    expand,
    on_search_path,
    remove_from_user_path,
    shell_line,
)

PROFILE = "C:\\Users\\张 三"
DEFAULT = "%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps;"
WITH_PYTHON = (f"{PROFILE}\\AppData\\Local\\Programs\\Python\\Python312\\Scripts\\;"
               f"{PROFILE}\\AppData\\Local\\Programs\\Python\\Python312\\;" + DEFAULT)
OURS = f"{PROFILE}\\.local\\bin"
ENV = {"USERPROFILE": PROFILE, "SystemRoot": "C:\\Windows"}


class FakeWinreg:
    """The part of ``winreg`` the code calls: OpenKey (a context manager), QueryValueEx, SetValueEx, DeleteValue."""

    HKEY_CURRENT_USER = 0x80000001
    KEY_READ = 0x20019
    KEY_WRITE = 0x20006
    REG_SZ = REG_SZ
    REG_EXPAND_SZ = REG_EXPAND_SZ

    def __init__(self, value: str | None, kind: int = REG_EXPAND_SZ) -> None:
        self.values: dict[str, tuple[str, int]] = {} if value is None else {"Path": (value, kind)}
        self.writes: list[tuple[str, int]] = []
        self.opened: list[tuple[int, str, int]] = []

    class _Key:
        def __enter__(self) -> FakeWinreg._Key:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    def OpenKey(self, root: int, sub: str, reserved: int, access: int) -> Any:
        self.opened.append((root, sub, access))
        return self._Key()

    def QueryValueEx(self, key: Any, name: str) -> tuple[str, int]:
        if name not in self.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return self.values[name]

    def SetValueEx(self, key: Any, name: str, reserved: int, kind: int, value: str) -> None:
        self.values[name] = (value, kind)
        self.writes.append((value, kind))

    def DeleteValue(self, key: Any, name: str) -> None:
        del self.values[name]


class Broadcasts:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def test_adding_keeps_every_reference_unexpanded_and_the_value_type() -> None:
    reg, sent = FakeWinreg(DEFAULT), Broadcasts()
    assert add_to_user_path(OURS, WinregEnvironment(reg), sent, ENV) is True
    assert reg.values["Path"] == ("%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps;" + OURS, REG_EXPAND_SZ)
    assert sent.count == 1
    assert all(root == FakeWinreg.HKEY_CURRENT_USER and sub == "Environment" for root, sub, _ in reg.opened)


def test_a_folder_already_there_in_another_spelling_is_not_added_again() -> None:
    """``%USERPROFILE%\\.LOCAL\\bin\\`` is the same folder: expanded, case-folded, trailing backslash ignored."""
    reg, sent = FakeWinreg(WITH_PYTHON + "%USERPROFILE%\\.LOCAL\\bin\\"), Broadcasts()
    assert add_to_user_path(OURS, WinregEnvironment(reg), sent, ENV) is False
    assert reg.writes == [] and sent.count == 0


def test_no_value_yet_is_created_expandable_and_reg_sz_stays_reg_sz() -> None:
    reg = FakeWinreg(None)
    assert add_to_user_path(OURS, WinregEnvironment(reg), Broadcasts(), ENV)
    assert reg.values["Path"] == (OURS, REG_EXPAND_SZ)
    plain = FakeWinreg("C:\\Tools", REG_SZ)
    assert add_to_user_path(OURS, WinregEnvironment(plain), Broadcasts(), ENV)
    assert plain.values["Path"] == (f"C:\\Tools;{OURS}", REG_SZ)


def test_removing_takes_out_only_that_entry() -> None:
    reg, sent = FakeWinreg(WITH_PYTHON), Broadcasts()
    env = WinregEnvironment(reg)
    assert add_to_user_path(OURS, env, sent, ENV)
    assert remove_from_user_path(OURS, env, sent, ENV) is True
    assert reg.values["Path"] == (WITH_PYTHON.rstrip(";"), REG_EXPAND_SZ)  # the others exactly as they were
    assert sent.count == 2
    assert remove_from_user_path(OURS, env, sent, ENV) is False and sent.count == 2


def test_a_value_left_empty_is_deleted_not_written_empty() -> None:
    reg = FakeWinreg(OURS + ";")
    assert remove_from_user_path(OURS, WinregEnvironment(reg), Broadcasts(), ENV)
    assert "Path" not in reg.values
    assert remove_from_user_path(OURS, WinregEnvironment(FakeWinreg(None)), Broadcasts(), ENV) is False


def test_a_failing_registry_raises_oserror_for_the_caller_to_report() -> None:
    class Denied(FakeWinreg):
        def SetValueEx(self, *args: Any) -> None:
            raise PermissionError(5, "Access is denied")

    with pytest.raises(OSError):
        add_to_user_path(OURS, WinregEnvironment(Denied(DEFAULT)), Broadcasts(), ENV)


def test_expand_and_search_path() -> None:
    assert expand("%userprofile%\\x;%NOPE%", ENV) == f"{PROFILE}\\x;%NOPE%"
    assert on_search_path(PurePosixPath("/home/a b/.local/bin"), "/usr/bin:/home/a b/.local/bin/", "Linux")
    assert not on_search_path(PurePosixPath("/home/a/.local/bin"), "/usr/bin:/home/a/.local/bin2", "Linux")
    assert on_search_path(PurePosixPath(OURS), f"C:\\Windows;{OURS.upper()}\\", "Windows")


@pytest.mark.parametrize(("shell", "expected"), [
    ("/bin/bash", """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.bashrc"""),
    ("/usr/bin/zsh", """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.zshrc"""),
    (None, """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.profile"""),
    ("/usr/bin/fish", "fish_add_path '/home/李 雷/.local/bin'"),
])
def test_the_line_to_add_per_shell(shell: str | None, expected: str) -> None:
    home = PurePosixPath("/home/李 雷")
    assert shell_line(home / ".local" / "bin", shell, home) == expected


def test_the_line_for_a_folder_outside_home_quotes_what_a_shell_would_expand() -> None:
    line = shell_line(PurePosixPath("/opt/my $tools/bin"), "/bin/bash", PurePosixPath("/home/x"))
    assert line == """echo 'export PATH="/opt/my \\$tools/bin:$PATH"' >> ~/.bashrc"""
