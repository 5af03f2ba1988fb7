"""The Qwen chat model of the test bed (tests/support/qwen_chat_model.py) as the real llama-server sees it: the
family's template rendered, Qwen's special tokens single tokens, and grammars that the toy vocabulary of the other
tiny models fails ("Failed to initialize samplers") working."""

from __future__ import annotations

import json
from pathlib import Path

from bootstrap.plan.gguf_header import read_header
from tests.support.llama import LlamaServer
from tests.support.qwen_chat_model import upstream_qwen_template

ARGS = ("-c", "4096", "-np", "1", "-t", "2", "--jinja")
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_qwen_chat_model_carries_the_upstream_template_and_qwen_vocabulary(qwen_chat_gguf: Path) -> None:
    header = read_header(qwen_chat_gguf)  # the kit's reader: gguf's own parses the 151,936 tokens for seconds
    meta = header.metadata
    assert header.architecture == "qwen35moe"
    assert meta["tokenizer.chat_template"] == upstream_qwen_template().read_text(encoding="utf-8")
    assert meta["tokenizer.ggml.model"] == "gpt2" and meta["tokenizer.ggml.pre"] == "qwen35"
    assert header.array_length("tokenizer.ggml.tokens") == 151_936


def test_qwen_chat_model_renders_the_family_template_and_speaks(llama_server: Path, qwen_chat_gguf: Path) -> None:
    with LlamaServer(llama_server, qwen_chat_gguf, ARGS) as srv:
        rendered = srv.post("/apply-template", {"messages": [{"role": "user", "content": "Say hello."}]})
        pieces = srv.post("/tokenize", {"content": "<|im_start|><tool_call><think></tool_response>",
                                        "with_pieces": True, "parse_special": True})["tokens"]
        plain = srv.chat("Say hello.", max_tokens=32, chat_template_kwargs={"enable_thinking": False})
        thinking = srv.chat("Say hello.", max_tokens=32, chat_template_kwargs={"enable_thinking": True})
    assert rendered["prompt"] == "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n<think>\n"
    assert [p["piece"] for p in pieces] == ["<|im_start|>", "<tool_call>", "<think>", "</tool_response>"]
    message = plain["choices"][0]["message"]
    assert message["content"] == "Hello from the tiny model." and plain["choices"][0]["finish_reason"] == "stop"
    message = thinking["choices"][0]["message"]
    assert message["reasoning_content"] == "Let me think" and message["content"] == "Hello from the tiny model."


def test_qwen_chat_model_tool_call_and_json_schema_grammars_work(llama_server: Path, qwen_chat_gguf: Path) -> None:
    """The two grammar requests every generated tiny model fails with 400: a required tool call and a JSON schema."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
              "required": ["n", "ok"]}
    with LlamaServer(llama_server, qwen_chat_gguf, ARGS) as srv:
        called = srv.chat("What is the weather in Paris?", max_tokens=96, tools=[WEATHER], tool_choice="required",
                          chat_template_kwargs={"enable_thinking": False})
        shaped = srv.chat("Give me a number.", max_tokens=96, chat_template_kwargs={"enable_thinking": False},
                          response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": schema}})
    choice = called["choices"][0]
    assert choice["finish_reason"] == "tool_calls", choice
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "ok."}
    answer = json.loads(shaped["choices"][0]["message"]["content"])
    assert set(answer) == {"n", "ok"} and isinstance(answer["n"], int) and isinstance(answer["ok"], bool)
