"""``qwenkit team …``: one OpenAI-compatible endpoint for a team, over several member installs (docs/team-endpoint.md).

    qwenkit team add-member URL --key-file FILE|- [--name NAME] [--slots N]
    qwenkit team remove-member NAME|URL
    qwenkit team refresh                (asks every member again what it serves)
    qwenkit team add-user NAME          (prints the new user's key, once)
    qwenkit team remove-user NAME
    qwenkit team rotate-key NAME        (prints the user's new key, once; the old one is refused at once)
    qwenkit team users [--json]
    qwenkit team start [--host H] [--port P] [--nginx PATH] [--default-model MODEL]
    qwenkit team stop
    qwenkit team status [--json]

Glue only: the record (``team.config``), the members' own answers (``team.members``), the routing by model
(``team.routes``) and nginx (``team.gateway``). A change is checked in full before anything is recorded (the new
configuration must pass ``nginx -t`` when the gateway runs), then recorded, then applied to a running gateway at
once: when the command returns, a removed or replaced key is refused. The record and the configuration hold every
key of the team and are owner-only. Exit codes: 2 bad input or a key a member refuses, 3 no nginx (or no njs
module where the members serve different models) here, 4 a member that cannot be reached when it is added, 6 the
gateway does not start or (``status``) is not running or has no member ready.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
import unicodedata
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import ExitCode, SourceError, UsageError
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.home_lock import home_lock
from bootstrap.core.private_address import check_private_ip
from bootstrap.plan.launch_spec import WILDCARD_HOSTS
from bootstrap.team import config, members, routes, rpc_worker
from bootstrap.team.config import Member, Team
from bootstrap.team.gateway import ACCESS_LOG, Gateway, find_nginx, running_pid, stop_gateway


@dataclass
class Change:
    """A change to the record, and what to say once it is recorded (``key``: a new key, printed on stdout)."""

    team: Team
    said: list[str] = field(default_factory=list)
    key: str | None = None


def run(args: argparse.Namespace) -> int:
    home = resolve_home(getattr(args, "home", None))
    action = args.team_action
    if action == "status":
        return _status(home, args)
    if action == "users":
        return _users(home, args)
    if action in ("worker-start", "worker-stop"):
        return _worker(home, args)
    with home_lock(Home(home.team_dir), "team"):
        team = config.load(home)
        if action == "start":
            return _start(home, team, args)
        if action == "stop":  # needs no nginx binary: the master is signalled
            console.ok(t("team.stopped") if stop_gateway(home) else t("team.not_running"))
            return 0
        change = _change(team, action, args)
        _record_and_apply(home, change)
    return 0


def _change(team: Team, action: str, args: argparse.Namespace) -> Change:
    """The record after ``action``, checked in full; nothing is written here."""
    if action == "add-member":
        return _add_member(team, args)
    if action == "refresh":
        return Change(_refreshed(team, say=True))
    if action == "remove-member":
        gone = team.member(args.member)
        if gone is None:
            raise UsageError(t("team.err_no_member", name=args.member), t("team.hint_status"))
        return Change(replace(team, members=[m for m in team.members if m is not gone]),
                      [t("team.removed_member", name=gone.name)])
    name = config.check_user_name(args.name) if action == "add-user" else _user(team, args.name)
    users = dict(team.users)
    if action == "add-user":
        taken = next((u for u in users if config.same_user(u, name)), None)
        if taken is not None:
            raise UsageError(t("team.err_user_exists", name=taken), t("team.hint_user_exists", name=taken))
        users[name] = key = config.new_user_key()
        return Change(replace(team, users=users), [t("team.added_user", name=name)], key)
    if action == "rotate-key":
        users[name] = key = config.new_user_key()
        return Change(replace(team, users=users), [t("team.rotated_key", name=name)], key)
    del users[name]  # remove-user
    return Change(replace(team, users=users), [t("team.removed_user", name=name)])


def _user(team: Team, given: str) -> str:
    """The recorded name ``given`` stands for (NFC-normalised, as add-user recorded it)."""
    name = unicodedata.normalize("NFC", given.strip())
    if name not in team.users:
        raise UsageError(t("team.err_no_user", name=given), t("team.hint_users"))
    return name


def _record_and_apply(home: Home, change: Change) -> None:
    """Check the change against nginx when the gateway runs (``nginx -t``: a refusal records nothing), record it,
    say it, then apply it: a running gateway takes it before this returns."""
    team = change.team
    gateway = None
    if running_pid(home) is not None:
        gateway = Gateway(home, find_nginx(team.nginx or None))
        team = gateway.write_config(team)
    config.save(home, team)
    if change.key is not None:  # shown once it is saved: a key printed but lost would not work
        console.out(change.key)
    for line in change.said:
        console.ok(line)
    if gateway is None:
        console.info(t("team.saved"))
        return
    gateway.start()
    if not team.users:
        console.warn(t("team.refuses_everyone"))
    elif not team.members:
        console.warn(t("team.serves_nobody"))
    else:
        console.info(t("team.reloaded"))


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


def _is_this_gateway(team: Team, url: str) -> bool:
    """``url`` is this team's own gateway: its port, at its address, a loopback one, or any when it listens on
    every network (the gateway's answers name it too: ``members.GATEWAY_HEADER``)."""
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    if int(port) != team.port:
        return False
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    return host == team.host or team.host in WILDCARD_HOSTS or (loopback and team.host.startswith("127."))


def _add_member(team: Team, args: argparse.Namespace) -> Change:
    url = config.member_url(args.url)
    slots_given = config.check_slots(args.slots) if args.slots is not None else None
    holder = next((m for m in team.members if m.url == url), None)
    if holder is not None:
        raise UsageError(t("team.err_member_at", url=url, name=holder.name),
                         t("team.hint_member_exists", name=holder.name))
    key = _read_key(args.key_file)
    if team.user_of_key(key) is not None or _is_this_gateway(team, url):
        raise UsageError(t("team.err_member_is_gateway", url=url), t("team.hint_member_is_gateway"))
    host = url.split("://", 1)[1].rsplit(":", 1)[0]
    name = config.check_name(args.name or (host if all(m.name != host for m in team.members) else
                                           url.split("://", 1)[1].replace(":", "-")))
    if team.member(name) is not None:
        raise UsageError(t("team.err_member_name", name=name), t("team.hint_member_name"))
    state = members.probe(url, key)
    if state.state == "gateway":
        raise UsageError(t("team.err_member_is_gateway", url=url), t("team.hint_member_is_gateway"))
    if state.state == "key refused":
        raise UsageError(t("team.err_member_key", url=url), t("team.hint_member_key"))
    if not state.ready and slots_given is None:
        raise SourceError(t("team.err_member_down", url=url, state=_state_text(state.state), detail=state.detail),
                          t("team.hint_member_down"))
    slots = slots_given or state.slots
    if slots is None:
        raise UsageError(t("team.err_slots"), t("team.hint_slots"))
    member = Member(name, url, key, config.check_slots(min(int(slots), config.MAX_SLOTS)), state.served())
    said = [t("team.added_member", name=name, url=url, slots=member.slots), *_serves(member)]
    return Change(replace(team, members=[*team.members, member]), said)


def _serves(member: Member) -> list[str]:
    if not member.models:
        return [t("team.serves_unknown", name=member.name)]
    return [t("team.serves", model=m.id, slots=m.slots or "?",
              aliases=t("team.aliases", names=", ".join(m.aliases)) if m.aliases else "") for m in member.models]


def _refreshed(team: Team, *, say: bool) -> Team:
    """Ask every member again what it serves and with how many slots; one that does not answer keeps what was
    recorded (and is said to). ``say``: print what each serves now."""
    fresh = []
    for member in team.members:
        state = members.describe(member)
        if state.ready and state.models:
            updated = replace(member, models=state.served(),
                              slots=config.check_slots(min(state.slots or member.slots, config.MAX_SLOTS)))
        else:
            updated = member
            console.warn(t("team.refresh_kept", name=member.name, state=_state_text(state.state)))
        if say:
            console.info(t("team.member_line", name=member.name, url=member.url))
            for line in _serves(updated):
                console.info(line)
        fresh.append(updated)
    return replace(team, members=fresh)


def _apply_start_options(team: Team, args: argparse.Namespace) -> Team:
    if args.host is not None:
        team = replace(team, host=config.check_host(args.host))
    if args.port is not None:
        if not 1 <= args.port <= 65535:
            raise UsageError(t("team.err_port", port=args.port), t("hint.usage"))
        team = replace(team, port=args.port)
    if args.nginx is not None:
        team = replace(team, nginx=args.nginx)
    if args.default_model is not None:
        team = replace(team, default_model=args.default_model)
    return team


def _start(home: Home, team: Team, args: argparse.Namespace) -> int:
    team = _apply_start_options(team, args)
    if not team.members:
        raise UsageError(t("team.err_no_members"), t("team.hint_no_members"))
    if not team.users:
        raise UsageError(t("team.err_no_users"), t("team.hint_no_users"))
    gateway = Gateway(home, find_nginx(team.nginx or None))
    team = _refreshed(team, say=False)
    known = {route.model for route in routes.routes(team)}
    if team.default_model and team.default_model not in known:
        raise UsageError(t("team.err_default_model", model=team.default_model, served=", ".join(sorted(known))),
                         t("team.hint_default_model"))
    if team.host in WILDCARD_HOSTS:
        console.warn(t("team.all_interfaces"))
    team = gateway.write_config(team)
    config.save(home, team)
    pid = gateway.start()
    console.out(t("team.endpoint", url=_endpoint(team)))
    console.ok(t("team.started", pid=pid, members=len(team.members), users=len(team.users),
                 log=home.team_dir / ACCESS_LOG))
    default = routes.default_model(team)
    if default:
        console.info(t("team.default_model", model=default))
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


def _users(home: Home, args: argparse.Namespace) -> int:
    """The users' names, one a line (stdout); never their keys."""
    names = sorted(config.load(home).users)
    if args.json:
        console.emit_json({"users": names})
        return 0
    for name in names:
        console.out(name)
    if not names:
        console.info(t("team.hint_no_users"))
    return 0


def _slots_text(slots: int | None, busy: int | None) -> str:
    return "-" if slots is None else f"{busy if busy is not None else '?'}/{slots}"


def _drift(member: Member, state: members.MemberState) -> bool:
    """The member serves models the gateway does not route to it (or no longer serves some it does)."""
    return state.ready and {m.id for m in state.models} != {m.id for m in member.models}


def _status(home: Home, args: argparse.Namespace) -> int:
    team = config.load(home)
    pid = running_pid(home)
    states = [(m, members.describe(m)) for m in team.members]
    healthy = pid is not None and any(s.ready for _, s in states)
    default = routes.default_model(team)
    if args.json:
        console.emit_json({"running": pid is not None, "pid": pid, "endpoint": _endpoint(team),
                           "users": sorted(team.users), "default_model": default or None,
                           "members": [{"name": m.name, "url": m.url, "weight": m.slots,
                                        "routed": [asdict(r) for r in m.models], **asdict(s)} for m, s in states]})
        return 0 if healthy else int(ExitCode.SERVER)
    console.out(t("team.status_running", pid=pid, url=_endpoint(team)) if pid is not None
                else t("team.status_stopped"))
    if default:
        console.out(t("team.status_default", model=default))
    for member, state in states:
        console.out(t("team.status_member", name=member.name, url=member.url, state=_state_text(state.state),
                      slots=_slots_text(state.slots, state.busy)))
        shown = state.models if state.ready else tuple(members.ModelState(m.id, m.aliases, m.slots or None)
                                                       for m in member.models)
        for model in shown:
            console.out(t("team.status_model", model=model.id, slots=_slots_text(model.slots, model.busy),
                          loaded=t(f"team.model_{model.status}") if state.ready else ""))
        if not state.ready:
            console.warn(t("team.member_not_ready", name=member.name, url=member.url, state=_state_text(state.state)))
        elif _drift(member, state):
            console.warn(t("team.member_drift", name=member.name))
    worker = rpc_worker.running_pid(home)
    if worker is not None:
        console.out(t("rpc.status_running", pid=worker))
    if not team.members:
        console.info(t("team.hint_no_members"))
    return 0 if healthy else int(ExitCode.SERVER)

