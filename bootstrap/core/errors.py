"""Error kinds and the one place that maps them to the exit codes of DESIGN.md §2.

Every failure a user can meet is a ``QwenKitError`` carrying a message (already localized) and a hint; the entry
point prints those two lines and exits with the error's code. Anything else is a bug: exit 1.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes users' scripts rely on (DESIGN.md §2); never renumber."""

    OK = 0
    INTERNAL = 1  # a bug
    USAGE = 2  # bad usage or invalid input
    UNSUPPORTED = 3  # this machine cannot run it (RAM, disk, OS)
    SOURCE = 4  # source unreachable or failed; a rerun resumes
    INTEGRITY = 5  # checksum mismatch, tampered bundle
    SERVER = 6  # server or service failed to start or verify
    INTERRUPTED = 130  # Ctrl-C / SIGINT
    OUTPUT_CLOSED = 141  # stdout's reader stopped reading (| head): 128 + SIGPIPE, as a shell reports git there


class QwenKitError(Exception):
    """A failure the user can act on: one-line ``message`` plus an optional ``hint`` saying what to do next."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(QwenKitError):
    """Bad command line or invalid input file (a hostile GGUF header, a malformed hardware profile…)."""

    exit_code = ExitCode.USAGE


class UnsupportedMachine(QwenKitError):
    """Not enough RAM or disk, or an OS/CPU the product cannot serve."""

    exit_code = ExitCode.UNSUPPORTED


class SourceError(QwenKitError):
    """A download source is unreachable or failed; partial state is kept so a rerun resumes."""

    exit_code = ExitCode.SOURCE


class IntegrityError(QwenKitError):
    """Bytes do not match their expected sha256 (or a bundle was altered); nothing was placed."""

    exit_code = ExitCode.INTEGRITY


class ServerError(QwenKitError):
    """llama-server or its service did not start, or did not answer the verification request."""

    exit_code = ExitCode.SERVER


def exit_code_for(exc: BaseException) -> ExitCode:
    """The exit code for any exception reaching the entry point."""
    if isinstance(exc, QwenKitError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.INTERNAL
