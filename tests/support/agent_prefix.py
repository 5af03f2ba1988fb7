"""The real Claude Code's first request, recorded, so benchmarks and tests send exactly what the client sends.

``record_claude_first_request()`` runs the pinned ``claude -p`` (``agent_clients``) against the test bed's
llama-server with the tiny Qwen chat model behind a ``CountingProxy``, and keeps the first ``/v1/messages`` body it
sent (system prompt, tool definitions, the first user message). ``python -m tests.support.agent_prefix`` writes it
to ``tests/data/agent_prefix/claude_first_request.json`` again (re-record after a client pin changes).
``load_claude_first_request()`` reads the recorded one (``cut_request(chars)``: its system prompt cut short, no
tools); ``with_model(body, name)`` points it at a server's alias
(the only field a replay changes: a router needs the name, a single server ignores it).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.support import agent_clients, testbed
from tests.support.counting_proxy import CountingProxy
from tests.support.llama import LlamaServer
from tests.support.qwen_chat_model import qwen_chat_model

RECORDED = Path(__file__).resolve().parents[1] / "data" / "agent_prefix" / "claude_first_request.json"
MODEL_NAME = "qwen-agent"
KEY = "recording-key"


def load_claude_first_request() -> dict[str, Any]:
    """The recorded body (a JSON object: ``model``, ``system``, ``tools``, ``messages``, ``stream`` ...)."""
    body = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert isinstance(body, dict) and body.get("messages"), RECORDED
    return body


def with_model(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The same request naming ``name`` as its model."""
    return {**body, "model": name}


def cut_request(chars: int, max_tokens: int = 4) -> dict[str, Any]:
    """The recorded request's system prompt cut to ``chars`` characters, no tools, its first user message kept: a
    prefix a small model on two busy cores reads in seconds (the whole request takes minutes there)."""
    body = load_claude_first_request()
    system = body["system"]
    text = "\n".join(b.get("text", "") for b in system) if isinstance(system, list) else str(system)
    return {"model": body["model"], "max_tokens": max_tokens, "system": text[:chars],
            "messages": body["messages"][:1]}


def record_claude_first_request() -> bytes:
    """Run the pinned Claude Code once, headless, and return its first ``/v1/messages`` request body."""
    agent_clients.client_dir("claude")
    server_bin = testbed.engine_dir() / "llama-server"
    with tempfile.TemporaryDirectory(prefix="claude-record-") as tmp, LlamaServer(
            server_bin, qwen_chat_model(), ["-c", "65536", "-np", "1", "-t", "2", "--alias", MODEL_NAME, "--jinja"],
            api_key=KEY) as server, CountingProxy(server.base_url, KEY) as proxy:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        env.update({"HOME": tmp, "PATH": os.pathsep.join([str(agent_clients.bin_dir("claude")), env.get("PATH", "")]),
                    "ANTHROPIC_BASE_URL": proxy.url, "ANTHROPIC_AUTH_TOKEN": KEY, "ANTHROPIC_MODEL": MODEL_NAME,
                    "ANTHROPIC_DEFAULT_HAIKU_MODEL": MODEL_NAME, "ANTHROPIC_DEFAULT_SONNET_MODEL": MODEL_NAME,
                    "ANTHROPIC_DEFAULT_OPUS_MODEL": MODEL_NAME, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096"})
        subprocess.run(["claude", "-p", "Say hello."], env=env, cwd=tmp, capture_output=True, timeout=900,
                       check=False, stdin=subprocess.DEVNULL)
        bodies = [e.body for e in proxy.exchanges if e.method == "POST" and e.path.startswith("/v1/messages")
                  and b'"tools"' in e.body]
    if not bodies:
        raise RuntimeError("Claude Code sent no /v1/messages request with tools")
    return bodies[0]


def main() -> None:
    body = json.loads(record_claude_first_request())
    RECORDED.parent.mkdir(parents=True, exist_ok=True)
    RECORDED.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{RECORDED}: {RECORDED.stat().st_size} bytes, {len(body.get('tools', []))} tools")


if __name__ == "__main__":
    main()
