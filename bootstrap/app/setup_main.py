"""Entry point of the frozen ``QwenClientKit-Setup``: a double-click (no arguments) means ``install``.

Two things only a frozen, double-clicked program needs: first-start checks of what the build carries (a broken
build stops before touching the machine, ``bootstrap.app.setup_checks``), and a "press Enter" pause at the end, because
Windows closes a console window the moment its last process exits and the user would never read the result.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import sys
from collections.abc import Sequence
from pathlib import Path

from bootstrap.app.cli import main
from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import ExitCode

# Commands that change the machine or write a bundle: worth checking the build before them.
CHECKED_COMMANDS = ("install", "bundle")


def console_process_count() -> int | None:
    """How many processes share this console (kernel32 ``GetConsoleProcessList``); None off Windows or on failure.

    The call returns the number of attached processes even when the buffer is too small for all their ids
    (Microsoft Learn, "GetConsoleProcessList function"), so a small buffer is enough.
    """
    if sys.platform != "win32":
        return None
    try:
        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        ids = (ctypes.c_uint32 * 4)()
        count = int(kernel32.GetConsoleProcessList(ids, len(ids)))
    except (AttributeError, OSError):
        return None
    return count if count > 0 else None


def own_process_count() -> int:
    """Processes the setup itself puts on its console: 2 for a onefile build (bootloader parent + Python child),
    1 for a onedir build (PyInstaller sets ``_MEIPASS`` to the executable's folder or its ``_internal``)."""
    meipass = getattr(sys, "_MEIPASS", None)
    if not meipass:
        return 1
    exe_dir = Path(sys.executable).resolve().parent
    return 1 if Path(meipass).resolve() in (exe_dir, exe_dir / "_internal") else 2


def should_pause(platform: str, frozen: bool, argv: Sequence[str], console_processes: int | None,
                 own_processes: int = 2) -> bool:
    """Whether to wait for Enter before exiting: only a frozen Windows setup whose console is its own.

    A double-click gives the program a new console holding only its own processes; started from cmd.exe or
    PowerShell the shell is attached too (counts recorded on real Windows: double-clicked onefile 2, from cmd.exe 3,
    from PowerShell 3; onedir started by Explorer 1). When the count is unknown, no arguments is the double-click sign.
    """
    if platform != "win32" or not frozen:
        return False
    if console_processes is None:
        return not argv
    return console_processes <= own_processes


def command_of(args: Sequence[str]) -> str | None:
    """The subcommand name: the first word that is not an option (the top-level options take no values)."""
    return next((a for a in args if not a.startswith("-")), None)


def with_bundle_beside(args: Sequence[str], exe_dir: Path) -> list[str]:
    """``install`` from the bundle the setup sits in: a setup beside ``payload/manifest.json`` (a USB drive, an
    intranet share) installs from that folder unless the user named a source; no network is touched."""
    args = list(args)
    if command_of(args) != "install" or any(a in ("--bundle", "--source") or a.startswith(("--bundle=", "--source="))
                                            for a in args):
        return args
    if not (exe_dir / "payload" / "manifest.json").is_file():
        return args
    return [*args, "--bundle", str(exe_dir)]


def run_checked(args: Sequence[str], frozen: bool) -> int:
    """The CLI, preceded by the first-start checks when a frozen build is about to install or bundle."""
    if frozen and command_of(args) in CHECKED_COMMANDS:
        from bootstrap.app.setup_checks import first_start_checks  # the source checkout never needs these

        problems = first_start_checks()
        for problem in problems:
            console.error(problem.what, problem.hint)
        if problems:
            return int(ExitCode.INTERNAL)  # a broken build is a bug, not the user's input
    return main(list(args))


def _pause(code: int) -> None:
    if code != 0:
        console.info(t("setup.failed", code=code))
    console.info(t("setup.pause"))
    # no console input (redirected, or none at all) or Ctrl-C: just close
    with contextlib.suppress(EOFError, KeyboardInterrupt, RuntimeError, OSError):
        input()


def setup_main(argv: Sequence[str] | None = None) -> int:
    """Run the setup (no arguments: ``install``, DESIGN.md §2) and keep a double-clicked window open at the end."""
    given = list(sys.argv[1:] if argv is None else argv)
    frozen = bool(getattr(sys, "frozen", False))
    try:
        args = given or ["install"]
        if frozen:
            args = with_bundle_beside(args, Path(sys.executable).resolve().parent)
        code = run_checked(args, frozen)
    except KeyboardInterrupt:  # outside main()'s own handler (during the checks)
        console.info(t("err.interrupted"))  # the user's choice, not an error
        code = int(ExitCode.INTERRUPTED)
    except SystemExit as exc:  # argparse's --help / --version end this way; a double-clicked window must still wait
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            console.error(str(exc.code))
            code = 1
    if should_pause(sys.platform, frozen, given, console_process_count(), own_process_count()):
        _pause(code)
    return code


if __name__ == "__main__":
    # py-cpuinfo reads CPUID in a child process (multiprocessing, spawned on Windows): a frozen program must hand such
    # a child to multiprocessing first (Python docs, multiprocessing.freeze_support), or the child runs the setup
    # with "parent_pid=..." as its command and the CPU's flags come back empty (seen under Wine: "No AVX2").
    multiprocessing.freeze_support()
    sys.exit(setup_main())
