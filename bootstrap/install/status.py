"""What is installed in a home and whether its server answers with its key: the record behind ``qwenkit status``.

Cheap: no file is hashed (sizes only) and each HTTP call has a 3 s limit. Before any request, the OS is asked who
holds the port (``register/server_identity.py``): another program there is named and gets nothing, the key least of
all. The chat page is checked (``GET /`` and its files, ``verify/web_page.py``) and the server's own figures read
(context and slots from ``/props``, memory and uptime of its process) only while it is healthy. Problems (a file
missing or resized, a key that is a link, the server down, loading, refusing the key, or a stranger on the port) make
the install unhealthy; warnings (a key other users can read, a home or start script every user may change, a server
reachable from other machines) do not.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import psutil

from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError
from bootstrap.core.home import Home
from bootstrap.core.home_modes import world_writable
from bootstrap.place.api_key import exposed, read_api_key
from bootstrap.plan.launch_spec import LaunchSpec, request_ctx_of
from bootstrap.plan.presets import Preset
from bootstrap.record.failure_record import FailureRecord, load_failure
from bootstrap.record.state import InstallState, load_launch_spec, model_kind, require_state, resolve_in_home
from bootstrap.register import prompt_cache
from bootstrap.register.server_health import Health, check_health, server_props
from bootstrap.register.server_identity import uptime_s
from bootstrap.verify.rpc_workers import WorkerReach, endpoints_in, reach
from bootstrap.verify.web_page import WebPage, check_web_page


@dataclass(frozen=True)
class ServerFigures:
    """The running server as the OS and the server itself report it (only for a healthy server of this home)."""

    pid: int
    uptime_s: float | None
    rss_bytes: int | None  # resident memory of the server process
    swap_bytes: int | None  # its pages in swap (Linux: ``/proc/<pid>/smaps_rollup``; None where the OS does not say)
    planned_ram_bytes: int | None  # what the plan predicted for host RAM (``state.json``; None in older records)
    ctx: int | None  # tokens one request gets (``/props``)
    slots: int | None  # requests served at the same time (``/props``)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ModelStatus:
    """One installed model: its name (what requests send as ``"model"``), role, what it is for (``kind``: chat,
    embedding, or vision: a chat model with a projector), the tokens one request may use (its child's own
    ``n_ctx`` while loaded, else its flags'), and whether the server has it loaded now (the router's ``GET
    /models``: "loaded", "loading", "unloaded", "sleeping"; a single-model server: "loaded" while healthy,
    "sleeping" when ``/props`` says its keep-alive freed it; None when the server did not say)."""

    name: str
    role: str
    default: bool
    quant: str
    loaded: str | None
    planned_ram_bytes: int | None
    kind: str = "chat"
    ctx: int | None = None
    preset: Preset | None = None  # install MODEL --system/--temperature/… (plan/presets.py)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "preset": None if self.preset is None else self.preset.to_json()}


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
    server: ServerFigures | None = None  # the running server's figures, only while it is healthy
    models: tuple[ModelStatus, ...] = ()  # every installed model, the default first
    workers: tuple[WorkerReach, ...] = ()  # the RPC workers the server was started with (``install --rpc``)
    prompt_cache: dict[str, Any] | None = None  # the saved slots (register/prompt_cache.summary; None: router mode)

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def start_script(self) -> str:
        return str(self.home.start_script(self.state.system))

    @property
    def preset(self) -> Preset | None:
        """The default model's preset (``install --system/--temperature/…``), None without one."""
        return self.state.request.preset if self.state.request is not None else None

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
            "preset": self.preset.to_json() if self.preset is not None else None,  # plan/presets.py
            "retried": self.state.server.retried,
            # measured vs predicted at the last verify (null: recorded before it existed)
            "speed": None if self.state.speed is None else self.state.speed.to_json(),
            "last_failure": None if self.last_failure is None else asdict(self.last_failure),
            "service": self.service,
            "start_script": self.start_script,
            "web_page": None if self.web_page is None else self.web_page.to_json(),
            "port_holder": None if self.health.holder is None else self.health.holder.to_json(),
            "server": None if self.server is None else self.server.to_json(),
            "logs": str(self.home.logs_dir),
            "models": [m.to_json() for m in self.models],
            "models_max": self.spec.models_max if self.spec.router else 1,
            "rpc_workers": [asdict(w) for w in self.workers],
            "prompt_cache": self.prompt_cache,
        }


