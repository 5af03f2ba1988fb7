"""Which llama-server flags a given engine build accepts, so a plan never emits a flag the engine rejects.

The planner filters its flags through ``supported`` (a table by build, before any engine exists); once an engine
is installed, ``filter_by_help`` filters them through what that binary's ``--help`` lists (``engine_probe``).
Builds are llama.cpp release numbers (``b<N>``); sources are the llama.cpp PRs listed with them in
``docs/engine.md`` ("≈bN" = the build at that PR's merge).
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
    "--cache-ram": 6700,  # #16391 (server prompt cache in host memory), approximate
    "--ctx-checkpoints": 6600,  # #15293 (as --swa-checkpoints), renamed later; approximate
    # Speculative decoding with a GGUF's MTP head (#22673, "llama + spec: MTP Support"); the pinned build's
    # sources (b11434 common/arg.cpp) list "draft-mtp" under --spec-type. The merge build is not recorded: b10310
    # is the earliest build it was reported working on (unsloth PR #8172), a bound from above.
    "--spec-type": 10310,
    "--spec-draft-n-max": 10310,
}

# The first build whose MTP drafting serves more than one slot: reported on b10310 (unsloth PR #8172; earlier
# builds errored with -np > 1). The b11434 sources keep a draft state per sequence (common/speculative.cpp
# common_speculative_impl_draft_mtp: one sampler per seq) and size rollback per sequence (need_n_rs_seq).
MTP_MULTI_SLOT_BUILD = 10310


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


def _filter(args: list[str], accepts: Callable[[str], bool]) -> FlagFilter:
    """Drop refused flags together with their value (the next token, unless it is itself a flag)."""
    kept: list[str] = []
    dropped: list[str] = []
    skip_value = False
    for token in args:
        if skip_value:
            skip_value = False
            if not _is_flag(token):
                continue
        if _is_flag(token) and not accepts(token.split("=", 1)[0]):
            dropped.append(token)
            skip_value = "=" not in token  # ``--flag=value`` carries its own value
            continue
        kept.append(token)
    return FlagFilter(tuple(kept), tuple(dropped))


def filter_args(args: list[str], build: int) -> FlagFilter:
    """Drop flags ``build`` does not accept, with their values (the build table above)."""
    return _filter(args, lambda flag: supported(flag, build))


def filter_by_help(args: list[str], accepted: frozenset[str]) -> FlagFilter:
    """Drop flags the installed binary does not list in ``--help`` (``engine_probe.parse_help_flags``)."""
    return _filter(args, lambda flag: flag in accepted)


# Spellings of one llama-server setting (llama.cpp common/arg.cpp): an override given in either form replaces the
# plan's. A boolean's negation counts as the same setting (``--no-jinja`` replaces ``--jinja``).
_SAME_SETTING: tuple[frozenset[str], ...] = tuple(frozenset(names) for names in (
    ("-c", "--ctx-size"), ("-t", "--threads"), ("-np", "--parallel"), ("-b", "--batch-size"),
    ("-ub", "--ubatch-size"), ("-ngl", "--gpu-layers", "--n-gpu-layers"), ("-fa", "--flash-attn"),
    ("-ctk", "--cache-type-k"), ("-ctv", "--cache-type-v"), ("--jinja", "--no-jinja"),
    ("--chat-template", "--chat-template-file"), ("--mmap", "--no-mmap"), ("-ot", "--override-tensor"),
    ("--temp", "--temperature"),
))


def _setting(flag: str) -> frozenset[str]:
    return next((names for names in _SAME_SETTING if flag in names), frozenset((flag,)))


def _groups(args: list[str]) -> list[list[str]]:
    """``args`` as [flag, value?] groups (a value is the next token unless it is itself a flag)."""
    groups: list[list[str]] = []
    for token in args:
        if _is_flag(token) or not groups or len(groups[-1]) > 1:
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


def with_overrides(args: list[str], overrides: list[str]) -> list[str]:
    """The plan's flags with every setting that ``overrides`` names replaced (a catalog entry's ``server_args``, a
    model that needs its own chat template or context): one value per setting on the command line, not two."""
    replaced: set[str] = set()
    for group in _groups(overrides):
        replaced |= _setting(group[0].split("=", 1)[0])
    kept = [g for g in _groups(args) if g[0].split("=", 1)[0] not in replaced]
    return [token for group in kept + _groups(overrides) for token in group]
