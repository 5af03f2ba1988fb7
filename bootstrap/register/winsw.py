"""Windows service through WinSW 2.12 (DESIGN.md §5, admin): ``<home>\\service\\qwenclientkit-service.exe`` + XML.

llama-server is not a service-control-manager-aware program (``sc create`` on it times out, error 1053: field
notes), so the pinned WinSW wrapper is copied next to its XML under one base name: WinSW 2.x reads
``<exe-name>.xml`` from its own folder. Its CLI (``install``, ``start``, ``stop``, ``restart``, ``status``,
``uninstall``); ``status`` prints ``NonExistent``, ``Started`` or ``Stopped`` (WinSW 2.x ``StatusCommand``).
WinSW's download is not done here: bundles ship it and the caller passes its path.
"""

from __future__ import annotations

from pathlib import Path

from bootstrap.core.console import t
from bootstrap.core.errors import UnsupportedMachine
from bootstrap.core.home import Home
from bootstrap.core.processes import SERVER_STOP_TIMEOUT_S, run_command
from bootstrap.core.templating import RenderedFile, render_template
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.base import (
    SERVICE_ID,
    Runner,
    ServiceManager,
    ServiceStatus,
    copy_file,
    remove_empty_dir,
    remove_files,
)

WRAPPER_BASE = f"{SERVICE_ID}-service"
WINSW_VERSION = "2.12.0"


def render_winsw_xml(spec: LaunchSpec, home: Home) -> str:
    """The WinSW definition: llama-server with one ``<argument>`` per word (XML-escaped by the environment), and
    the variables the start scripts set (a router's key file for its children: ``LaunchSpec.child_env``)."""
    program, *arguments = spec.argv()  # llama-server, or the kit's front before the router (several models)
    return render_template("winsw.xml.j2", service_id=SERVICE_ID, executable=program,
                           arguments=arguments, workdir=str(home.root), logpath=str(home.logs_dir),
                           stop_timeout_s=SERVER_STOP_TIMEOUT_S, env=sorted(spec.child_env().items()))


class WinswManager(ServiceManager):
    """The wrapper exe driving service ``qwenclientkit``; ``winsw_source`` is WinSW's exe (from a bundle)."""

    name = "winsw"
    rolls_its_log = True  # <log mode="roll-by-size"> (templates/winsw.xml.j2)

    @property
    def start_script(self) -> Path:
        return self.home.run_bat

    def __init__(self, home: Home, *, winsw_source: Path | None, runner: Runner = run_command,
                 offered: bool = False) -> None:
        super().__init__(home, runner=runner)
        self.winsw_source = winsw_source
        self.offered = offered  # an install's bundle carries WinSW: it is fetched after the confirmation screen

    @property
    def exe(self) -> Path:
        return self.home.services_dir / f"{WRAPPER_BASE}.exe"

    @property
    def xml_path(self) -> Path:
        return self.home.services_dir / f"{WRAPPER_BASE}.xml"

    @property
    def definition_paths(self) -> list[Path]:
        return [self.xml_path, self.exe]

    def available(self) -> tuple[bool, str]:
        source = self.winsw_source
        if source is not None and Path(source).is_file():
            return True, str(source)
        if self.offered:
            return True, "WinSW from the bundle"
        if self.exe.is_file():
            return True, str(self.exe)
        return False, f"WinSW {WINSW_VERSION} not found"


    @property
    def log_file(self) -> Path:
        """WinSW writes the wrapped program's stderr (where llama-server logs) to ``<logpath>/<id>.err.log``."""
        return self.home.logs_dir / f"{SERVICE_ID}.err.log"

    def _state(self) -> str:
        if not self.exe.is_file():
            return "NonExistent"
        result = self.run(str(self.exe), "status", timeout=30)
        return result.stdout.strip().splitlines()[-1].strip() if result.stdout.strip() else "NonExistent"

    def rendered(self, spec: LaunchSpec) -> list[RenderedFile]:
        return [RenderedFile(self.xml_path, render_winsw_xml(spec, self.home), newline="\r\n")]

    def install(self, spec: LaunchSpec) -> None:
        # WinSW from a bundle, else the copy a previous install left (a rerun that writes the definition again)
        source = self.winsw_source if self.winsw_source is not None or not self.exe.is_file() else self.exe
        if source is None or not Path(source).is_file():
            raise UnsupportedMachine(t("service.err_winsw_missing", path=source or WINSW_VERSION),
                                     t("service.hint_winsw_missing"))
        was = self._state()
        if was == "Started":
            self.must(self.exe, "stop")
        if was != "NonExistent":  # the service keeps its old settings until reinstalled
            self.must(self.exe, "uninstall")
        if Path(source).resolve() != self.exe.resolve():
            copy_file(Path(source), self.exe)
        self.prepare_logs()
        self.rendered(spec)[0].write()
        self.must(self.exe, "install")

    def start(self) -> None:
        self.prepare_logs()
        self.must(self.exe, "restart" if self._state() == "Started" else "start")

    def stop(self) -> None:
        if self._state() == "Started":
            self.must(self.exe, "stop")

    def status(self) -> ServiceStatus:
        state = self._state()
        installed = state != "NonExistent"
        return ServiceStatus(self.name, installed, state == "Started", installed, state)

    def uninstall(self) -> None:
        state = self._state()
        if state == "Started":
            self.run(str(self.exe), "stop")
        if state != "NonExistent":
            self.run(str(self.exe), "uninstall")
        remove_files(self.definition_paths)
        remove_empty_dir(self.home.services_dir)
