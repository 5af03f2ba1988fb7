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
    (("add-user", "al ice"), 2, "not a usable user name"),
    (("add-user", "bob\u202eecila"), 2, "not a usable user name"),   # a bidirectional override would make logs lie
    (("add-user", "_bob"), 2, "not a usable user name"),
    (("add-member", "http://10.0.0.5:8080/v1", "--key-file", "-"), 2, "not a member URL"),
    (("add-member", "http://127.0.0.1:0", "--key-file", "-"), 2, "not a member URL"),
    (("add-member", "http://10.0.0.5:8080", "--key-file", "-", "--slots", "99999999999999999999"), 2,
     "99999999999999999999 slots is not a usable number (1 to 1024)"),
    (("add-member", "http://10.0.0.5:8080", "--key-file", "-", "--slots", "0"), 2, "is not a usable number"),
    (("rotate-key", "alice"), 2, "no user named alice"),
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


def test_a_user_name_in_any_script_is_a_user_and_team_users_lists_names_never_keys(tmp_path: Path) -> None:
    home = tmp_path / "home"
    added = team(home, "add-user", "张三")
    assert added.returncode == 0, added.stderr
    key = added.stdout.strip()
    assert team(home, "add-user", "José").returncode == 0
    again = team(home, "add-user", "JOSÉ")  # one user whatever the case: nginx's map keys ignore it
    assert again.returncode == 2 and "already has a user named José" in again.stderr
    assert "rotate-key José" in again.stderr
    listed = team(home, "users")
    assert listed.returncode == 0 and listed.stdout.splitlines() == ["José", "张三"]
    assert key not in listed.stdout + listed.stderr
    assert json.loads(team(home, "users", "--json").stdout) == {"users": ["José", "张三"]}
    record = json.loads((home / "team" / "team.json").read_text(encoding="utf-8"))
    assert record["users"]["张三"] == key


def test_rotate_key_replaces_the_key_and_prints_the_new_one_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old = team(home, "add-user", "alice").stdout.strip()
    rotated = team(home, "rotate-key", "alice")
    assert rotated.returncode == 0, rotated.stderr
    new = rotated.stdout.strip()
    assert new.startswith("sk-team-") and new != old
    assert "gave alice a new key" in rotated.stderr and "the old key no longer works" in rotated.stderr
    assert json.loads((home / "team" / "team.json").read_text())["users"] == {"alice": new}


def test_a_refused_member_records_nothing_so_the_next_change_works(tmp_path: Path) -> None:
    """Before: ``--slots 99999999999999999999`` was recorded (and a running gateway then failed every reload)."""
    home = tmp_path / "home"
    huge = team(home, "add-member", "http://10.0.0.5:8080", "--key-file", "-", "--slots", "99999999999999999999",
                stdin="member-key-0123456789\n")
    assert huge.returncode == 2 and "Traceback" not in huge.stderr
    assert not (home / "team" / "team.json").exists()
    assert team(home, "add-user", "alice").returncode == 0


def test_an_address_already_in_the_team_names_the_member_holding_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = team(home, "add-member", "http://10.0.0.6:8080", "--key-file", "-", "--slots", "2", "--name", "pc1",
                 stdin="member-key-0123456789\n")
    assert first.returncode == 0, first.stderr
    again = team(home, "add-member", "http://10.0.0.6:8080", "--key-file", "-", "--slots", "2", "--name", "pc9",
                 stdin="member-key-0123456789\n")
    assert again.returncode == 2
    assert "http://10.0.0.6:8080 is already in the team as member pc1" in again.stderr
    assert "pc9" not in again.stderr


def test_a_user_key_of_the_team_is_not_a_member_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = team(home, "add-user", "alice").stdout.strip()
    result = team(home, "add-member", "http://10.0.0.7:8080", "--key-file", "-", "--slots", "2", stdin=key + "\n")
    assert result.returncode == 2 and "is a team gateway, not a member install" in result.stderr
    assert json.loads((home / "team" / "team.json").read_text())["members"] == []


def test_the_gateways_own_address_is_not_a_member(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = team(home, "add-member", "http://127.0.0.1:8090", "--key-file", "-", "--slots", "2",
                  stdin="member-key-0123456789\n")
    assert result.returncode == 2 and "is a team gateway" in result.stderr
