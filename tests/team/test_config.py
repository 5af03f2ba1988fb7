"""The team record: what reaches nginx is checked against a narrow alphabet, and the keys stay owner-only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.home import Home
from bootstrap.team import config
from bootstrap.team.config import Member, Team

pytestmark = pytest.mark.usefixtures("english")


@pytest.mark.parametrize(("text", "url"), [
    ("http://192.168.1.20:8080", "http://192.168.1.20:8080"),
    ("http://pc-2.office.lan:8080/", "http://pc-2.office.lan:8080"),
    ("  https://10.0.0.5:443  ", "https://10.0.0.5:443"),
])
def test_a_member_url_is_scheme_host_and_port(text: str, url: str) -> None:
    assert config.member_url(text) == url


@pytest.mark.parametrize("text", [
    "192.168.1.20:8080",                 # no scheme
    "http://192.168.1.20",               # no port: the install report always names one
    "http://192.168.1.20:8080/v1",       # a path: the gateway adds its own
    "http://user:pw@10.0.0.5:8080",      # credentials in the URL
    "ftp://10.0.0.5:21",
    "http://10.0.0.5:99999",
    'http://pc";evil:8080',              # a quote or ";" would end an nginx directive
    "http://$host:8080",                 # "$" is an nginx variable
    "http://10.0.0.5:8080?x=1",
])
def test_anything_else_is_refused_with_exit_2(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        config.member_url(text)
    assert caught.value.exit_code == ExitCode.USAGE
    assert "not a member URL" in caught.value.message


@pytest.mark.parametrize("key", ["short", "has space in the key 0123", 'quote"0123456789abcdef',
                                 "dollar$0123456789abcd", "semi;colon0123456789abc", "brace{0123456789abcdef}"])
def test_a_key_nginx_could_misread_is_refused(key: str) -> None:
    with pytest.raises(UsageError):
        config.check_key(key, "test")


def test_a_generated_user_key_passes_its_own_check_and_differs_each_time() -> None:
    keys = {config.new_user_key() for _ in range(20)}
    assert len(keys) == 20
    assert all(config.check_key(k, "new") == k and k.startswith("sk-team-") for k in keys)


def test_the_record_round_trips_owner_only(tmp_path: Path) -> None:
    home = Home(tmp_path / "家 with space")
    team = Team(host="10.0.0.4", port=8091,
                members=[Member("pc-1", "http://10.0.0.5:8080", "member-key-0123456789", 4)],
                users={"alice": config.new_user_key()})
    config.save(home, team)
    assert config.load(home) == team
    if os.name != "nt":
        assert stat.S_IMODE(config.record_file(home).stat().st_mode) == 0o600
        assert stat.S_IMODE(home.team_dir.stat().st_mode) == 0o700
    assert config.load(Home(tmp_path / "none")) == Team()  # no record yet: an empty team


@pytest.mark.parametrize("text", ["{not json", '{"host": "10.0.0.4"}',
                                  '{"host": "a;b", "port": 1, "members": [], "users": {}}'])
def test_a_damaged_record_is_an_error_never_a_silent_reset(tmp_path: Path, text: str) -> None:
    home = Home(tmp_path)
    home.team_dir.mkdir()
    config.record_file(home).write_text(text)
    with pytest.raises(UsageError) as caught:
        config.load(home)
    assert "damaged" in caught.value.message
    assert config.record_file(home).read_text() == text
