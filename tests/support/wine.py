"""Windows programs on the test bed: Debian's Wine (cmd.exe, the C runtime's argv split) and mingw-w64 for the
stand-in executables. ``scripts/setup_env.sh`` installs both (packages wine64, wine, gcc-mingw-w64-x86-64).

Wine's root folder is the ``Z:`` drive, so a Linux path is a Windows one with ``Z:`` in front and backslashes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

MINGW_GCC = "x86_64-w64-mingw32-gcc"
RECORDER_SOURCE = Path(__file__).parent / "win" / "argv_recorder.c"
PREFIX_TIMEOUT_S = 180  # a new Wine prefix (wineboot) takes seconds; a bound, not a speed check


def missing_tools() -> list[str]:
    return [tool for tool in ("wine", MINGW_GCC) if shutil.which(tool) is None]


def windows_path(path: Path) -> PureWindowsPath:
    """``/tmp/a b/c`` as Wine's programs see it: ``Z:\\tmp\\a b\\c``."""
    return PureWindowsPath("Z:" + str(path.resolve()).replace("/", "\\"))


def wine_env(prefix: Path, **extra: str) -> dict[str, str]:
    """The environment for a Wine program: its own prefix, no debug chatter, no display."""
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env.update(WINEPREFIX=str(prefix), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    env.update(extra)
    return env


def make_prefix(prefix: Path) -> Path:
    """A fresh Wine prefix (its registry and ``C:``), made once by running cmd's ``exit``."""
    subprocess.run(["wine", "cmd", "/c", "exit"], env=wine_env(prefix), capture_output=True,
                   timeout=PREFIX_TIMEOUT_S, check=True)
    return prefix


def build_recorder(out: Path) -> Path:
    """``argv_recorder.c`` compiled to ``out`` (a Windows x64 console program)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([MINGW_GCC, "-municode", "-O2", "-o", str(out), str(RECORDER_SOURCE)], check=True,
                   capture_output=True, timeout=120)
    return out


@dataclass(frozen=True)
class Record:
    """What the recorder saw: its arguments (argv[0] included), which watched variables were set, QWENKIT_HOME."""

    args: list[str]
    seen: dict[str, bool]
    home: str


def read_record(exe: Path) -> Record:
    record = Record([], {}, "")
    for line in (exe.parent / "record.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("arg="):
            record.args.append(line[4:])
        elif line.startswith("env "):
            name, _, state = line[4:].partition("=")
            record.seen[name] = state == "set"
        elif line.startswith("home="):
            record = Record(record.args, record.seen, line[5:])
    return record
