"""Values from outside (a MODEL, a path, a URL, an exception's text) made safe to show on a terminal or in a log.

``console.t`` passes every field of every message through ``shown``, so no call site has to remember it:
- control characters are escaped (``\\x1b`` stays visible text): a MODEL holding an escape sequence must not
  recolour, clear or rewrite the user's terminal, and a newline must not forge a second message line;
- the user:password part of a URL is masked (``https://alice:***@mirror/``): ``--bundle``, ``--source`` and
  ``bundle verify`` accept URLs with credentials (RFC 3986 §3.2.1 "userinfo"), which must not end up in a terminal
  scrollback, a CI log or a bug report;
- a value is cut to a length a person can read (a 100,000-character argument is named, not printed).
"""

from __future__ import annotations

import re

FIELD_LIMIT = 1000  # characters of one value shown in a message
# C0 and C1 controls, DEL, and the bidirectional overrides/isolates that can make text read in another order
# (Unicode TR #9; CVE-2021-42574 "Trojan Source").
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# scheme://userinfo@ (RFC 3986 §3.1, §3.2.1): userinfo never holds "/", "@" or whitespace.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/@\s]*)@")


def _mask(match: re.Match[str]) -> str:
    user, sep, _password = match.group(2).partition(":")
    # "user:password" keeps the user; a lone token (``https://TOKEN@host``) is a secret itself.
    return f"{match.group(1)}{user}:***@" if sep else f"{match.group(1)}***@"


def masked_url(text: str) -> str:
    """``text`` with the password (or a lone token) of every URL in it replaced by ``***``."""
    return _USERINFO.sub(_mask, text)


def printable(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\x1b``, ``\\u202e``)."""
    def escape(match: re.Match[str]) -> str:
        char = match.group(0)
        return repr(char)[1:-1] if ord(char) < 0x100 else f"\\u{ord(char):04x}"

    return _CONTROL.sub(escape, text)


def shortened(text: str, limit: int = FIELD_LIMIT) -> str:
    """At most ``limit`` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit})"


def shown(text: str, limit: int = FIELD_LIMIT) -> str:
    """A value as messages show it: credentials masked, control characters escaped, length bounded."""
    return shortened(printable(masked_url(text)), limit)
