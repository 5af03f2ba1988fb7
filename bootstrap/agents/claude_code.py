"""Claude Code (npm ``@anthropic-ai/claude-code``; a native binary in its platform package), pointed at this install.

It speaks Anthropic's Messages API, which llama-server serves at ``/v1/messages`` (llama.cpp PR #17570). Everything
it is told is an environment variable from its own reference (code.claude.com/docs/en/env-vars):

- ``ANTHROPIC_BASE_URL``: the server without ``/v1`` (the client appends ``/v1/messages``);
- ``ANTHROPIC_AUTH_TOKEN``: the key, sent as ``Authorization: Bearer`` (what llama-server and the team gateway
  check); ``ANTHROPIC_API_KEY`` is removed from its environment, since both set is a conflict it warns about;
- ``ANTHROPIC_MODEL`` and the model each alias resolves to (``ANTHROPIC_DEFAULT_OPUS_MODEL``, ``…_SONNET_…``,
  ``…_HAIKU_…``, ``CLAUDE_CODE_SUBAGENT_MODEL``): every request names the installed model, so a router with several
  models never gets a request for "claude-haiku";
- ``CLAUDE_CODE_MAX_CONTEXT_TOKENS``: the real window. Without it, it says it "doesn't recognize the model … so it
  assumes a context window of 1m tokens" (docs/en/model-config, "Correct the window for a gateway or custom model
  id") and would compact far too late;
- ``CLAUDE_CODE_MAX_OUTPUT_TOKENS``: its default asks 32,000 tokens per answer, more than a small window holds
  beside the prompt; a value the user set themselves is kept;
- ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``: no update checks, telemetry or error reports to its makers.

``--config`` writes the same variables into the ``env`` object of its user settings (``~/.claude/settings.json``,
``CLAUDE_CONFIG_DIR`` moves the folder; docs/en/settings), which then holds the key: the file is made owner-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bootstrap.agents.base import AgentClient, ConfigPlan, edited, output_cap
from bootstrap.agents.json_text import set_members
from bootstrap.agents.target import Target

DEFAULT_OUTPUT = 32000  # what Claude Code asks per answer when nothing caps it (its first request's max_tokens)


class ClaudeCode(AgentClient):
    name = "claude"
    title = "Claude Code"
    programs = ("claude",)
    package = "@anthropic-ai/claude-code"
    npm_bin = "bin/claude.exe"  # a native binary on every platform (the package's postinstall puts it there)
    headless = ("-p", "Say hello.")
    first_request_tokens = 11800  # measured on the test bed: docs/agents.md
    measured_version = "2.1.332"
    user_tunable = frozenset({"CLAUDE_CODE_MAX_OUTPUT_TOKENS"})
    unset = ("ANTHROPIC_API_KEY",)

    def env(self, target: Target) -> dict[str, str]:
        model = target.model
        values = {
            "ANTHROPIC_BASE_URL": target.base_url,
            "ANTHROPIC_AUTH_TOKEN": target.key,
            "ANTHROPIC_MODEL": model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
            "CLAUDE_CODE_SUBAGENT_MODEL": model,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(output_cap(target.ctx, DEFAULT_OUTPUT)),
        }
        if target.ctx:
            values["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = str(target.ctx)
        return values

    def config_path(self, env: Mapping[str, str], user_home: Path) -> Path:
        folder = env.get("CLAUDE_CONFIG_DIR", "").strip()
        return (Path(folder) if folder else user_home / ".claude") / "settings.json"

    def config_plan(self, text: str | None, target: Target, path: Path) -> ConfigPlan:
        skeleton = "{\n}\n"
        base = text if text is not None else skeleton
        new, edits = edited(base, set_members(base, ("env",), self.env(target)))
        return ConfigPlan(path, skeleton, new, edits)


CLIENT = ClaudeCode()
