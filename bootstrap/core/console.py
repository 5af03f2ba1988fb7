"""One voice for every message: language choice (zh / en), the two output streams, colour, and JSON.

Two streams, as git, pip and uv use them (DESIGN.md §2): a command's primary output — the ``models`` and ``doctor``
tables, the plan, ``status``, the install report — goes to stdout (``out``, ``out_ok``), so ``| less``, ``| grep``
and ``> file`` get it; progress, warnings, errors and questions go to stderr (``info``, ``ok``, ``warn``,
``error``). ``--json`` prints one document on stdout and nothing else there (``emit_json``). ``detail`` lines are
the technical ones (a pip command line, a tuning verdict, the engine's own log) that only ``--verbose`` shows.

The streams can fail under us; none of that is a bug (exit 1):

- stdout closed by its reader (``qwenkit models | head -1``, EPIPE): ``OutputClosed`` ends the command quietly
  with ``OUTPUT_CLOSED_EXIT`` (``cli.main``), as git does when ``head`` stops reading;
- stdout refusing the bytes (``> /dev/full``, a closed descriptor): a one-line error on stderr, exit 3 for a full
  disk, else 2 (``OutputFailed``), never exit 0 with the output lost;
- stderr gone: its lines are dropped, the command goes on (diagnostics lost do not change the result).

After a failed write the descriptor is pointed at the null device, so the bytes left in Python's buffer do not fail
again at exit ("Exception ignored … BrokenPipeError", exit 120).
"""

from __future__ import annotations

import ctypes
import errno
import json
import locale
import os
import sys
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any, TextIO

from bootstrap.core import settings
from bootstrap.core.display_text import shown
from bootstrap.core.errors import ExitCode, QwenKitError
from bootstrap.core.messages import MESSAGES

ERROR_LIMIT = 4000  # characters of an error line: its fields are bounded already, this bounds the whole line
# Windows LANGIDs whose primary language is Chinese have 0x04 in their low 10 bits (zh-CN 0x0804, zh-TW 0x0404…).
_LANG_CHINESE = 0x04
# The status a shell reports for a program that its reader stopped reading (128 + SIGPIPE), as git and coreutils
# end there (killed by SIGPIPE): not 0, since the output was cut short, and none of the other failures.
OUTPUT_CLOSED_EXIT = int(ExitCode.OUTPUT_CLOSED)
# errno of a write to a pipe whose reader is gone: EPIPE; Windows reports EINVAL for the same (a closed pipe handle).
_CLOSED = {errno.EPIPE} | ({errno.EINVAL} if sys.platform == "win32" else set())


class OutputClosed(Exception):
    """Whoever read stdout stopped reading (``| head``): the command ends here, quietly (``cli.main``)."""


class OutputFailed(QwenKitError):
    """stdout refused the bytes (a full disk behind ``>``, a closed descriptor): the output is lost, so say so."""

    def __init__(self, message: str, hint: str | None, code: ExitCode) -> None:
        super().__init__(message, hint)
        self.exit_code = code


def language_from(hint: str | None, windows_langid: int | None = None) -> str:
    """``"zh"`` for a Chinese locale (``zh_CN.UTF-8``, ``zh-Hans``, LANGID 0x0804…), else ``"en"``."""
    if hint:
        code = hint.split(":")[0].strip().lower()
        if code and code not in ("c", "posix", "c.utf-8"):
            return "zh" if code.startswith("zh") or code.startswith("chinese") else "en"
    if windows_langid is not None and windows_langid & 0x3FF == _LANG_CHINESE:
        return "zh"
    return "en"


def _windows_langid() -> int | None:
    """The user's UI language on Windows (env locale variables are rarely set there)."""
    if sys.platform != "win32":
        return None
    try:
        return int(ctypes.windll.kernel32.GetUserDefaultUILanguage())  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return None


def detect_language() -> str:
    """The UI language for this process."""
    hint = settings.language_hint()
    if not hint:
        hint = locale.getlocale()[0]
    return language_from(hint, _windows_langid())


_language: str | None = None


