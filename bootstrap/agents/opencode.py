"""OpenCode (npm ``opencode-ai``; a native binary), pointed at this install.

A provider in its config is ``provider.ID`` with ``"npm": "@ai-sdk/openai-compatible"`` (bundled in the binary),
``options.baseURL`` with ``/v1`` and ``options.apiKey``, and ``models.NAME.limit`` — ``context``, the real window
(OpenCode compacts before it), and ``output``, which it sends as ``max_tokens`` (opencode.ai/docs/providers,
"Custom provider"; opencode.ai/docs/config). Config values may read a file: ``{file:PATH}``
(opencode.ai/docs/config, "Variables"), so the key stays in the install's owner-only key file and is copied
nowhere.

``launch`` passes the whole config in ``OPENCODE_CONFIG_CONTENT``, which OpenCode merges over the user's own
(opencode.ai/docs/config, "Custom config"); ``--config`` writes the same provider into
``~/.config/opencode/opencode.json`` (``OPENCODE_CONFIG`` names another file). Its traffic to other services is off
by its own switches: ``autoupdate: false``, ``share: "disabled"``, and ``OPENCODE_DISABLE_AUTOUPDATE``,
``OPENCODE_DISABLE_MODELS_FETCH`` (the models.dev catalog), ``OPENCODE_DISABLE_LSP_DOWNLOAD``,
``OPENCODE_DISABLE_DEFAULT_PLUGINS`` (plugins fetched from npm at start) (opencode.ai/docs/cli, "Environment
variables"). A user's ``OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX`` still caps each answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bootstrap.agents.base import AgentClient, ConfigPlan, edited, output_cap
from bootstrap.agents.json_text import set_members
from bootstrap.agents.target import Target
from bootstrap.agents.text_edits import apply
from bootstrap.core.settings import API_KEY_ENV

PROVIDER = "qwenkit"
DEFAULT_OUTPUT = 32000
QUIET = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
         "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1"}


class OpenCode(AgentClient):
    name = "opencode"
    title = "OpenCode"
    programs = ("opencode",)
    package = "opencode-ai"
    npm_bin = "bin/opencode.exe"
    headless = ("run", "Say hello.")
    first_request_tokens = 7400  # measured on the test bed: docs/agents.md
    measured_version = "1.18.33"

    def _key_value(self, target: Target) -> str:
        """The key as ``launch`` names it: the install's key file, or (a team gateway's user key, given to ``launch``
        in the environment) the key itself, which then lives only in the client's environment."""
        return self.config_key(target) if target.key_file is not None else target.key

    def config_key(self, target: Target) -> str:
        """The key as a config file names it (``--config``, ``--print``): the install's key file, or the variable
        the user sets to their own key; never the key."""
        return f"{{file:{target.key_file}}}" if target.key_file is not None else f"{{env:{API_KEY_ENV}}}"

    def settings(self, target: Target, api_key: str) -> dict[str, Any]:
        limit: dict[str, int] = {"output": output_cap(target.ctx, DEFAULT_OUTPUT)}
        if target.ctx:
            limit["context"] = target.ctx
        return {
            "provider": {PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "QwenClientKit",
                "options": {"baseURL": target.openai_url, "apiKey": api_key},
                "models": {target.model: {"name": target.model, "limit": limit, "tool_call": True}},
            }},
            "model": f"{PROVIDER}/{target.model}",
            "autoupdate": False,
            "share": "disabled",
        }

    def env(self, target: Target) -> dict[str, str]:
        content = json.dumps(self.settings(target, self._key_value(target)), ensure_ascii=False)
        return {"OPENCODE_CONFIG_CONTENT": content, **QUIET}

    def config_path(self, env: Mapping[str, str], user_home: Path) -> Path:
        chosen = env.get("OPENCODE_CONFIG", "").strip()
        return Path(chosen) if chosen else user_home / ".config" / "opencode" / "opencode.json"

    def config_plan(self, text: str | None, target: Target, path: Path) -> ConfigPlan:
        skeleton = '{\n  "$schema": "https://opencode.ai/config.json"\n}\n'
        settings = self.settings(target, self.config_key(target))
        provider = settings.pop("provider")
        base = text if text is not None else skeleton
        first = set_members(base, ("provider",), provider)
        middle = apply(base, first)
        new, edits = edited(base, first, set_members(middle, (), settings))
        return ConfigPlan(path, skeleton, new, edits, key_in_env=target.key_file is None)


CLIENT = OpenCode()
