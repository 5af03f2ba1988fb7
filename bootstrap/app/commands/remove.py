"""``qwenkit remove NAME``: one model of the library leaves the endpoint and its files are freed
(``install/library.py``); the default model and the others keep serving."""

from __future__ import annotations

import argparse

from bootstrap.core.home import resolve_home
from bootstrap.install.library import remove_model


def run(args: argparse.Namespace) -> int:
    remove_model(resolve_home(getattr(args, "home", None)), args.name)
    return 0