def language() -> str:
    """The cached UI language (``set_language`` overrides it, for tests and ``--lang``)."""
    global _language
    if _language is None:
        _language = detect_language()
    return _language


def set_language(lang: str | None) -> None:
    """Force ``"zh"``/``"en"``, or ``None`` to detect again on next use."""
    global _language
    _language = lang


def join_sentences(*sentences: str) -> str:
    """Sentences in one line: space-separated in English, run together after Chinese full stops."""
    return ("" if language() == "zh" else " ").join(sentences)


def join_names(names: Iterable[str]) -> str:
    """Names in one line (files, models, packages): ``, `` in English, the enumeration comma ``、`` in Chinese (a
    half-width comma has no place in a Chinese sentence)."""
    return ("、" if language() == "zh" else ", ").join(names)


def join_items(items: Iterable[str]) -> str:
    """Items of a list in one line: ``; `` in English, the full-width ``；`` in Chinese."""
    return ("；" if language() == "zh" else "; ").join(items)


def aside(text: str) -> str:
    """A remark after a sentence: `` (text)`` in English, ``（text）`` with full-width brackets in Chinese."""
    return f"（{text}）" if language() == "zh" else f" ({text})"


def t(key: str, **fields: Any) -> str:
    """The message ``key`` in the UI language, formatted with ``fields``.

    Text fields come from outside (paths, URLs, a MODEL, an exception's words): each is shown through
    ``display_text.shown`` (credentials masked, control characters escaped, length bounded), so no message can
    leak a password or write raw escape sequences to the terminal, whichever call site built it.
    """
    texts = MESSAGES[key]
    safe = {name: shown(str(value)) if isinstance(value, (str, PurePath)) else value
            for name, value in fields.items()}
    return texts.get(language(), texts["en"]).format(**safe)


def label(key: str) -> str:
    """A line's label and its colon: ``error: `` in English, ``错误：`` (full-width, no space) in Chinese."""
    return t(key) + ("：" if language() == "zh" else ": ")


def _colour(stream: TextIO | None, code: str, text: str) -> str:
    if settings.no_color() or not getattr(stream, "isatty", lambda: False)():
        return text
    return f"\033[{code}m{text}\033[0m"


_verbose = False


def set_verbose(on: bool) -> None:
    """``--verbose``: show ``detail`` lines (the technical ones) too."""
    global _verbose
    _verbose = on


def verbose() -> bool:
    return _verbose


def _detach(stream: TextIO) -> None:
    """Point a failed stream's descriptor at the null device: what is left in its buffer goes nowhere, quietly."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):
        return
    try:
        os.dup2(null, fd)
    except OSError:
        pass
    finally:
        os.close(null)


def _encodable(line: str, stream: TextIO) -> str:
    """``line`` as ``stream``'s encoding can carry it: a character it cannot (Chinese in a Windows program's
    redirected output on an English system, where Python writes the ANSI code page, cp1252) becomes its escape
    (``\\u5f20``), on stdout and stderr alike. Both streams follow this one rule whatever error handler Python gave
    each (``strict`` on stdout, ``backslashreplace`` on stderr), and nothing is lost (docs/cli.md, "Output")."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        line.encode(encoding)
    except UnicodeEncodeError:
        return line.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # a stream naming no codec Python knows: written as it is
        pass
    return line


def _print(line: str, stream: TextIO, end: str = "\n") -> None:
    print(_encodable(line, stream), file=stream, flush=True, end=end)


def _write(line: str, stream: TextIO | None = None, end: str = "\n") -> None:
    """A line on stderr (``stream``: another text stream, a test's); a failing stderr drops the line."""
    stream = stream or sys.stderr
    if stream is None:  # started with stderr closed
        return
    try:
        _print(line, stream, end)
    except (OSError, ValueError):  # EPIPE, EIO, a closed file: the messages are lost, the command goes on
        _detach(stream)


