"""``qwenkit front --host H --port P --model DEFAULT -- ROUTER ARGS...`` (hidden): several models' front.

Started by the start script in router mode (``run_qwen.sh``/``run_qwen.bat``), never meant to be typed: it listens
on the install's address, starts llama-server's router on a private loopback port and relays every request, a
request that names no model going to ``DEFAULT`` (``register/router_front.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.register.router_front import run_front


def run(args: argparse.Namespace) -> int:
    command = list(args.router)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise UsageError(t("cli.err_required", args="ROUTER"), t("hint.usage"))
    prompts = getattr(args, "system_prompts", None)
    return run_front(args.host, args.port, args.model, command, Path(prompts) if prompts else None)
