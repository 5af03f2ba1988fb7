"""``qwenkit status [--json] [--open]``: what is installed in this home and whether the server answers with its key.

Exit 0 when healthy, 6 when something is installed but not serving (so scripts can ``qwenkit status || …``),
2 when nothing is installed. Cheap: no file is hashed (sizes only) and each HTTP call has a 3 s limit.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from typing import Any

from bootstrap.core import console
from bootstrap.core.console import info, t, warn
from bootstrap.core.errors import ExitCode
from bootstrap.core.home import Home, resolve_home
from bootstrap.place.api_key import exposed
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.record.failure_record import FailureRecord, load_failure
from bootstrap.record.state import InstallState, load_launch_spec, load_state, require_state, resolve_in_home
from bootstrap.register.server_health import Health, check_health
from bootstrap.verify.chat import open_web_ui


@dataclass(frozen=True)
class StatusReport:
    home: Home
    state: InstallState
    spec: LaunchSpec
    health: Health
    problems: tuple[str, ...]
    service: dict[str, Any] | None
    warnings: tuple[str, ...] = ()  # not wrong enough to stop serving: a key other users can read
    last_failure: FailureRecord | None = None  # the last attempt that failed (an upgrade refused, a start…)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "home": str(self.home.root),
            "healthy": self.healthy,
            "health": self.health.state,
            "problems": list(self.problems),
            "model": self.state.model_id,
            "quant": self.state.quant,
            "alias": self.spec.alias,
            "endpoint": self.spec.client_openai_url,
            "exposed": self.spec.exposed,
            "warnings": list(self.warnings),
            "api_key_file": str(self.spec.api_key_file),
            "engine": {"build": self.state.engine.build, "variant": self.state.engine.variant,
                       "version": self.state.engine.version, "server": str(self.spec.server),
                       "given_up": [asdict(g) for g in self.state.engine.given_up],
                       "selftest_s": self.state.engine.selftest_s},
            "args": list(self.spec.args),
            "retried": self.state.server.retried,
            "last_failure": None if self.last_failure is None else asdict(self.last_failure),
            "service": self.service,
            "start_script": str(self.home.run_bat if self.state.system == "Windows" else self.home.run_sh),
        }


def _file_problems(state: InstallState, home: Home, spec: LaunchSpec) -> list[str]:
    problems = []
    if not spec.server.is_file():
        problems.append(t("status.problem_engine", path=spec.server))
    for record in state.files:
        path = resolve_in_home(home, record.path)
        try:
            intact = path.stat().st_size == record.size
        except OSError:
            intact = False
        if not intact:
            problems.append(t("status.problem_file", role=record.role, path=path))
    if not home.api_key_file.is_file():
        problems.append(t("status.problem_key", path=home.api_key_file))
    return problems


def _health_problem(health: Health, spec: LaunchSpec) -> str | None:
    if health.state == "ok":
        return None
    if health.state == "loading":
        return t("status.problem_loading")
    if health.state == "auth":
        return t("status.problem_auth")
    if health.state == "no_model":
        return t("status.problem_model", model=spec.alias)
    return t("status.problem_down", url=spec.base_url, detail=health.detail)


def _service_status(state: InstallState, home: Home, spec: LaunchSpec) -> dict[str, Any] | None:
    """The service manager's view, when one was registered."""
    if state.service is None:
        return None
    from bootstrap.register import choose_manager, this_system  # late: the service package pulls OS-specific helpers

    manager = choose_manager(this_system(), home, admin=False, health_url=f"{spec.base_url}/health")
    return asdict(manager.status())


def collect(home: Home) -> StatusReport:
    """Everything ``status`` reports, as a record (the installer's final report reuses it)."""
    state = require_state(home)
    spec = load_launch_spec(home)
    problems = _file_problems(state, home, spec)
    key = home.api_key_file.read_text(encoding="utf-8").strip() if home.api_key_file.is_file() else ""
    health = check_health(spec, key)
    problem = _health_problem(health, spec)
    if problem:
        problems.append(problem)
    warnings = tuple(t("status.key_exposed", path=path) for path in exposed(home))
    if spec.exposed:
        warnings += (t("status.exposed", host=spec.host, endpoint=spec.client_openai_url),)
    return StatusReport(home, state, spec, health, tuple(problems), _service_status(state, home, spec), warnings,
                        load_failure(home))


def _fallback_notes(state: InstallState) -> list[str]:
    """What the install gave up to run here: engine builds that could not start, a plan made smaller."""
    notes = [t("failure.status_fallback", note=t("failure.fallback", used=state.engine.variant, failed=g.variant,
                                                  reason=f"{g.cause}: {g.detail}"))
             for g in state.engine.given_up]
    if state.server.retried:
        notes.append(state.server.retried)
    return notes


def _not_installed(home: Home, as_json: bool) -> None:
    """Nothing installed: say why the last attempt failed, when one did, then the usual exit 2."""
    failure = load_failure(home)
    if as_json:
        console.emit_json({"home": str(home.root), "installed": False, "healthy": False,
                           "last_failure": None if failure is None else asdict(failure)})
    elif failure is not None:
        warn(t("failure.status_last", when=failure.when, message=failure.message))
    require_state(home)  # raises the "nothing installed" error (exit 2)


def run(args: argparse.Namespace) -> int:
    home = resolve_home(getattr(args, "home", None))
    if load_state(home) is None:
        _not_installed(home, bool(args.json))
    report = collect(home)
    if args.json:
        console.emit_json(report.to_json())
    else:
        spec = report.spec
        info(t("status.title", home=home.root))
        info(t("status.line_model", model=report.state.model_id, quant=report.state.quant))
        info(t("status.line_engine", build=report.state.engine.build, variant=report.state.engine.variant))
        info(t("status.line_endpoint", endpoint=spec.client_openai_url))
        info(t("status.line_key", path=spec.api_key_file))
        if report.service is not None:
            info(t("status.line_service", detail=report.service.get("detail", "")))
        info(t("status.line_scripts", script=report.to_json()["start_script"]))
        for warning in report.warnings:
            warn(warning)
        for note in _fallback_notes(report.state):
            warn(note)
        if report.last_failure is not None:
            warn(t("failure.status_last", when=report.last_failure.when, message=report.last_failure.message))
        if report.healthy:
            console.ok(t("status.healthy", model=spec.alias, endpoint=spec.client_openai_url))
        else:
            console.error(t("status.unhealthy", problems="; ".join(report.problems)),
                          t("status.hint_unhealthy", script=report.to_json()["start_script"], logs=home.logs_dir))
    if getattr(args, "open", False) and report.healthy:
        open_web_ui(report.spec)  # llama-server's own chat page, only when asked
    return int(ExitCode.OK if report.healthy else ExitCode.SERVER)
