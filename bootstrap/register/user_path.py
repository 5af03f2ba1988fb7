"""The user's PATH: whether a folder is on it, the one line that puts it there (POSIX shells), and on Windows adding
the folder to the *user* PATH in the registry and taking it out again.

Windows, as rustup (``src/cli/self_update/windows.rs``) and uv (``crates/uv-shell/src/windows.rs``) do it: the user
PATH is the value ``Path`` of ``HKEY_CURRENT_USER\\Environment``, usually ``REG_EXPAND_SZ`` holding references such
as ``%USERPROFILE%\\AppData\\Local\\Microsoft\\WindowsApps`` that must survive the edit. So the raw value is read and
written back (never the expanded ``os.environ["PATH"]``, which also holds the machine PATH), its type kept
(``REG_EXPAND_SZ`` when there was no value), the folder appended once (entries compared after expanding
``%NAME%``, case-insensitively, a trailing backslash ignored), and on removal only that entry goes. Running programs
learn of the change from a ``WM_SETTINGCHANGE`` broadcast naming "Environment" (Microsoft Learn, "WM_SETTINGCHANGE
message"), sent with ``SendMessageTimeoutW`` and ``SMTO_ABORTIFHUNG`` so a hung window cannot stall the install; a
console already open keeps its old PATH, which the message says. No admin rights are needed (HKCU only).

The registry is reached through ``winreg`` only (``WinregEnvironment``), so tests drive the same code with a stand-in
module holding recorded values; the broadcast is one injected function.
"""

from __future__ import annotations

import ctypes
import os
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any, Protocol

REG_SZ = 1  # winnt.h
REG_EXPAND_SZ = 2
_ENV_KEY = "Environment"
_VALUE = "Path"
_REFERENCE = re.compile(r"%([^%]+)%")
WM_SETTINGCHANGE = 0x001A  # winuser.h
HWND_BROADCAST = 0xFFFF
SMTO_ABORTIFHUNG = 0x0002
BROADCAST_TIMEOUT_MS = 5000

Broadcast = Callable[[], None]


class UserEnvironment(Protocol):
    """``HKCU\\Environment``'s ``Path`` value."""

    def read(self) -> tuple[str, int] | None: ...  # (value, REG_SZ | REG_EXPAND_SZ); None when there is none

    def write(self, value: str, kind: int) -> None: ...

    def delete(self) -> None: ...


class WinregEnvironment:
    """``UserEnvironment`` through the ``winreg`` module (or a stand-in with the same functions, in tests)."""

    def __init__(self, winreg: Any) -> None:
        self._reg = winreg

    def _key(self, access: int) -> Any:
        return self._reg.OpenKey(self._reg.HKEY_CURRENT_USER, _ENV_KEY, 0, access)

    def read(self) -> tuple[str, int] | None:
        try:
            with self._key(self._reg.KEY_READ) as key:
                value, kind = self._reg.QueryValueEx(key, _VALUE)
        except FileNotFoundError:
            return None
        return (value, kind) if isinstance(value, str) else None

    def write(self, value: str, kind: int) -> None:
        with self._key(self._reg.KEY_READ | self._reg.KEY_WRITE) as key:
            self._reg.SetValueEx(key, _VALUE, 0, kind, value)

    def delete(self) -> None:
        with self._key(self._reg.KEY_READ | self._reg.KEY_WRITE) as key:
            self._reg.DeleteValue(key, _VALUE)


def windows_environment() -> UserEnvironment:
    import winreg  # Windows only

    return WinregEnvironment(winreg)


def broadcast_environment_change() -> None:
    """Tell running programs (Explorer, so new consoles started from it) that the environment changed."""
    user32 = ctypes.WinDLL("user32", use_last_error=True)  # type: ignore[attr-defined]
    result = ctypes.c_size_t()
    user32.SendMessageTimeoutW(HWND_BROADCAST, WM_SETTINGCHANGE, 0, ctypes.c_wchar_p(_ENV_KEY), SMTO_ABORTIFHUNG,
                               BROADCAST_TIMEOUT_MS, ctypes.byref(result))


