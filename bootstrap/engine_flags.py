"""Which llama-server flags a given engine build accepts, so a plan never emits a flag the engine rejects.

The planner filters its flags through ``supported``; the tune stage later replaces this table with what the
installed binary's ``--help`` says. Builds are llama.cpp release numbers (``b<N>``); sources are the PRs named in
``reference/llama-server.md`` ("≈bN" = the build at that PR's merge).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The build the kit pins (the test bed's engine, llama.cpp b10434); engines.toml takes this over later.
PINNED_BUILD = 10434

# flag → first build that accepts it. Flags absent here are older than any build the kit supports.
FIRST_BUILD: dict[str, int] = {
    "--fit": 7407,  # #16653
    "--reasoning": 8287,  # #20297
    "--load-mode": 10105,  # #20834
    "--jinja": 0,
    "-kvu": 6800,  # #16736 (unified KV with auto slots), approximate
    "--n-cpu-moe": 6150,  # #15077, approximate
    "--cpu-moe": 6100,  # #14992, approximate
    "--reasoning-budget": 8287,
}


@dataclass(frozen=True)
class FlagFilter:
    """The flags kept for an engine build and the ones dropped (each dropped flag becomes a plan note)."""

    kept: tuple[str, ...]
    dropped: tuple[str, ...]


def _is_flag(token: str) -> bool:
    """``--x`` / ``-x`` but not a negative number such as ``-1``."""
    return token.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", token)


def supported(flag: str, build: int) -> bool:
    """Whether ``build`` accepts ``flag``."""
    return build >= FIRST_BUILD.get(flag, 0)


def filter_args(args: list[str], build: int) -> FlagFilter:
    """Drop unsupported flags together with their value (the next token, unless it is itself a flag)."""
    kept: list[str] = []
    dropped: list[str] = []
    skip_value = False
    for token in args:
        if skip_value:
            skip_value = False
            if not _is_flag(token):
                continue
        if _is_flag(token) and not supported(token, build):
            dropped.append(token)
            skip_value = True
            continue
        kept.append(token)
    return FlagFilter(tuple(kept), tuple(dropped))
