"""Yes/no questions on the terminal: one set of answers in both languages, whichever command asks.

The caller checks that there is a terminal (unattended runs use ``--yes``); here Enter takes the default, a yes
word (English or Chinese) is yes, anything else is no, and a closed stdin (Ctrl-D) is no: when in doubt, do nothing.
"""

from __future__ import annotations

import sys

YES_ANSWERS = frozenset({"y", "yes", "是", "是的", "好", "确定", "对"})


def stdin_is_terminal() -> bool:
    """Whether a person can answer: stdin is a terminal. A closed stdin (``<&-``: Python then has no ``sys.stdin``)
    or a pipe is not, and the caller asks for ``--yes`` instead."""
    stdin = sys.stdin
    try:
        return stdin is not None and stdin.isatty()
    except (OSError, ValueError):  # a descriptor closed under us
        return False


def ask_yes_no(question: str, *, default: bool) -> bool:
    """Ask ``question`` (it shows its own ``[Y/n]`` / ``[y/N]``) on stderr and read one line of stdin."""
    try:
        sys.stderr.write(question.rstrip() + " ")
        sys.stderr.flush()
        line = sys.stdin.readline()
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):  # no stderr or stdin to ask on: do nothing
        return False
    if not line:  # end of input
        return False
    answer = line.strip().lower()
    return default if not answer else answer in YES_ANSWERS
