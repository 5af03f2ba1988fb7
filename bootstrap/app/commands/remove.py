"""``qwenkit remove NAME [--yes] [--home DIR] [--json]``: one model of the library leaves the endpoint and its files
are freed (``install/library.py``); the default model and the others keep serving.

It asks first on a terminal (default No: this deletes files a download brought), as ``uninstall`` does; without a
terminal it wants ``--yes`` (exit 2). ``--json``: one document, ``{"removed": NAME, "freed_bytes": N, "models":
[...]}``, and no question (``--yes`` is then required too).
"""

from __future__ import annotations

import argparse

from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.home import resolve_home
from bootstrap.core.prompts import ask_yes_no, stdin_is_terminal
from bootstrap.core.sizes import human_size
from bootstrap.install.library import files_bytes, removable, remove_model


def run(args: argparse.Namespace) -> int:
    home = resolve_home(getattr(args, "home", None))
    as_json = bool(getattr(args, "json", False))
    _state, entry = removable(home, args.name)  # an unknown name or the default: refused before the question
    args.name = entry.name  # as installed, whichever name was typed (qwen3.5:4b → qwen3.5-4b)
    if not getattr(args, "yes", False):
        if as_json or not stdin_is_terminal():
            raise UsageError(t("remove.err_need_yes"), t("remove.hint_need_yes", name=args.name))
        if not ask_yes_no(t("remove.confirm", name=args.name, size=human_size(files_bytes(home, entry, _state))),
                          default=False):
            console.info(t("remove.cancelled"))
            return 0
    outcome = remove_model(home, args.name)
    names = [] if outcome.state is None else [outcome.state.server.alias, *(m.name for m in outcome.state.library)]
    if as_json:
        console.emit_json({"removed": args.name, "freed_bytes": outcome.freed, "models": names})
    else:
        freed = human_size(outcome.freed)
        if len(names) == 1:  # the default alone again: a single-model server ("1 models left" before)
            console.out(t("library.removed_last", name=args.name, freed=freed, default=names[0]))
        else:
            console.out(t("library.removed", name=args.name, freed=freed, count=len(names)))
    return 0
