"""``qwenkit team`` as a user runs it, where no member is needed: users, refusals and their exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("english")


def team(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QWENKIT_HOME": str(home), "QWENKIT_LANG": "en"}
    return subprocess.run([sys.executable, "-m", "bootstrap", "team", *args], capture_output=True, text=True,
                          env=env, input=stdin, timeout=60, check=False)


def test_a_user_key_is_printed_once_on_stdout_and_works_until_removed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    added = team(home, "add-user", "alice")
    assert added.returncode == 0, added.stderr
    key = added.stdout.strip()
    assert key.startswith("sk-team-") and "\n" not in key
    assert json.loads((home / "team" / "team.json").read_text())["users"] == {"alice": key}
    again = team(home, "add-user", "alice")
    assert again.returncode == 2 and "already has a user named alice" in again.stderr
    assert team(home, "remove-user", "alice").returncode == 0
    assert json.loads((home / "team" / "team.json").read_text())["users"] == {}
    gone = team(home, "remove-user", "alice")
    assert gone.returncode == 2 and "no user named alice" in gone.stderr


@pytest.mark.parametrize(("args", "code", "said"), [
    (("add-user", "al ice"), 2, "not a usable name"),
    (("add-member", "http://10.0.0.5:8080/v1", "--key-file", "-"), 2, "not a member URL"),
    (("remove-member", "pc-9"), 2, "no member named pc-9"),
    (("start",), 2, "no member yet"),
])
def test_bad_input_is_one_line_and_changes_nothing(tmp_path: Path, args: tuple[str, ...], code: int,
                                                   said: str) -> None:
    result = team(tmp_path / "home", *args, stdin="member-key-0123456789\n")
    assert result.returncode == code and said in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "home" / "team" / "team.json").exists()


def test_a_key_on_stdin_that_could_break_the_configuration_is_refused(tmp_path: Path) -> None:
    result = team(tmp_path / "home", "add-member", "http://10.0.0.5:8080", "--key-file", "-",
                  stdin='abc";0123456789012345\n')
    assert result.returncode == 2 and "not a usable API key" in result.stderr


def test_no_nginx_is_exit_3_and_the_record_stays_as_it_was(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert team(home, "add-member", "http://10.0.0.5:8080", "--key-file", "-", "--slots", "2",
                stdin="member-key-0123456789\n").returncode == 0
    assert team(home, "add-user", "alice").returncode == 0
    before = (home / "team" / "team.json").read_text()
    result = team(home, "start", "--nginx", str(tmp_path / "no-nginx"))
    assert result.returncode == 3 and "nginx is not installed here" in result.stderr
    assert (home / "team" / "team.json").read_text() == before
