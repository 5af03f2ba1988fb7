"""``qwenkit launch CLIENT [--model M] [--config|--restore|--print] [--yes] [--endpoint URL [--key-file FILE]]
[-- ARGS...]``: an agent client pointed at this install (or a team gateway), started with ARGS, or configured.

Glue only: the arguments checked and handed to ``bootstrap.agents.launch`` (start, ``--config``, ``--restore``) or
``bootstrap.agents.recipes`` (``--print``). Exit codes: the client's own when it was started; 2 bad usage, a key
refused, a model without tools or a context too small for the client; 3 the client is not installed; 6 the server
does not answer (docs/agents.md).
"""

from __future__ import annotations

import argparse

from bootstrap.agents import recipes
from bootstrap.agents.launch import LaunchRequest, configure, launch, restore, target_for
from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.home import resolve_home


def run(args: argparse.Namespace) -> int:
    modes = [name for name, on in (("--config", args.config), ("--restore", args.restore),
                                   ("--print", args.print_recipe)) if on]
    if len(modes) > 1:
        raise UsageError(t("launch.err_mode"), t("hint.usage"))
    if modes and args.args:
        raise UsageError(t("launch.err_args_with", option=modes[0]), t("hint.usage"))
    home = resolve_home(args.home)
    request = LaunchRequest(args.client, args.model, args.endpoint, args.key_file, args.yes, tuple(args.args))
    if args.print_recipe:
        name = recipes.recipe_name(args.client)
        console.out(recipes.render(name, target_for(home, request)))
        return 0
    if args.restore:
        return restore(home, request)
    if args.config:
        return configure(home, request)
    return launch(home, request)
