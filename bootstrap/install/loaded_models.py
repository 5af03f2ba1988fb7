"""What is loaded now, model by model: the record behind ``qwenkit ps`` (``ollama ps``, LM Studio's ``lms ps``).

Read only from what never wakes a model or resets its idle timer (llama.cpp b11434 ``tools/server/README.md``
"Sleeping on Idle": ``GET /health``, ``/props``, ``/models`` are exempt; ``GET /slots`` is a task that wakes a
sleeping server and starts its idle time again, so it is never asked):

- the state: a router's ``GET /models`` ``status.value`` ("loaded", "loading", "unloaded", "sleeping"); one
  model's server: ``/health`` (503 while loading) and ``/props`` ``is_sleeping``;
- the slots: ``/props`` ``total_slots`` (``register/server_health.server_props``; a router's with
  ``?model=NAME&autoload=false``, which never loads an unloaded model), else the model's ``-np``;
- memory measured: the resident set of the process that holds the model (a router's child for that model, found
  by the port the router gave it in ``status.args``; one model's server itself) beside the plan's figure for that
  model (``state.json``). A sleeping or unloaded model holds no weights: its figure is what is left (the child's
  bare process) or nothing;
- busy and idle (several models): the kit's front counts the requests it passes on per model and when the last
  one ended (``register/router_front.Activity``); "unloads in" is the keep-alive less the idle time. One model's
  server has no front and the engine publishes neither (its idle timer has no endpoint), so there they are unknown.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import psutil
import requests

from bootstrap.core.errors import QwenKitError
from bootstrap.core.home import Home
from bootstrap.fetch.http_session import local_session
from bootstrap.place.api_key import read_api_key
from bootstrap.plan.keep_alive import sleep_seconds
from bootstrap.plan.launch_spec import LaunchSpec, parallel_of
from bootstrap.record.state import keep_alive_of, load_launch_spec, require_state
from bootstrap.register.server_health import Health, check_health, server_props

STATES = ("loaded", "loading", "unloaded", "sleeping")


@dataclass(frozen=True)
class LoadedModel:
    """One installed model as the running server has it now."""

    name: str
    default: bool
    state: str | None  # one of STATES; None: the server did not say (down)
    pid: int | None  # the process that holds it (a router's child; one model's server)
    rss_bytes: int | None  # its resident memory now
    planned_ram_bytes: int | None  # what the plan predicted for this model (state.json)
    slots: int | None  # requests it serves at once
    keep_alive_s: int  # idle seconds before the engine frees it (-1: never)
    busy: int | None = None  # requests it is serving now (the front's count; None: not known)
    idle_s: float | None = None  # seconds since its last request ended (None: not known, or busy)
    unloads_in_s: float | None = None  # seconds until the engine frees it (None: never, not loaded, or not known)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LoadedReport:
    home: Home
    health: Health
    router: bool
    models: tuple[LoadedModel, ...]

    @property
    def serving(self) -> bool:
        return self.health.state in ("ok", "loading")

    def to_json(self) -> dict[str, Any]:
        return {"home": str(self.home.root), "server": self.health.state, "router": self.router,
                "models": [m.to_json() for m in self.models]}


def collect(home: Home) -> LoadedReport:
    """Every installed model with what the server says of it now; nothing installed is exit 2."""
    state = require_state(home)
    spec = load_launch_spec(home)
    try:
        key = read_api_key(home)
    except QwenKitError:
        key = ""
    health = check_health(spec, key)
    keep = keep_alive_of(state)
    planned = {spec.alias: state.server.planned_ram, **{m.name: m.planned_ram for m in state.library}}
    flags = {spec.alias: state.server.args, **{m.name: m.args for m in state.library}}
    root = _process(health)
    if spec.router:
        docs = _router_models(spec, key) if health.state == "ok" else {}
        activity = _activity(spec, key) if health.state == "ok" and spec.fronted else None
        rows = []
        for name in planned:
            doc = docs.get(name, {})
            status = doc.get("status") if isinstance(doc.get("status"), dict) else {}
            value = status.get("value") if isinstance(status.get("value"), str) else None
            proc = _child_on(root, _port_of(status.get("args"))) if value in ("loaded", "sleeping", "loading") \
                else None
            props = server_props(spec, key, model=name) if value in ("loaded", "sleeping") else None
            slots = None if props is None else props.slots
            rows.append(_with_activity(
                LoadedModel(name, name == spec.alias, value if value in STATES else None,
                            None if proc is None else proc.pid, _rss(proc), planned[name],
                            slots or parallel_of(flags[name]), keep), activity))
        return LoadedReport(home, health, True, tuple(rows))
    value: str | None = None
    slots = None
    if health.state == "loading":
        value = "loading"
    elif health.state == "ok":
        props = server_props(spec, key)
        value = "sleeping" if props is not None and props.sleeping else "loaded"
        slots = None if props is None else props.slots
    proc = root if value is not None else None
    row = LoadedModel(spec.alias, True, value, None if proc is None else proc.pid, _rss(proc),
                      state.server.planned_ram, slots or parallel_of(state.server.args), keep)
    return LoadedReport(home, health, False, (row,))


def _activity(spec: LaunchSpec, key: str) -> dict[str, Any] | None:
    """The front's count of requests per model (``router_front.ACTIVITY_PATH``); None from an older front."""
    from bootstrap.register.router_front import ACTIVITY_PATH

    with local_session() as session:
        try:
            resp = session.get(f"{spec.base_url}{ACTIVITY_PATH}", timeout=3.0,
                               headers={"Authorization": f"Bearer {key}"})
            doc = resp.json() if resp.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict):
        return None
    return doc


