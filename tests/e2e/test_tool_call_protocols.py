"""Agent protocols with the Qwen3.5/3.6 family's chat template, through an install made by the real CLI.

One install of the test bed's Qwen chat model (tests/support/qwen_chat_model.py: upstream's template, Qwen's
tokenizer) serves every test here: the install's tool-call proof ("tools ok", recorded per model), the kit's derived
template passed with ``--chat-template-file``, and the request shapes agent clients send — a tool call, its result
and the answer; streamed tool-call deltas; a JSON schema; thinking per request; Claude Code's ``/v1/messages`` and
Codex's ``/v1/responses`` first requests, synthesized with the structure the issue records (never their prompts).
The same shapes sent to a server started with the model's own template are refused (HTTP 500 "System message must
be at the beginning."): that is what the kit's template fixes.

Selected with ``-k tool_call``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.plan.chat_template import derive
from bootstrap.record.state import load_state, load_tools_check
from bootstrap.register.managers import FallbackManager
from tests.support.hub import LoopbackHub
from tests.support.install_bed import (
    QWEN_MODEL_FILE,
    QWEN_MODEL_ID,
    QWEN_MODEL_REPO,
    InstallBed,
    model_block,
    qwen_catalog_text,
    serve_engine,
)
from tests.support.llama import LlamaServer
from tests.support.qwen_chat_model import qwen_chat_model, upstream_qwen_template

SERVER_ARGS = ("-c", "8192", "-np", "1", "-t", "2")
# A second Qwen model, added beside the default by the last test (router mode: models.ini)
SECOND_ID, SECOND_REPO = "tiny-qwen-two", "qwenkit-test/tiny-qwen-two-GGUF"
ANSWER = "Hello from the tiny model."
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


@dataclass(frozen=True)
class Installed:
    bed: InstallBed
    stdout: str
    base_url: str
    key: str

    def post(self, path: str, body: dict[str, Any], **kwargs: Any) -> requests.Response:
        return requests.post(f"{self.base_url}{path}", json=body, timeout=300,
                             headers={"Authorization": f"Bearer {self.key}"}, **kwargs)

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        resp = self.post("/v1/chat/completions", {"model": QWEN_MODEL_ID, "temperature": 0, **body})
        assert resp.status_code == 200, resp.text
        return resp.json()


@pytest.fixture(scope="module")
def installed(engine_asset: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    """``qwenkit install`` of the Qwen chat model from the loopback hub, its server left running for the module."""
    root = tmp_path_factory.mktemp("qwen-install")
    with LoopbackHub(root / "hub") as hub:
        bed = InstallBed(hub, Home(root / "Qwen 安装 home"), root / "catalog.toml", serve_engine(hub, engine_asset))
        revision = hub.create_repo(QWEN_MODEL_REPO, {QWEN_MODEL_FILE: qwen_chat_model()})
        second = hub.create_repo(SECOND_REPO, {QWEN_MODEL_FILE: qwen_chat_model()})
        bed.catalog.write_text(qwen_catalog_text(revision, server_args=SERVER_ARGS) + model_block(
            second, model_id=SECOND_ID, repo=SECOND_REPO, file=QWEN_MODEL_FILE, title="Tiny Qwen two (test)",
            architecture="qwen35moe", server_args=SERVER_ARGS, thinks=True), encoding="utf-8")
        try:
            proc = bed.install("--no-venv")
            assert proc.returncode == 0, proc.stderr
            state = load_state(bed.home)
            assert state is not None
            key = bed.home.api_key_file.read_text(encoding="utf-8").strip()
            yield Installed(bed, proc.stdout, f"http://127.0.0.1:{state.server.port}", key)
        finally:
            FallbackManager(bed.home).stop()


# --- the install: the kit's template and the tool-call proof -------------------------------------------------------


def test_tool_call_proof_at_install_says_tools_ok_and_records_it(installed: Installed) -> None:
    assert "tools ok: the model called a tool through the server (get_time(" in installed.stdout
    state = load_state(installed.bed.home)
    assert state is not None and state.server.tools is not None and state.server.tools.ok
    check = load_tools_check(installed.bed.home)  # what `qwenkit launch` reads
    assert check is not None and check.reason == "ok"
    doc = json.loads(installed.bed.home.state_file.read_text(encoding="utf-8"))
    assert doc["server"]["tools"]["ok"] is True and doc["server"]["tools"]["reason"] == "ok"


def test_tool_call_install_serves_the_derived_template(installed: Installed) -> None:
    home = installed.bed.home
    state = load_state(home)
    assert state is not None and state.server.chat_template is not None
    record = state.server.chat_template
    assert record.fixes == ("merge-leading-system", "system-in-place") and record.path is not None
    derived = derive(upstream_qwen_template().read_text(encoding="utf-8"))
    assert derived is not None and record.source_sha256 == derived.source_sha256
    path = home.root / record.path
    assert path.parent == home.chat_templates_dir and path.read_text(encoding="utf-8") == derived.text
    script = home.run_sh.read_text(encoding="utf-8")
    assert "--chat-template-file" in script and str(path) in script


# --- the shapes agent clients send -----------------------------------------------------------------------------------


def _calls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["choices"][0]["message"].get("tool_calls") or []


def test_tool_call_then_tool_result_then_answer(installed: Installed) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = installed.chat({"messages": messages, "tools": [WEATHER], "tool_choice": "required", "max_tokens": 128})
    assert first["choices"][0]["finish_reason"] == "tool_calls"
    (call,) = _calls(first)
    assert call["function"]["name"] == "get_weather" and json.loads(call["function"]["arguments"]) == {"city": "ok."}
    messages += [{"role": "assistant", "content": first["choices"][0]["message"].get("content") or "",
                  "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": call["id"], "content": "Sunny, 21 C"}]
    answer = installed.chat({"messages": messages, "tools": [WEATHER], "max_tokens": 64})
    assert answer["choices"][0]["finish_reason"] == "stop" and not _calls(answer)
    assert answer["choices"][0]["message"]["content"] == ANSWER
    # the tool result reached the prompt as Qwen's <tool_response> turn
    rendered = installed.post("/apply-template", {"messages": messages, "tools": [WEATHER]}).json()["prompt"]
    assert "<|im_start|>user\n<tool_response>\nSunny, 21 C\n</tool_response><|im_end|>\n" in rendered


def test_tool_call_streamed_deltas_join_into_one_valid_call(installed: Installed) -> None:
    resp = installed.post("/v1/chat/completions", {
        "model": QWEN_MODEL_ID, "temperature": 0, "stream": True, "max_tokens": 128, "tools": [WEATHER],
        "tool_choice": "required", "messages": [{"role": "user", "content": "What is the weather in Paris?"}]},
        stream=True)
    assert resp.status_code == 200, resp.text
    calls: dict[int, dict[str, str]] = {}
    deltas, finish = 0, None
    for line in resp.iter_lines():
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        choice = json.loads(line[6:])["choices"][0]
        finish = choice.get("finish_reason") or finish
        for part in choice["delta"].get("tool_calls") or []:
            deltas += 1
            call = calls.setdefault(part["index"], {"id": "", "name": "", "arguments": ""})
            call["id"] += part.get("id") or ""
            call["name"] += (part.get("function") or {}).get("name") or ""
            call["arguments"] += (part.get("function") or {}).get("arguments") or ""
    assert finish == "tool_calls" and deltas > 1  # the call came in pieces
    assert list(calls) == [0] and calls[0]["id"] and calls[0]["name"] == "get_weather"
    assert json.loads(calls[0]["arguments"]) == {"city": "ok."}


def test_tool_call_free_json_schema_is_enforced(installed: Installed) -> None:
    schema = {"type": "object", "properties": {"count": {"type": "integer"}, "done": {"type": "boolean"},
                                               "unit": {"type": "string", "enum": ["s", "ms"]}},
              "required": ["count", "done", "unit"], "additionalProperties": False}
    doc = installed.chat({"messages": [{"role": "user", "content": "Count."}], "max_tokens": 96,
                          "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}})
    answer = json.loads(doc["choices"][0]["message"]["content"])
    assert set(answer) == {"count", "done", "unit"} and isinstance(answer["count"], int)
    assert isinstance(answer["done"], bool) and answer["unit"] in ("s", "ms")


def test_tool_call_thinking_on_and_off_per_request(installed: Installed) -> None:
    """The install serves with thinking off (``--reasoning off``); a request turns it on, and a required tool call
    made while thinking ends the thinking (llama.cpp #17932's case: the parser ends reasoning at ``<tool_call>``)."""
    ask = [{"role": "user", "content": "Say hello."}]
    off = installed.chat({"messages": ask, "max_tokens": 32})["choices"][0]["message"]
    on = installed.chat({"messages": ask, "max_tokens": 32,
                         "chat_template_kwargs": {"enable_thinking": True}})["choices"][0]["message"]
    assert off["content"] == ANSWER and not off.get("reasoning_content")
    assert on["content"] == ANSWER and on["reasoning_content"] == "Let me think"
    thought = installed.chat({"messages": ask, "max_tokens": 128, "tools": [WEATHER], "tool_choice": "required",
                              "chat_template_kwargs": {"enable_thinking": True}})
    assert thought["choices"][0]["message"]["reasoning_content"] == "Let me think"
    assert [c["function"]["name"] for c in _calls(thought)] == ["get_weather"]


# --- Claude Code's /v1/messages and Codex's /v1/responses --------------------------------------------------------


def _anthropic_tool(name: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": f"The {name} tool.",
            "input_schema": {"type": "object", "properties": props, "required": list(props)}}


def claude_code_shape(thinking: str = "adaptive") -> dict[str, Any]:
    """A first request with Claude Code's structure: ``system`` a list of text blocks, messages [user (2 text blocks),
    system (1 block)], tools, ``thinking`` adaptive, a large ``max_tokens``, streamed."""
    cached = {"type": "ephemeral"}
    return {
        "model": QWEN_MODEL_ID, "max_tokens": 32000, "stream": True, "thinking": {"type": thinking},
        "metadata": {"user_id": "user-1"},
        "system": [{"type": "text", "text": "You are a coding agent."},
                   {"type": "text", "text": "Work in the current folder.", "cache_control": cached}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Context of this project."},
                                         {"type": "text", "text": "Say hello.", "cache_control": cached}]},
            {"role": "system", "content": [{"type": "text", "text": "Instructions for this session."}]}],
        "tools": [_anthropic_tool("Bash", {"command": {"type": "string"}}),
                  _anthropic_tool("Read", {"file_path": {"type": "string"}, "limit": {"type": "integer"}}),
                  _anthropic_tool("Glob", {"pattern": {"type": "string"}})],
    }


