"""macOS LaunchAgent (DESIGN.md §5): ``~/Library/LaunchAgents/com.qwenclientkit.server.plist`` in the GUI domain.

Agents run in the user's Aqua login session, where Metal is available (docs/field-failures.md, "Service
managers": LaunchDaemons run before login and Metal there is unverified). ``KeepAlive`` restarts the server;
stopping therefore unloads it (``bootout``), since killing it would only make launchd start it again. Commands
per launchctl(1) "bootstrap | bootout | kickstart | print" with the ``gui/<uid>`` domain target.
"""

from __future__ import annotations

from pathlib import Path

from bootstrap.core.home import Home
from bootstrap.core.input_checks import decimal_int
from bootstrap.core.processes import SERVER_STOP_TIMEOUT_S, run_command
from bootstrap.core.templating import RenderedFile, render_template
from bootstrap.place.engine_failure import ExitInfo
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.base import (
    SERVER_LOG,
    Runner,
    ServiceManager,
    ServiceStatus,
    copy_file,
    output_of,
    remove_empty_dir,
    remove_files,
)

LABEL = "com.qwenclientkit.server"
PLIST = f"{LABEL}.plist"
SHELL = "/bin/sh"


def render_plist(home: Home, *, shell: str = SHELL) -> str:
    """The LaunchAgent plist for ``home`` (XML-escaped by the template environment); ``ExitTimeOut`` is the kit's
    one stop bound (``SERVER_STOP_TIMEOUT_S``) instead of launchd's default 20 s."""
    return render_template("launchd.plist.j2", label=LABEL, shell=shell, script=home.run_sh, workdir=home.root,
                           log=home.logs_dir / SERVER_LOG, stop_timeout_s=SERVER_STOP_TIMEOUT_S)


class LaunchdManager(ServiceManager):
    """``launchctl`` driving the LaunchAgent of user ``uid``."""

    name = "launchd"

    def __init__(self, home: Home, *, uid: int, agents_dir: Path, runner: Runner = run_command) -> None:
        super().__init__(home, runner=runner)
        self.uid = uid
        self.agents_dir = agents_dir

    @property
    def domain(self) -> str:
        return f"gui/{self.uid}"

    @property
    def service_target(self) -> str:
        return f"{self.domain}/{LABEL}"

    @property
    def home_copy(self) -> Path:
        return self.home.services_dir / PLIST

    @property
    def agent_plist(self) -> Path:
        return self.agents_dir / PLIST

    @property
    def definition_paths(self) -> list[Path]:
        return [self.agent_plist, self.home_copy]

    def available(self) -> tuple[bool, str]:
        result = self.run("launchctl", "print", self.domain, timeout=10)
        return result.returncode == 0, output_of(result)


    @property
    def log_file(self) -> Path:
        """The plist's StandardOutPath and StandardErrorPath."""
        return self.home.logs_dir / SERVER_LOG

    def last_exit(self) -> ExitInfo | None:
        """``launchctl list``'s Status column for our label: the last exit status, or the negative of the signal
        that killed the job (launchctl(1), "list")."""
        result = self.run("launchctl", "list", timeout=10)
        for line in (result.stdout or "").splitlines():
            fields = line.split()
            status = decimal_int(fields[1], signed=True) if len(fields) == 3 and fields[2] == LABEL else None
            if status is not None:
                return ExitInfo(signal=-status) if status < 0 else ExitInfo(code=status)
        return None

    def _loaded(self) -> bool:
        return self.run("launchctl", "print", self.service_target, timeout=10).returncode == 0

    def rendered(self, spec: LaunchSpec) -> list[RenderedFile]:
        text = render_plist(self.home)
        return [RenderedFile(self.home_copy, text), RenderedFile(self.agent_plist, text)]

    def install(self, spec: LaunchSpec) -> None:
        self.prepare_logs()  # launchd creates the log file, not its folder
        self.rendered(spec)[0].write()
        copy_file(self.home_copy, self.agent_plist)
        if self._loaded():  # an old definition stays in force until unloaded
            self.run("launchctl", "bootout", self.service_target)

    def start(self) -> None:
        self.prepare_logs()
        if self._loaded():
            self.must("launchctl", "kickstart", "-k", self.service_target)  # -k: kill the running one first
        else:
            self.must("launchctl", "bootstrap", self.domain, str(self.agent_plist))  # RunAtLoad starts it

    def stop(self) -> None:
        if self._loaded():
            self.must("launchctl", "bootout", self.service_target)

    def status(self) -> ServiceStatus:
        installed = self.agent_plist.exists()
        result = self.run("launchctl", "print", self.service_target, timeout=10)
        state = ""
        for line in result.stdout.splitlines():  # launchctl print: "\tstate = running"
            key, sep, value = line.strip().partition(" = ")
            if sep and key == "state":
                state = value.strip()
                break
        loaded = result.returncode == 0
        return ServiceStatus(self.name, installed, loaded and state == "running", installed,
                             state or ("loaded" if loaded else "not loaded"))

    def uninstall(self) -> None:
        if self._loaded():
            self.run("launchctl", "bootout", self.service_target)
        remove_files(self.definition_paths)
        remove_empty_dir(self.home.services_dir)
