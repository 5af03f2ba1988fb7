"""What is installed in a home and whether its server answers with its key: the record behind ``qwenkit status``.

Cheap: no file is hashed (sizes only) and each HTTP call has a 3 s limit. The chat page is checked (``GET /`` and
its files, ``verify/web_page.py``) only while the server is healthy. Problems (a file missing or resized, the
server down, loading or refusing the key) make the install unhealthy; warnings (a key other users can read, a server
reachable from other machines) do not.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bootstrap.core.console import t
from bootstrap.core.home import Home
from bootstrap.place.api_key import exposed
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.record.failure_record import FailureRecord, load_failure
from bootstrap.record.state import InstallState, load_launch_spec, require_state, resolve_in_home
from bootstrap.register.server_health import Health, check_health
from bootstrap.verify.web_page import WebPage, check_web_page


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
    web_page: WebPage | None = None  # the chat page, checked only while the server is healthy

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def start_script(self) -> str:
        return str(self.home.run_bat if self.state.system == "Windows" else self.home.run_sh)

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
            "thinking": self.spec.thinking,  # the server's default; null: the chat template decides
            "retried": self.state.server.retried,
            # measured vs predicted at the last verify (null: recorded before it existed)
            "speed": None if self.state.speed is None else self.state.speed.to_json(),
            "last_failure": None if self.last_failure is None else asdict(self.last_failure),
            "service": self.service,
            "start_script": self.start_script,
            "web_page": None if self.web_page is None else self.web_page.to_json(),
        }


def collect(home: Home) -> StatusReport:
    """Everything ``status`` reports, as a record; nothing installed is exit 2 (``require_state``)."""
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
    page = check_web_page(spec) if not problems else None
    return StatusReport(home, state, spec, health, tuple(problems), _service_status(state, home, spec), warnings,
                        load_failure(home), page)


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
    from bootstrap.register.managers import choose_manager, this_system  # late: it loads every manager

    manager = choose_manager(this_system(), home, admin=False, health_url=f"{spec.base_url}/health")
    return asdict(manager.status())
