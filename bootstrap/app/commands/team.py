"""``qwenkit team …``: one OpenAI-compatible endpoint for a team, over several member installs (docs/team-endpoint.md).

    qwenkit team add-member URL --key-file FILE|- [--name NAME] [--slots N]
    qwenkit team remove-member NAME|URL
    qwenkit team add-user NAME          (prints the new user's key, once)
    qwenkit team remove-user NAME
    qwenkit team start [--host H] [--port P] [--nginx PATH]
    qwenkit team stop
    qwenkit team status [--json]

Glue only: the record (``team.config``), the members' own answers (``team.members``) and nginx (``team.gateway``).
A change while the gateway runs is applied at once with a reload. The record and the configuration hold every key
of the team and are owner-only. Exit codes: 2 bad input or a key a member refuses, 3 no nginx here, 4 a member
that cannot be reached when it is added, 6 the gateway does not start or (``status``) is not running or has no
member ready.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import ExitCode, SourceError, UsageError
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.home_lock import home_lock
from bootstrap.core.private_address import check_private_ip
from bootstrap.plan.launch_spec import WILDCARD_HOSTS
from bootstrap.team import config, members, rpc_worker
from bootstrap.team.config import Member, Team
from bootstrap.team.gateway import ACCESS_LOG, Gateway, find_nginx, running_pid
from bootstrap.team.service import TeamService


def run(args: argparse.Namespace) -> int:
    home = resolve_home(getattr(args, "home", None))
    action = args.team_action
    if action == "status":
        return _status(home, args)
    if action in ("worker-start", "worker-stop"):
        return _worker(home, args)
    new_key = None
    with home_lock(Home(home.team_dir), "team"):
        team = config.load(home)
        if action == "add-member":
            _add_member(team, args)
        elif action == "remove-member":
            gone = team.member(args.member)
            if gone is None:
                raise UsageError(t("team.err_no_member", name=args.member), t("team.hint_status"))
            team.members.remove(gone)
            console.ok(t("team.removed_member", name=gone.name))
        elif action == "add-user":
            name = config.check_name(args.name)
            if name in team.users:
                raise UsageError(t("team.err_user_exists", name=name), t("team.hint_user_exists", name=name))
            team.users[name] = new_key = config.new_user_key()
        elif action == "remove-user":
            if team.users.pop(args.name, None) is None:
                raise UsageError(t("team.err_no_user", name=args.name), t("team.hint_status"))
            console.ok(t("team.removed_user", name=args.name))
        elif action == "start":
            return _start(home, team, args)
        elif action == "stop":
            if running_pid(home) is None and not TeamService(home).installed():
                console.ok(t("team.not_running"))
                return 0
            console.ok(t("team.stopped") if Gateway(home, find_nginx(team.nginx or None)).stop()
                       else t("team.not_running"))
            return 0
        config.save(home, team)
        if new_key is not None:  # shown once it is saved: a key printed but lost would not work
            console.out(new_key)
            console.ok(t("team.added_user", name=args.name))
        _apply(home, team)
    return 0


def _worker(home: Home, args: argparse.Namespace) -> int:
    """This PC as an RPC worker (``team.rpc_worker``): private address, opt-in, the installed engine's worker."""
    if args.team_action == "worker-stop":
        console.ok(t("rpc.stopped") if rpc_worker.stop(home) else t("rpc.not_running"))
        return 0
    if not 1 <= args.port <= 65535:
        raise UsageError(t("team.err_port", port=args.port), t("hint.usage"))
    host = check_private_ip(args.host)
    rpc_worker.worker_binary(home)  # installed, with a worker, before anything is recorded
    rpc_worker.opt_in(home, args.accept_rpc_risk)
    pid = rpc_worker.start(home, host, args.port)
    console.ok(t("rpc.started", pid=pid, host=host, port=args.port))
    return 0


def _read_key(source: str) -> str:
    if source == "-":
        return config.check_key(sys.stdin.readline(), "stdin")
    try:
        return config.check_key(Path(source).read_text(encoding="utf-8", errors="replace"), source)
    except OSError as exc:
        raise UsageError(t("team.err_key_file", path=source, reason=os_reason(exc)), t("team.hint_key")) from None


