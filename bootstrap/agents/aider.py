"""Aider (PyPI ``aider-chat``), pointed at this install.

Aider reaches an OpenAI-compatible server through LiteLLM: ``OPENAI_API_BASE`` (with ``/v1``) and
``OPENAI_API_KEY`` in its environment, and the model named ``openai/NAME`` (aider.chat/docs/llms/openai-compat.html).
It learns a model's window from a model-metadata file in LiteLLM's format, ``--model-metadata-file``
(aider.chat/docs/config/adv-model-settings.html, "Context window size and token costs"); the kit writes one into
the home (no secret in it). Its own traffic is off with ``--no-check-update``, ``--analytics-disable`` and
``--no-show-release-notes`` (aider.chat/docs/config/options.html), and LiteLLM's download of its model price list
with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (docs.litellm.ai, "Setting custom model cost map").

``--config`` is not offered: aider's config is YAML (``~/.aider.conf.yml``), which the kit does not edit;
``qwenkit launch --print aider`` shows the settings to add by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

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
    headless = ("--message", "Say hello.", "--no-git", "--yes-always")
    first_request_tokens = 700  # measured on the test bed: docs/agents.md
    measured_version = "0.86.2"
    unset = ("OPENAI_BASE_URL",)
    configurable = False  # its config is YAML, which the kit does not edit
    # It asks for its edits in the answer's text (its edit formats: aider.chat/docs/more/edit-formats.html) and sends
    # no tools, so it works on a model whose template cannot take them (measured: a --no-jinja Gemma answers it).
    uses_tools = False

    def env(self, target: Target) -> dict[str, str]:
        return {"OPENAI_API_BASE": target.openai_url, "OPENAI_API_KEY": target.key,
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def metadata_file(self, files: Path) -> Path:
        return files / "aider-model-metadata.json"

    def args(self, target: Target, files: Path) -> list[str]:
        out = ["--model", f"openai/{target.model}", "--no-check-update", "--analytics-disable",
               "--no-show-release-notes"]
        if target.ctx:
            meta = {f"openai/{target.model}": {
                "max_input_tokens": target.ctx, "max_tokens": output_cap(target.ctx, DEFAULT_OUTPUT),
                "max_output_tokens": output_cap(target.ctx, DEFAULT_OUTPUT), "input_cost_per_token": 0,
                "output_cost_per_token": 0, "litellm_provider": "openai", "mode": "chat",
                "supports_function_calling": True}}
            path = self.metadata_file(files)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(meta, indent=2).encode())
            out += ["--model-metadata-file", str(path)]
        return out


CLIENT = Aider()
