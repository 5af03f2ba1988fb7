"""The team gateway as a service: a systemd user unit where a systemd user manager runs, else nginx's own daemon.

Under systemd the unit runs nginx in the foreground (``-g "daemon off;"``) and restarts it if it dies; it is
enabled, so it starts again at boot (with linger, which the server's install already asks for). Where no service
manager runs (containers, WSL without systemd, this test bed), nginx runs as its own daemon: its master restarts a
worker that dies, but nothing starts it after a reboot, and the kit says so. macOS and Windows gateways run as a
daemon too for now (docs/team-endpoint.md).
"""

from __future__ import annotations

from pathlib import Path

from bootstrap.core.console import t, warn
from bootstrap.core.errors import ServerError
from bootstrap.core.home import Home
from bootstrap.core.processes import run_command
from bootstrap.core.templating import render_template, write_rendered
from bootstrap.register.base import Runner, copy_file, output_of
from bootstrap.register.systemd import BOOTED_MARKER, MANAGER_STATES, unit_path_value, user_unit_dir

UNIT = "qwenclientkit-team.service"


def render_unit(home: Home, argv: list[str]) -> str:
    return render_template("systemd-team.service.j2", argv=[*argv, "-g", "daemon off;"],
                           workdir=unit_path_value(home.team_dir))


class TeamService:
    """Where the gateway's nginx runs: ``systemd`` (a user unit) or ``daemon``."""

    def __init__(self, home: Home, *, runner: Runner = run_command, booted: bool | None = None,
                 unit_dir: Path | None = None) -> None:
        self.home = home
        self.runner = runner
        self.booted = BOOTED_MARKER.is_dir() if booted is None else booted
        self.unit_dir = unit_dir if unit_dir is not None else user_unit_dir(Path.home())

    def _systemctl(self, *args: str, timeout: float = 30) -> None:
        result = self.runner(["systemctl", "--user", *args], timeout)
        if result.returncode != 0:
            raise ServerError(t("team.err_unit", command=" ".join(args), detail=output_of(result)),
                              t("team.hint_unit"))

    def systemd(self) -> bool:
        """A systemd user manager answers here."""
        if not self.booted:
            return False
        state = self.runner(["systemctl", "--user", "is-system-running"], 10)
        return (state.stdout or "").strip() in MANAGER_STATES

    def installed(self) -> bool:
        return (self.unit_dir / UNIT).is_file()

    def start(self, argv: list[str]) -> bool:
        """Register and (re)start the unit; False when there is no systemd here (the caller runs the daemon)."""
        if not self.systemd():
            warn(t("team.no_service"))
            return False
        copy = self.home.team_dir / UNIT
        write_rendered(copy, render_unit(self.home, argv))
        copy_file(copy, self.unit_dir / UNIT)
        self._systemctl("daemon-reload")
        self._systemctl("enable", UNIT)
        self._systemctl("restart", UNIT)
        return True

    def stop(self) -> None:
        if self.installed() and self.systemd():
            self._systemctl("disable", "--now", UNIT)
            (self.unit_dir / UNIT).unlink(missing_ok=True)
            self._systemctl("daemon-reload")

    def remove(self) -> None:
        """Stop the unit and delete its file, also where no user manager runs now (uninstall): no unit of the
        kit's is left to start a gateway whose files are gone."""
        self.stop()
        (self.unit_dir / UNIT).unlink(missing_ok=True)
