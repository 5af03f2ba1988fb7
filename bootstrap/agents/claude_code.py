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

Its settings files may set the same variables: it applies the ``env`` object of its user settings
(``~/.claude/settings.json``, where ``qwenkit launch claude --config`` of another install or gateway leaves them)
and of a project's ``.claude/settings.json``/``settings.local.json`` over its environment, so the variables alone
would lose to them (measured: a user settings file naming another server and a 1k window made ``claude -p`` end
with "Prompt is too long" while launch had said context 65536). ``launch`` therefore also passes them as
``--settings FILE``, which ranks above every settings file but an administrator's managed one (docs/en/settings,
"Settings precedence": command line arguments before local, project and user settings). That file holds the key:
it is written owner-only into the home's owner-only ``agents`` folder, one per run, and deleted when Claude Code
ends.

``--config`` writes the same variables into the ``env`` object of its user settings (``~/.claude/settings.json``,
``CLAUDE_CONFIG_DIR`` moves the folder; docs/en/settings), which then holds the key: the file is made owner-only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from bootstrap.agents.base import AgentClient, ConfigPlan, edited, output_cap
from bootstrap.agents.json_text import set_members
from bootstrap.agents.target import Target
from bootstrap.core.atomic_file import write_atomic

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

    def args(self, target: Target, files: Path, told: Mapping[str, str] | None = None) -> list[str]:
        """``--settings FILE``: its variables as settings that rank above the user's and the project's own files
        (the file holds the key: owner-only, this run's alone)."""
        given = told if told is not None else self.env(target)
        settings = {"env": {name: given[name] for name in self.env(target) if name in given}}
        path = self.run_files(files)[0]
        write_atomic(path, json.dumps(settings, ensure_ascii=False, indent=2).encode("utf-8"), mode=0o600)
        return ["--settings", str(path)]

    def run_files(self, files: Path) -> tuple[Path, ...]:
        return (files / f"claude-settings-{os.getpid()}.json",)  # two launches at once each have their own

    def config_path(self, env: Mapping[str, str], user_home: Path) -> Path:
        folder = env.get("CLAUDE_CONFIG_DIR", "").strip()
        return (Path(folder) if folder else user_home / ".claude") / "settings.json"

    def config_plan(self, text: str | None, target: Target, path: Path) -> ConfigPlan:
        skeleton = "{\n}\n"
        base = text if text is not None else skeleton
        new, edits = edited(base, set_members(base, ("env",), self.env(target)))
        return ConfigPlan(path, skeleton, new, edits)


CLIENT = ClaudeCode()
