"""Windows Task Scheduler task at logon (DESIGN.md §5, no admin): runs ``run_qwen.bat`` as the installing user.

``schtasks /Create /XML`` reads the definition as UTF-16 with a byte-order mark; the task restarts the script on
failure (``RestartOnFailure``, at most every minute, 999 times) and has no run-time limit (``PT0S``). The state is
read with PowerShell's ``Get-ScheduledTask`` because ``schtasks /Query`` prints it in the UI language; the
``State`` enum (MSFT_ScheduledTask: Unknown, Disabled, Queued, Ready, Running) is not localized.

A task has no console, so its output would be lost: the action passes ``--log-file`` with ``logs/server.log`` in the
home, which ``run_qwen.bat`` hands on to llama-server (``%*``) and llama-server writes itself (``common/arg.cpp``).
How the last run ended is ``Get-ScheduledTaskInfo``'s ``LastTaskResult``: the exit code of the action.
"""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

from bootstrap.core.console import t
from bootstrap.core.home import Home
from bootstrap.core.input_checks import decimal_int
from bootstrap.core.processes import run_command
from bootstrap.core.templating import RenderedFile, render_template
from bootstrap.place.engine_failure import ExitInfo
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.base import (
    SERVER_LOG,
    Runner,
    ServiceManager,
    ServiceStatus,
    output_of,
    remove_empty_dir,
    remove_files,
)

TASK_NAME = "QwenClientKit"
XML_NAME = "qwenclientkit-task.xml"
# Task Scheduler's own result codes (SCHED_S_* 0x000413xx, SCHED_E_* 0x800413xx; Microsoft Learn, "Task Scheduler
# Error and Success Constants"): the task's state (running, has not run, terminated by the user), not an exit code.
_SCHED_CODES = (0x00041300, 0x80041300)


def task_arguments(home: Home) -> str:
    """The action's arguments: llama-server's log file, relative to the home (run_qwen.bat starts the server
    there) because llama-server opens it with ``fopen`` on a narrow string (llama.cpp ``common/log.cpp``), which
    fails under a non-ASCII user name; double-quoted all the same (cmd.exe reads ``&`` and spaces outside quotes)."""
    return f'--log-file "{PureWindowsPath(home.logs_dir.relative_to(home.root), SERVER_LOG)}"'


def render_task_xml(home: Home, *, user_id: str) -> str:
    """The task definition (text; written as UTF-16 + BOM + CRLF by ``write_task_xml``)."""
    return render_template("task-scheduler.xml.j2", task_name=TASK_NAME, user_id=user_id,
                           command=str(home.run_bat), arguments=task_arguments(home), workdir=str(home.root))


def exit_of_task_result(text: str) -> ExitInfo | None:
    """``LastTaskResult`` as PowerShell prints it (a UInt32 in decimal) → the action's exit code; ``None`` for
    Task Scheduler's own codes and for anything else."""
    code = decimal_int(text)
    if code is None or code > 0xFFFFFFFF:
        return None
    if (code & 0xFFFFFF00) in _SCHED_CODES:
        return None
    return ExitInfo(code=code)


def task_xml_file(path: Path, text: str) -> RenderedFile:
    """UTF-16 (Python's codec writes the BOM) with Windows line ends."""
    return RenderedFile(path, text, newline="\r\n", encoding="utf-16")


def write_task_xml(path: Path, text: str) -> None:
    task_xml_file(path, text).write()


class TaskSchedulerManager(ServiceManager):
    """``schtasks`` driving the ``QwenClientKit`` task of ``user_id`` (``DOMAIN\\user`` from ``whoami``)."""

    name = "task-scheduler"

    @property
    def start_script(self) -> Path:
        return self.home.run_bat

    def __init__(self, home: Home, *, user_id: str, runner: Runner = run_command) -> None:
        super().__init__(home, runner=runner)
        self.user_id = user_id

    @property
    def xml_path(self) -> Path:
        return self.home.services_dir / XML_NAME

    @property
    def definition_paths(self) -> list[Path]:
        return [self.xml_path]

    @property
    def log_file(self) -> Path:
        """Written by llama-server itself (``task_arguments``); truncated at each start."""
        return self.home.logs_dir / SERVER_LOG

    def last_exit(self) -> ExitInfo | None:
        """The exit code of the task's last run (``run_qwen.bat`` exits with llama-server's: an NTSTATUS for a
        crash, e.g. 3221225501 = 0xC000001D, an illegal instruction)."""
        result = self.run("powershell", "-NoProfile", "-NonInteractive", "-Command",
                          f"(Get-ScheduledTaskInfo -TaskName '{TASK_NAME}' -ErrorAction Stop).LastTaskResult",
                          timeout=30)
        return exit_of_task_result(result.stdout) if result.returncode == 0 else None

    def available(self) -> tuple[bool, str]:
        """Whether a Task Scheduler answers: ``schtasks /Query`` lists the tasks the user can see, and Windows
        always has some (its own maintenance tasks under ``\\Microsoft\\Windows``). Wine's ``schtasks`` is a stub
        that exits 0 and lists nothing (and runs nothing it is given: ``/Run`` of any name "succeeds"), so an
        empty answer means no scheduler: the start script is used instead, with the usual line."""
        result = self.run("schtasks", "/Query", "/FO", "CSV", "/NH", timeout=30)
        if result.returncode != 0:
            return False, output_of(result)
        if not result.stdout.strip():
            return False, t("service.task_scheduler_empty")
        return True, ""


    def _state(self) -> str:
        """``Running``, ``Ready``, ``Disabled``… or ``""`` when the task does not exist."""
        result = self.run("powershell", "-NoProfile", "-NonInteractive", "-Command",
                          f"(Get-ScheduledTask -TaskName '{TASK_NAME}' -ErrorAction Stop).State", timeout=30)
        return result.stdout.strip() if result.returncode == 0 else ""

    def rendered(self, spec: LaunchSpec) -> list[RenderedFile]:
        return [task_xml_file(self.xml_path, render_task_xml(self.home, user_id=self.user_id))]

    def install(self, spec: LaunchSpec) -> None:
        self.prepare_logs()  # llama-server opens its log file, not the folder
        self.rendered(spec)[0].write()
        # /F replaces an existing task of that name (a rerun) without a prompt.
        self.must("schtasks", "/Create", "/TN", TASK_NAME, "/XML", str(self.xml_path), "/F")

    def start(self) -> None:
        self.prepare_logs()
        if self._state() == "Running":  # IgnoreNew would silently keep the old instance (mode 8)
            self.run("schtasks", "/End", "/TN", TASK_NAME)
        self.must("schtasks", "/Run", "/TN", TASK_NAME)

    def stop(self) -> None:
        if self._state() == "Running":
            self.must("schtasks", "/End", "/TN", TASK_NAME)

    def status(self) -> ServiceStatus:
        state = self._state()
        return ServiceStatus(self.name, bool(state), state == "Running", state not in ("", "Disabled"),
                             state or "not registered")

    def uninstall(self) -> None:
        state = self._state()
        if state == "Running":
            self.run("schtasks", "/End", "/TN", TASK_NAME)
        if state:
            self.run("schtasks", "/Delete", "/TN", TASK_NAME, "/F")
        remove_files(self.definition_paths)
        remove_empty_dir(self.home.services_dir)
