"""A chat session in the terminal, and the one-shot answer of a question given on the command line or stdin.

The answer is the primary output (stdout), streamed as it arrives; everything else — the banner, command replies,
"answer stopped", errors — goes to stderr, so ``qwenkit run MODEL "…" > answer.txt`` holds the answer only. The
model's reasoning is shown only where a person reads stdout (a terminal), dimmed where the terminal takes styles
(``console.dim``: not with ``NO_COLOR``), between "Thinking..." and "...done thinking." as Ollama shows it; never in a
pipe or a file, and not with ``--hide-thinking`` / ``/think hide``.

Keys, as a user of ``ollama run`` expects them: Ctrl-C while an answer streams stops that answer (the stream is
closed, the server stops generating) and the prompt comes back; Ctrl-C at the prompt says how to quit, twice in a
row quits; Ctrl-D (Ctrl-Z Enter on Windows) or ``/bye`` quits. All of them exit 0: leaving the chat is no failure.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bootstrap.catalog.model_ref import installed_name
from bootstrap.chat.conversation import Answer, Conversation
from bootstrap.chat.typed import Command, read_typed
from bootstrap.core import console
from bootstrap.core.console import join_names, t
from bootstrap.core.errors import QwenKitError
from bootstrap.verify.chat import StreamPart


@dataclass
class Display:
    """How an answer is shown: its reasoning or not (``reasoning``), and where a line was left open."""

    reasoning: bool
    _thinking: bool = False
    _started: bool = False  # content shown
    _open: bool = False  # the last thing written did not end its line

    def show(self, part: StreamPart) -> None:
        if part.reasoning and self.reasoning and not self._started:
            if not self._thinking:
                self._write(console.dim(t("chat.thinking_start")) + "\n")
                self._thinking = True
            self._write(console.dim(part.reasoning))
        if part.content:
            text = part.content
            if not self._started:
                text = text.lstrip("\n")
                if self._thinking:
                    self._write(("\n" if self._open else "") + console.dim(t("chat.thinking_end")) + "\n\n")
                    self._thinking = False
                self._started = bool(text)
            self._write(text)

    def end(self) -> None:
        """End the answer's last line."""
        if self._open:
            self._write("\n")

    def _write(self, text: str) -> None:
        if text:
            console.out_part(text)
            self._open = not text.endswith("\n")


@dataclass
class Said:
    """What came back for one question: the answer's text and the last usage and timings the server sent."""

    text: str = ""
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None

    def add(self, part: StreamPart) -> None:
        self.text += part.content
        self.usage = part.usage or self.usage
        self.timings = part.timings or self.timings

    def stats(self) -> str:
        usage, timings = self.usage or {}, self.timings or {}
        return t("chat.stats", prompt=int(usage.get("prompt_tokens") or 0),
                 answer=int(usage.get("completion_tokens") or 0),
                 tps=float(timings.get("predicted_per_second") or 0.0))


def _stream(answer: Answer, display: Display, said: Said) -> None:
    try:
        for part in answer:
            said.add(part)
            display.show(part)
    finally:
        display.end()


def answer_once(conversation: Conversation, question: str, *, show_reasoning: bool, verbose: bool) -> int:
    """The answer to one question on stdout, then exit 0; a failure is raised (its exit code is the command's),
    Ctrl-C stops the stream and is raised too (exit 130)."""
    answer = conversation.ask(question)
    said = Said()
    try:
        _stream(answer, Display(show_reasoning and _stdout_is_terminal()), said)
    finally:
        answer.stop()
    if verbose:
        console.info(said.stats())
    return 0


