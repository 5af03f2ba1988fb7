"""The gateway's nginx configuration, rendered and checked by the real nginx (``nginx -t``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bootstrap.core.errors import ServerError
from bootstrap.core.home import Home
from bootstrap.team import config
from bootstrap.team.config import Member, Team
from bootstrap.team.gateway import Gateway, Nginx, find_nginx, render_config

pytestmark = [pytest.mark.usefixtures("english"),
              pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").is_file(),
                                 reason="needs nginx (scripts/setup_env.sh installs it)")]

TEAM = Team(host="127.0.0.1", port=0,
            members=[Member("pc-1", "http://10.0.0.5:8080", "member-one-key-0123456789", 4),
                     Member("pc-2", "https://pc-2.lan:8443", "member-two-key-0123456789", 1)],
            users={"bob": "sk-team-" + "b" * 40, "alice": "sk-team-" + "a" * 40})


def test_the_configuration_routes_by_slots_and_carries_each_members_key() -> None:
    text = render_config(TEAM, Nginx(Path("nginx"), "1.22.1", frozenset({"uwsgi"})), inner_ports=[41001, 41002],
                         inner_secret="s3cr3t")
    assert "least_conn;" in text
    assert "server 127.0.0.1:41001 weight=4 max_fails=2" in text and "server 127.0.0.1:41002 weight=1" in text
    assert 'proxy_set_header Authorization "Bearer member-one-key-0123456789";' in text
    assert "proxy_pass https://member_2;" in text and "server pc-2.lan:8443;" in text
    assert f'"Bearer {"sk-team-" + "a" * 40}" alice;' in text
    assert "proxy_buffering off;" in text and "non_idempotent" in text
    assert "uwsgi_temp_path" not in text and "scgi_temp_path tmp/scgi;" in text  # only the modules it has
    # No absolute path: the prefix (-p) carries the home, whatever characters it holds.
    assert not re.search(r"(^|\s)/", text.replace("location / {", "").replace("location = /health", ""), re.M)


# nginx resolves a member's host name when it loads the file (a name it cannot resolve is refused: use addresses
# or names the gateway PC resolves), so the tests that run nginx name members by address.
RESOLVED = [Member("pc-1", "http://10.0.0.5:8080", "member-one-key-0123456789", 4),
            Member("pc-2", "https://10.0.0.6:8443", "member-two-key-0123456789", 1)]


def test_nginx_accepts_it_from_a_home_with_awkward_characters(tmp_path: Path) -> None:
    home = Home(tmp_path / "团队 home & 100% $HOME 'q'")
    team = Team(host="127.0.0.1", port=0, members=RESOLVED, users=TEAM.users)
    from bootstrap.team.gateway import _free_port

    team.port = _free_port()
    gateway = Gateway(home, find_nginx())
    written = gateway.write_config(team)
    assert written == home.team_dir / "nginx.conf"
    assert str(home.root) not in written.read_text()
    assert not (home.team_dir / "nginx.conf.new").exists()


def test_a_configuration_nginx_refuses_is_exit_6_and_never_replaces_the_good_one(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    gateway = Gateway(home, find_nginx())
    good = Team(host="127.0.0.1", port=8090, members=RESOLVED, users=TEAM.users)
    written = gateway.write_config(good)
    before = written.read_text()
    bad = Team(host="192.0.2.77", port=8090, members=RESOLVED, users=TEAM.users)  # not this PC's address
    with pytest.raises(ServerError) as caught:
        gateway.write_config(bad)
    assert "nginx refuses" in caught.value.message
    assert written.read_text() == before


def test_no_nginx_is_exit_3_with_how_to_get_it(tmp_path: Path) -> None:
    from bootstrap.core.errors import ExitCode, UnsupportedMachine

    with pytest.raises(UnsupportedMachine) as caught:
        find_nginx(str(tmp_path / "no-nginx"))
    assert caught.value.exit_code == ExitCode.UNSUPPORTED
    assert "apt install nginx" in (caught.value.hint or "")


def test_config_module_keeps_keys_out_of_the_argv() -> None:
    """The members' and users' keys are in the 0600 file nginx reads, never on a command line (ps shows those)."""
    argv = Gateway(Home(Path("/h")), Nginx(Path("/usr/sbin/nginx"), "1.22.1", frozenset())).argv("-s", "reload")
    assert argv == ["/usr/sbin/nginx", "-p", "/h/team/", "-c", "nginx.conf", "-e", "logs/gateway-error.log", "-s",
                    "reload"]
    assert not any(config.USER_KEY_PREFIX in a for a in argv)
