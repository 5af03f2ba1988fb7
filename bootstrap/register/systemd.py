"""systemd units (DESIGN.md §5): a user unit without admin (+ linger so it starts at boot), a system unit with it.

The unit runs the rendered ``run_qwen.sh`` (one source of truth for flags) through ``/bin/sh``. The home's copy
lives in ``<home>/service/``; systemd gets a copy in its unit folder (a link would break if the home moved to
another mount that is not yet up at boot).

The prompt cache (docs/prompt-cache.md): the kit saves it before its own stops and restores it after its own
starts, but systemd starts the server by itself at boot and after ``Restart=always``, and no supervisor runs here
to save periodically. So ``ExecStartPost=-… cache-keeper --home HOME --detach`` starts the cache keeper
(``register/cache_keeper.py``) after each start: it restores once the server answers (one restore per server
process, shared with the kit's own ``service start``: ``prompt_cache.restore_once``) and saves every minute what
changed. ``--detach`` returns at once (a ``Type=simple`` unit is "activating" until ExecStartPost ends); the keeper
stays in the unit's cgroup, so a stop (``KillMode=control-group``) or a restart ends it with the server, and the
restart's ExecStartPost starts a new one. ``-``: a keeper that cannot start never fails the unit. No save at
``ExecStop=``: ``TimeoutStopSec`` is ``SERVER_STOP_TIMEOUT_S`` (1 s), too short for a save; the periodic save is
what a crash or a power cut finds anyway. The kit's words may name a program inside the home (its venv's
``qwenkit``, the frozen setup's copy), which systemd cannot take as a program word (below), so they run through
``/bin/sh -c 'exec "$0" "$@"'``: a fixed script, every word its own argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import Literal

from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.home import Home
from bootstrap.core.input_checks import decimal_int
from bootstrap.core.processes import SERVER_STOP_TIMEOUT_S, run_command
from bootstrap.core.templating import QuotingError, RenderedFile, render_template, write_rendered
from bootstrap.place.engine_failure import ExitInfo
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.base import (
    SERVICE_ID,
    Evidence,
    Runner,
    ServiceManager,
    ServiceStatus,
    copy_file,
    output_of,
    remove_empty_dir,
    remove_files,
)
from bootstrap.register.shell_command import kit_command

UNIT = f"{SERVICE_ID}.service"
SHELL = "/bin/sh"
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
BOOTED_MARKER = Path("/run/systemd/system")  # sd_booted(3): exists iff systemd is PID 1
# systemctl is-system-running(1) states that mean "a manager answers"; "offline" means none does.
MANAGER_STATES = frozenset({"initializing", "starting", "running", "degraded", "maintenance", "stopping"})
LINGER_MARKER = "linger-enabled-by-qwenclientkit"
CLD_EXITED, CLD_KILLED, CLD_DUMPED = 1, 2, 3  # waitid(2) si_code values, as systemd reports ExecMainCode
JOURNAL_LINES = 200
EXEC_ARGS = 'exec "$0" "$@"'  # sh -c: run the words after it as they are (module docstring)

Scope = Literal["user", "system"]


def unit_path_value(path: PurePath | str) -> str:
    """A path for ``WorkingDirectory=``/``User=``: written raw (quotes are not allowed there), ``%`` doubled.

    systemd.unit(5) "Specifiers": ``%`` starts a specifier in these settings; there is no C-unescaping or
    variable expansion, so ``\\``, ``$`` and quotes are literal. A line break cannot be written at all.
    """
    text = str(path)
    if any(c in text for c in "\n\r\0") or text != text.strip():
        raise QuotingError(f"systemd: a path with a line break or edge whitespace cannot be written: {text!r}")
    return text.replace("%", "%%")


def render_unit(scope: Scope, home: Home, *, user: str = "", shell: str = SHELL,
                kit: Sequence[str] | None = None) -> str:
    """The unit text for ``home``; ``user`` is the ``User=`` of the system flavour, ``kit`` the words that run the
    kit for the cache keeper (default: ``shell_command.kit_command``).

    The home's path travels as an argument, never as ExecStart's program word: systemd 252 rejects a program path
    holding ``"``, ``'`` or ``\\`` ("Executable name contains special characters") and never expands ``$$`` in it
    (systemd.service(5) "Command lines": the program "may not be a variable") — measured with systemd-analyze.
    """
    if any(c in shell for c in "$\"'\\"):
        raise QuotingError(f"systemd: the program word cannot hold $, quotes or backslashes: {shell!r}")
    words = kit_command(home, "Linux") if kit is None else tuple(kit)
    values = {"script": home.run_sh, "shell": shell, "workdir": unit_path_value(home.root),
              "stop_timeout_s": SERVER_STOP_TIMEOUT_S, "exec_args": EXEC_ARGS, "keeper": words, "home": home.root}
    if scope == "system":
        return render_template("systemd-system.service.j2", user=unit_path_value(user), **values)
    return render_template("systemd-user.service.j2", **values)


def user_unit_dir(user_home: Path) -> Path:
    """``~/.config/systemd/user``: the user manager's own unit folder (systemd.unit(5) "User Unit Search Path")."""
    return user_home / ".config" / "systemd" / "user"


def home_owner(home: Home) -> str:
    """The user who owns the install home: the system unit runs as them so it can read the models."""
    import pwd  # POSIX only; this module is imported on every OS

    probe = home.root if home.root.exists() else home.root.parent
    while not probe.exists():
        probe = probe.parent
    return pwd.getpwuid(probe.stat().st_uid).pw_name


