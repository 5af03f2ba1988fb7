"""A command line as people read it: one flag per line with its values (the start scripts, the router's preset)."""

from __future__ import annotations

import re
from collections.abc import Sequence

# A word starting a new line in the rendered command: a flag, not a negative number ("-1" is a value).
_FLAG = re.compile(r"-[^\d]")


def group_words(words: Sequence[str]) -> list[list[str]]:
    """Split a flat argument list into lines of ``flag value…`` so the script reads like the plan."""
    lines: list[list[str]] = []
    for word in words:
        if not lines or _FLAG.match(word):
            lines.append([word])
        else:
            lines[-1].append(word)
    return lines

