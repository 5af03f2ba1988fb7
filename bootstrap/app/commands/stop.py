"""``qwenkit stop MODEL``: unload one model now, its files kept (``ollama stop``, ``lms unload``); the next request
that names it loads it again. Not ``qwenkit service stop``, which stops the whole server. The work is
``install/unload.py``."""

from __future__ import annotations

import argparse

from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import ExitCode
from bootstrap.core.home import resolve_home
from bootstrap.core.input_checks import check_text
from bootstrap.install.unload import unload


def run(args: argparse.Namespace) -> int:
    name = check_text("MODEL", args.model)
    if unload(resolve_home(getattr(args, "home", None)), name):
        console.out_ok(t("ps.unloaded", name=name))
    else:
        console.out(t("ps.not_loaded", name=name))
    return int(ExitCode.OK)