def _add_member(team: Team, args: argparse.Namespace) -> None:
    url = config.member_url(args.url)
    key = _read_key(args.key_file)
    host = url.split("://", 1)[1].rsplit(":", 1)[0]
    name = config.check_name(args.name or (host if all(m.name != host for m in team.members) else
                                           url.split("://", 1)[1].replace(":", "-")))
    if any(m.name == name or m.url == url for m in team.members):
        raise UsageError(t("team.err_member_exists", name=name, url=url), t("team.hint_member_exists", name=name))
    state = members.probe(url, key)
    if state.state == "key refused":
        raise UsageError(t("team.err_member_key", url=url), t("team.hint_member_key"))
    slots = args.slots or state.slots
    if not state.ready and args.slots is None:
        raise SourceError(t("team.err_member_down", url=url, state=_state_text(state.state), detail=state.detail),
                          t("team.hint_member_down"))
    if slots is None or slots < 1:
        raise UsageError(t("team.err_slots"), t("team.hint_member_down"))
    team.members.append(Member(name, url, key, int(slots)))
    console.ok(t("team.added_member", name=name, url=url, slots=slots, model=state.model or "?"))


def _apply(home: Home, team: Team) -> None:
    """A change to a running gateway takes effect now (reload); a stopped one just keeps the record."""
    if running_pid(home) is None:
        console.info(t("team.saved"))
        return
    gateway = Gateway(home, find_nginx(team.nginx or None))
    if not team.members or not team.users:
        console.warn(t("team.reload_skipped"))
        return
    gateway.write_config(team)
    gateway.start()
    console.info(t("team.reloaded"))


def _start(home: Home, team: Team, args: argparse.Namespace) -> int:
    if args.host is not None:
        team.host = config.check_host(args.host)
    if args.port is not None:
        if not 1 <= args.port <= 65535:
            raise UsageError(t("team.err_port", port=args.port), t("hint.usage"))
        team.port = args.port
    if not team.members:
        raise UsageError(t("team.err_no_members"), t("team.hint_no_members"))
    if not team.users:
        raise UsageError(t("team.err_no_users"), t("team.hint_no_users"))
    if args.nginx is not None:
        team.nginx = args.nginx
    gateway = Gateway(home, find_nginx(team.nginx or None))
    if team.host in WILDCARD_HOSTS:
        console.warn(t("team.all_interfaces"))
    gateway.write_config(team)
    config.save(home, team)
    pid = gateway.start()
    console.out(t("team.endpoint", url=_endpoint(team)))
    console.ok(t("team.started", pid=pid, members=len(team.members), users=len(team.users),
                 log=home.team_dir / ACCESS_LOG))
    for member in team.members:
        state = members.describe(member)
        if not state.ready:
            console.warn(t("team.member_not_ready", name=member.name, url=member.url, state=_state_text(state.state)))
    return 0


def _endpoint(team: Team) -> str:
    host = "127.0.0.1" if team.host in WILDCARD_HOSTS else team.host
    return f"http://{host}:{team.port}/v1"


def _state_text(state: str) -> str:
    return t(f"team.state_{state.replace(' ', '_').replace('-', '_')}")


def _status(home: Home, args: argparse.Namespace) -> int:
    team = config.load(home)
    pid = running_pid(home)
    states = [(m, members.describe(m)) for m in team.members]
    healthy = pid is not None and any(s.ready for _, s in states)
    if args.json:
        console.emit_json({"running": pid is not None, "pid": pid, "endpoint": _endpoint(team),
                           "users": sorted(team.users),
                           "members": [{"name": m.name, "url": m.url, "weight": m.slots, **asdict(s)}
                                       for m, s in states]})
        return 0 if healthy else int(ExitCode.SERVER)
    console.out(t("team.status_running", pid=pid, url=_endpoint(team)) if pid is not None
                else t("team.status_stopped"))
    for member, state in states:
        slots = "-" if state.slots is None else f"{state.busy if state.busy is not None else '?'}/{state.slots}"
        console.out(t("team.status_member", name=member.name, url=member.url, state=_state_text(state.state),
                      slots=slots, model=state.model or "-"))
        if not state.ready:
            console.warn(t("team.member_not_ready", name=member.name, url=member.url, state=_state_text(state.state)))
    worker = rpc_worker.running_pid(home)
    if worker is not None:
        console.out(t("rpc.status_running", pid=worker))
    if not team.members:
        console.info(t("team.hint_no_members"))
    return 0 if healthy else int(ExitCode.SERVER)