def codex_shape() -> dict[str, Any]:
    """A first request with Codex's structure: ``input`` = [developer, developer, user, user], function tools,
    ``reasoning``, ``parallel_tool_calls``, ``prompt_cache_key``, streamed."""
    def text(role: str, words: str) -> dict[str, Any]:
        return {"type": "message", "role": role, "content": [{"type": "input_text", "text": words}]}

    def tool(name: str) -> dict[str, Any]:
        return {"type": "function", "name": name, "description": f"The {name} tool.", "strict": False,
                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}

    return {"model": QWEN_MODEL_ID, "instructions": "You are a coding agent.", "stream": True, "store": False,
            "input": [text("developer", "Sandbox rules."), text("developer", "Project rules."),
                      text("user", "Environment context."), text("user", "Say hello.")],
            "tools": [tool("shell"), tool("apply_patch")], "tool_choice": "auto", "parallel_tool_calls": True,
            "reasoning": {"effort": "medium", "summary": "auto"}, "prompt_cache_key": "session-1"}


def _events(resp: requests.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in resp.iter_lines()
            if line.startswith(b"data: ") and line != b"data: [DONE]"]


def test_tool_call_claude_code_first_request_shape_is_answered(installed: Installed) -> None:
    resp = requests.post(f"{installed.base_url}/v1/messages?beta=true", json=claude_code_shape(), stream=True,
                         timeout=300, headers={"x-api-key": installed.key, "anthropic-version": "2023-06-01"})
    assert resp.status_code == 200, resp.text
    events = _events(resp)
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    said = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    assert said == ANSWER


