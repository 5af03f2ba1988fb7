"""The team gateway's nginx: find it, write its configuration and routing script, check them, start, reload, stop.

nginx is chosen by measurement (docs/team-endpoint.md). It runs with ``-p <home>/team`` (its prefix: every path in
the rendered file is relative to it) and ``-e`` for its first error log, so nothing is written outside the home, and
as its own supervisor: the master process restarts a worker that dies. Changes to members or users are applied
with ``nginx -s reload``, which lets requests in flight finish on the old workers (nginx.org, "Controlling nginx");
the kit waits until every old worker has stopped taking new requests, so a removed key is refused from the moment
the command returns. Routing by model needs nginx's njs module (``ngx_http_js_module``: Debian's
``libnginx-mod-http-js``), loaded from nginx's own modules folder; a team whose members all serve the same model
runs without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import time
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import ServerError, UnsupportedMachine
from bootstrap.core.home import Home
from bootstrap.core.processes import kill_tree, live_pid, run_command
from bootstrap.core.templating import render_template
from bootstrap.team import routes
from bootstrap.team.config import DIR_MODE, FILE_MODE, Member, Team, nginx_name
from bootstrap.team.service import TeamService

CONFIG = "nginx.conf"
SCRIPT_PREFIX = "team-route-"
PID = Path("run") / "nginx.pid"
ERROR_LOG = Path("logs") / "gateway-error.log"
ACCESS_LOG = Path("logs") / "gateway-access.log"
# The temp folders nginx creates at start, by module; their compiled-in defaults (/var/lib/nginx/…) are not
# writable by a user, so each is set inside the prefix (nginx.org, ngx_http_core_module, ngx_http_proxy_module…).
TEMP_MODULES = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
NJS_MODULE = "ngx_http_js_module.so"
# A request body is read whole into memory (the script reads its "model"): room for a few large images in base64.
BODY_LIMIT = "64m"
STOP_WAIT_S = 10.0
RELOAD_WAIT_S = 15.0
_WITHOUT = re.compile(r"--without-http[_-](\w+?)_module")
_MODULES_PATH = re.compile(r"--modules-path=(\S+)")
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9_./+-]+")  # written into nginx.conf unquoted


@dataclass(frozen=True)
class Nginx:
    """One nginx binary, the modules it was built without (``nginx -V``) and its njs module, when installed."""

    binary: Path
    version: str
    without: frozenset[str]
    njs: Path | None = None


def _njs_module(version_text: str) -> Path | None:
    """njs in the binary's modules folder (``--modules-path``, Debian: /usr/lib/nginx/modules)."""
    found = _MODULES_PATH.search(version_text)
    module = Path(found.group(1)) / NJS_MODULE if found else None
    if module is None or not module.is_file() or not _PLAIN_PATH.fullmatch(module.as_posix()):
        return None
    return module


