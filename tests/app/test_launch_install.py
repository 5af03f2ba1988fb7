"""``qwenkit launch`` against an install made by the real CLI, where the client itself does not matter: what is
refused and why, what ``--config`` writes or refuses to, and how a ``--config`` that failed or was undone by hand
is taken back.

One install for the module: the test bed's engine and the catalog's tiny chat model (a llama with Q8_0 matrices:
its toy chat template describes no tools, so the install's tool-call proof records that it cannot take them),
trained for 32k and served with 16k of context (enough for each client's first request). A client that must start
is a stand-in at the client boundary (it records what it was given and exits 7); the real clients are in
tests/e2e/test_agent_clients.py.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.record.state import load_tools_check
from bootstrap.register.managers import FallbackManager
from bootstrap.verify.tools_check import tools_line
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import (
    MODEL_FILE,
    MODEL_REPO,
    InstallBed,
    catalog_text,
    serve_engine,
)
from tests.support.llama import free_port
from tests.support.mounts import read_only
from tests.support.tiny_gguf import write_model

SERVER_ARGS = ("-c", "16384", "-t", "2")
STAND_IN = '''import json, os, sys
with open(os.environ["STAND_IN_RECORD"], "w") as fh:
    json.dump({"argv": sys.argv[1:], "env": dict(os.environ)}, fh)
sys.exit(7)
'''


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path) -> Iterator[InstallBed]:
    root = tmp_path_factory.mktemp("launch-install")
    with LoopbackHub(root / "hub") as hub:
        model = write_model("llama", root / MODEL_FILE, dtype="q8_0", n_layer=12, n_ctx=32768)
        revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: model})
        bed = InstallBed(hub, Home(root / "Qwen 安装 home"), root / "catalog.toml", serve_engine(hub, engine_asset))
        bed.catalog.write_text(catalog_text(revision, server_args=SERVER_ARGS), encoding="utf-8")
        proc = bed.install("--no-venv", "--port", str(free_port()))
        assert proc.returncode == 0, proc.stderr[-3000:]
        try:
            yield bed
        finally:
            FallbackManager(bed.home).stop()


def launch(bed: InstallBed, user_home: Path, *argv: str, prefix: tuple[str, ...] = (), lang: str = "en",
           **extra: str) -> subprocess.CompletedProcess[str]:
    """``qwenkit launch ARGV`` as a user whose home folder is ``user_home`` (their clients' config files)."""
    user_home.mkdir(parents=True, exist_ok=True)
    env = bed.env(HOME=str(user_home), QWENKIT_LANG=lang, **extra)
    for name in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCODE_CONFIG", "QWENKIT_API_KEY"):
        if name not in extra:
            env.pop(name, None)
    return subprocess.run([*prefix, sys.executable, "-m", "bootstrap", "launch", *argv], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def error_and_hint(proc: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """The one error line and its hint (never a traceback)."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-2].startswith("error: ") and lines[-1].startswith("hint: "), proc.stderr
    return lines[-2], lines[-1]


def stand_in(folder: Path, name: str) -> dict[str, str]:
    """A program called ``name`` first on PATH that records its arguments and environment and exits 7."""
    program = folder / "bin" / name
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(f"#!{sys.executable}\n{STAND_IN}", encoding="utf-8")
    program.chmod(0o755)
    return {"PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}", "STAND_IN_RECORD": str(folder / "seen.json")}


def gateway_args(bed: InstallBed) -> tuple[str, ...]:
    """``--endpoint`` and ``--key-file`` naming this install as a team gateway would be named (no tool-call record
    of the install is consulted for an endpoint)."""
    state = json.loads((bed.home.root / "state.json").read_text(encoding="utf-8"))
    port = state["server"]["port"]
    return "--endpoint", f"http://127.0.0.1:{port}", "--key-file", str(bed.home.api_key_file)


MY_CODEX = '# mine\nmodel = "gpt-5.5"\n'


def codex_configured(bed: InstallBed, tmp_path: Path) -> tuple[Path, Path]:
    """A user whose Codex config holds ``MY_CODEX``, after ``launch codex --config`` for this install named as a
    gateway: the user's home folder and the config file."""
    user = tmp_path / "user"
    config = user / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(MY_CODEX, encoding="utf-8")
    assert launch(bed, user, "codex", "--config", "--yes", *gateway_args(bed)).returncode == 0
    return user, config


def test_launch_aider_config_is_refused_as_usage_not_a_bug(bed: InstallBed, tmp_path: Path) -> None:
    """Aider has no config file the kit edits: ``--config`` says so with the way that works (was exit 1
    "Internal error: NotImplementedError")."""
    proc = launch(bed, tmp_path / "user", "aider", "--config", "--yes")
    assert proc.returncode == 2, proc.stderr
    error, hint = error_and_hint(proc)
    assert error == "error: Aider has no config file qwenkit edits"
    assert "'qwenkit launch --print aider'" in hint


def test_launch_starts_aider_on_a_model_without_tools_and_refuses_the_tool_callers(bed: InstallBed,
                                                                                   tmp_path: Path) -> None:
    """Aider asks for its edits in text and sends no tools, so the install's failed tool-call proof does not stop
    it (was exit 2 "cannot take tool calls, so every agent request would fail"); Claude Code, which sends tools with
    every request, is still refused with the install's reason."""
    check = load_tools_check(bed.home, None)
    assert check is not None and not check.ok
    proc = launch(bed, tmp_path / "user", "aider", "--yes", "--", "--message", "hi", **stand_in(tmp_path, "aider"))
    assert proc.returncode == 7, proc.stderr
    seen = json.loads((tmp_path / "seen.json").read_text(encoding="utf-8"))
    assert seen["argv"][-2:] == ["--message", "hi"]
    refused = launch(bed, tmp_path / "user", "claude", "--yes", "--", "-p", "hi", **stand_in(tmp_path, "claude"))
    assert refused.returncode == 2, refused.stderr
    error, _ = error_and_hint(refused)
    assert "cannot take tool calls" in error and tools_line(check) in error


@pytest.mark.parametrize("client", ["claude", "codex", "opencode"])
def test_launch_config_is_refused_for_a_model_without_tools(bed: InstallBed, tmp_path: Path, client: str) -> None:
    """``--config`` for a client that sends tools, on a model that cannot take them: refused as ``launch`` refuses
    to start it, nothing written (was exit 0 and a config file that gives the client an error on every request)."""
    user = tmp_path / "user"
    proc = launch(bed, user, client, "--config", "--yes")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    error, _ = error_and_hint(proc)
    assert "cannot take tool calls" in error
    assert [p for p in user.rglob("*") if p.is_file()] == []


def test_launch_config_that_could_not_be_written_leaves_nothing_to_take_back(bed: InstallBed,
                                                                              tmp_path: Path) -> None:
    """``--config`` into a folder that cannot be written: one line naming the client's file (not a temporary file)
    and a hint for it (not the install's ``--home``), and no record of edits never made. Once the folder is
    writable, ``--config`` works and ``--restore`` gives the file back byte for byte (was: every later ``--config``
    and ``--restore`` exit 2 "changed where qwenkit wrote its settings", with no way out)."""
    user = tmp_path / "user"
    config = user / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    mine = '{\n  "theme": "opencode"\n}\n'
    config.write_text(mine, encoding="utf-8")
    proc = launch(bed, user, "opencode", "--config", "--yes", *gateway_args(bed), prefix=read_only(config.parent))
    assert proc.returncode == 3, proc.stderr
    error, hint = error_and_hint(proc)
    assert error == f"error: cannot write to {config}: Read-only file system", error
    assert "--home" not in hint and "'qwenkit launch --print opencode'" in hint
    assert config.read_text(encoding="utf-8") == mine
    written = launch(bed, user, "opencode", "--config", "--yes", *gateway_args(bed))
    assert written.returncode == 0, written.stderr
    assert '"provider"' in config.read_text(encoding="utf-8")
    restored = launch(bed, user, "opencode", "--restore")
    assert restored.returncode == 0, restored.stderr
    assert config.read_text(encoding="utf-8") == mine


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_launch_restore_forgets_settings_the_user_removed_by_hand(bed: InstallBed, tmp_path: Path,
                                                                  lang: str) -> None:
    """A ``--restore`` that meets a changed span names the client in its hint; once the user has removed the kit's
    settings by hand, as that hint says, ``--restore`` forgets them (was exit 2 for ever)."""
    user, config = codex_configured(bed, tmp_path)
    config.write_text(config.read_text(encoding="utf-8").replace('wire_api = "responses"', 'wire_api = "chat"'),
                      encoding="utf-8")
    changed = launch(bed, user, "codex", "--restore", lang=lang)
    assert changed.returncode == 2, changed.stderr
    _, hint = error_and_hint(changed) if lang == "en" else ("", changed.stderr.strip().splitlines()[-1])
    assert "'qwenkit launch codex --restore'" in hint
    config.write_text(MY_CODEX, encoding="utf-8")  # the user takes the kit's settings out by hand
    forgot = launch(bed, user, "codex", "--restore", lang=lang)
    assert forgot.returncode == 0, forgot.stderr
    assert str(config) in forgot.stdout
    assert config.read_text(encoding="utf-8") == MY_CODEX
    again = launch(bed, user, "codex", "--restore")
    assert again.returncode == 0 and "Nothing to take back" in again.stdout


def test_launch_codex_config_for_a_gateway_says_how_to_set_the_users_key(bed: InstallBed, tmp_path: Path) -> None:
    """``--config --endpoint URL --key-file FILE`` for Codex (which reads the key from ``QWENKIT_API_KEY``): the
    lines that set it read the user's key file, quoted for each shell (was ``cat '-'``, which reads the terminal)."""
    user = tmp_path / "user"
    key_file = tmp_path / "it's my key"
    key_file.write_text(bed.home.api_key_file.read_text(encoding="utf-8"), encoding="utf-8")
    endpoint = gateway_args(bed)[:2]
    proc = launch(bed, user, "codex", "--config", "--yes", *endpoint, "--key-file", str(key_file))
    assert proc.returncode == 0, proc.stderr
    assert "'-'" not in proc.stdout
    assert f'export QWENKIT_API_KEY="$(cat {shlex.quote(str(key_file))})"' in proc.stdout, proc.stdout
    assert launch(bed, user, "codex", "--restore").returncode == 0


def test_uninstall_takes_back_what_launch_config_wrote(make_bed: Callable[..., InstallBed], tmp_path: Path) -> None:
    """``qwenkit uninstall`` of a Qwen install after ``launch codex --config``: the user's Codex config is given back
    byte for byte (no client is left pointed at a server that is gone), and ``<home>/agents`` (the record of the
    edits) and ``<home>/chat-templates`` (the kit's template for the model) go with the home (was: the config kept
    the kit's provider, and the home stayed, "it still holds files that are not QwenClientKit's: agents,
    chat-templates")."""
    bed = make_bed(qwen=True, server_args=SERVER_ARGS)
    assert bed.install("--no-venv", "--port", str(free_port())).returncode == 0
    assert any(bed.home.chat_templates_dir.iterdir())
    user, config = codex_configured(bed, tmp_path)
    assert "[model_providers.qwenkit]" in config.read_text(encoding="utf-8")
    proc = bed.run("uninstall", "--yes", env=bed.env(HOME=str(user)))
    assert proc.returncode == 0, proc.stderr
    assert config.read_text(encoding="utf-8") == MY_CODEX
    assert str(config) in proc.stdout
    assert not bed.home.root.exists(), sorted(p.name for p in bed.home.root.iterdir())
