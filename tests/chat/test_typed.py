"""What a user types in ``qwenkit run``: one message over several lines, or a slash command (``chat/typed.py``).

Fed the lines a terminal would give ``input``; the pseudo-terminal sessions are in tests/e2e/test_terminal_chat.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bootstrap.chat.typed import MORE, PROMPT, Command, read_typed


def lines(*typed: str, prompts: list[str] | None = None) -> Callable[[str], str]:
    """``input`` for these lines, in order (then Ctrl-D); the prompts shown are recorded in ``prompts``."""
    pending = list(typed)

    def read(prompt: str) -> str:
        if prompts is not None:
            prompts.append(prompt)
        if not pending:
            raise EOFError
        return pending.pop(0)

    return read


def test_terminal_chat_reads_a_fenced_block_as_one_message() -> None:
    shown: list[str] = []
    typed = read_typed(lines('"""first', "/not a command inside", 'last"""', "next", prompts=shown))
    assert typed.text == "first\n/not a command inside\nlast" and typed.command is None
    assert shown == [PROMPT, MORE, MORE]
    assert read_typed(lines('"""one line"""')).text == "one line"
    assert read_typed(lines('"""', "a", '"""')).text == "a"


def test_terminal_chat_joins_lines_ended_by_a_backslash() -> None:
    shown: list[str] = []
    assert read_typed(lines("one \\", "two\\", "three", prompts=shown)).text == "one \ntwo\nthree"
    assert shown == [PROMPT, MORE, MORE]


def test_terminal_chat_reads_slash_commands() -> None:
    assert read_typed(lines("/think on")).command == Command("think", "on")
    assert read_typed(lines("  /MODEL  qwen3.5-4b ")).command == Command("model", "qwen3.5-4b")
    for word in ("/bye", "/exit", "/quit"):
        assert read_typed(lines(word)).command == Command("bye")
    unknown = read_typed(lines("/frobnicate now")).command
    assert unknown == Command("frobnicate", "now") and not unknown.known
    assert read_typed(lines("//not a command")).text == "//not a command"
    assert read_typed(lines("   ")).text == "" and read_typed(lines("   ")).command is None


def test_terminal_chat_passes_ctrl_d_in_a_block_to_the_caller() -> None:
    with pytest.raises(EOFError):
        read_typed(lines('"""unfinished'))
