"""Windows programs on the test bed: Debian's Wine (cmd.exe, the C runtime's argv split) and mingw-w64 for the
stand-in executables. ``scripts/setup_env.sh`` installs both (packages wine64, wine, gcc-mingw-w64-x86-64).

Wine's root folder is the ``Z:`` drive, so a Linux path is a Windows one with ``Z:`` in front and backslashes.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

import psutil

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


def run_until_exit(argv: list[str], env: dict[str, str], timeout: float,
                   encoding: str = "cp1252") -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (stdin closed) until *its process* ends, with its output as far as it came.

    A detached program the command starts under Wine (the kit's supervisor) may hold the pipes open after the
    command is over, so the end of the pipes is not waited for. A redirected stdout under Wine is read in its ANSI
    code page (cp1252 in these prefixes).
    """
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    chunks: dict[int, list[bytes]] = {1: [], 2: []}

    def pump(fd: int, stream: object) -> None:
        while data := os.read(stream.fileno(), 65536):  # type: ignore[attr-defined]
            chunks[fd].append(data)

    readers = [threading.Thread(target=pump, args=(n, s), daemon=True) for n, s in ((1, proc.stdout), (2, proc.stderr))]
    for reader in readers:
        reader.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    for reader in readers:
        reader.join(timeout=5)
    text = {n: b"".join(c).decode(encoding, errors="replace") for n, c in chunks.items()}
    return subprocess.CompletedProcess(proc.args, rc, text[1], text[2])


def pack_win_cpu(bin_dir: Path, dest: Path, tag: str) -> Path:
    """The cross-built engine in ``bin_dir`` packed as upstream's ``win-cpu`` release asset: the files at the top."""
    asset = dest / f"llama-{tag}-bin-win-cpu-x64.zip"
    with zipfile.ZipFile(asset, "w", zipfile.ZIP_DEFLATED) as archive:
        for exe in sorted(bin_dir.glob("*.exe")):
            archive.write(exe, exe.name)
    return asset


def processes_running(program: str, *marks: str) -> list[psutil.Process]:
    """The Wine processes (as Linux sees them) whose command line names ``program`` and any of ``marks``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if program in cmdline and any(mark in cmdline for mark in marks):
            found.append(proc)
    return found


def chinese_windows(work: Path) -> dict[str, str] | None:
    """The variables that make Wine a zh-CN Windows (ANSI and OEM code page 936, UI language 0x0804), or None where
    this machine cannot. Wine takes its locale from ``LC_CTYPE``, and needs it to exist in glibc too, or it reads
    the Unix environment as ASCII (seen: "张三" arrived as "e< d8\\t"); so zh_CN.UTF-8 is compiled from the
    ``locales`` package's source into ``work`` with ``localedef`` and named by ``LOCPATH`` (glibc's search path
    for locales), which changes nothing on the machine."""
    if shutil.which("localedef") is None or not Path("/usr/share/i18n/locales/zh_CN").is_file():
        return None
    target = work / "locales" / "zh_CN.UTF-8"
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["localedef", "-i", "zh_CN", "-f", "UTF-8", str(target)], capture_output=True, timeout=120,
                   check=False)  # exit 1 on mere warnings
    if not (target / "LC_CTYPE").is_file():
        return None
    return {"LOCPATH": str(target.parent), "LANG": "zh_CN.UTF-8", "LC_ALL": "zh_CN.UTF-8"}


@dataclass(frozen=True)
class ConsoleRun:
    """A program run in a console of its own, as a double-click gives it: what the window showed, and whether the
    program was still waiting at its closing prompt (``close_at``) before Enter was pressed there."""

    returncode: int
    text: str
    waited_to_close: bool


_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def run_in_console(argv: list[str], env: dict[str, str], timeout: float, *, answer_at: str,
                   close_at: str) -> ConsoleRun:
    """Run ``argv`` with a terminal as its console (Wine gives a program started on a tty a console of its own, so
    it counts as the only process there, as after a double-click); press Enter at the question ``answer_at`` and
    again at ``close_at``. Wine's console drops keys typed before the program reads them, so each Enter waits a
    moment after the prompt and is repeated while nothing moves."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env, close_fds=True)
    os.close(terminal)
    shown = b""
    deadline = time.monotonic() + timeout
    pressed: dict[str, float] = {}  # prompt -> when Enter was last pressed there
    seen_at: dict[str, int] = {}  # prompt -> length of the text shown when it was pressed
    waited = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    data = os.read(controller, 65536)
                except OSError:  # the terminal is gone: every program on it has ended
                    data = b""
                if not data:
                    break
                shown += data
            if proc.poll() is not None and not ready:
                break
            text = _ESCAPES.sub("", shown.decode("utf-8", errors="replace"))
            for prompt in (answer_at, close_at):
                if prompt not in text or (prompt == answer_at and close_at in text):
                    continue
                last = pressed.get(prompt)
                moved = len(text) > seen_at.get(prompt, -1) + 8  # more than the echo of the Enter (a newline)
                if last is None or (not moved and time.monotonic() - last > 20):
                    time.sleep(3 if prompt == close_at else 1)
                    if prompt == close_at and last is None:
                        waited = proc.poll() is None
                    os.write(controller, b"\r")
                    pressed[prompt], seen_at[prompt] = time.monotonic(), len(text)
        rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(controller)
    return ConsoleRun(rc, _ESCAPES.sub("", shown.decode("utf-8", errors="replace")), waited)
