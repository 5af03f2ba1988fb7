"""``qwenkit run [MODEL] [QUESTION...] [--think on|off] [--hide-thinking] [--verbose]`` (alias ``qwenkit chat``): a
chat with an installed model in the terminal, as ``ollama run MODEL`` and LM Studio's ``lms chat`` give one.

Glue only: the endpoint, the key and the installed chat models are the install's (``agents.target``, as ``launch``
finds them); the session is ``bootstrap.chat``. On a terminal with no QUESTION it chats; with a QUESTION, or with
stdin a pipe or a file (``echo … | qwenkit run``), it answers once: the answer alone on stdout (both given: the
question, a blank line, then stdin, as Ollama joins them). Exit codes: 0 answered or left; 2 an unknown model, a key
the server refuses, nothing to ask; 6 the server does not answer (docs/terminal-chat.md).
"""

from __future__ import annotations

import argparse
import locale
import sys
from dataclasses import replace

from bootstrap.agents.target import install_target, served
from bootstrap.catalog.model_ref import installed_name
from bootstrap.chat.conversation import Conversation
from bootstrap.chat.terminal import Session, answer_once, line_reader
from bootstrap.core.console import join_names, t
from bootstrap.core.errors import UsageError
from bootstrap.core.home import resolve_home
from bootstrap.core.prompts import stdin_is_terminal


def run(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    target = install_target(home, None)
    models = target.models  # the install's chat models (the router's list also names embedding models)
    name = installed_name(args.model, models) if args.model else target.model  # docs/model-names.md
    if name not in models:
        raise UsageError(t("chat.unknown_model", model=name, models=join_names(models)), t("chat.hint_model"))
    question = " ".join(args.prompt).strip()
    interactive = not question and stdin_is_terminal()
    if not interactive:
        piped = "" if stdin_is_terminal() else _read_stdin()
        question = "\n\n".join(text for text in (question, piped.strip()) if text)
        if not question:
            raise UsageError(t("chat.err_nothing"), t("chat.hint_nothing"))
    live = served(replace(target, model=name))  # exit 6 when it does not answer, 2 when it refuses the key
    think = None if args.think is None else args.think == "on"
    conversation = Conversation(live.openai_url, live.key, name, think)
    if not interactive:
        return answer_once(conversation, question, show_reasoning=not args.hide_thinking, verbose=args.verbose)
    return Session(conversation, models, show_reasoning=not args.hide_thinking, verbose=args.verbose).run(
        line_reader())


def _read_stdin() -> str:
    """All of stdin: UTF-8 where it is (PowerShell 7 and most pipes), else the locale's encoding (cmd's ``echo``
    writes the console's code page), undecodable bytes replaced rather than refused."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return ""
    data = stream.read()
    try:
        return str(data.decode("utf-8"))
    except UnicodeDecodeError:
        return str(data.decode(locale.getpreferredencoding(False) or "utf-8", "replace"))
