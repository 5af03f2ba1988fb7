"""The words systemd reads from an ``ExecStart=``-like line the kit writes (systemd.service(5) "Command lines":
a double-quoted word with C-style ``\\"``/``\\\\`` escapes, ``%%`` for ``%`` (systemd.unit(5) "Specifiers"),
``$$`` for ``$``; a word may start with the ``-`` prefix). Only the forms the ``systemd`` filter writes are read:
what a test needs to run the very command a unit would."""

from __future__ import annotations

import re

_WORD = re.compile(r'"((?:[^"\\]|\\.)*)"|(\S+)')


def exec_words(value: str) -> list[str]:
    """The argv of a command line (its ``-`` prefix dropped)."""
    value = value.removeprefix("-")
    words = []
    for quoted, plain in _WORD.findall(value):
        text = re.sub(r"\\(.)", r"\1", quoted) if quoted or not plain else plain
        words.append(text.replace("%%", "%").replace("$$", "$"))
    return words