def test_tool_call_claude_code_thinking_requests_follow_the_server_default(installed: Installed) -> None:
    """"adaptive" and "enabled" map to no switch in b11434 (``server_chat_convert_anthropic_to_oai``: "enabled" only
    sets a thinking budget): the install's default (off) holds, and neither request fails."""
    for kind in ("adaptive", "enabled"):
        body = {**claude_code_shape(kind), "stream": False}
        if kind == "enabled":
            body["thinking"]["budget_tokens"] = 1024
        resp = installed.post("/v1/messages", body)
        assert resp.status_code == 200, resp.text
        blocks = resp.json()["content"]
        assert [b["type"] for b in blocks] == ["text"] and blocks[0]["text"] == ANSWER


def test_tool_call_claude_code_tool_use_streams_as_anthropic_blocks(installed: Installed) -> None:
    body = {**claude_code_shape(), "tool_choice": {"type": "any"}}
    resp = installed.post("/v1/messages", body, stream=True)
    assert resp.status_code == 200, resp.text
    events = _events(resp)
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    uses = [b for b in starts if b["type"] == "tool_use"]
    assert len(uses) == 1 and uses[0]["name"] in ("Bash", "Read", "Glob")
    partial = "".join(e["delta"].get("partial_json", "") for e in events if e["type"] == "content_block_delta")
    assert isinstance(json.loads(partial), dict)
    assert any(e["type"] == "message_delta" and e["delta"].get("stop_reason") == "tool_use" for e in events)


