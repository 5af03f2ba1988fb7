"""Whether the installed model can take an agent's requests at all: the install's tool-call proof.

Every request Claude Code, Codex and OpenCode send carries tools (``AgentClient.uses_tools``; Aider sends none).
The install's verify stage sends one tool-call request to each model and records the outcome in ``state.json``
(``verify/tools_check.py``, ``record.state.load_tools_check``): a model without a chat template (served
``--no-jinja``), a template that describes no tools, a server that refuses the request or a model that answers
without the call would give such a client an error on every request (or an agent that never acts), so ``launch``
refuses with that reason instead of starting it. A proof that could not be made
because the server did not answer then says nothing about the model: the client is started (and the server check
before it has just seen the server answer). A record from before the proof existed is not known either way.
"""

from __future__ import annotations

from bootstrap.agents.target import Target
from bootstrap.core.home import Home
from bootstrap.record.state import load_state, load_tools_check
from bootstrap.verify.tools_check import tools_line
from bootstrap.verify.tools_record import UNREACHABLE


def tools_refusal(home: Home, target: Target) -> str | None:
    """Why ``target``'s model cannot take tool calls, as the install recorded it; None when it can (or it is not
    known)."""
    state = load_state(home)
    if state is None:
        return None
    check = load_tools_check(home, None if target.model == state.server.alias else target.model)
    if check is None or check.ok or check.reason == UNREACHABLE:
        return None
    return tools_line(check)
