"""The kit's chat template for Qwen3.5/3.6 models (bootstrap/plan/chat_template.py), derived from upstream's own
family template in the pinned llama.cpp sources and rendered by the real llama-server (``/apply-template``) beside
the untouched one: ordinary conversations byte for byte the same, the shapes agent clients send (refused with
"System message must be at the beginning." by the untouched one) rendered."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from bootstrap.plan import chat_template
from bootstrap.plan.chat_template import TemplateShapeError, derive
from tests.support.llama import LlamaServer
from tests.support.qwen_chat_model import upstream_qwen_template

ARGS = ("-c", "4096", "-np", "1", "-t", "1", "--jinja")
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def _call(call_id: str, name: str, city: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": f'{{"city": "{city}"}}'}}


# Conversations the untouched template renders: the derived one must render each byte for byte the same.
ORDINARY: dict[str, dict[str, Any]] = {
    "user only": {"messages": [{"role": "user", "content": "Hi"}]},
    "system first": {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]},
    "system as text parts": {"messages": [
        {"role": "system", "content": [{"type": "text", "text": "Be brief. "}, {"type": "text", "text": "Be kind."}]},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]},
    "empty system": {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "Hi"}]},
    "turns": {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                           {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"}]},
    "thinking off": {"messages": [{"role": "user", "content": "Hi"}],
                     "chat_template_kwargs": {"enable_thinking": False}},
    "earlier reasoning": {"messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "reasoning_content": "They greet me."},
        {"role": "user", "content": "Bye"}], "chat_template_kwargs": {"enable_thinking": True}},
    "tools with system": {"messages": [{"role": "system", "content": "Be brief."},
                                       {"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER]},
    "tools without system": {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER]},
    "tool result turn": {"messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [_call("c1", "get_weather", "Paris")]},
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21 C"}], "tools": [WEATHER]},
    "parallel tool calls": {"messages": [
        {"role": "user", "content": "Weather and time in Paris?"},
        {"role": "assistant", "content": "Both at once.",
         "tool_calls": [_call("c1", "get_weather", "Paris"), _call("c2", "get_time", "Paris")]},
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "12:00"},
        {"role": "assistant", "content": "Sunny at noon."}, {"role": "user", "content": "Thanks"}],
        "tools": [WEATHER, TIME]},
}


@pytest.fixture(scope="module")
def servers(llama_server: Path, qwen_chat_gguf: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[LlamaServer, LlamaServer]]:
    """The test model served twice: with its own (upstream) template, and with the kit's derived one."""
    derived = derive(upstream_qwen_template().read_text(encoding="utf-8"))
    assert derived is not None
    path = tmp_path_factory.mktemp("template") / "qwen.jinja"
    path.write_text(derived.text, encoding="utf-8")
    with LlamaServer(llama_server, qwen_chat_gguf, ARGS) as own, \
            LlamaServer(llama_server, qwen_chat_gguf, (*ARGS, "--chat-template-file", str(path))) as kit:
        yield own, kit


def _render(server: LlamaServer, body: dict[str, Any]) -> requests.Response:
    return requests.post(f"{server.base_url}/apply-template", json=body, timeout=60)


@pytest.mark.parametrize("name", list(ORDINARY))
def test_derived_template_renders_ordinary_conversations_as_the_untouched_one(
        servers: tuple[LlamaServer, LlamaServer], name: str) -> None:
    own, kit = servers
    before, after = _render(own, ORDINARY[name]), _render(kit, ORDINARY[name])
    assert before.status_code == after.status_code == 200, (before.text, after.text)
    assert after.json()["prompt"] == before.json()["prompt"]


def test_codex_developer_messages_join_the_one_system_turn(servers: tuple[LlamaServer, LlamaServer]) -> None:
    """Codex's ``input`` = [developer, developer, user, user]: the engine maps developer to system; the untouched
    template refuses the second one, the derived one joins both where the system turn is."""
    own, kit = servers
    body = {"messages": [{"role": "developer", "content": "Rule one."}, {"role": "developer", "content": "Rule two."},
                         {"role": "user", "content": "Context."}, {"role": "user", "content": "Say hello."}],
            "tools": [WEATHER]}
    refused = _render(own, body)
    assert refused.status_code == 500 and "System message must be at the beginning" in refused.text
    prompt = _render(kit, body).json()["prompt"]
    assert prompt.count("<|im_start|>system\n") == 1
    assert re.search(r"</IMPORTANT>\n\nRule one\.\n\nRule two\.<\|im_end\|>\n<\|im_start\|>user\nContext\.", prompt)


def test_claude_code_system_after_user_renders_in_place(servers: tuple[LlamaServer, LlamaServer]) -> None:
    """Claude Code's messages = [user, system] after its top-level ``system``: the later one stays where it is."""
    own, kit = servers
    body = {"messages": [{"role": "system", "content": "You are an agent."},
                         {"role": "user", "content": [{"type": "text", "text": "Say hello."}]},
                         {"role": "system", "content": [{"type": "text", "text": "Context for this turn."}]}]}
    refused = _render(own, body)
    assert refused.status_code == 500 and "System message must be at the beginning" in refused.text
    assert _render(kit, body).json()["prompt"] == (
        "<|im_start|>system\nYou are an agent.<|im_end|>\n<|im_start|>user\nSay hello.<|im_end|>\n"
        "<|im_start|>system\nContext for this turn.<|im_end|>\n<|im_start|>assistant\n<think>\n")


def test_later_system_message_still_refuses_images(servers: tuple[LlamaServer, LlamaServer]) -> None:
    _, kit = servers
    body = {"messages": [{"role": "user", "content": "Hi"}, {"role": "system", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}
    assert _render(kit, body).status_code != 200


def test_derive_leaves_other_templates_alone() -> None:
    assert derive(None) is None and derive("") is None
    chatml = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
              "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    assert derive(chatml) is None


@pytest.mark.parametrize(("change", "fix"), [
    (("if tools and tools is iterable and tools is not mapping", "if tools"), chat_template.MERGE_LEADING_SYSTEM),
    (("render_content(messages[0].content, false, true)|trim", "messages[0].content"),
     chat_template.MERGE_LEADING_SYSTEM),
    (("{%- if not loop.first %}", "{%- if loop.index0 > 0 %}"), chat_template.SYSTEM_IN_PLACE),
])
def test_derive_fails_loudly_on_a_template_of_another_shape(change: tuple[str, str], fix: str) -> None:
    """An upstream template that moved on is reported with the fix that no longer applies, not patched blindly."""
    upstream = upstream_qwen_template().read_text(encoding="utf-8")
    assert change[0] in upstream
    with pytest.raises(TemplateShapeError) as caught:
        derive(upstream.replace(change[0], change[1]))
    assert caught.value.fix == fix


def test_derived_template_names_its_fixes() -> None:
    upstream = upstream_qwen_template().read_text(encoding="utf-8")
    derived = derive(upstream)
    assert derived is not None and derived.family == "qwen3.5"
    assert derived.fixes == ("merge-leading-system", "system-in-place")
    assert "System message must be at the beginning" not in derived.text
