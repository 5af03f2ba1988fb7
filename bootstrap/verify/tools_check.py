"""The verify stage's tool-call proof: one request with one small tool that the model must call.

Agent clients (Claude Code, Codex, OpenCode) send tools with every request; a server that cannot take them answers
each with an error, and the client retries for minutes. So the install proves the path once, as a client uses it:
``tools`` with one function and ``tool_choice: "required"`` (llama-server b11434 then constrains the reply with the
template's tool-call grammar, ``common/parsers/qwen3-coder.cpp`` for the Qwen3.5/3.6 family) and expects
``tool_calls`` back, naming the function with arguments that parse as a JSON object. Thinking is switched off for
the request (``chat_template_kwargs``; a template without the switch ignores it): the grammar lets a model think
first, which on a CPU costs minutes.

What it cannot be, it says without asking (docs/agent-template.md): a server on ``--no-jinja`` (a model without a
chat template: llama-server refuses tools there, "tools param requires --jinja flag"), a template whose
capabilities (``/props`` ``chat_template_caps.supports_tools``) do not include tools. The outcome is a
``ToolsCheck`` that ``state.json`` keeps per model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import requests

from bootstrap.core.console import t
from bootstrap.verify.server_text import one_line, server_message
from bootstrap.verify.tools_record import NO_CALL, NO_JINJA, NO_TOOLS_TEMPLATE, OK, REFUSED, UNREACHABLE, ToolsCheck

TOOL_NAME = "get_time"
PROOF_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": TOOL_NAME, "description": "Get the current local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name"}},
                   "required": ["city"]}}}
PROOF_PROMPT = "What time is it in Paris? Call the get_time tool."
# A short preamble, the call and its closing tags; a model that writes more has not called the tool.
PROOF_MAX_TOKENS = 256
DETAIL_CHARS = 160


def _line(text: str) -> str:
    return one_line(text, DETAIL_CHARS)


def proof_body(model: str) -> dict[str, Any]:
    """The request: one tool, a call required, greedy, thinking off (a template without the switch ignores it)."""
    return {"model": model, "messages": [{"role": "user", "content": PROOF_PROMPT}], "tools": [PROOF_TOOL],
            "tool_choice": "required", "max_tokens": PROOF_MAX_TOKENS, "temperature": 0,
            "chat_template_kwargs": {"enable_thinking": False}}


def _template_caps(session: requests.Session, base_url: str, model: str, router: bool,
                   headers: dict[str, str], timeout: float) -> dict[str, Any] | None:
    """``/props``' ``chat_template_caps`` (a router's: of the child that serves ``model``), or None when the
    server does not say (an older build, a failure: the request itself then tells)."""
    params = {"model": model} if router else None
    try:
        resp = session.get(f"{base_url}/props", params=params, headers=headers, timeout=timeout)
        caps = resp.json().get("chat_template_caps") if resp.status_code == 200 else None
    except (requests.RequestException, ValueError, AttributeError):
        return None
    return caps if isinstance(caps, dict) else None


def _call_of(doc: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The proof tool's call in a chat completion (or None) and the message it came in."""
    choices = doc.get("choices") if isinstance(doc, dict) else None
    message = (choices[0].get("message") if choices and isinstance(choices[0], dict) else None) or {}
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and function.get("name") == TOOL_NAME:
            try:
                arguments = json.loads(function.get("arguments") or "")
            except (TypeError, ValueError):
                continue
            if isinstance(arguments, dict):
                return function, message
    return None, message


def check_tools(session: requests.Session, base_url: str, model: str, args: Sequence[str], headers: dict[str, str],
                *, router: bool = False, timeout: float = 120.0) -> ToolsCheck:
    """Whether the server at ``base_url`` takes tools for ``model`` (started with ``args``): ``ToolsCheck``."""
    if "--no-jinja" in args:
        return ToolsCheck(NO_JINJA)
    caps = _template_caps(session, base_url, model, router, headers, timeout)
    if caps is not None and not caps.get("supports_tools", True):
        return ToolsCheck(NO_TOOLS_TEMPLATE, "'chat_template_caps.supports_tools = false'")
    try:
        resp = session.post(f"{base_url}/v1/chat/completions", json=proof_body(model), headers=headers,
                            timeout=timeout)
    except requests.RequestException as exc:
        return ToolsCheck(UNREACHABLE, _line(str(exc)))
    if resp.status_code != 200:
        return ToolsCheck(REFUSED, f"HTTP {resp.status_code}: {server_message(resp, DETAIL_CHARS)}")
    try:
        doc = resp.json()
    except ValueError:
        return ToolsCheck(REFUSED, _line(resp.text))
    function, message = _call_of(doc)
    if function is not None:
        return ToolsCheck(OK, _line(f"{TOOL_NAME}({function.get('arguments')})"))
    finish = ((doc.get("choices") or [{}])[0] or {}).get("finish_reason")
    said = message.get("content") or message.get("reasoning_content") or ""
    return ToolsCheck(NO_CALL, _line(f"finish_reason {finish}: {said}"))


def tools_line(check: ToolsCheck | None) -> str:
    """The report's line: "tools ok", or why an agent client cannot use this model's server."""
    if check is None:
        return ""
    return t(f"tools.{check.reason}", detail=check.detail)
