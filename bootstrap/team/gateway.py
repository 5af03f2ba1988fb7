"""The team gateway's nginx: find it, write its configuration, check it, start, reload and stop it.

nginx is chosen by measurement (docs/team-endpoint.md). It runs with ``-p <home>/team`` (its prefix: every path in
the rendered file is relative to it) and ``-e`` for its first error log, so nothing is written outside the home, and
as its own supervisor: the master process restarts a worker that dies. Changes to members or users are applied
with ``nginx -s reload``, which lets requests in flight finish on the old workers (nginx.org, "Controlling nginx").
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import ServerError, UnsupportedMachine
from bootstrap.core.home import Home
from bootstrap.core.processes import live_pid, run_command
from bootstrap.core.templating import render_template
from bootstrap.team.config import DIR_MODE, FILE_MODE, Team
from bootstrap.team.service import TeamService

CONFIG = "nginx.conf"
PID = Path("run") / "nginx.pid"
ERROR_LOG = Path("logs") / "gateway-error.log"
ACCESS_LOG = Path("logs") / "gateway-access.log"
# The temp folders nginx creates at start, by module; their compiled-in defaults (/var/lib/nginx/…) are not
# writable by a user, so each is set inside the prefix (nginx.org, ngx_http_core_module, ngx_http_proxy_module…).
TEMP_MODULES = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
STOP_WAIT_S = 10.0
_WITHOUT = re.compile(r"--without-http[_-](\w+?)_module")


@dataclass(frozen=True)
class Nginx:
    """One nginx binary and the modules it was built without (``nginx -V``)."""

    binary: Path
    version: str
    without: frozenset[str]


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
                return Nginx(Path(candidate), version, frozenset(_WITHOUT.findall(text)))
    raise UnsupportedMachine(t("team.err_no_nginx", path=explicit or "nginx"), t("team.hint_no_nginx"))


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def render_config(team: Team, nginx: Nginx, *, inner_ports: list[int], inner_secret: str, user: str = "") -> str:
    members = [{"name": m.name, "address": m.address, "key": m.key, "slots": max(1, m.slots),
                "scheme": m.url.split("://", 1)[0], "inner_port": port}
               for m, port in zip(team.members, inner_ports, strict=True)]
    temp = [name for name in TEMP_MODULES if name == "client_body" or name not in nginx.without]
    return render_template("team-nginx.conf.j2", host=team.host, port=team.port, members=members,
                           users=dict(sorted(team.users.items())), inner_secret=inner_secret, user=user,
                           temp_paths=temp)


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


class Gateway:
    """The nginx of one home's team."""

    def __init__(self, home: Home, nginx: Nginx, service: TeamService | None = None) -> None:
        self.home = home
        self.nginx = nginx
        self.prefix = home.team_dir
        self.service = service or TeamService(home)

    def argv(self, *extra: str, config: str = CONFIG) -> list[str]:
        return [str(self.nginx.binary), "-p", f"{self.prefix}{os.sep}", "-c", config, "-e", str(ERROR_LOG), *extra]

    def write_config(self, team: Team) -> Path:
        """Render and check the configuration: written to a candidate file, tested with ``nginx -t``, then
        renamed into place, so a running gateway never reloads a file that does not pass."""
        for folder in ("run", "logs", "tmp"):
            (self.prefix / folder).mkdir(parents=True, exist_ok=True)
        self.prefix.chmod(DIR_MODE)
        ports = self._inner_ports(len(team.members))
        text = render_config(team, self.nginx, inner_ports=ports, inner_secret=secrets.token_hex(16),
                             user=_worker_user(self.prefix))
        candidate = self.prefix / f"{CONFIG}.new"
        write_atomic(candidate, text.encode(), mode=FILE_MODE)
        result = run_command(self.argv("-t", "-q", config=candidate.name), timeout=30)
        if result.returncode != 0:
            candidate.unlink(missing_ok=True)
            detail = " ".join((result.stderr or result.stdout).split())
            raise ServerError(t("team.err_config", detail=detail), t("team.hint_config"))
        target = self.prefix / CONFIG
        candidate.replace(target)
        return target

    def _inner_ports(self, count: int) -> list[int]:
        """Loopback ports for the per-member listeners: kept from the running configuration when it has as many
        (a reload must not need new ports that are taken), else free ones."""
        current = self.prefix / CONFIG
        if self.pid() is not None and current.is_file():
            found = [int(p) for p in re.findall(r"listen 127\.0\.0\.1:(\d+);", current.read_text(encoding="utf-8"))]
            if len(found) >= count:
                return found[:count]
        ports: list[int] = []
        while len(ports) < count:
            port = _free_port()
            if port not in ports:
                ports.append(port)
        return ports

    def pid(self) -> int | None:
        return running_pid(self.home)

    def start(self) -> int:
        """Start the gateway (or apply a new configuration to a running one); its master's pid. Started under
        the systemd user unit where one can run, else as nginx's own daemon (``team.service``)."""
        running = self.pid()
        if running is None and self.service.start(self.argv()):
            result = None
        else:
            result = run_command(self.argv("-s", "reload") if running else self.argv(), timeout=30)
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

    def stop(self) -> bool:
        """Stop it (``-s quit``: requests in flight finish, for up to ``STOP_WAIT_S``, then it is killed).
        False when it was not running."""
        pid = self.pid()
        if self.service.installed():
            self.service.stop()
        if pid is None:
            return False
        run_command(self.argv("-s", "quit"), timeout=30)
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            try:
                proc.wait(STOP_WAIT_S)
            except psutil.TimeoutExpired:
                for child in [proc, *proc.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        child.kill()
        (self.prefix / PID).unlink(missing_ok=True)
        return True
