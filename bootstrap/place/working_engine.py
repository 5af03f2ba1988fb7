"""Place an engine that really runs here: the planned build, self-tested, or the next build this machine can run.

The order of builds to try comes from ``bundle_platforms.VARIANT_FALLBACK`` (Windows: CUDA 13 → CUDA 12.4 → Vulkan
→ CPU; Linux: Vulkan → CPU); an offline bundle offers only the builds it carries. Only the engine's own causes move
on to the next build — an illegal instruction, a missing library, a GPU backend that does not start (or a GPU build
that comes up without the GPU the machine has). Anything else is not the build's fault and is raised as it is.

This runs before any model byte is fetched and before a working server is stopped, so a build that cannot run
here costs seconds and never replaces one that can.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from bootstrap.catalog.bundle_platforms import VARIANT_FALLBACK
from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.console import info, t, warn
from bootstrap.core.home import Home
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.fetch.download import FetchOptions
from bootstrap.place import engine, engine_probe
from bootstrap.place.engine_failure import EngineFailed, EngineFailure, gpu_missing, read_log_tail
from bootstrap.place.engine_marker import InstalledEngine
from bootstrap.place.engine_probe import EngineInfo
from bootstrap.place.engine_selftest import selftest_engine
from bootstrap.plan import engine_flags
from bootstrap.plan.engine_variant import VariantChoice
from bootstrap.plan.planner import CPU_VARIANTS, Plan, budget_for

SELFTEST_LOG = "selftest-{variant}.log"


@dataclass(frozen=True)
class GivenUp:
    """A build that could not run here, and why."""

    variant: str
    failure: EngineFailure


@dataclass(frozen=True)
class WorkingEngine:
    """The engine in place, what its probe found, and the builds given up on the way."""

    installed: InstalledEngine
    probed: EngineInfo
    selftest_s: float | None  # None: not self-tested in this run (the engine the live server already runs)
    given_up: tuple[GivenUp, ...] = ()

    @property
    def variant(self) -> str:
        return self.installed.variant


@dataclass(frozen=True)
class EngineRequest:
    """What the self-test needs to know about the plan: backend flags, and whether a GPU must come up."""

    args_for: Callable[[str], Sequence[str]]  # variant -> flags (threads, GPU layers, repack)
    expects_gpu: Callable[[str], bool]  # variant -> the machine has a GPU this build should use
    allowed: Collection[str] | None = None  # the builds at hand (an offline bundle's); None: every pinned one
    skip: Collection[str] = ()  # builds that failed here before (recorded), not tried again
    live_dir: Path | None = None  # the engine folder the running server uses: never removed, not re-tested
    fetched: Sequence[Path] | None = None  # the first build's assets, already verified by the fetch stage
    options: FetchOptions = engine.DEFAULT_FETCH


def selftest_args(plan_args: Sequence[str], variant: str) -> list[str]:
    """The plan's backend flags for the self-test: its threads, every layer on the GPU for a GPU build (so the
    backend really starts), the repack setting."""
    args = list(plan_args)
    out = ["-t", args[args.index("-t") + 1]] if "-t" in args[:-1] else []
    out += ["-ngl", "0" if variant in CPU_VARIANTS else "999"]
    return out + (["--no-repack"] if "--no-repack" in args else [])


def request_for(plan: Plan, hardware: HardwareProfile, **fields: object) -> EngineRequest:
    """The self-test's view of a plan: its flags, and a GPU expected wherever the planner would use one."""
    def expects_gpu(variant: str) -> bool:
        return budget_for(hardware, VariantChoice(variant, "")).gpu_name is not None

    return EngineRequest(args_for=lambda variant: selftest_args(plan.args, variant), expects_gpu=expects_gpu,
                         **fields)  # type: ignore[arg-type]


def next_variant(variant: str, allowed: Collection[str] | None) -> str | None:
    """The next build down that this machine can run and that is at hand."""
    nxt = VARIANT_FALLBACK.get(variant)
    while nxt is not None and allowed is not None and nxt not in allowed:
        nxt = VARIANT_FALLBACK.get(nxt)
    return nxt


def who(variant: str) -> str:
    return t("failure.who_build", variant=variant)


def _try(home: Home, variant: str, request: EngineRequest, fetched: Sequence[Path] | None
         ) -> tuple[InstalledEngine | None, EngineInfo | None, float | None, EngineFailure | None]:
    """Install, probe and self-test one build; the failure when it cannot run here."""
    try:
        installed = engine.install_engine(home, variant, options=request.options, fetched=fetched)
        probed = engine_probe.probe_engine(installed.server)
    except EngineFailed as exc:  # the binary does not even print its version (a missing library, SIGILL)
        return None, None, None, exc.failure
    if request.live_dir is not None and installed.dir == request.live_dir:
        return installed, probed, None, None  # the running server proves it every second
    info(t("failure.selftest_running", variant=variant))
    args = engine_flags.filter_by_help(list(request.args_for(variant)), probed.flags).kept
    log = home.logs_dir / SELFTEST_LOG.format(variant=variant)
    result = selftest_engine(installed.server, log, args=args)
    failure = result.failure
    if failure is None and request.expects_gpu(variant) and not probed.devices:
        failure = gpu_missing(read_log_tail(log))
    if failure is not None:
        return installed, probed, result.seconds, failure
    info(t("failure.selftest_ok", variant=variant, seconds=result.seconds))
    return installed, probed, result.seconds, None


def _discard(installed: InstalledEngine | None, live_dir: Path | None) -> None:
    """Remove a placed build that cannot run here (never the folder the live server uses)."""
    if installed is not None and installed.dir != live_dir:
        shutil.rmtree(installed.dir, ignore_errors=True)


def place_working_engine(home: Home, variant: str, request: EngineRequest) -> WorkingEngine:
    """Install ``variant`` (or the first build after it that runs here) and prove it with the self-test.

    Raises ``EngineFailed`` naming the cause (exit 3 for the engine's own causes) when no build runs here, and
    for a failure that is not the build's fault at once.
    """
    given_up: list[GivenUp] = []
    current: str | None = variant
    fetched = request.fetched
    while current is not None and current in request.skip:
        nxt = next_variant(current, request.allowed)
        if nxt is None:
            break
        current, fetched = nxt, None
    last: EngineFailure | None = None
    while current is not None:
        installed, probed, seconds, failure = _try(home, current, request, fetched)
        if failure is None:
            assert installed is not None and probed is not None
            checkpoint("engine-placed")
            return WorkingEngine(installed, probed, seconds, tuple(given_up))
        _discard(installed, request.live_dir)
        if not failure.engine_cause:
            raise failure.error(who(current))
        given_up.append(GivenUp(current, failure))
        last = failure
        nxt = next_variant(current, request.allowed)
        if nxt is not None:
            warn(t("failure.fallback", used=nxt, failed=current, reason=failure.message(who(current))))
        current, fetched = nxt, None
    assert last is not None
    raise last.error(who(given_up[-1].variant))
