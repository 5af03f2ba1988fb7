"""One voice for every message: language choice (zh / en), stderr output, colour, and JSON on stdout.

Human text goes to stderr so ``--json`` output on stdout stays one clean document (DESIGN.md §2).
"""

from __future__ import annotations

import ctypes
import json
import locale
import sys
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any, TextIO

from bootstrap.core import settings
from bootstrap.core.display_text import shown
from bootstrap.core.messages import MESSAGES

ERROR_LIMIT = 4000  # characters of an error line: its fields are bounded already, this bounds the whole line
# Windows LANGIDs whose primary language is Chinese have 0x04 in their low 10 bits (zh-CN 0x0804, zh-TW 0x0404…).
_LANG_CHINESE = 0x04


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


def _colour(stream: TextIO, code: str, text: str) -> str:
    if settings.no_color() or not getattr(stream, "isatty", lambda: False)():
        return text
    return f"\033[{code}m{text}\033[0m"


def _write(line: str, stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    try:
        print(line, file=stream, flush=True)
    except UnicodeEncodeError:  # a legacy console code page that cannot show Chinese
        encoding = getattr(stream, "encoding", None) or "ascii"
        print(line.encode(encoding, "replace").decode(encoding), file=stream, flush=True)


def info(text: str) -> None:
    """A progress or result line for people (stderr)."""
    _write(text)


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
    """The single JSON document of a ``--json`` run, on stdout."""
    print(json.dumps(document, ensure_ascii=False, indent=2), file=sys.stdout, flush=True)
