"""Codex CLI (npm ``@openai/codex``; a native binary started by ``bin/codex.js``), pointed at this install.

Codex speaks OpenAI's Responses API (``wire_api = "responses"``, the only one recent versions accept), which
llama-server serves at ``/v1/responses``. A provider is a ``[model_providers.ID]`` table of its config
(developers.openai.com/codex/config-reference): ``base_url`` with ``/v1``, and ``env_key``, the NAME of the
environment variable that holds the key, so the key is in neither the config file nor the command line. The ID
must not be one of its built-in providers (openai, ollama, lmstudio), whose base URL cannot be overridden
(openai/codex #11698).

``launch`` gives every setting as ``-c key=value`` overrides (values are TOML) and the key in ``QWENKIT_API_KEY``;
``--config`` writes them into ``~/.codex/config.toml`` (``CODEX_HOME`` moves the folder), after which Codex still
reads the key from ``QWENKIT_API_KEY``: ``--config`` prints how to set it from the key file in each shell.

- ``model_context_window``: the real window. Codex 0.171 still says "Model metadata for `NAME` not found.
  Defaulting to fallback metadata" for a model it does not know (its own catalog has no local models); the window
  is what that fallback would get wrong;
- ``web_search = "disabled"``: its hosted web-search tool needs OpenAI's service;
- ``check_for_update_on_startup = false``, ``analytics.enabled = false``, ``feedback.enabled = false``: no traffic
  to its makers (config-reference; ``[analytics]`` "When false, disables analytics").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bootstrap.agents.base import MARKER, AgentClient, ConfigPlan, edited
from bootstrap.agents.target import Target
from bootstrap.agents.toml_text import plan_edits, value_text
from bootstrap.core.file_formats import tomllib
from bootstrap.core.settings import API_KEY_ENV

PROVIDER = "qwenkit"


class Codex(AgentClient):
    name = "codex"
    title = "Codex CLI"
    programs = ("codex",)
    package = "@openai/codex"
    npm_bin = "bin/codex.js"
    headless = ("exec", "--skip-git-repo-check", "Say hello.")
    first_request_tokens = 6300  # measured on the test bed: docs/agents.md
    measured_version = "0.171.0"

    def env(self, target: Target) -> dict[str, str]:
        return {API_KEY_ENV: target.key}

    def provider(self, target: Target) -> dict[str, Any]:
        return {"name": "QwenClientKit", "base_url": target.openai_url, "env_key": API_KEY_ENV,
                "wire_api": "responses"}

    def root_settings(self, target: Target) -> dict[str, Any]:
        values: dict[str, Any] = {"model_provider": PROVIDER, "model": target.model}
        if target.ctx:
            values["model_context_window"] = target.ctx
        values.update({"web_search": "disabled", "check_for_update_on_startup": False})
        return values

    def args(self, target: Target, files: Path, told: Mapping[str, str] | None = None) -> list[str]:
        settings: dict[str, Any] = {**self.root_settings(target), f"model_providers.{PROVIDER}": self.provider(target),
                                    "analytics.enabled": False, "feedback.enabled": False}
        out = []
        for key, value in settings.items():
            out += ["-c", f"{key}={value_text(value)}"]
        return out

    def config_path(self, env: Mapping[str, str], user_home: Path) -> Path:
        folder = env.get("CODEX_HOME", "").strip()
        return (Path(folder) if folder else user_home / ".codex") / "config.toml"

    def config_plan(self, text: str | None, target: Target, path: Path) -> ConfigPlan:
        current = tomllib.loads(text or "")
        tables: dict[str, dict[str, Any]] = {f"model_providers.{PROVIDER}": self.provider(target)}
        for table in ("analytics", "feedback"):  # the user's own choice, when made, stays theirs
            if table not in current:
                tables[table] = {"enabled": False}
        base = text or ""
        new, edits = edited(base, plan_edits(base, self.root_settings(target), tables, MARKER.format(client=self.name)))
        return ConfigPlan(path, "", new, edits, key_in_env=True)


CLIENT = Codex()