@dataclass
class Session:
    """An interactive chat: the conversation, the installed chat models, how answers are shown."""

    conversation: Conversation
    models: Sequence[str]
    show_reasoning: bool = True
    verbose: bool = False

    def run(self, read_line: Callable[[str], str]) -> int:
        """Read and answer until /bye, Ctrl-D or two Ctrl-C in a row; exit 0."""
        take_ctrl_c()
        console.info(t("chat.banner", model=self.conversation.model, url=self.conversation.url))
        interrupted = False
        while True:
            try:
                typed = read_typed(read_line)
            except EOFError:  # Ctrl-D: the prompt's line is left open
                console.out_part("\n")
                return 0
            except KeyboardInterrupt:
                console.out_part("\n")
                if interrupted:
                    return 0
                console.info(t("chat.quit_hint"))
                interrupted = True
                continue
            interrupted = False
            if typed.command is not None:
                if typed.command.name == "bye":
                    return 0
                self.command(typed.command)
            elif typed.text:
                self.turn(typed.text)

    def turn(self, question: str) -> None:
        """One question and its streamed answer; a stopped answer keeps what was shown of it in the history, a failed
        one takes the question back (the error said on stderr, the chat goes on)."""
        conversation = self.conversation
        answer = conversation.ask(question)
        said = Said()
        try:
            _stream(answer, Display(self.show_reasoning and _stdout_is_terminal()), said)
        except KeyboardInterrupt:
            answer.stop()
            console.info(t("chat.stopped"))
            if said.text.strip():
                conversation.keep(said.text)
            else:
                conversation.forget_question()
            return
        except QwenKitError as exc:
            answer.stop()
            conversation.forget_question()
            console.error(exc.message, exc.hint)
            return
        conversation.keep(said.text)
        if self.verbose:
            console.info(said.stats())

    def command(self, command: Command) -> None:
        """/think, /clear, /model, /help; anything else is named as unknown."""
        if command.name == "think":
            self._think(command.arg.lower())
        elif command.name == "clear":
            self.conversation.clear()
            console.info(t("chat.cleared"))
        elif command.name == "model":
            self._model(command.arg)
        elif command.name == "help":
            console.info(t("chat.help", models=join_names(self.models)))
        else:
            console.info(t("chat.unknown_command", command="/" + command.name))

    def _think(self, arg: str) -> None:
        if arg in ("on", "off"):
            self.conversation.think = arg == "on"
        elif arg in ("show", "hide"):
            self.show_reasoning = arg == "show"
        elif arg:
            console.info(t("chat.think_usage"))
            return
        think = self.conversation.think
        mode = t("chat.think_default") if think is None else t("chat.think_on" if think else "chat.think_off")
        console.info(t("chat.think_state", mode=mode,
                       shown=t("chat.reasoning_shown" if self.show_reasoning else "chat.reasoning_hidden")))

    def _model(self, name: str) -> None:
        name = installed_name(name, self.models) if name else name  # any catalog name (docs/model-names.md)
        if not name:
            console.info(t("chat.model_usage", models=join_names(self.models)))
        elif name not in self.models:
            console.error(t("chat.unknown_model", model=name, models=join_names(self.models)))
        else:
            self.conversation.model = name
            console.info(t("chat.model_now", model=name))


def take_ctrl_c() -> None:
    """Ctrl-C is this session's stop key even where the process that started it ignores SIGINT: a shell without
    job control starts its ``&`` jobs so, and their children inherit it, and Python then installs no
    KeyboardInterrupt at all ("signal" module docs: SIGINT is translated only when it was not ignored at startup).
    Only for a person at a terminal: a script that ignores SIGINT on purpose keeps it ignored for a piped chat."""
    try:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    except (OSError, ValueError):
        interactive = False
    if interactive and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (OSError, ValueError):
        return False


def line_reader() -> Callable[[str], str]:
    """``input`` with line editing and history where the platform has it: GNU readline on Linux and macOS (imported
    for its side effect on ``input``); Windows consoles edit the line themselves (arrows, F7 history), and Python
    there has no ``readline`` module. The prompt goes where the answer goes (stdout) when that is the terminal,
    else to stderr, so a redirected stdout holds answers only."""
    if sys.platform != "win32":
        with contextlib.suppress(ImportError):  # a Python built without it: plain input
            import readline  # noqa: F401
    if _stdout_is_terminal():
        return input

    def read(prompt: str) -> str:
        console.info_part(prompt)
        return input()

    return read