def _with_activity(row: LoadedModel, activity: dict[str, Any] | None) -> LoadedModel:
    """``row`` with its busy count, idle time and time left before the engine frees it, from the front's figures.
    A model not asked since the front started has been idle since then (its child's idle timer started at its
    load, no earlier)."""
    if activity is None or row.state not in ("loaded", "sleeping"):
        return row
    mine = activity["models"].get(row.name)
    mine = mine if isinstance(mine, dict) else {}
    busy = mine.get("busy") if isinstance(mine.get("busy"), int) else 0
    since = mine.get("last_end") if isinstance(mine.get("last_end"), (int, float)) else activity.get("started")
    if busy or not isinstance(since, (int, float)):
        return replace(row, busy=busy)
    idle = max(0.0, time.time() - since)
    left = None
    if row.state == "loaded" and row.keep_alive_s >= 0:
        left = max(0.0, float(sleep_seconds(row.keep_alive_s) or 0) - idle)
    return replace(row, busy=0, idle_s=idle, unloads_in_s=left)


def _process(health: Health) -> psutil.Process | None:
    holder = health.holder
    if holder is None or not holder.ours or holder.pid is None:
        return None
    try:
        return psutil.Process(holder.pid)
    except (psutil.Error, OSError):
        return None


def _router_models(spec: LaunchSpec, key: str) -> dict[str, dict[str, Any]]:
    from bootstrap.verify.models_check import listed_models

    try:
        return {str(d.get("id")): d for d in listed_models(spec, key, timeout=3.0)}
    except QwenKitError:
        return {}


def _port_of(args: Any) -> int | None:
    """The port the router gave a model's child (``--port N`` in ``status.args``)."""
    if not isinstance(args, list):
        return None
    words = [str(a) for a in args]
    for i, word in enumerate(words[:-1]):
        if word == "--port" and words[i + 1].isdigit():
            return int(words[i + 1])
    return None


def _child_on(root: psutil.Process | None, port: int | None) -> psutil.Process | None:
    """The router's child that was started with ``--port PORT`` (the front's and the router's descendants)."""
    if root is None or port is None:
        return None
    try:
        children = root.children(recursive=True)
    except (psutil.Error, OSError):
        return None
    for proc in children:
        try:
            words = proc.cmdline()
        except (psutil.Error, OSError):
            continue
        if any(w == "--port" and i + 1 < len(words) and words[i + 1] == str(port) for i, w in enumerate(words)):
            return proc
    return None


def _rss(proc: psutil.Process | None) -> int | None:
    if proc is None:
        return None
    try:
        return int(proc.memory_info().rss)
    except (psutil.Error, OSError):
        return None
