"""Values given on the command line, in an answers file or in the environment, checked before any work is done.

A value with a control character, or one too long to be meant, is refused at once with exit 2, before a lock is
taken or a byte is downloaded: the install home, MODEL, a source or bundle URL all end up in paths, URLs, start
scripts and unit files, where a newline cannot be quoted (``core.templating``'s filters refuse it, but only after the
download) and a 100,000-character name fails the kernel, not the user. The host and port have their own parsers
next to the server start they describe (``launch_spec.parse_host``).
"""

from __future__ import annotations

import re

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError

MAX_TEXT = 4096  # PATH_MAX on Linux; no MODEL, URL or folder a person types is longer
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# A whole number in decimal digits (``\d``: Unicode category Nd, what ``int()`` reads — ASCII, and the full-width
# digits a Chinese input method types). ``str.isdigit()`` also accepts superscripts and other digit-like
# characters (``"²".isdigit()``) that ``int()`` refuses, and ``int()`` refuses more than 4300 digits
# (``sys.get_int_max_str_digits``): no count, size, port or context has 40.
_DECIMAL = re.compile(r"\d{1,40}")


def decimal_int(text: str | None, *, signed: bool = False) -> int | None:
    """``text`` (surrounding blanks ignored) as a whole number when it is one written in decimal digits (with a
    leading ``-`` when ``signed``), else None: the one test before any ``int()`` of text from outside, so a
    look-alike digit is a refused value, never an internal error."""
    if text is None:
        return None
    value = text.strip()
    negative = signed and value.startswith("-")
    digits = value[1:] if negative else value
    if _DECIMAL.fullmatch(digits) is None:
        return None
    return -int(digits) if negative else int(digits)


def check_text(option: str, value: str, limit: int = MAX_TEXT) -> str:
    """``value`` unchanged, or ``UsageError`` naming ``option`` for a control character or a length over
    ``limit``."""
    if len(value) > limit:
        raise UsageError(t("input.too_long", option=option, length=len(value), limit=limit),
                         t("input.hint_value"))
    found = _CONTROL.search(value)
    if found is not None:
        raise UsageError(t("input.control", option=option, value=value, char=repr(found.group(0))),
                         t("input.hint_value"))
    return value
