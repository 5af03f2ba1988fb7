"""What each client is told (bootstrap/agents/<client>.py, launch.child_env): the key only in its environment (or
as the key file's path), never on its command line; the model for every name it may ask; the real context window;
its non-essential traffic off; a local server never reached through the user's proxy; the user's own output cap
kept; and ``--config``'s file for Claude Code (the one client the e2e tests do not run after ``--config``)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from bootstrap.agents import written
from bootstrap.agents.launch import CLIENTS, child_env
from bootstrap.agents.target import Target
from bootstrap.core.home import Home

KEY = "sk-qwenkit-0123456789abcdefghijklmnopqrstuvwxyz"


def _target(tmp_path: Path, ctx: int | None = 32768, key_file: bool = True) -> Target:
    return Target("http://127.0.0.1:8080", "tiny-qwen", ctx, KEY,
                  tmp_path / "secrets" / "api-key" if key_file else None, "install" if key_file else "endpoint",
                  ("tiny-qwen",))


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_launch_never_puts_the_key_on_the_command_line(name: str, tmp_path: Path) -> None:
    client = CLIENTS[name]
    for target in (_target(tmp_path), _target(tmp_path, key_file=False), _target(tmp_path, ctx=None)):
        assert not any(KEY in word for word in client.args(target, tmp_path)), name


def test_launch_tells_claude_code_the_model_the_window_and_no_traffic(tmp_path: Path) -> None:
    env = child_env(CLIENTS["claude"], _target(tmp_path), {"ANTHROPIC_API_KEY": "sk-ant-theirs", "PATH": "/bin",
                                                           "NO_PROXY": "intranet.example"})
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8080" and env["ANTHROPIC_AUTH_TOKEN"] == KEY
    assert "ANTHROPIC_API_KEY" not in env  # both set is a conflict Claude Code warns about
    for name in ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                 "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"):
        assert env[name] == "tiny-qwen", name
    assert env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "32768"
    assert env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "8192"  # a quarter of the window, not its 32,000
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["NO_PROXY"] == "intranet.example,127.0.0.1,localhost,::1" and env["no_proxy"]
    mine = child_env(CLIENTS["claude"], _target(tmp_path), {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "64"})
    assert mine["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "64"  # the user's own cap stays theirs


def test_launch_tells_codex_its_provider_on_the_command_line_and_the_key_by_name(tmp_path: Path) -> None:
    client = CLIENTS["codex"]
    target = _target(tmp_path)
    args = client.args(target, tmp_path)
    settings = dict(arg.split("=", 1) for arg in args[1::2])
    assert args[::2] == ["-c"] * len(settings)
    assert settings["model_provider"] == '"qwenkit"' and settings["model"] == '"tiny-qwen"'
    assert settings["model_context_window"] == "32768"
    assert 'env_key = "QWENKIT_API_KEY"' in settings["model_providers.qwenkit"]
    assert 'base_url = "http://127.0.0.1:8080/v1"' in settings["model_providers.qwenkit"]
    assert settings["analytics.enabled"] == settings["feedback.enabled"] == "false"
    assert settings["check_for_update_on_startup"] == "false" and settings["web_search"] == '"disabled"'
    assert child_env(client, target, {})["QWENKIT_API_KEY"] == KEY


def test_launch_gives_opencode_the_key_file_not_the_key(tmp_path: Path) -> None:
    env = child_env(CLIENTS["opencode"], _target(tmp_path), {})
    config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    provider = config["provider"]["qwenkit"]
    assert provider["options"] == {"baseURL": "http://127.0.0.1:8080/v1",
                                   "apiKey": f"{{file:{tmp_path / 'secrets' / 'api-key'}}}"}
    assert KEY not in json.dumps(env)
    assert provider["models"]["tiny-qwen"]["limit"] == {"context": 32768, "output": 8192}
    assert config["model"] == "qwenkit/tiny-qwen" and config["autoupdate"] is False
    assert all(env[name] == "1" for name in ("OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH",
                                             "OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_DEFAULT_PLUGINS"))


def test_launch_tells_aider_the_window_in_a_metadata_file(tmp_path: Path) -> None:
    client = CLIENTS["aider"]
    args = client.args(_target(tmp_path), tmp_path)
    meta = json.loads(Path(args[args.index("--model-metadata-file") + 1]).read_text())
    assert meta["openai/tiny-qwen"]["max_input_tokens"] == 32768
    assert args[args.index("--model") + 1] == "openai/tiny-qwen" and "--no-check-update" in args
    assert "--no-analytics" in args and "--analytics-disable" not in args  # for this run, not for good
    assert args[args.index("--set-env") + 1] == "OPENAI_BASE_URL=http://127.0.0.1:8080/v1"  # after its .env files
    env = child_env(client, _target(tmp_path), {"OPENAI_BASE_URL": "https://api.openai.com/v1"})
    assert env["AIDER_OPENAI_API_BASE"] == "http://127.0.0.1:8080/v1" and "OPENAI_BASE_URL" not in env
    assert env["AIDER_OPENAI_API_KEY"] == KEY


USER_SETTINGS = '{\n  "theme": "dark",\n  "env": {\n    "FOO": "bar"\n  },\n  "permissions": {"allow": []}\n}\n'


def test_launch_config_claude_code_settings_owner_only_then_restored_byte_for_byte(tmp_path: Path) -> None:
    """Claude Code's settings.json: the kit's variables in its ``env`` (the key among them, so the file becomes
    0600), the user's settings untouched; ``--restore`` gives back the same bytes and mode."""
    home = Home(tmp_path / "home")
    client = CLIENTS["claude"]
    path = client.config_path({}, tmp_path / "user")
    path.parent.mkdir(parents=True)
    path.write_text(USER_SETTINGS, encoding="utf-8")
    path.chmod(0o644)
    before = written.read_config(path, "claude")
    plan = client.config_plan(before, _target(tmp_path), path)
    written.write(home, client.name, plan, before)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["env"]["ANTHROPIC_AUTH_TOKEN"] == KEY and doc["env"]["FOO"] == "bar" and doc["theme"] == "dark"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    record = written.record_file(home)
    assert stat.S_IMODE(record.stat().st_mode) == 0o600  # it holds the edits, the key among them
    assert written.restore(home, client.name) is not None
    assert path.read_bytes() == USER_SETTINGS.encode() and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert written.recorded(home, client.name) is None


def test_launch_config_creates_and_removes_what_was_not_there(tmp_path: Path) -> None:
    """No settings file and no folder before: both are made (0700 / 0600) and both are gone after the restore."""
    home = Home(tmp_path / "home")
    client = CLIENTS["claude"]
    path = client.config_path({"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg" / "claude")}, tmp_path / "user")
    plan = client.config_plan(None, _target(tmp_path), path)
    written.write(home, client.name, plan, None)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text())["env"]["ANTHROPIC_MODEL"] == "tiny-qwen"
    written.restore(home, client.name)
    assert not (tmp_path / "cfg").exists()


def test_launch_config_follows_a_symlinked_dotfile(tmp_path: Path) -> None:
    """A dotfile manager's link stays a link: the file it points to is edited, then restored."""
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text(USER_SETTINGS)
    link = tmp_path / "user" / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    os.symlink(real, link)
    path = written.real_path(link)
    home = Home(tmp_path / "home")
    before = written.read_config(path, "claude")
    written.write(home, "claude", CLIENTS["claude"].config_plan(before, _target(tmp_path), path), before)
    assert link.is_symlink() and "ANTHROPIC_BASE_URL" in real.read_text()
    written.restore(home, "claude")
    assert link.is_symlink() and real.read_text() == USER_SETTINGS
