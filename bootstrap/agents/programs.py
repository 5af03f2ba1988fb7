"""Finding a client program on the user's PATH, and how to start it without a shell.

npm installs a global command as three files in its prefix folder: ``NAME`` (a sh script), ``NAME.cmd`` (cmd.exe)
and ``NAME.ps1`` (PowerShell), each running ``node_modules/<package>/<bin>`` (npm's ``cmd-shim``). On Windows the
lookup follows ``PATHEXT`` and finds ``NAME.cmd`` first. A ``.cmd`` file only runs through cmd.exe, which reads the
whole command line again with its own rules (``%``, ``^``, ``&`` in an argument the user passes through would be
taken as cmd syntax), so the kit starts what the shim would run instead: the package's native ``.exe``, or
``node`` with its ``.js`` script. On Linux and macOS the command found on PATH is started directly (a symlink to a
native binary or a node script with its ``#!`` line).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_SHIMS = (".cmd", ".bat", ".ps1")
_DEFAULT_PATHEXT = ".COM;.EXE;.BAT;.CMD"


@dataclass(frozen=True)
class Program:
    """How to start a client: the words before its own arguments (the program, or node and a script)."""

    argv: tuple[str, ...]

    @property
    def path(self) -> str:
        return self.argv[-1]


def _candidates(name: str, directory: str, system: str, pathext: str) -> list[Path]:
    folder = Path(directory)
    if system != "Windows":
        return [folder / name]
    exts = [e for e in (pathext or _DEFAULT_PATHEXT).split(";") if e]
    if Path(name).suffix.lower() in (e.lower() for e in exts):
        return [folder / name]
    return [folder / (name + ext.lower()) for ext in exts]


def _runnable(path: Path, system: str) -> bool:
    if not path.is_file():
        return False
    return system == "Windows" or os.access(path, os.X_OK)


def on_path(name: str, search_path: str, *, system: str, pathext: str = "") -> Path | None:
    """``name`` as the user's shell would find it in ``search_path`` (``PATHEXT`` on Windows); None when absent."""
    separator = ";" if system == "Windows" else ":"
    for directory in search_path.split(separator):
        if not directory:
            continue
        for candidate in _candidates(name, directory, system, pathext):
            if _runnable(candidate, system):
                return candidate
    return None


def find_program(names: Sequence[str], npm_package: str, npm_bin: str, *, search_path: str, system: str,
                 pathext: str = "", which: Callable[..., Path | None] = on_path) -> Program | None:
    """The first of ``names`` on ``search_path``; an npm shim on Windows is resolved to what it runs
    (``node_modules/<npm_package>/<npm_bin>`` beside it). A shim whose target is not there is skipped: it is
    never run through cmd.exe."""
    for name in names:
        found = which(name, search_path, system=system, pathext=pathext)
        if found is None:
            continue
        if system != "Windows" or found.suffix.lower() not in _SHIMS:
            return Program((str(found),))
        target = found.parent / "node_modules" / Path(npm_package) / Path(npm_bin)
        if not target.is_file():
            continue
        if target.suffix.lower() in (".js", ".cjs", ".mjs"):
            node = which("node", search_path, system=system, pathext=pathext)
            if node is None:
                continue
            return Program((str(node), str(target)))
        return Program((str(target),))
    return None