def collect(home: Home) -> StatusReport:
    """Everything ``status`` reports, as a record; nothing installed is exit 2 (``require_state``)."""
    state = require_state(home)
    spec = load_launch_spec(home)
    problems = _file_problems(state, home, spec)
    workers = tuple(reach(e) for e in endpoints_in(spec.args))
    problems += [t("rpc.status_worker_down", endpoint=w.endpoint) for w in workers if not w.answers]
    try:
        key: str | None = read_api_key(home)  # never through a link (``place/api_key.py``)
    except QwenKitError as exc:
        key = None
        problems.append(exc.message)
    health = check_health(spec, key or "")
    problem = _health_problem(health, spec)
    if problem and not (key is None and health.state == "auth"):  # a key we could not read: said above
        problems.append(problem)
    warnings = tuple(t("status.key_exposed", path=path) for path in exposed(home))
    warnings += tuple(t("modes.world_writable", path=path) for path in world_writable(home))
    if spec.exposed:
        warnings += (t("status.exposed", host=spec.host, endpoint=spec.client_openai_url),)
    page = check_web_page(spec) if not problems else None
    figures = _figures(state, spec, health, key) if not problems and key else None
    models = _models(state, spec, key if not problems else None)
    return StatusReport(home, state, spec, health, tuple(problems), _service_status(state, home, spec), warnings,
                        load_failure(home), page, figures, models, workers, prompt_cache.spec_summary(spec))


def _models(state: InstallState, spec: LaunchSpec, key: str | None) -> tuple[ModelStatus, ...]:
    """The default model and the library, each with what the running server says of it."""
    loaded: dict[str, str] = {}
    served_ctx: dict[str, int] = {}  # a loaded model's own n_ctx per request, as its child reports it
    if key and spec.router:
        from bootstrap.verify.models_check import listed_models

        try:
            for doc in listed_models(spec, key, timeout=3.0):
                status, meta = doc.get("status"), doc.get("meta")
                if isinstance(status, dict) and isinstance(status.get("value"), str):
                    loaded[str(doc.get("id"))] = status["value"]
                n_ctx = meta.get("n_ctx") if isinstance(meta, dict) else None
                if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
                    served_ctx[str(doc.get("id"))] = n_ctx
        except QwenKitError:
            pass
    elif key:  # one model's server: loaded while healthy, or asleep after its keep-alive (``/props`` says)
        props = server_props(spec, key)
        loaded[spec.alias] = "sleeping" if props is not None and props.sleeping else "loaded"
    rows = [ModelStatus(spec.alias, "chat", True, state.quant, loaded.get(spec.alias), state.server.planned_ram,
                        model_kind("chat", state.file("mmproj") is not None),
                        served_ctx.get(spec.alias) or request_ctx_of(spec.args),
                        state.request.preset if state.request is not None else None)]
    rows += [ModelStatus(m.name, m.role, False, m.quant, loaded.get(m.name), m.planned_ram, m.kind,
                         served_ctx.get(m.name) or request_ctx_of(m.args), m.preset) for m in state.library]
    return tuple(rows)


def _figures(state: InstallState, spec: LaunchSpec, health: Health, key: str) -> ServerFigures | None:
    """The healthy server's figures: its process (found by ``check_health``'s look at the port) and ``/props``."""
    holder = health.holder
    if holder is None or not holder.ours or holder.pid is None:
        return None
    try:
        proc = psutil.Process(holder.pid)
    except (psutil.Error, OSError):
        return None
    rss = swap = None
    # A router's models run in child processes of its own: the memory in use is theirs and its, added up.
    procs = [proc, *(_children(proc) if spec.router else [])]
    try:
        rss = sum(int(p.memory_info().rss) for p in procs)
        swaps = [getattr(p.memory_full_info(), "swap", None) for p in procs]
        swap = None if any(v is None for v in swaps) else sum(int(v) for v in swaps if v is not None)
    except (psutil.Error, OSError):
        pass
    props = server_props(spec, key)
    planned = state.server.planned_ram
    if spec.router and planned is not None:
        planned += sum(m.planned_ram or 0 for m in state.library)
    return ServerFigures(holder.pid, uptime_s(proc), rss, None if swap is None else int(swap),
                         planned, props.ctx if props else None, props.slots if props else None)


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return list(proc.children(recursive=True))
    except (psutil.Error, OSError):
        return []


def _file_problems(state: InstallState, home: Home, spec: LaunchSpec) -> list[str]:
    problems = []
    if not spec.server.is_file():
        problems.append(t("status.problem_engine", path=spec.server))
    for record in (*state.files, *(f for m in state.library for f in m.files)):
        path = resolve_in_home(home, record.path)
        try:
            intact = path.stat().st_size == record.size
        except OSError:
            intact = False
        if not intact:
            problems.append(t("status.problem_file", role=record.role, path=path))
    return problems


def _health_problem(health: Health, spec: LaunchSpec) -> str | None:
    if health.state == "ok":
        return None
    if health.state == "stranger":
        return health.detail
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
