"""Whether the install's context holds what a client sends, and if not, what ``install --ctx N`` would do here.

A coding agent's first request alone is thousands of tokens (its system prompt and tool definitions; measured per
client in docs/agents.md). llama-server refuses a prompt longer than a slot's context (it does not shift a prompt
that never fit), and a client told a larger window than the server has fills it and fails later, so a context that
cannot hold the first request and an answer (``AgentClient.min_ctx``) is refused before the client starts — never
truncated in silence. Below ``AGENT_CTX`` (64k, Ollama's advice for coding agents) the client starts with a
warning: long sessions compact often.

Either way the user is told the plan's verdict for the context that would do: the same planner ``qwenkit plan
MODEL --ctx N`` runs, for this machine and the installed model — it fits (with which quant, how much memory), or
the largest context that fits and with which quant, or that the model was not trained for so long a context.
"""

from __future__ import annotations

from dataclasses import dataclass

from bootstrap.agents.base import AGENT_CTX, AgentClient
from bootstrap.agents.target import Target
from bootstrap.catalog.model_ref import parse_model_ref
from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError, UnsupportedMachine, UsageError
from bootstrap.core.home import Home
from bootstrap.core.sizes import gib_text
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.record.state import load_state


@dataclass(frozen=True)
class ContextCheck:
    """The verdict on one client and one target."""

    ok: bool  # enough to start
    low: bool  # enough to start, below what coding agents want
    need: int  # the context asked for in the verdict
    verdict: str  # the plan's verdict for ``install --ctx need`` (empty for an endpoint: not this machine's plan)


def _hardware(home: Home) -> HardwareProfile:
    """This machine as ``qwenkit plan`` sees it (with the speed its last install measured)."""
    from bootstrap.detect.profile import detect
    from bootstrap.install.measure import recorded_rates
    from bootstrap.plan.engine_variant import check_engine

    return recorded_rates(home, detect(home.root, engine=check_engine))


def plan_verdict(home: Home, model: str, ctx: int, hardware: HardwareProfile | None = None) -> str:
    """What ``qwenkit install --ctx ctx`` would plan for the installed ``model`` (the default model or a library
    model's name) on this machine, in one line."""
    from bootstrap.install.candidates import candidates_for
    from bootstrap.plan.planner import choose

    state = load_state(home)
    if state is None:
        return ""
    request, source, thinking = state.model_id, "auto", None
    if state.request is not None:
        request, source, thinking = state.request.model, state.request.source, state.request.thinking
    for entry in state.library:
        if entry.name == model:
            request, source, thinking = entry.request, entry.source, None
    try:
        pool, fallbacks = candidates_for(parse_model_ref(request), home.models_dir, source, thinking)
        plan = choose(pool, hardware or _hardware(home), requested_ctx=ctx, fallbacks=fallbacks)
    except (UnsupportedMachine, UsageError) as exc:  # the planner's own words: largest fit, trained context
        return t("launch.verdict_no_fit", ctx=ctx, reason=exc.message)
    except QwenKitError as exc:  # a source the candidates could not be read from: say how to ask later
        return t("launch.verdict_unknown", ctx=ctx, model=request, reason=exc.message)
    key = "launch.verdict_other" if plan.fallback_from else "launch.verdict_fits"
    return t(key, ctx=ctx, title=plan.title, quant=plan.quant, installed=plan.fallback_from or "",
             ram=gib_text(plan.estimate.host_total), gpu=gib_text(plan.estimate.gpu_total))


def check_context(client: AgentClient, target: Target, home: Home,
                  hardware: HardwareProfile | None = None) -> ContextCheck:
    """Whether ``target``'s context takes ``client``; the verdict for the context it should have when not."""
    if target.ctx is None or target.ctx >= AGENT_CTX:
        return ContextCheck(True, False, AGENT_CTX, "")
    verdict = plan_verdict(home, target.model, AGENT_CTX, hardware) if target.via == "install" else ""
    return ContextCheck(target.ctx >= client.min_ctx(), True, AGENT_CTX, verdict)
