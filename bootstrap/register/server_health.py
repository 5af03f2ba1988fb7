"""Is this install's server up, loaded and answering with its key? One quick, side-effect-free look.

Local requests never go through a proxy (``http_session.local_session``).
"""

from __future__ import annotations

from dataclasses import dataclass

import requests

from bootstrap.core.console import t
from bootstrap.core.net_causes import cause_of
from bootstrap.fetch.http_session import local_session
from bootstrap.fetch.records import cause_text
from bootstrap.plan.launch_spec import LaunchSpec

HEALTH_STATES = ("ok", "loading", "down", "auth", "no_model")


@dataclass(frozen=True)
class Health:
    state: str  # one of HEALTH_STATES
    detail: str = ""  # why, in the UI language (a network failure named by ``records.cause_text``)
    models: tuple[str, ...] = ()


def check_health(spec: LaunchSpec, api_key: str, *, timeout: float = 3.0) -> Health:
    """``/health`` (public) then ``/v1/models`` with the key: the alias must be listed."""
    with local_session() as session:
        try:
            resp = session.get(f"{spec.base_url}/health", timeout=timeout)
        except requests.RequestException as exc:
            return Health("down", why_down(exc, timeout))
        if resp.status_code == 503:
            return Health("loading", "503")
        if resp.status_code != 200:
            return Health("down", f"HTTP {resp.status_code}")
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


def why_down(exc: requests.RequestException, timeout: float) -> str:
    """Why a local server did not answer, in the UI language: not listening, or listening but silent; anything
    else as the download sources' failures are named (``records.cause_text``)."""
    kind = cause_of(exc).kind
    if kind == "refused":
        return t("health.down_refused")
    if kind == "timeout":
        return t("health.down_silent", seconds=f"{timeout:g}")
    return cause_text(exc, timeout)[0]
