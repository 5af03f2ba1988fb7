"""Python interpreters 3.10–3.13 on this machine: the runtime venv (DESIGN.md §3) is built from one of them.

Candidates come from PATH (``python3.13`` … ``python``), the Windows launcher (``py -0p``) and common install
folders; each is asked for its version once, in parallel, with a short timeout, so doctor stays fast.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PureWindowsPath

from bootstrap.core.processes import run_command
from bootstrap.detect.hardware import PythonInfo

SUPPORTED = ((3, 10), (3, 11), (3, 12), (3, 13))
_NAMES = ("python3.13", "python3.12", "python3.11", "python3.10", "python3", "python")
_VERSION_RE = re.compile(r"^(?:Python\s+)?(\d+)\.(\d+)\.(\d+)")
# `py -0p` lines: " -V:3.12 *        C:\Python312\python.exe" (3.11+ launcher) or " -3.10-64        C:\...".
_LAUNCHER_RE = re.compile(r"^\s*-(?:V:)?[\w.\-]+(?:\s+\*)?\s+(\S.*?)\s*$")
_ASK_VERSION = "import sys; print('.'.join(map(str, sys.version_info[:3])))"


def parse_launcher(text: str) -> list[str]:
    """Interpreter paths listed by ``py -0p``."""
    paths = []
    for line in text.splitlines():
        m = _LAUNCHER_RE.match(line)
        if m and m.group(1).lower().endswith(".exe"):
            paths.append(m.group(1))
    return paths


def parse_version(text: str) -> tuple[int, int, int] | None:
    m = _VERSION_RE.match(text.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def probe_pythons(answers: Iterable[tuple[str, str | None]]) -> tuple[PythonInfo, ...]:
    """Keep interpreters whose version answer is 3.10–3.13, newest first, one per path."""
    seen: set[str] = set()
    found = []
    for path, answer in answers:
        version = parse_version(answer or "")
        if version is None or version[:2] not in SUPPORTED or path in seen:
            continue
        seen.add(path)
        found.append((version, PythonInfo(path=path, version=".".join(map(str, version)))))
    found.sort(key=lambda item: item[0], reverse=True)
    return tuple(info for _, info in found)


def common_locations(system: str, env: Mapping[str, str]) -> list[str]:
    """Where installers put Python when it is not on PATH."""
    minors = [f"{major}{minor}" for major, minor in SUPPORTED]
    if system == "Windows":
        local = env.get("LOCALAPPDATA", "")
        drive = env.get("SystemDrive", "C:")
        program_files = env.get("ProgramFiles", drive + "\\Program Files")
        paths = []
        for m in minors:
            if local:
                paths.append(str(PureWindowsPath(local, "Programs", "Python", f"Python{m}", "python.exe")))
            paths.append(str(PureWindowsPath(program_files, f"Python{m}", "python.exe")))
            paths.append(str(PureWindowsPath(drive + "\\", f"Python{m}", "python.exe")))
        return paths
    dotted = [f"{major}.{minor}" for major, minor in SUPPORTED]
    if system == "Darwin":
        return ([f"/Library/Frameworks/Python.framework/Versions/{v}/bin/python{v}" for v in dotted]
                + [f"/opt/homebrew/bin/python{v}" for v in dotted] + [f"/usr/local/bin/python{v}" for v in dotted])
    return [f"/usr/bin/python{v}" for v in dotted] + [f"/usr/local/bin/python{v}" for v in dotted]


def _ask(path: str) -> tuple[str, str | None]:
    proc = run_command([path, "-I", "-S", "-c", _ASK_VERSION], timeout=5)
    return path, proc.stdout.strip() if proc.returncode == 0 else None


def _launcher_paths() -> list[str]:
    launcher = shutil.which("py")
    if not launcher:
        return []
    proc = run_command([launcher, "-0p"], timeout=10)
    return parse_launcher(proc.stdout)


def candidates(system: str, env: Mapping[str, str]) -> list[str]:
    """Existing interpreter files, deduplicated by their resolved path (python3 → python3.11 links)."""
    raw = [sys.executable] if not getattr(sys, "frozen", False) else []
    raw += [p for p in (shutil.which(name) for name in _NAMES) if p]
    if system == "Windows":
        raw += _launcher_paths()
    raw += common_locations(system, env)
    unique: dict[str, str] = {}
    for p in raw:
        path = Path(p)
        try:
            if not path.is_file():
                continue
            key = str(path.resolve())
        except OSError:
            continue
        unique.setdefault(key, str(path))
    return list(unique.values())


def _own_answer(path: str) -> str | None:
    """This interpreter's version without a child process (it is usually the first candidate)."""
    if getattr(sys, "frozen", False):
        return None
    try:
        if Path(path).resolve() == Path(sys.executable).resolve():
            return ".".join(map(str, sys.version_info[:3]))
    except OSError:
        return None
    return None


def read_pythons(system: str, env: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """(path, version answer) per candidate; ``-I -S`` keeps each child to a bare interpreter start."""
    paths = candidates(system, env)
    known = [(p, _own_answer(p)) for p in paths]
    ask = [p for p, answer in known if answer is None]
    answers = dict(known)
    if ask:
        with ThreadPoolExecutor(max_workers=min(8, len(ask))) as pool:
            answers.update(pool.map(_ask, ask))
    return [(p, answers[p]) for p in paths]
