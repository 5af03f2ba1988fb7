"""Every message of the team room reads as Chinese in a Chinese session: no English prose left, full-width
punctuation inside Chinese (the checker of tests/app/test_zh_output.py), and the new commands run in Chinese."""

from __future__ import annotations

import os
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootstrap.core.console import set_language, t
from bootstrap.core.messages.team import MESSAGES
from tests.app.test_zh_output import leaks


@pytest.fixture
def chinese() -> Iterator[None]:
    set_language("zh")
    yield
    set_language(None)


def _fields(text: str) -> dict[str, str]:
    return {name: "1" for _, name, _, _ in string.Formatter().parse(text) if name}


# Names, not prose: the programs (nginx, its njs module, apt, brew) and the example user.
NAMES = ("libnginx-mod-http-js", "nginx", "njs", "apt", "brew", "alice")


@pytest.mark.usefixtures("chinese")
def test_every_team_message_is_chinese_prose() -> None:
    keys = [k for k in MESSAGES if k.startswith(("team.", "cmd.team", "arg.team"))]
    said = "\n".join(t(k, **_fields(MESSAGES[k]["zh"])) for k in keys)
    assert leaks(said, literals=NAMES) == []


def test_the_new_team_commands_speak_chinese(tmp_path: Path) -> None:
    env = {**os.environ, "QWENKIT_HOME": str(tmp_path / "home"), "QWENKIT_LANG": "zh"}

    def team(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bootstrap", "team", *args], capture_output=True, text=True,
                              env=env, stdin=subprocess.DEVNULL, timeout=60, check=False)

    runs = [team("add-user", "张三"), team("add-user", "张三"), team("rotate-key", "张三"), team("users"),
            team("add-user", "a b"), team("add-member", "http://127.0.0.1:0", "--key-file", "-"),
            team("remove-user", "李四"), team("remove-user", "张三"), team("rotate-key", "--help"), team("--help")]
    assert [r.returncode for r in runs] == [0, 2, 0, 0, 2, 2, 2, 0, 0, 0]
    assert runs[3].stdout == "张三\n"
    text = "\n".join(r.stderr for r in runs) + runs[-2].stdout + runs[-1].stdout
    assert "用户名" in text and leaks(text, literals=(str(tmp_path), "张三", "李四", *NAMES)) == []
