"""The gateway's nginx configuration, rendered and checked by the real nginx (``nginx -t``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bootstrap.core.errors import ServerError
from bootstrap.core.home import Home
from bootstrap.team import config
from bootstrap.team.config import Member, ServedModel, Team
from bootstrap.team.gateway import Gateway, Nginx, find_nginx, render_config, render_route_script

pytestmark = [pytest.mark.usefixtures("english"),
              pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").is_file(),
                                 reason="needs nginx (scripts/setup_env.sh installs it)")]

GEMMA = (ServedModel("gemma-3-270m", 4),)
TEAM = Team(host="127.0.0.1", port=0,
            members=[Member("pc-1", "http://10.0.0.5:8080", "member-one-key-0123456789", 4, GEMMA, 41001),
                     Member("pc-2", "https://pc-2.lan:8443", "member-two-key-0123456789", 1, GEMMA, 41002)],
            users={"bob": "sk-team-" + "b" * 40, "alice": "sk-team-a.b+c/d=e~f_" + "a" * 30})
NJS = Path("/usr/lib/nginx/modules/ngx_http_js_module.so")


def test_the_configuration_routes_by_slots_and_carries_each_members_key() -> None:
    text = render_config(TEAM, Nginx(Path("nginx"), "1.22.1", frozenset({"uwsgi"})), inner_secret="s3cr3t")
    assert "least_conn;" in text
    assert "server 127.0.0.1:41001 weight=4 max_fails=2" in text and "server 127.0.0.1:41002 weight=1" in text
    assert 'proxy_set_header Authorization "Bearer member-one-key-0123456789";' in text
    assert "proxy_pass https://member_2;" in text and "server pc-2.lan:8443;" in text
    # A user's key is an anchored, case-sensitive pattern with every character but letters, digits and _ escaped.
    assert '"~^Bearer sk\\-team\\-a\\.b\\+c\\/d\\=e\\~f_' + "a" * 30 + '$" alice;' in text
    assert "js_" not in text and "load_module" not in text  # one model everywhere: no routing script needed
    assert "proxy_buffering off;" in text and "non_idempotent" in text
    assert "uwsgi_temp_path" not in text and "scgi_temp_path tmp/scgi;" in text  # only the modules it has
    # No absolute path: the prefix (-p) carries the home, whatever characters it holds.
    assert not re.search(r"(^|\s)/", "\n".join(line for line in text.splitlines()
                                             if not line.strip().startswith("location ")), re.M)


# nginx resolves a member's host name when it loads the file (a name it cannot resolve is refused: use addresses
# or names the gateway PC resolves), so the tests that run nginx name members by address.
RESOLVED = [Member("pc-1", "http://10.0.0.5:8080", "member-one-key-0123456789", 4, GEMMA),
            Member("pc-2", "https://10.0.0.6:8443", "member-two-key-0123456789", 1, GEMMA)]


def test_a_user_name_in_any_script_reaches_nginx_percent_encoded() -> None:
    team = Team(host="127.0.0.1", port=0, members=TEAM.members, users={"张三": "sk-team-" + "z" * 40})
    text = render_config(team, Nginx(Path("nginx"), "1.22.1", frozenset()), inner_secret="s3cr3t")
    assert '"~^Bearer sk\\-team\\-' + "z" * 40 + '$" %E5%BC%A0%E4%B8%89;' in text
    assert text.isascii()


def test_members_with_different_models_get_an_upstream_per_model_and_a_script_that_knows_them() -> None:
    chat, embed = ServedModel("qwen3.6-35b-a3b", 2), ServedModel("qwen3-embedding-0.6b", 4, ("embed",))
    team = Team(host="127.0.0.1", port=0, users=TEAM.users,
                members=[Member("pc-1", "http://10.0.0.5:8080", "member-one-key-0123456789", 2, (chat,), 41001),
                         Member("pc-2", "http://10.0.0.6:8080", "member-two-key-0123456789", 6, (chat, embed), 41002)])
    text = render_config(team, Nginx(Path("nginx"), "1.22.1", frozenset(), NJS), inner_secret="s3cr3t",
                         script="team-route-0.js")
    assert f"load_module {NJS};" in text and "js_import team from team-route-0.js;" in text
    model_1 = text.split("upstream team_model_1 {")[1].split("}")[0]
    assert "127.0.0.1:41001 weight=2" in model_1 and "127.0.0.1:41002 weight=2" in model_1
    model_2 = text.split("upstream team_model_2 {")[1].split("}")[0]
    assert "41002 weight=4" in model_2 and "41001" not in model_2
    assert "qwen3" not in text  # model names reach only the script
    script = render_route_script(team)
    assert 'var ROUTES = {"embed": 3, "qwen3-embedding-0.6b": 2, "qwen3.6-35b-a3b": 1};' in script
    assert 'var DEFAULT = "qwen3.6-35b-a3b";' in script  # served by both members


def test_a_model_name_of_any_text_reaches_the_script_as_json_only() -> None:
    hostile = "x\u2028');r.return(200,'owned');//\"$HOME"
    team = Team(host="127.0.0.1", port=0, users=TEAM.users,
                members=[Member("pc-1", "http://10.0.0.5:8080", "member-one-key-0123456789", 1,
                                (ServedModel(hostile, 1),), 41001)])
    script = render_route_script(team)
    assert script.isascii() and hostile not in script
    line = next(line for line in script.splitlines() if line.startswith("var ROUTES"))
    import json

    assert json.loads(line.removeprefix("var ROUTES = ").rstrip(";")) == {hostile: 1}


def test_nginx_accepts_it_from_a_home_with_awkward_characters(tmp_path: Path) -> None:
    home = Home(tmp_path / "团队 home & 100% $HOME 'q'")
    team = Team(host="127.0.0.1", port=0, members=RESOLVED, users=TEAM.users)
    from bootstrap.team.gateway import _free_port

    team.port = _free_port()
    gateway = Gateway(home, find_nginx())
    written = gateway.write_config(team)
    assert [m.listener for m in written.members] == [m.listener for m in written.members if m.listener > 0]
    assert len({m.listener for m in written.members} | {team.port}) == 3  # its own, none the gateway's
    text = (home.team_dir / "nginx.conf").read_text()
    assert str(home.root) not in text
    assert not (home.team_dir / "nginx.conf.new").exists()


def test_a_configuration_nginx_refuses_is_exit_6_and_never_replaces_the_good_one(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    gateway = Gateway(home, find_nginx())
    good = Team(host="127.0.0.1", port=8090, members=RESOLVED, users=TEAM.users)
    gateway.write_config(good)
    written = home.team_dir / "nginx.conf"
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


def test_a_team_left_with_no_member_or_no_user_is_still_a_configuration_nginx_takes(tmp_path: Path) -> None:
    """The last user removed from a running gateway: it refuses everyone (every key is 401); the last member
    removed: it answers 503. Both are reloads nginx must accept (before, the reload was skipped and the old keys
    kept working)."""
    from bootstrap.team.gateway import _free_port

    gateway = Gateway(Home(tmp_path / "home"), find_nginx())
    nobody = gateway.write_config(Team(host="127.0.0.1", port=_free_port(), members=RESOLVED, users={}))
    text = (tmp_path / "home" / "team" / "nginx.conf").read_text()
    assert "Bearer" not in text.split("map $http_authorization")[1].split("}")[0]
    assert len(nobody.members) == 2
    gateway.write_config(Team(host="127.0.0.1", port=_free_port(), members=[], users=TEAM.users))
    text = (tmp_path / "home" / "team" / "nginx.conf").read_text()
    assert "upstream team_" not in text and "the team has no member" in text