def test_tool_call_codex_first_request_shape_is_answered(installed: Installed) -> None:
    resp = installed.post("/v1/responses", codex_shape(), stream=True)
    assert resp.status_code == 200, resp.text
    events = _events(resp)
    done = [e for e in events if e.get("type") == "response.completed"]
    assert len(done) == 1
    texts = [c["text"] for item in done[0]["response"]["output"] if item.get("type") == "message"
             for c in item["content"] if c.get("type") == "output_text"]
    assert texts == [ANSWER]


def test_tool_call_client_shapes_are_refused_by_the_untouched_template(llama_server: Path,
                                                                       qwen_chat_gguf: Path) -> None:
    """What the kit's template fixes: the model's own template refuses both first requests with HTTP 500."""
    with LlamaServer(llama_server, qwen_chat_gguf, ("-c", "4096", "-np", "1", "-t", "1", "--jinja")) as srv:
        claude = requests.post(f"{srv.base_url}/v1/messages", json={**claude_code_shape(), "stream": False},
                               timeout=120)
        codex = requests.post(f"{srv.base_url}/v1/responses", json={**codex_shape(), "stream": False}, timeout=120)
    for resp in (claude, codex):
        assert resp.status_code == 500 and "System message must be at the beginning." in resp.text


# --- last: a second Qwen model beside the default (the server becomes a router) -------------------------------------


def test_tool_call_a_model_added_beside_gets_its_template_and_proof(installed: Installed) -> None:
    """``qwenkit install MODEL`` adds a second model: its own derived template is named in its ``models.ini``
    section, its tool-call proof is said and recorded with it, and Claude Code's shape naming it is answered."""
    proc = installed.bed.run("install", SECOND_ID, "--yes", env=installed.bed.env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "tools ok: the model called a tool through the server" in proc.stderr
    state = load_state(installed.bed.home)
    assert state is not None
    (entry,) = state.library
    assert entry.tools is not None and entry.tools.ok
    assert entry.chat_template is not None and entry.chat_template.path == state.server.chat_template.path  # type: ignore[union-attr]
    check = load_tools_check(installed.bed.home, SECOND_ID)
    assert check is not None and check.ok
    preset = (installed.bed.home.root / "models.ini").read_text(encoding="utf-8")
    assert preset.count(f"chat-template-file = {entry.chat_template.path}") == 2  # both sections, one file
    resp = requests.post(f"{installed.base_url}/v1/messages", json={**claude_code_shape(), "model": SECOND_ID,
                                                                    "stream": False},
                         headers={"x-api-key": installed.key}, timeout=300)
    assert resp.status_code == 200, resp.text
    assert resp.json()["content"][0]["text"] == ANSWER


def test_tool_call_switching_the_default_keeps_both_templates(installed: Installed) -> None:
    """``install --default`` makes the second model the default: the old default, now served beside it, keeps its
    derived template and its recorded proof, so Claude Code's shape naming it is still answered."""
    proc = installed.bed.run("install", "--default", SECOND_ID, "--yes", "--no-service", "--no-venv",
                             env=installed.bed.env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = load_state(installed.bed.home)
    assert state is not None and state.server.alias == SECOND_ID
    (old,) = state.library
    assert old.name == QWEN_MODEL_ID and old.chat_template is not None and old.chat_template.path is not None
    assert old.tools is not None and old.tools.ok
    assert state.server.chat_template is not None and state.server.tools is not None and state.server.tools.ok
    preset = (installed.bed.home.root / "models.ini").read_text(encoding="utf-8")
    assert preset.count("chat-template-file = ") == 2
    resp = requests.post(f"{installed.base_url}/v1/messages", json={**claude_code_shape(), "stream": False},
                         headers={"x-api-key": installed.key}, timeout=300)
    assert resp.status_code == 200, resp.text