def expand(entry: str, env: Mapping[str, str]) -> str:
    """``%NAME%`` references replaced from ``env`` (names compared case-insensitively, as Windows does); an unknown
    one is left as written."""
    upper = {k.upper(): v for k, v in env.items()}
    return _REFERENCE.sub(lambda m: upper.get(m.group(1).upper(), m.group(0)), entry)


def _key(entry: str, env: Mapping[str, str]) -> str:
    return expand(entry.strip().strip('"'), env).rstrip("\\/").casefold()


def entries(value: str) -> list[str]:
    return [e for e in value.split(";") if e.strip()]


def has_entry(value: str, folder: str, env: Mapping[str, str]) -> bool:
    want = _key(folder, env)
    return any(_key(e, env) == want for e in entries(value))


def add_to_user_path(folder: str, registry: UserEnvironment, broadcast: Broadcast,
                     env: Mapping[str, str] = os.environ) -> bool:
    """Append ``folder`` to the user PATH unless an entry already names it; True when the registry was changed."""
    found = registry.read()
    value, kind = found if found is not None else ("", REG_EXPAND_SZ)
    if has_entry(value, folder, env):
        return False
    kept = value.rstrip(";")
    registry.write(f"{kept};{folder}" if kept else folder, kind)
    broadcast()
    return True


def remove_from_user_path(folder: str, registry: UserEnvironment, broadcast: Broadcast,
                          env: Mapping[str, str] = os.environ) -> bool:
    """Take every entry naming ``folder`` out of the user PATH, keeping the others as written; True when changed.
    A value left empty is deleted (as rustup does), not written as ``""``."""
    found = registry.read()
    if found is None:
        return False
    value, kind = found
    want = _key(folder, env)
    kept = [e for e in value.split(";") if not (e.strip() and _key(e, env) == want)]
    if len(kept) == len(value.split(";")):
        return False
    rest = ";".join(kept)
    if rest.strip(";"):
        registry.write(rest, kind)
    else:
        registry.delete()
    broadcast()
    return True


def on_search_path(folder: PurePath, search_path: str, system: str) -> bool:
    """Whether ``folder`` is one of the entries of a PATH string (Windows: case-insensitive, ``;``)."""
    sep = ";" if system == "Windows" else ":"
    def norm(p: str) -> str:
        p = p.strip().strip('"').rstrip("\\/") if system == "Windows" else p.rstrip("/")
        return p.casefold() if system == "Windows" else p
    want = norm(str(folder))
    return any(norm(e) == want for e in search_path.split(sep) if e)


def shell_line(folder: PurePath, shell: str | None, user_home: PurePath) -> str:
    """The one line that puts ``folder`` on PATH for future shells of this user, for their login shell.

    bash reads ``~/.bashrc`` for interactive shells, zsh (macOS's default) ``~/.zshrc``, fish has
    ``fish_add_path`` (fish 3.2+), anything else the POSIX ``~/.profile``. A folder inside the home is written as
    ``$HOME/…`` so the line reads as people write it and survives a renamed home.
    """
    name = PurePath(shell).name if shell else "sh"
    if name == "fish":
        return f"fish_add_path {shlex.quote(str(folder))}"
    def in_quotes(text: str) -> str:  # literal inside "…": \\ " ` $ escaped
        return text.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")

    try:
        shown = "$HOME/" + in_quotes(PurePath(folder).relative_to(user_home).as_posix())
    except ValueError:
        shown = in_quotes(str(folder))
    export = f'export PATH="{shown}:$PATH"'
    rc = {"bash": "~/.bashrc", "zsh": "~/.zshrc"}.get(name, "~/.profile")
    return f"echo {shlex.quote(export)} >> {rc}"