def _write_out(line: str, end: str = "\n") -> None:
    """A line of primary output on stdout; a reader gone ends the command, any other failure is an error."""
    stream = sys.stdout
    if stream is None:  # started with stdout closed (``>&-``)
        raise _failed(OSError(errno.EBADF, os.strerror(errno.EBADF)))
    try:
        _print(line, stream, end)
    except OSError as exc:
        _detach(stream)
        if exc.errno in _CLOSED:
            raise OutputClosed from exc
        raise _failed(exc) from exc
    except ValueError as exc:  # "I/O operation on closed file"
        raise _failed(OSError(errno.EBADF, str(exc))) from exc


def _failed(exc: OSError) -> OutputFailed:
    full = exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
    reason = t("fs.reason_enospc") if full else (exc.strerror or type(exc).__name__)
    return OutputFailed(t("console.err_output", reason=reason), t("console.hint_output"),
                        ExitCode.UNSUPPORTED if full else ExitCode.USAGE)


def out(text: str = "") -> None:
    """A line of the command's primary output (stdout): a table row, a plan line, a status line, the report."""
    _write_out(text)


def out_part(text: str) -> None:
    """Primary output as it arrives, without ending the line (a streamed answer, ``qwenkit run``): flushed at once,
    failing as ``out`` fails."""
    _write_out(text, end="")


def styled_stdout() -> bool:
    """Whether stdout takes ANSI styles: a terminal, ``NO_COLOR`` unset, and on Windows a console that was switched
    to virtual-terminal processing (``ENABLE_VIRTUAL_TERMINAL_PROCESSING``, Windows 10 and later: Windows Terminal
    has it on, the classic console only when asked; Microsoft's "Console Virtual Terminal Sequences")."""
    if settings.no_color() or not getattr(sys.stdout, "isatty", lambda: False)():
        return False
    return sys.platform != "win32" or _windows_vt()


def _windows_vt() -> bool:
    """Turn on the console's virtual-terminal processing for stdout; False where the console refuses it."""
    try:
        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.GetStdHandle(-11)  # STD_OUTPUT_HANDLE
        mode = ctypes.c_uint32()
        if not kernel32.GetConsoleMode(handle, ctypes.byref(mode)):
            return False
        return bool(mode.value & 0x0004 or kernel32.SetConsoleMode(handle, mode.value | 0x0004))
    except (AttributeError, OSError):
        return False


def dim(text: str) -> str:
    """``text`` dimmed (ANSI SGR 2) where stdout takes styles (``styled_stdout``), else as it is."""
    return f"\033[2m{text}\033[0m" if text and styled_stdout() else text


def out_ok(text: str) -> None:
    """The primary output's verdict line when it is a success (green on a terminal)."""
    _write_out(_colour(sys.stdout, "32", text))


def detail(text: str) -> None:
    """A technical line (stderr) shown only with ``--verbose``: a command line, a tuning verdict, an engine log."""
    if _verbose:
        _write(text)


def info(text: str) -> None:
    """A progress or result line for people (stderr)."""
    _write(text)


def info_part(text: str) -> None:
    """Text for people (stderr) that does not end its line: a prompt the answer is typed after."""
    _write(text, end="")


def ok(text: str) -> None:
    """A success line (green on a terminal)."""
    _write(_colour(sys.stderr, "32", text))


def warn(text: str) -> None:
    """A warning line that must not be missed."""
    _write(_colour(sys.stderr, "33", label("label.warning")) + text)


def error(message: str, hint: str | None = None) -> None:
    """The one-line error plus its hint: what the user sees instead of a traceback (a message built without
    ``t``, such as argparse's, is made safe here too)."""
    _write(_colour(sys.stderr, "31", label("label.error")) + shown(message, ERROR_LIMIT))
    if hint:
        _write(label("label.hint") + shown(hint, ERROR_LIMIT))


def emit_json(document: Any) -> None:
    """The single JSON document of a ``--json`` run, on stdout. It is data, so a character the stream's encoding
    cannot hold is escaped by JSON itself (``\\u5f20``, surrogate pairs included): on Windows a redirected stdout
    uses the ANSI code page (cp1252 on an English system) and a Chinese path must not be lost."""
    text = json.dumps(document, ensure_ascii=False, indent=2)
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        text = json.dumps(document, ensure_ascii=True, indent=2)
    _write_out(text)