def find_nginx(explicit: str | None = None) -> Nginx:
    """``explicit``, else ``nginx`` on PATH or in the sbin folders a user's PATH often lacks (Debian installs it in
    /usr/sbin). Missing: exit 3, with how to get it."""
    candidates = [explicit] if explicit else [shutil.which("nginx"), "/usr/sbin/nginx", "/usr/local/sbin/nginx",
                                               "/opt/homebrew/bin/nginx", "/usr/local/bin/nginx"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            result = run_command([candidate, "-V"], timeout=15)
            text = (result.stderr or "") + (result.stdout or "")
            if result.returncode == 0 and "nginx version" in text:
                version = text.split("nginx version:", 1)[1].split()[0]
                return Nginx(Path(candidate), version, frozenset(_WITHOUT.findall(text)), _njs_module(text))
    raise UnsupportedMachine(t("team.err_no_nginx", path=explicit or "nginx"), t("team.hint_no_nginx"))


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def with_listeners(team: Team, *, running: bool) -> Team:
    """The team with a loopback port for each member's inner listener, kept in the record: a running gateway
    keeps the ones it holds (a reload must not need ports that are taken); a new member, or a stopped gateway
    whose port another program took meanwhile, gets a free one. Never the gateway's own port."""
    taken = {team.port}
    members: list[Member] = []
    for member in team.members:
        port = member.listener
        if not port or port in taken or not (running or _bindable(port)):
            port = _free_port()
            while port in taken:
                port = _free_port()
        taken.add(port)
        members.append(replace(member, listener=port))
    return replace(team, members=members)


def render_route_script(team: Team, created: int = 0) -> str:
    table = routes.routes(team)
    default = routes.default_model(team)
    return render_template("team-route.js.j2", routes={r.model: r.number for r in table},
                           default=default or None, served=[r.model for r in table],
                           models=routes.models_document(team, created))


def render_config(team: Team, nginx: Nginx, *, inner_secret: str, script: str = "", user: str = "",
                  created: int = 0) -> str:
    """nginx.conf for ``team``, whose members carry their listeners (``with_listeners``)."""
    members = [{"name": m.name, "address": m.address, "key": m.key, "slots": max(1, m.slots),
                "scheme": m.url.split("://", 1)[0], "listener": m.listener} for m in team.members]
    table = routes.routes(team)
    route_servers = [{"number": r.number, "servers": [(m.listener, w) for m, w in r.servers]} for r in table]
    default = next((r for r in table if r.model == routes.default_model(team)), None)
    njs = nginx.njs is not None and bool(script)
    temp = [name for name in TEMP_MODULES if name == "client_body" or name not in nginx.without]
    return render_template("team-nginx.conf.j2", host=team.host, port=team.port, members=members,
                           users={nginx_name(n): _literal_pattern(k) for n, k in sorted(team.users.items())},
                           routes=route_servers,
                           njs=str(nginx.njs) if njs else "", script=script, body_limit=BODY_LIMIT,
                           default_route=default.number if default else 0,
                           default_tries=len(default.servers) if default else 0,
                           models=routes.models_document(team, created), inner_secret=inner_secret, user=user,
                           temp_paths=temp)


def _literal_pattern(key: str) -> str:
    """``key`` as a PCRE matching exactly it: every character outside ``A-Z a-z 0-9 _`` escaped (a key holds only
    ``. _ ~ + / = -`` besides, bootstrap.team.config; none of them is special to nginx's quoted string)."""
    return re.sub(r"([^A-Za-z0-9_])", r"\\\1", key)


def _worker_user(prefix: Path) -> str:
    """The account nginx's workers run as when it is started as root (else nginx's default is ``nobody``, which
    may not exist or reach the home): the home's owner, as the system unit of the server runs."""
    if os.name == "nt" or os.geteuid() != 0:
        return ""
    import pwd

    try:
        return pwd.getpwuid(prefix.stat().st_uid).pw_name
    except KeyError:
        return ""


def running_pid(home: Home) -> int | None:
    """The gateway master's pid while it runs, else None; needs no nginx binary, so ``status`` works where nginx
    was removed."""
    return live_pid(home.team_dir / PID, "nginx")


def _workers(pid: int) -> dict[int, str]:
    """The master's worker processes and their titles (nginx writes "worker process is shutting down" into a
    worker's command line once it stops taking new requests)."""
    out: dict[int, str] = {}
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(pid).children():
            with contextlib.suppress(psutil.Error):
                out[child.pid] = " ".join(child.cmdline())
    return out


def stop_gateway(home: Home, service: TeamService | None = None) -> bool:
    """Stop the gateway without needing its nginx binary (SIGQUIT to the master is ``nginx -s quit``: requests in
    flight finish, for up to ``STOP_WAIT_S``, then it is killed) and take its service unit away. False when it
    was not running."""
    service = service or TeamService(home)
    pid = running_pid(home)
    if service.installed():
        service.stop()
    if pid is None:
        return False
    with contextlib.suppress(psutil.Error):
        proc = psutil.Process(pid)
        proc.send_signal(getattr(signal, "SIGQUIT", signal.SIGTERM))
        try:
            proc.wait(STOP_WAIT_S)
        except psutil.TimeoutExpired:
            kill_tree(pid)
            proc.wait(STOP_WAIT_S)
    (home.team_dir / PID).unlink(missing_ok=True)
    return True


class Gateway:
    """The nginx of one home's team."""

    def __init__(self, home: Home, nginx: Nginx, service: TeamService | None = None) -> None:
        self.home = home
        self.nginx = nginx
        self.prefix = home.team_dir
        self.service = service or TeamService(home)

    def argv(self, *extra: str, config: str = CONFIG) -> list[str]:
        return [str(self.nginx.binary), "-p", f"{self.prefix}{os.sep}", "-c", config, "-e", str(ERROR_LOG), *extra]

    def write_config(self, team: Team) -> Team:
        """Render and check the configuration for ``team``; the team as written (its listeners assigned), for the
        caller to record. The routing script is written under a name of its own content and the configuration to
        a candidate file, tested with ``nginx -t``, then renamed into place: a running gateway never reloads files
        that do not pass, and a refused change leaves everything as it was."""
        for folder in ("run", "logs", "tmp"):
            (self.prefix / folder).mkdir(parents=True, exist_ok=True)
        self.prefix.chmod(DIR_MODE)
        team = with_listeners(team, running=self.pid() is not None)
        created = int(time.time())
        script, new_script = "", False
        if team.members and self.nginx.njs is not None:
            code = render_route_script(team, created).encode()
            script = f"{SCRIPT_PREFIX}{hashlib.sha256(code).hexdigest()[:16]}.js"
            new_script = not (self.prefix / script).is_file()
            write_atomic(self.prefix / script, code, mode=FILE_MODE)
        elif routes.needs_model_routing(team):
            raise UnsupportedMachine(t("team.err_no_njs", nginx=self.nginx.binary), t("team.hint_no_njs"))
        text = render_config(team, self.nginx, inner_secret=secrets.token_hex(16), script=script,
                             user=_worker_user(self.prefix), created=created)
        candidate = self.prefix / f"{CONFIG}.new"
        write_atomic(candidate, text.encode(), mode=FILE_MODE)
        result = run_command(self.argv("-t", "-q", config=candidate.name), timeout=30)
        if result.returncode != 0:
            candidate.unlink(missing_ok=True)
            if new_script:
                (self.prefix / script).unlink(missing_ok=True)
            detail = " ".join((result.stderr or result.stdout).split())
            raise ServerError(t("team.err_config", detail=detail), t("team.hint_config"))
        candidate.replace(self.prefix / CONFIG)
        self._keep_scripts(script)
        return team

    def _keep_scripts(self, keep: str) -> None:
        """Delete routing scripts other than ``keep`` (nginx compiled them when it loaded its configuration)."""
        for old in self.prefix.glob(f"{SCRIPT_PREFIX}*.js"):
            if old.name != keep:
                old.unlink(missing_ok=True)

    def pid(self) -> int | None:
        return running_pid(self.home)

    def start(self) -> int:
        """Start the gateway, or apply the configuration written last to a running one; its master's pid. Started
        under the systemd user unit where one can run, else as nginx's own daemon (``team.service``)."""
        running = self.pid()
        if running is not None:
            self.reload(running)
            return running
        result = None if self.service.start(self.argv()) else run_command(self.argv(), timeout=30)
        if result is not None and result.returncode != 0:
            detail = " ".join((result.stderr or result.stdout).split())
            raise ServerError(t("team.err_start", detail=detail or f"exit {result.returncode}"),
                              t("team.hint_start", log=self.prefix / ERROR_LOG))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pid = self.pid()
            if pid is not None:
                return pid
            time.sleep(0.1)
        raise ServerError(t("team.err_start", detail="no pid file"), t("team.hint_start", log=self.prefix / ERROR_LOG))

    def reload(self, pid: int) -> None:
        """``nginx -s reload``, then wait until the workers of the old configuration take no new request (they
        finish the ones in flight): from then on, only the new keys and members count."""
        old = {worker for worker, title in _workers(pid).items() if "shutting down" not in title}
        result = run_command(self.argv("-s", "reload"), timeout=30)
        if result.returncode != 0:
            detail = " ".join((result.stderr or result.stdout).split())
            raise ServerError(t("team.err_start", detail=detail or f"exit {result.returncode}"),
                              t("team.hint_start", log=self.prefix / ERROR_LOG))
        deadline = time.monotonic() + RELOAD_WAIT_S
        fresh: list[int] = []
        while time.monotonic() < deadline:
            now = _workers(pid)
            fresh = [w for w, title in now.items() if w not in old and "shutting down" not in title]
            if fresh and all(w not in now or "shutting down" in now[w] for w in old):
                return
            time.sleep(0.05)
        if fresh:  # where nginx cannot retitle its workers (macOS), the old ones may still finish long answers
            return
        raise ServerError(t("team.err_reload", seconds=int(RELOAD_WAIT_S)),
                          t("team.hint_start", log=self.prefix / ERROR_LOG))

    def stop(self) -> bool:
        return stop_gateway(self.home, self.service)
