"""What an installed llama-server is: its build, the flags it accepts, the devices it sees (the tune stage).

Three short runs of the binary itself — ``--version``, ``--help``, ``--list-devices`` — because the planner's
flags must be filtered through what *this* build accepts (flags come and go between builds, and an unknown flag
makes llama-server exit), and because ``--list-devices`` is the one view of GPUs that NVML cannot give (AMD,
Intel, Vulkan). The parsers are pure functions over the recorded text, so they are tested on real output.

Output formats (llama.cpp ``common/arg.cpp`` and ``tools/server/README.md``; docs/engine.md, "Flags"):
- ``--version`` prints on **stderr** ``version: 0.1.1 (build N, commit H)`` (#26839), earlier ``version: N (H)``.
- ``--list-devices`` prints ``Available devices:`` then ``  CUDA0: <desc> (<total> MiB, <free> MiB free)`` lines
  (``  (none)`` without a GPU backend).
"""

from __future__ import annotations

import errno
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bootstrap.core import settings
from bootstrap.core.console import t
from bootstrap.core.errors import ServerError
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.processes import run_captured
from bootstrap.place.engine_failure import ILLEGAL_INSTRUCTION, EngineFailure, ExitInfo, classify

_VERSION_NEW_RE = re.compile(r"\(build\s+(\d+),\s*commit\s+([^)\s]+)\)")
_VERSION_OLD_RE = re.compile(r"^version:\s*(\d+)\s*\(([^)\s]+)\)")
_FLAG_RE = re.compile(r"--?[A-Za-z][A-Za-z0-9_-]*")
_DEVICE_RE = re.compile(r"^\s*([^\s:]+):\s+(.*?)\s*\((\d+)\s*MiB,\s*(\d+)\s*MiB free\)\s*$")
_COMMIT_UNKNOWN = frozenset({"unknown", "N/A", ""})
MAX_OUTPUT = 1 << 20  # --help is ~60 KB; more than this is not llama-server talking


@dataclass(frozen=True)
class EngineDevice:
    """One backend device as llama-server lists it (``CUDA0``, ``Vulkan0``, ``MTL0``…)."""

    name: str
    description: str
    total_mib: int
    free_mib: int


@dataclass(frozen=True)
class EngineInfo:
    """The probe's answer for one binary."""

    version_line: str
    build: int | None
    commit: str | None
    flags: frozenset[str]
    devices: tuple[EngineDevice, ...]


# ---- pure parsers ---------------------------------------------------------------------------------------
def parse_version(text: str) -> tuple[str, int | None, str | None]:
    """(the ``version:`` line, build number, commit) from ``--version`` output; build/commit None when absent.

    Non-release builds print build 0/1 and commit ``unknown`` (kept as build, commit None).
    """
    line = next((ln.strip() for ln in text.splitlines() if ln.strip().startswith("version:")), "")
    m = _VERSION_NEW_RE.search(line)
    if m is None:
        m = _VERSION_OLD_RE.match(line)
    if m is None:
        return line, None, None
    commit = m.group(2)
    return line, int(m.group(1)), None if commit in _COMMIT_UNKNOWN else commit


def parse_help_flags(text: str) -> frozenset[str]:
    """Every flag ``--help`` lists, aliases and ``--no-`` forms included.

    An option line starts in column 0 with its comma-separated spellings, then an optional value placeholder,
    then the description (``-fa,   --flash-attn [on|off|auto]   set …``, ``--repack, -nr, --no-repack   …``);
    continuation lines are indented, so they are never mistaken for options.
    """
    flags: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("-"):
            continue
        for token in line.split():
            word = token.rstrip(",")
            if not _FLAG_RE.fullmatch(word):
                break
            flags.add(word)
            if not token.endswith(","):
                break
    return frozenset(flags)


def parse_devices(text: str) -> tuple[EngineDevice, ...]:
    """The device lines of ``--list-devices`` (none on a CPU-only build)."""
    out = []
    for line in text.splitlines():
        m = _DEVICE_RE.match(line)
        if m:
            out.append(EngineDevice(m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return tuple(out)


# ---- running the binary ---------------------------------------------------------------------------------
def child_env() -> dict[str, str]:
    """This process's environment without the variables that silently override llama.cpp flags."""
    return settings.engine_child_env()


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:300]


def run_engine(server: Path, arg: str, *, timeout: float = 30) -> tuple[str, str]:
    """(stdout, stderr) of ``server arg``; ``ServerError`` (exit 6) when it cannot start or fails.

    A failure that is the build's own (a missing library, an illegal instruction, a binary for another machine)
    is ``EngineFailed`` naming it, so the install can try another build; otherwise the message carries the first
    stderr line.
    """
    try:
        proc = run_captured([server, arg], timeout=timeout, env=child_env(), text=False)
    except subprocess.TimeoutExpired as exc:
        raise ServerError(t("engine.err_probe_timeout", server=str(server), arg=arg, seconds=int(timeout)),
                          t("engine.hint_probe")) from exc
    except OSError as exc:
        if exc.errno == errno.ENOEXEC:  # built for another CPU architecture or OS
            raise EngineFailure(ILLEGAL_INSTRUCTION, exc.strerror or str(exc)).error(str(server)) from exc
        raise ServerError(t("engine.err_probe_start", server=str(server), arg=arg,
                            detail=os_reason(exc)), t("engine.hint_probe")) from exc
    out = proc.stdout[:MAX_OUTPUT].decode("utf-8", "replace")
    err = proc.stderr[:MAX_OUTPUT].decode("utf-8", "replace")
    if proc.returncode != 0:
        failure = classify(ExitInfo.from_returncode(proc.returncode), err + "\n" + out)
        if failure.engine_cause:
            raise failure.error(str(server))
        detail = _first_line(err) or _first_line(out) or f"exit status {proc.returncode}"
        raise ServerError(t("engine.err_probe_start", server=str(server), arg=arg, detail=detail),
                          t("engine.hint_probe"))
    return out, err


def probe_version(server: Path, *, timeout: float = 30) -> tuple[str, int | None, str | None]:
    """``--version`` only: the cheap "does it start at all" check the install runs before placing an engine."""
    out, err = run_engine(server, "--version", timeout=timeout)
    line, build, commit = parse_version(err + "\n" + out)
    if not line:
        raise ServerError(t("engine.err_probe_start", server=str(server), arg="--version",
                            detail=_first_line(err + out) or "no version line"), t("engine.hint_probe"))
    return line, build, commit


def probe_engine(server: Path, *, timeout: float = 30) -> EngineInfo:
    """Run ``--version``, ``--help`` and ``--list-devices`` (argv lists, no shell) and parse them."""
    line, build, commit = probe_version(server, timeout=timeout)
    help_out, help_err = run_engine(server, "--help", timeout=timeout)
    flags = parse_help_flags(help_out + "\n" + help_err)
    dev_out, dev_err = run_engine(server, "--list-devices", timeout=timeout)
    return EngineInfo(line, build, commit, flags, parse_devices(dev_out + "\n" + dev_err))
