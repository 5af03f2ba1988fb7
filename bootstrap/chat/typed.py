"""What the user types in a terminal chat: a message over one or several lines, or a slash command.

Several lines as Ollama's ``ollama run`` takes them: a message that starts with ``\"\"\"`` goes on until a line that
ends with ``\"\"\"``; and, as a shell does, a line that ends with a backslash goes on on the next one. A line that
starts with ``/`` is a command (``/think``, ``/clear``, ``/model``, ``/help``, ``/bye``); inside a ``\"\"\"`` block
it is text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

PROMPT = ">>> "
MORE = "... "
FENCE = '"""'
COMMANDS = ("think", "clear", "model", "help", "bye")
QUIT_WORDS = ("bye", "exit", "quit")  # /exit and /quit as other REPLs take them


@dataclass(frozen=True)
class Command:
    """A slash command and the rest of its line."""

    name: str  # "think", "clear", "model", "help", "bye", or what was typed when it is none of them
    arg: str = ""

    @property
    def known(self) -> bool:
        return self.name in COMMANDS


@dataclass(frozen=True)
class Typed:
    """One entry: a message to send (``text``), a ``command``, or nothing (an empty line)."""

    text: str = ""
    command: Command | None = None


def command_of(line: str) -> Command | None:
    """``/model qwen3.5-4b`` → ``Command("model", "qwen3.5-4b")``; a line that is not a command → None."""
    stripped = line.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    word, _, rest = stripped[1:].partition(" ")
    name = word.lower()
    return Command("bye" if name in QUIT_WORDS else name, rest.strip())


def read_typed(read_line: Callable[[str], str]) -> Typed:
    """One entry, read line by line with ``read_line(prompt)`` (``input``); EOFError (Ctrl-D) and
    KeyboardInterrupt (Ctrl-C) pass to the caller, a message begun is then dropped."""
    first = read_line(PROMPT)
    if first.lstrip().startswith(FENCE):
        return Typed(text=_fenced(first.lstrip()[len(FENCE):], read_line))
    command = command_of(first)
    if command is not None:
        return Typed(command=command)
    lines = [first]
    while lines[-1].endswith("\\"):
        lines[-1] = lines[-1][:-1]
        lines.append(read_line(MORE))
    return Typed(text="\n".join(lines).strip())


def _fenced(rest: str, read_line: Callable[[str], str]) -> str:
    """The text of a ``\"\"\"`` block whose first line's remainder is ``rest``."""
    lines = []
    line = rest
    while not line.rstrip().endswith(FENCE):
        lines.append(line)
        line = read_line(MORE)
    lines.append(line.rstrip()[:-len(FENCE)])
    return "\n".join(lines).strip()
