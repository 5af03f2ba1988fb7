"""``qwenkit launch --print NAME``: the exact settings for a client a user wires by hand, in their language.

For the clients the kit starts (``claude``, ``codex``, ``opencode``, ``aider``): what ``launch`` tells them, as the
lines to type in bash, PowerShell and cmd, or the block of their config file. For GUI apps (Open WebUI, Dify,
Cherry Studio) the fields of their settings page, each with its value; for Continue its ``config.yaml`` entry; for
the libraries (LangChain, LlamaIndex, the OpenAI Agents SDK) a short program. Every recipe has the base URL, where
the key is (never the key itself: the owner-only file it lives in, or for a team gateway the user's own key), the
model name, and the context window (which most of these clients cannot learn from the server).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bootstrap.agents import aider, claude_code, codex, opencode
from bootstrap.agents.base import output_cap
from bootstrap.agents.target import Target, served
from bootstrap.agents.toml_text import value_text
from bootstrap.core.console import join_names, label, t
from bootstrap.core.errors import ServerError, UsageError
from bootstrap.core.settings import API_KEY_ENV
from bootstrap.core.templating import render_template

DEFAULT_OUTPUT = 8192


def _labels() -> dict[str, str]:
    return {"bash": t("launch.r_bash"), "powershell": t("launch.r_powershell"), "cmd": t("launch.r_cmd")}


def _key_text(target: Target) -> str:
    if target.key_file is not None:
        return t("launch.r_key_file", path=target.key_file)
    return t("launch.r_key_own", env=API_KEY_ENV)


def _ctx_text(target: Target) -> str:
    return t("launch.r_ctx", ctx=target.ctx) if target.ctx else t("launch.r_ctx_unknown")


def _rows(*rows: tuple[str, object]) -> list[str]:
    return [f"  {label(key)}{value}" for key, value in rows]


def _env_block(variables: list[tuple[str, str]], key_var: str, key_file: Path | None, command: list[str]) -> str:
    return render_template("recipes/env.txt.j2", variables=variables, key_var=key_var,
                           key_file=None if key_file is None else str(key_file), command=command, labels=_labels())


def key_note(title: str, program: str, key_file: Path | None) -> str:
    """After ``--config`` of a client that reads the key from ``QWENKIT_API_KEY``: the lines that set it from
    ``key_file`` in each shell (quoted as the recipes are), or that the user sets it to their own key."""
    if key_file is None:
        return t("launch.key_note_own", title=title, env=API_KEY_ENV, program=program)
    return "\n".join([t("launch.key_note", title=title, env=API_KEY_ENV, program=program), "",
                      _env_block([], API_KEY_ENV, key_file, [program])])


def _env_recipe(title: str, env: dict[str, str], key_var: str, target: Target, command: list[str]) -> list[str]:
    """A client told by variables: each shell's lines (the key read from its file), then how to set one's own key."""
    variables = [(k, v) for k, v in env.items() if k != key_var]
    lines = [t("launch.r_head_env", title=title), "", _env_block(variables, key_var, target.key_file, command)]
    if target.key_file is None:
        lines.append(t("launch.r_key_var", var=key_var))
    return lines


def _claude(target: Target) -> list[str]:
    client = claude_code.CLIENT
    return [*_env_recipe(client.title, client.env(target), "ANTHROPIC_AUTH_TOKEN", target, ["claude"]),
            t("launch.r_or_launch", client="claude")]


def _codex(target: Target) -> list[str]:
    client = codex.CLIENT
    root = [(k, value_text(v)) for k, v in client.root_settings(target).items()]
    tables = [(f"model_providers.{codex.PROVIDER}", [(k, value_text(v)) for k, v in client.provider(target).items()]),
              ("analytics", [("enabled", "false")]), ("feedback", [("enabled", "false")])]
    path = "~/.codex/config.toml (Windows: %USERPROFILE%\\.codex\\config.toml)"
    lines = [t("launch.r_head_file", title=client.title, path=path), ""]
    lines.append(render_template("recipes/codex.toml.j2", root=root, tables=tables))
    lines.append(t("launch.r_then_env", var=API_KEY_ENV))
    lines.append(_env_block([], API_KEY_ENV, target.key_file, ["codex"]))
    lines.append(t("launch.r_or_launch", client="codex"))
    return lines


def _opencode(target: Target) -> list[str]:
    client = opencode.CLIENT
    path = "~/.config/opencode/opencode.json (Windows: %USERPROFILE%\\.config\\opencode\\opencode.json)"
    lines = [t("launch.r_head_file", title=client.title, path=path), ""]
    lines.append(json.dumps(client.settings(target, client.config_key(target)), ensure_ascii=False, indent=2))
    lines.append("")
    if target.key_file is None:
        lines.append(t("launch.r_key_var", var=API_KEY_ENV))
    lines.append(t("launch.r_or_launch", client="opencode"))
    return lines


def _aider(target: Target) -> list[str]:
    client = aider.CLIENT
    lines = _env_recipe(client.title, client.env(target), "AIDER_OPENAI_API_KEY", target,
                        ["aider", *client.flags(target)])
    if target.ctx:
        lines += [t("launch.r_aider_meta"), json.dumps(client.metadata(target), indent=2), ""]
    lines.append(t("launch.r_or_launch_once", client="aider"))
    return lines


def _docker_note(target: Target) -> list[str]:
    return [t("launch.r_docker", port=target.base_url.rsplit(":", 1)[-1])] if target.via == "install" else []


def _openwebui(target: Target) -> list[str]:
    return [t("launch.r_head_gui", title="Open WebUI", where=t("launch.r_openwebui_where")),
            *_rows(("launch.r_url", target.openai_url), ("launch.r_key", _key_text(target)),
                   ("launch.r_model", t("launch.r_model_listed", model=target.model)),
                   ("launch.r_context", _ctx_text(target))),
            t("launch.r_openwebui_ctx", ctx=target.ctx or "?"), *_docker_note(target)]


def _dify(target: Target) -> list[str]:
    cap = output_cap(target.ctx, DEFAULT_OUTPUT)
    return [t("launch.r_head_gui", title="Dify", where=t("launch.r_dify_where")),
            *_rows(("launch.r_dify_type", "LLM"), ("launch.r_dify_name", target.model),
                   ("launch.r_key", _key_text(target)), ("launch.r_dify_url", target.openai_url),
                   ("launch.r_dify_ctx", target.ctx or "?"), ("launch.r_dify_max", cap),
                   ("launch.r_dify_tools", '"Tool Call"'), ("launch.r_dify_stream", '"Support"')),
            *_docker_note(target)]


def _cherry(target: Target) -> list[str]:
    return [t("launch.r_head_gui", title="Cherry Studio", where=t("launch.r_cherry_where")),
            *_rows(("launch.r_cherry_type", "OpenAI"), ("launch.r_key", _key_text(target)),
                   ("launch.r_cherry_host", target.base_url), ("launch.r_model", target.model),
                   ("launch.r_context", _ctx_text(target))),
            t("launch.r_cherry_note")]


def _continue(target: Target) -> list[str]:
    text = render_template("recipes/continue.yaml.j2", base_url=target.openai_url, model=target.model,
                           ctx=target.ctx, max_tokens=output_cap(target.ctx, DEFAULT_OUTPUT))
    return [t("launch.r_head_file", title="Continue", path="~/.continue/config.yaml"), "", text,
            t("launch.r_continue_key", where=_key_text(target))]


def _library(template: str, title: str, package: str) -> Callable[[Target], list[str]]:
    def lines(target: Target) -> list[str]:
        code = render_template(template, base_url=target.openai_url, model=target.model, ctx=target.ctx,
                               max_tokens=output_cap(target.ctx, DEFAULT_OUTPUT),
                               key_file=None if target.key_file is None else str(target.key_file),
                               key_var=API_KEY_ENV)
        return [t("launch.r_head_lib", title=title, package=package), "", code,
                *_rows(("launch.r_context", _ctx_text(target)))]
    return lines


RECIPES: dict[str, Callable[[Target], list[str]]] = {
    "claude": _claude,
    "codex": _codex,
    "opencode": _opencode,
    "aider": _aider,
    "openwebui": _openwebui,
    "dify": _dify,
    "cherry-studio": _cherry,
    "continue": _continue,
    "langchain": _library("recipes/langchain.py.j2", "LangChain", "langchain-openai"),
    "llamaindex": _library("recipes/llamaindex.py.j2", "LlamaIndex", "llama-index-llms-openai-like"),
    "openai-agents": _library("recipes/openai-agents.py.j2", "OpenAI Agents SDK", "openai-agents"),
}


def recipe_name(name: str) -> str:
    """``name`` when there is a recipe for it; else exit 2 naming the ones there are."""
    if name not in RECIPES:
        raise UsageError(t("launch.err_print_name", name=name, names=join_names(RECIPES)), t("hint.usage"))
    return name


def render(name: str, target: Target) -> str:
    """The recipe for ``name`` and ``target`` (asked of the server when it answers: its context and model list;
    else from the install record)."""
    try:
        target = served(target)
    except (ServerError, UsageError):
        if not target.model:
            raise
    lines: list[Any] = RECIPES[recipe_name(name)](target)
    return "\n".join(str(line) for line in lines).rstrip("\n")
