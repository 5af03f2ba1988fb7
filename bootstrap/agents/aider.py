"""Aider (PyPI ``aider-chat``), pointed at this install.

Aider reaches an OpenAI-compatible server through LiteLLM, with the model named ``openai/NAME``
(aider.chat/docs/llms/openai-compat.html). Before it reads its arguments it loads ``.env`` files over its
environment — from the home folder, the git root and the current folder (aider.chat/docs/config/dotenv.html;
``load_dotenv(…, override=True)`` in aider's ``main.py``) — and a Python project's ``.env`` often holds
``OPENAI_API_KEY`` (or ``OPENAI_API_BASE``/``OPENAI_BASE_URL``) for OpenAI itself, which would replace the kit's
key and server. So the key and the server are given as aider's own options, which it applies after those files:
``AIDER_OPENAI_API_KEY`` and ``AIDER_OPENAI_API_BASE`` (the environment form of ``--openai-api-key`` and
``--openai-api-base``, aider.chat/docs/config/options.html; the key never on the command line), and
``--set-env OPENAI_BASE_URL=…``, since LiteLLM takes ``OPENAI_BASE_URL`` before ``OPENAI_API_BASE``.

It learns a model's window from a model-metadata file in LiteLLM's format, ``--model-metadata-file``
(aider.chat/docs/config/adv-model-settings.html, "Context window size and token costs"); the kit writes one into
the home (no secret in it). Its own traffic is off for the session with ``--no-check-update``, ``--no-analytics``
(not ``--analytics-disable``, which turns analytics off for good in the user's ``~/.aider/analytics.json``) and
``--no-show-release-notes`` (aider.chat/docs/config/options.html), and LiteLLM's download of its model price list
with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (docs.litellm.ai, "Setting custom model cost map").

``--config`` is not offered: aider's config is YAML (``~/.aider.conf.yml``), which the kit does not edit;
``qwenkit launch --print aider`` shows the settings to add by hand.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bootstrap.agents.base import AgentClient, output_cap
from bootstrap.agents.target import Target
from bootstrap.core.atomic_file import write_atomic

DEFAULT_OUTPUT = 8192


class Aider(AgentClient):
    name = "aider"
    title = "Aider"
    programs = ("aider",)
    package = "aider-chat"
    installer = "pip"
    python = "3.12"  # aider-chat 0.86.2: Requires-Python >=3.10,<3.13 (its PyPI metadata)
    headless = ("--message", "Say hello.", "--no-git", "--yes-always")
    first_request_tokens = 700  # measured on the test bed: docs/agents.md
    measured_version = "0.86.2"
    unset = ("OPENAI_BASE_URL",)
    configurable = False  # its config is YAML, which the kit does not edit
    # It asks for its edits in the answer's text (its edit formats: aider.chat/docs/more/edit-formats.html) and sends
    # no tools, so it works on a model whose template cannot take them (measured: a --no-jinja Gemma answers it).
    uses_tools = False

    def env(self, target: Target) -> dict[str, str]:
        return {"AIDER_OPENAI_API_BASE": target.openai_url, "AIDER_OPENAI_API_KEY": target.key,
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def flags(self, target: Target) -> list[str]:
        """Its settings on the command line (no secret among them)."""
        return ["--model", f"openai/{target.model}", "--set-env", f"OPENAI_BASE_URL={target.openai_url}",
                "--no-check-update", "--no-analytics", "--no-show-release-notes"]

    def metadata(self, target: Target) -> dict[str, Any]:
        """The model's window and answer cap in LiteLLM's model-metadata format (no cost: it is local)."""
        cap = output_cap(target.ctx, DEFAULT_OUTPUT)
        return {f"openai/{target.model}": {
            "max_input_tokens": target.ctx, "max_tokens": cap, "max_output_tokens": cap, "input_cost_per_token": 0,
            "output_cost_per_token": 0, "litellm_provider": "openai", "mode": "chat"}}

    def metadata_file(self, files: Path) -> Path:
        return files / "aider-model-metadata.json"

    def args(self, target: Target, files: Path, told: Mapping[str, str] | None = None) -> list[str]:
        out = self.flags(target)
        if target.ctx:
            path = self.metadata_file(files)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(self.metadata(target), indent=2).encode())
            out += ["--model-metadata-file", str(path)]
        return out


CLIENT = Aider()
