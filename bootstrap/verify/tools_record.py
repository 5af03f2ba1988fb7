"""The record of the tool-call proof at verify: whether this model's server takes tools, and if not, why.

Plain data with no network imports, so ``record.state`` can read it back (``state.json`` keeps it per model:
``server.tools`` for the default model, ``library[].tools`` for the others) and ``qwenkit launch`` can refuse an
agent client with the reason instead of starting it into HTTP 500s. An unreadable block (or none, in a record
written before the proof existed) reads as ``None``: not proven, never a damaged record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OK = "ok"
NO_JINJA = "no_jinja"  # the server runs with --no-jinja (a model without a chat template): tools need Jinja
NO_TOOLS_TEMPLATE = "no_tools_template"  # the chat template does not describe tools (llama-server's caps)
NO_CALL = "no_call"  # the server took the request but the model answered without a tool call
REFUSED = "refused"  # the server answered the request with an HTTP error (a Jinja exception, a grammar failure…)
UNREACHABLE = "unreachable"  # the request failed on the way (connection, timeout)
REASONS = (OK, NO_JINJA, NO_TOOLS_TEMPLATE, NO_CALL, REFUSED, UNREACHABLE)


@dataclass(frozen=True)
class ToolsCheck:
    """The outcome: ``reason`` one of ``REASONS`` (``"ok"`` when a tool call came back), ``detail`` the server's own
    words or what came back instead (for people, never parsed)."""

    reason: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.reason == OK

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, "detail": self.detail}


def tools_from_json(doc: Any) -> ToolsCheck | None:
    """A recorded outcome, or None when absent or unreadable."""
    if not isinstance(doc, dict) or doc.get("reason") not in REASONS:
        return None
    detail = doc.get("detail")
    return ToolsCheck(str(doc["reason"]), detail if isinstance(detail, str) else "")
