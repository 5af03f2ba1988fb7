"""Finding a client on PATH (bootstrap/agents/programs.py), npm's Windows shims included: a ``.cmd`` shim is never
run through cmd.exe; what it would run (the package's ``.exe``, or node and the package's ``.js``) is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootstrap.agents.launch import CLIENTS, find_client
from bootstrap.agents.programs import find_program, on_path
from bootstrap.core import console
from bootstrap.core.errors import UnsupportedMachine


def _exe(path: Path, text: str = "#!/bin/sh\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_launch_finds_the_first_runnable_on_path(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    (first).mkdir()
    (first / "claude").write_text("not executable")
    found = _exe(second / "claude")
    assert on_path("claude", f"{first}:{second}", system="Linux") == found
    program = find_program(["claude"], "@anthropic-ai/claude-code", "bin/claude.exe",
                           search_path=f"{first}:{second}", system="Linux")
    assert program is not None and program.argv == (str(found),)


def test_launch_resolves_npm_windows_shims_to_what_they_run(tmp_path: Path) -> None:
    """npm's global prefix on Windows: ``claude.cmd`` beside ``node_modules\\@anthropic-ai\\claude-code\\bin\\
    claude.exe`` (a native binary) and ``codex.cmd`` beside ``node_modules\\@openai\\codex\\bin\\codex.js`` (run by
    node). PATHEXT order finds the ``.cmd``; the kit starts the ``.exe``, or node with the ``.js``."""
    prefix, nodejs = tmp_path / "npm", tmp_path / "nodejs"
    _exe(prefix / "claude.cmd", "@ECHO off\r\n")
    _exe(prefix / "claude", "#!/bin/sh\n")  # the sh script npm also writes: not a Windows program
    exe = _exe(prefix / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe", "MZ")
    _exe(prefix / "codex.cmd", "@ECHO off\r\n")
    script = _exe(prefix / "node_modules" / "@openai" / "codex" / "bin" / "codex.js", "#!/usr/bin/env node\n")
    node = _exe(nodejs / "node.exe", "MZ")
    search = f"{prefix};{nodejs}"
    claude = find_program(["claude"], "@anthropic-ai/claude-code", "bin/claude.exe", search_path=search,
                          system="Windows", pathext=".COM;.EXE;.BAT;.CMD")
    assert claude is not None and claude.argv == (str(exe),)
    codex = find_program(["codex"], "@openai/codex", "bin/codex.js", search_path=search, system="Windows",
                         pathext=".COM;.EXE;.BAT;.CMD")
    assert codex is not None and codex.argv == (str(node), str(script))


def test_launch_never_runs_a_shim_it_cannot_resolve(tmp_path: Path) -> None:
    """A ``.cmd`` whose package is not beside it (a hand-written wrapper) is not started through cmd.exe."""
    _exe(tmp_path / "opencode.cmd", "@ECHO off\r\n")
    assert find_program(["opencode"], "opencode-ai", "bin/opencode.exe", search_path=str(tmp_path),
                        system="Windows", pathext=".EXE;.CMD") is None


@pytest.mark.parametrize(("lang", "words"), [("en", ("is not installed here", "npm install -g @openai/codex")),
                                             ("zh", ("本机未安装", "npm install -g @openai/codex"))])
def test_launch_names_the_missing_client_and_the_line_that_installs_it(lang: str, words: tuple[str, ...],
                                                                        tmp_path: Path) -> None:
    console.set_language(lang)
    try:
        with pytest.raises(UnsupportedMachine) as caught:
            find_client(CLIENTS["codex"], {"PATH": str(tmp_path)}, system="Linux")
    finally:
        console.set_language(None)
    assert words[0] in caught.value.message and words[1] in (caught.value.hint or "")
    assert "docs/agents.md" in (caught.value.hint or "")


def test_launch_pip_clients_get_a_venv_of_their_own() -> None:
    """pipx (or uv, which fetches the Python aider-chat allows): never ``pip install --user``, which the system
    Python of Debian 12 and Ubuntu 23.04+ refuses (PEP 668)."""
    for system in ("Windows", "Linux", "Darwin"):
        assert CLIENTS["aider"].install_lines(system) == ["pipx install aider-chat",
                                                          "uv tool install --python 3.12 aider-chat"]


def test_launch_print_quotes_values_for_each_shell(tmp_path: Path) -> None:
    """The variables block ``--print`` gives for bash, PowerShell and cmd: a value with a quote, a space or ``%``
    reaches each shell as one literal word (sh: shlex; PowerShell: a single-quoted string, ``'`` doubled; cmd: the
    ``set "NAME=value"`` form, ``%`` doubled), the key read from its file in each shell, and PowerShell calls the
    program with ``&`` (a quoted string alone is only a value there)."""
    from bootstrap.core.templating import render_template

    key_file = tmp_path / "Qwen 安装" / "secrets" / "api-key"
    text = render_template("recipes/env.txt.j2", variables=[("MODEL", "it's 100% ok")], key_var="TOKEN",
                           key_file=str(key_file), command=["claude", "-p", "a b"],
                           labels={"bash": "bash", "powershell": "PowerShell", "cmd": "cmd"})
    assert "export MODEL='it'\"'\"'s 100% ok'" in text
    assert f"export TOKEN=\"$(cat '{key_file}')\"" in text
    assert "claude -p 'a b'" in text
    assert "$env:MODEL = 'it''s 100% ok'" in text
    assert f"$env:TOKEN = (Get-Content -Raw '{key_file}').Trim()" in text
    assert "& 'claude' '-p' 'a b'" in text
    assert 'set "MODEL=it\'s 100%% ok"' in text
    assert f'set /p TOKEN=<"{key_file}"' in text
    assert '"claude" "-p" "a b"' in text
