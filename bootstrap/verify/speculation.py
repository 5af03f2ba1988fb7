"""The A/B of speculative decoding: measure with and without it on this machine and keep the faster.

Speculation helps or hurts by hardware (an MTP head on the CPU, Vulkan's acceptance, n-max: docs/engine.md,
"Speculative decoding"), so the plan's ``--spec-type …`` is a proposal that verify settles by measuring.

llama.cpp b11434 cannot switch speculation per request: the per-request ``speculative.*`` fields sit in an
``#if 0`` block of ``tools/server/server-schema.cpp`` (``make_llama_cmpl_schema``) and every task copies the
server's ``params_base.speculative``. So each arm is a server start of its own: the server verify just proved runs
with the flags (arm "on"); it is restarted without them (arm "off"); when "on" wins it is restarted once more
with them. The arm kept is a ``LaunchSpec`` like any other: the start scripts and the service are rendered from it
and ``state.json`` records its args, so a kept "off" leaves no speculation flag anywhere (per-request settings
would not survive a service restart or a client that does not send them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bootstrap.core.errors import ServerError
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.verify.speed import measure_speed
from bootstrap.verify.speed_records import SpecTrial, SpeedSample

RUNS_PER_ARM = 2

# Speculative-decoding flags of llama.cpp b11434 that do not start with ``--spec-`` (common/arg.cpp, the options
# marked ``set_spec()``): their older spellings, kept as aliases, and the removed ``--draft*`` ones.
_SPEC_ALIASES = frozenset((
    "-hfd", "-hfrd", "--hf-repo-draft", "-td", "--threads-draft", "-tbd", "--threads-batch-draft", "-Cd",
    "--cpu-mask-draft", "-Crd", "--cpu-range-draft", "--cpu-strict-draft", "--prio-draft", "--poll-draft", "-Cbd",
    "--cpu-mask-batch-draft", "-Crbd", "--cpu-range-batch-draft", "--cpu-strict-batch-draft", "--prio-batch-draft",
    "--poll-batch-draft", "-ctkd", "--cache-type-k-draft", "-ctvd", "--cache-type-v-draft", "-otd",
    "--override-tensor-draft", "-cmoed", "--cpu-moe-draft", "-ncmoed", "--n-cpu-moe-draft", "--draft-p-split",
    "--draft-p-min", "-devd", "--device-draft", "-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft", "-md",
    "--model-draft", "--draft", "--draft-n", "--draft-max", "--draft-min", "--draft-n-min",
))
# Boolean speculation flags (no value follows).
_SPEC_SWITCHES = frozenset(("--spec-default", "--spec-draft-cpu-moe", "-cmoed", "--cpu-moe-draft",
                            "--spec-draft-backend-sampling"))


def is_spec_flag(token: str) -> bool:
    flag = token.split("=", 1)[0]
    return flag.startswith("--spec-") or flag in _SPEC_ALIASES


def _groups(args: Sequence[str]) -> list[tuple[str, ...]]:
    """``args`` as (flag, value?) groups; a speculation switch never takes the next token as its value."""
    groups: list[list[str]] = []
    for token in args:
        starts = token.startswith("-") and not token.lstrip("-").replace(".", "", 1).isdigit()
        previous = groups[-1] if groups else None
        if starts or previous is None or len(previous) > 1 or "=" in previous[0] or previous[0] in _SPEC_SWITCHES:
            groups.append([token])
        else:
            previous.append(token)
    return [tuple(g) for g in groups]


def speculation_flags(args: Sequence[str]) -> tuple[str, ...]:
    """The speculation flags (with their values) in ``args``; empty when the server would not speculate
    (no ``--spec-type`` other than ``none``, no ``--spec-default``, no draft model)."""
    groups = [g for g in _groups(args) if is_spec_flag(g[0])]
    enabling = any(
        (g[0].split("=", 1)[0] == "--spec-type" and _value(g) not in ("", "none")) or g[0] == "--spec-default"
        or g[0].split("=", 1)[0] in ("-md", "--model-draft", "--spec-draft-model") for g in groups)
    return tuple(token for g in groups for token in g) if enabling else ()


def _value(group: tuple[str, ...]) -> str:
    return group[0].split("=", 1)[1] if "=" in group[0] else (group[1] if len(group) > 1 else "")


def without_speculation(args: Sequence[str]) -> tuple[str, ...]:
    """``args`` with every speculation flag and its value removed (the "off" arm)."""
    return tuple(token for g in _groups(args) if not is_spec_flag(g[0]) for token in g)


@dataclass(frozen=True)
class SpecOutcome:
    """The A/B's result: the trial for the record, the spec that now runs, and the wall seconds it took."""

    trial: SpecTrial
    spec: LaunchSpec
    seconds: float


# The "on" arm is kept only when it is clearly faster and its drafts are really accepted. With n-max 2 and a
# share ``a`` of drafted tokens accepted, a step yields at most 1 + 2a tokens for the cost of the draft and a
# wider verify batch: under 10 % accepted the best case is +20 % before paying for them, so a faster measurement
# is noise (two runs of 16 tokens on a busy machine vary by up to ~35 %, docs/engine.md). Reports of MTP gains
# come with 57–75 % acceptance (PR #22673 and its threads).
MIN_ACCEPTANCE = 0.10
MIN_GAIN = 1.05  # decode tokens/s of "on" over "off"


def speculation_wins(on: SpeedSample, off: SpeedSample) -> bool:
    """Whether speculation earns its place: faster by ``MIN_GAIN`` with at least ``MIN_ACCEPTANCE`` of drafts
    accepted (nothing drafted: it did nothing for this text). A tie keeps the simpler server."""
    accepted = on.acceptance
    return accepted is not None and accepted >= MIN_ACCEPTANCE and on.decode_tps >= off.decode_tps * MIN_GAIN


def compare_speculation(spec: LaunchSpec, api_key: str, restart: Callable[[LaunchSpec], None], *,
                        timeout: float = 120.0) -> SpecOutcome | None:
    """With ``spec`` running (speculation on), measure both arms ``RUNS_PER_ARM`` times and leave the faster
    running; ``restart`` stops the server and starts it from the given spec (render, register, start, health).
    None when ``spec`` does not speculate. The "off" arm failing is a ``ServerError``: that is the plain server."""
    flags = speculation_flags(spec.args)
    if not flags:
        return None
    start = time.perf_counter()
    on: SpeedSample | None = None
    on_error: str | None = None
    try:
        on = measure_speed(spec.base_url, api_key, runs=RUNS_PER_ARM, timeout=timeout,
                           model=spec.alias if spec.router else None)
    except ServerError as exc:  # answered the chat proof, failed here (an MTP build's bug): "off" wins by default
        on_error = exc.message
    off_spec = replace(spec, args=without_speculation(spec.args))
    restart(off_spec)
    off = measure_speed(off_spec.base_url, api_key, runs=RUNS_PER_ARM, timeout=timeout,
                        model=off_spec.alias if off_spec.router else None)
    kept = "on" if on is not None and speculation_wins(on, off) else "off"
    if kept == "on":
        restart(spec)
    return SpecOutcome(SpecTrial(flags, on, off, kept, on_error), spec if kept == "on" else off_spec,
                       time.perf_counter() - start)
