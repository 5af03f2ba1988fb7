"""Is this install's server up, loaded and answering with its key? One quick, side-effect-free look.

The OS is asked first who holds the port (``server_identity``): a program that is not this home's engine is named
("stranger") and gets no request at all, so neither the key nor a "healthy" verdict goes to whoever listens there.
Local requests never go through a proxy (``http_session.local_session``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from bootstrap.core.console import t
from bootstrap.core.net_causes import cause_of
from bootstrap.fetch.http_session import local_session
from bootstrap.fetch.records import cause_text
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.server_identity import PortHolder, port_holder

HEALTH_STATES = ("ok", "loading", "down", "auth", "no_model", "stranger")


@dataclass(frozen=True)
class Health:
    state: str  # one of HEALTH_STATES
    detail: str = ""  # why, in the UI language (a network failure named by ``records.cause_text``)
    models: tuple[str, ...] = ()
    holder: PortHolder | None = None  # who listens on the port (None: not asked, ``ask_server`` alone)


@dataclass(frozen=True)
class ServerProps:
    """What llama-server says about its own setup (``GET /props``, llama.cpp ``tools/server/README.md``)."""

    ctx: int | None  # ``default_generation_settings.n_ctx``: the context one request gets (per slot)
    slots: int | None  # ``total_slots``: requests served at the same time
    sleeping: bool | None = None  # ``is_sleeping``: freed by its idle sleep (``--sleep-idle-seconds``)


def check_health(spec: LaunchSpec, api_key: str, *, timeout: float = 3.0) -> Health:
    """Who holds the port (``server_identity``), then, only when it is this home's server, ``ask_server``."""
    holder = port_holder(spec)
    if holder.foreign:
        return Health("stranger", holder.describe(), holder=holder)
    if holder.state == "free":
        return Health("down", t("health.down_refused"), holder=holder)
    health = ask_server(spec, api_key, timeout=timeout)
    return Health(health.state, health.detail, health.models, holder)


def ask_server(spec: LaunchSpec, api_key: str, *, timeout: float = 3.0) -> Health:
    """``/health`` (public) then ``/v1/models`` with the key: the alias must be listed. Asks whoever listens:
    callers go through ``check_health`` (or ``server_identity.require_ours``) first."""
    health = public_health(spec, timeout=timeout)
    if health.state != "ok":
        return health
    with local_session() as session:
        try:
            resp = session.get(f"{spec.base_url}/v1/models", timeout=timeout,
                               headers={"Authorization": f"Bearer {api_key}"})
        except requests.RequestException as exc:
            return Health("down", why_down(exc, timeout))
        if resp.status_code in (401, 403):
            return Health("auth", f"HTTP {resp.status_code}")
        if resp.status_code != 200:
            return Health("down", f"HTTP {resp.status_code}")
        try:
            data = resp.json().get("data", [])
        except (ValueError, AttributeError):
            data = None
        if not isinstance(data, list):
            return Health("down", "bad /v1/models answer")
        ids = tuple(str(m.get("id")) for m in data if isinstance(m, dict))
        if spec.alias not in ids:
            return Health("no_model", ", ".join(ids), ids)
        return Health("ok", "", ids)


def public_health(spec: LaunchSpec, *, timeout: float = 3.0) -> Health:
    """``/health`` alone (public: no key is sent): "ok", "loading" (503 while the model loads) or "down"."""
    with local_session() as session:
        try:
            resp = session.get(f"{spec.base_url}/health", timeout=timeout)
        except requests.RequestException as exc:
            return Health("down", why_down(exc, timeout))
    if resp.status_code == 200:
        return Health("ok")
    return Health("loading", "503") if resp.status_code == 503 else Health("down", f"HTTP {resp.status_code}")


def server_props(spec: LaunchSpec, api_key: str, *, timeout: float = 3.0,
                 model: str | None = None) -> ServerProps | None:
    """The context and slots this server runs with (``GET /props``, which wants the key); None when it does not
    say. Only for a server ``check_health`` found to be ours and "ok"."""
    with local_session() as session:
        try:
            # a router answers /props for the model named (llama.cpp tools/server/README.md "Routing requests")
            resp = session.get(f"{spec.base_url}/props", timeout=timeout,
                               # autoload=false: a look never loads an unloaded model (server-models.cpp
                               # is_autoload)
                               params={"model": model or spec.alias, "autoload": "false"} if spec.router else None,
                               headers={"Authorization": f"Bearer {api_key}"})
            doc = resp.json() if resp.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None
    if not isinstance(doc, dict):
        return None
    settings = doc.get("default_generation_settings")
    ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    sleeping = doc.get("is_sleeping")
    return ServerProps(_count(ctx), _count(doc.get("total_slots")), sleeping if isinstance(sleeping, bool) else None)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def why_down(exc: requests.RequestException, timeout: float) -> str:
    """Why a local server did not answer, in the UI language: not listening, or listening but silent; anything
    else as the download sources' failures are named (``records.cause_text``)."""
    kind = cause_of(exc).kind
    if kind == "refused":
        return t("health.down_refused")
    if kind == "timeout":
        return t("health.down_silent", seconds=f"{timeout:g}")
    return cause_text(exc, timeout)[0]
