"""``qwenkit launch`` as a user runs it (a fresh interpreter), where no install or client is needed: the missing
client's message, the recipes of ``--print`` in English and Chinese, bad usage, and ARGS after ``--``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.agents.recipes import RECIPES
from bootstrap.app import cli
from tests.app.test_zh_output import leaks
from tests.support.llama import free_port

KEY = "sk-team-0123456789abcdefghijklmnopqrstuvwxyz"


def run(*args: str, lang: str = "en", path: str = "", home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    env.update({"QWENKIT_LANG": lang, "QWENKIT_HOME": str(home), "PATH": path or os.defpath, **extra})
    return subprocess.run([sys.executable, "-m", "bootstrap", "launch", *args], capture_output=True, text=True,
                          env=env, timeout=120, stdin=subprocess.DEVNULL)


def one_error(proc: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    return lines[-2], lines[-1]


@pytest.mark.parametrize(("lang", "client", "error", "hint"), [
    ("en", "claude", "error: Claude Code is not installed here ('claude' is not on PATH)",
     "hint: Install it with Node.js: 'npm install -g @anthropic-ai/claude-code'"),
    ("zh", "claude", "错误：本机未安装 Claude Code（PATH 中找不到 'claude'）",
     "提示：请用 Node.js 安装：'npm install -g @anthropic-ai/claude-code'"),
    # a venv of its own: 'pip install --user' is refused by Debian 12's and Ubuntu 24.04's Python (PEP 668)
    ("en", "aider", "error: Aider is not installed here ('aider' is not on PATH)",
     "hint: Install it into a venv of its own: 'pipx install aider-chat', or with Python newer than 3.12 "
     "'uv tool install --python 3.12 aider-chat'"),
    ("zh", "aider", "错误：本机未安装 Aider（PATH 中找不到 'aider'）",
     "提示：请把它装进独立的虚拟环境：'pipx install aider-chat'；Python 高于 3.12 时用 "
     "'uv tool install --python 3.12 aider-chat'"),
])
def test_launch_missing_client_says_how_to_get_it(lang: str, client: str, error: str, hint: str,
                                                   tmp_path: Path) -> None:
    proc = run(client, "--yes", "--", "-p", "hi", lang=lang, path=str(tmp_path), home=tmp_path / "home")
    assert proc.returncode == 3
    first, second = one_error(proc)
    assert first == error and second.startswith(hint)


@pytest.mark.parametrize("argv", [["cursor"], ["claude", "--config", "--restore"], ["claude", "--print", "--config"],
                                  ["--print", "claude", "--key-file", "k"], ["--print", "notepad"],
                                  ["claude", "--config", "--", "-p", "x"]])
def test_launch_bad_usage_is_one_line_and_exit_2(argv: list[str], tmp_path: Path) -> None:
    proc = run(*argv, home=tmp_path / "home")
    assert proc.returncode == 2, proc.stderr
    one_error(proc)


@pytest.mark.parametrize(("argv", "listed"), [(["cursor"], "（可启动：claude、codex、opencode、aider）"),
                                             (["--print", "notepad"], "（已知：claude、codex、opencode、aider、")])
def test_launch_lists_names_with_the_chinese_enumeration_comma(argv: list[str], listed: str, tmp_path: Path) -> None:
    """Names listed inside Chinese prose are separated by 、 (was the half-width ", ")."""
    proc = run(*argv, lang="zh", home=tmp_path / "home")
    assert proc.returncode == 2, proc.stderr
    assert listed in one_error(proc)[0]


def test_launch_restore_with_nothing_written(tmp_path: Path) -> None:
    proc = run("codex", "--restore", home=tmp_path / "home")
    assert proc.returncode == 0 and "Nothing to take back" in proc.stdout


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_launch_print_recipes(name: str, lang: str, tmp_path: Path) -> None:
    """Each recipe for a team gateway (nothing answers: the recipe comes from what the user gave): the gateway's
    URL, the model, the key's place (never the key), and in Chinese no English prose."""
    url = f"http://127.0.0.1:{free_port()}"
    proc = run("--print", name, "--endpoint", url, "--model", "qwen-test", lang=lang, home=tmp_path / "home",
               QWENKIT_API_KEY=KEY)
    assert proc.returncode == 0, proc.stderr
    assert KEY not in proc.stdout + proc.stderr
    assert url in proc.stdout and "qwen-test" in proc.stdout
    if name in ("langchain", "llamaindex", "openai-agents"):  # a program to paste: nothing it does not use
        code = proc.stdout.split("\n\n", 1)[1]
        assert ("import os" in code) == ("os.environ" in code.replace("import os", ""))
        assert ("from pathlib import Path" in code) == ("Path(" in code)
        # the window labelled (was a bare "65536 tokens" after the program)
        assert proc.stdout.splitlines()[-1].strip() in ("Context: not known now (the server did not say); ask "
                                                        "'qwenkit status'", "上下文：暂不可知（服务器未提供）；可用 "
                                                        "'qwenkit status' 查看")
    assert "QWENKIT_API_KEY" in proc.stdout or "OPENAI_API_KEY" in proc.stdout or "ANTHROPIC_AUTH_TOKEN" in \
        proc.stdout or "your own key" in proc.stdout or "你的密钥" in proc.stdout or "团队管理员" in proc.stdout
    if lang == "zh":
        prose = "\n".join(line for line in proc.stdout.splitlines() if any("\u4e00" <= c <= "\u9fff" for c in line))
        assert prose and leaks(prose, literals=("Open WebUI", "Cherry Studio", "LangChain", "LlamaIndex",
                                                "OpenAI Agents SDK", "Claude Code", "Codex CLI", "OpenCode",
                                                "Aider", "Dify", "Continue", "OpenAI-API-compatible",
                                                "bash / zsh", "cmd")) == []


def test_launch_passes_everything_after_the_double_dash() -> None:
    """What follows the first ``--`` is the client's, even words that are launch's own options."""
    argv, passed = cli.client_args(["launch", "claude", "--yes", "--", "-p", "--model", "x", "--", "--debug"])
    assert argv == ["launch", "claude", "--yes"] and passed == ["-p", "--model", "x", "--", "--debug"]
    assert cli.client_args(["install", "--", "x"]) == (["install", "--", "x"], [])