class SystemdManager(ServiceManager):
    """``systemctl [--user]`` driving ``qwenclientkit.service``."""

    def __init__(self, home: Home, *, scope: Scope, user: str, runner: Runner = run_command,
                 unit_dir: Path | None = None, booted: bool | None = None) -> None:
        super().__init__(home, runner=runner)
        self.booted = BOOTED_MARKER.is_dir() if booted is None else booted
        self.scope = scope
        self.user = user
        self.name = f"systemd-{scope}"
        if unit_dir is None:
            import pwd

            unit_dir = SYSTEM_UNIT_DIR if scope == "system" else user_unit_dir(Path(pwd.getpwnam(user).pw_dir))
        self.unit_dir = unit_dir

    def _systemctl(self, *args: str) -> list[str]:
        return ["systemctl", "--user", *args] if self.scope == "user" else ["systemctl", *args]


    @property
    def home_copy(self) -> Path:
        return self.home.services_dir / UNIT

    @property
    def linger_marker(self) -> Path:
        return self.home.services_dir / LINGER_MARKER

    @property
    def definition_paths(self) -> list[Path]:
        return [self.unit_dir / UNIT, self.home_copy, self.linger_marker]

    def available(self) -> tuple[bool, str]:
        if not self.booted:
            return False, f"{BOOTED_MARKER} is missing: systemd is not PID 1"
        result = self.run(*self._systemctl("is-system-running"), timeout=10)
        state = (result.stdout or "").strip()
        if state in MANAGER_STATES:
            return True, state
        return False, state or output_of(result)

    def rendered(self, spec: LaunchSpec) -> list[RenderedFile]:
        text = render_unit(self.scope, self.home, user=self.user)
        return [RenderedFile(self.home_copy, text), RenderedFile(self.unit_dir / UNIT, text)]

    def install(self, spec: LaunchSpec) -> None:
        self.rendered(spec)[0].write()
        copy_file(self.home_copy, self.unit_dir / UNIT)
        self.must(*self._systemctl("daemon-reload"))
        self.must(*self._systemctl("enable", UNIT))
        if self.scope == "user":
            self._enable_linger()

    def _enable_linger(self) -> None:
        """Linger starts the user manager at boot; polkit may refuse it to non-admins: warn, do not fail."""
        state = self.run("loginctl", "show-user", self.user, "--property=Linger", "--value", timeout=10)
        if state.returncode == 0 and state.stdout.strip() == "yes":
            return
        result = self.run("loginctl", "enable-linger", self.user, timeout=30)
        if result.returncode != 0:
            console.warn(t("service.warn_linger", user=self.user, detail=output_of(result)))
            return
        write_rendered(self.linger_marker, f"{self.user}\n")  # so uninstall undoes only what we did

    def start(self) -> None:
        self.must(*self._systemctl("restart", UNIT))  # restart: a rerun replaces an old instance (mode 8)

    def stop(self) -> None:
        if (self.unit_dir / UNIT).exists():
            self.must(*self._systemctl("stop", UNIT))

    def status(self) -> ServiceStatus:
        installed = (self.unit_dir / UNIT).exists()
        active = self.run(*self._systemctl("is-active", UNIT), timeout=10)
        enabled = self.run(*self._systemctl("is-enabled", UNIT), timeout=10)
        return ServiceStatus(self.name, installed, active.stdout.strip() == "active",
                             enabled.stdout.strip() == "enabled",
                             f"{active.stdout.strip() or '?'}, {enabled.stdout.strip() or '?'}")

    def last_exit(self) -> ExitInfo | None:
        """``ExecMainCode``/``ExecMainStatus`` (systemd.exec(5), org.freedesktop.systemd1(5)): the code is a
        ``CLD_*`` value — 1 exited (status = exit code), 2 killed, 3 dumped core (status = signal number)."""
        result = self.run(*self._systemctl("show", "-p", "ExecMainCode", "-p", "ExecMainStatus", UNIT), timeout=10)
        values = dict(line.partition("=")[::2] for line in (result.stdout or "").splitlines() if "=" in line)
        code, status = values.get("ExecMainCode", "").strip(), values.get("ExecMainStatus", "").strip()
        code_n, status_n = decimal_int(code), decimal_int(status, signed=True)
        if result.returncode != 0 or code_n is None or status_n is None:
            return None
        if code_n in (CLD_KILLED, CLD_DUMPED):
            return ExitInfo(signal=status_n)
        return ExitInfo(code=int(status)) if int(code) == CLD_EXITED else None

    def log_command(self, lines: int | None, follow: bool, *, stamped: bool = False) -> list[str]:
        """``journalctl [--user] -u qwenclientkit.service -n N|all [-f]``: the unit's stdout and stderr are in the
        journal, as the server wrote them (``-o cat``: without journald's prefixes), or with each line's time of
        day (``stamped``: ``-o short-iso``; llama-server's own stamps count from its start)."""
        return ["journalctl", *(["--user"] if self.scope == "user" else []), "-u", UNIT,
                "-n", "all" if lines is None else str(lines), *(["-f"] if follow else []), "--no-pager",
                "-o", "short-iso" if stamped else "cat"]

    def evidence(self) -> Evidence:
        """The unit's last journal lines (its stdout and stderr go to the journal)."""
        argv = self.log_command(JOURNAL_LINES, follow=False)
        result = self.run(*argv, timeout=15)
        text = result.stdout if result.returncode == 0 else ""
        return Evidence(self.last_exit(), text, " ".join(argv[: argv.index("-n")]))

    def uninstall(self) -> None:
        if (self.unit_dir / UNIT).exists():
            self.run(*self._systemctl("disable", "--now", UNIT))
        if self.linger_marker.exists():
            self.run("loginctl", "disable-linger", self.user, timeout=30)
        remove_files(self.definition_paths)
        remove_empty_dir(self.home.services_dir)
        self.run(*self._systemctl("daemon-reload"))
        self.run(*self._systemctl("reset-failed", UNIT))
