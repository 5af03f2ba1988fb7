"""``qwenkit stop MODEL``: free one model's memory now, its files kept (Ollama's ``ollama stop``, ``lms unload``).

With several models the router unloads it (``POST /models/unload``, llama.cpp b11434 ``tools/server/
server-models.cpp``): its child server ends, so every byte it held goes back to the OS, and the next request that
names it starts it again (the router loads on demand). The command returns once the router lists it "unloaded".

One model's server has no unload of its own (the engine frees the model only when it falls asleep after its idle
time, ``--sleep-idle-seconds``), and stopping that server would leave the endpoint answering nothing: that is
``qwenkit service stop``, which the refusal names, beside the keep-alive that frees the memory by itself.
"""

from __future__ import annotations

import time

import requests

from bootstrap.catalog.model_ref import installed_name
from bootstrap.core.console import join_names, t
from bootstrap.core.errors import ServerError, UsageError
from bootstrap.core.home import Home
from bootstrap.core.suggest import did_you_mean
from bootstrap.fetch.http_session import local_session
from bootstrap.place.api_key import read_api_key
from bootstrap.plan.keep_alive import keep_alive_text
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.record.state import keep_alive_of, launch_spec, require_state
from bootstrap.register.server_health import check_health

UNLOAD_WAIT_S = 60.0  # the router ends the child with SIGTERM, then kills it (server-models.cpp unload)


def unload(home: Home, name: str) -> bool:
    """Unload ``name``; True when it was loaded (or asleep), False when it was not. Unknown name or a one-model
    install: exit 2; the server not answering: exit 6."""
    state = require_state(home)
    spec = launch_spec(state, home)
    names = [spec.alias, *(m.name for m in state.library)]
    name = installed_name(name, names)  # any catalog name of an installed model (docs/model-names.md)
    if name not in names:
        raise UsageError(t("ps.err_unknown", name=name, names=join_names(names)),
                         did_you_mean(name, names) or t("ps.hint_unknown"))
    if not spec.router:
        raise UsageError(t("ps.err_one_model", name=name, keep=keep_alive_text(keep_alive_of(state))),
                         t("ps.hint_one_model"))
    key = read_api_key(home)
    health = check_health(spec, key)
    if health.state != "ok":
        raise ServerError(t("ps.err_down", url=spec.base_url, detail=health.detail or health.state),
                          t("ps.hint_down"))
    with local_session() as session:
        headers = {"Authorization": f"Bearer {key}"}
        try:
            resp = session.post(f"{spec.base_url}/models/unload", json={"model": name}, headers=headers,
                                timeout=30.0)
        except requests.RequestException as exc:
            raise ServerError(t("ps.err_down", url=spec.base_url, detail=str(exc)), t("ps.hint_down")) from None
        if resp.status_code == 400 and "not running" in resp.text:
            return False
        if resp.status_code != 200:
            raise ServerError(t("ps.err_unload", name=name, status=resp.status_code, detail=resp.text[:200]),
                              t("ps.hint_down"))
        _wait_unloaded(spec, session, headers, name)
    return True


def _wait_unloaded(spec: LaunchSpec, session: requests.Session, headers: dict[str, str], name: str) -> None:
    """Until the router lists ``name`` as unloaded (its child has ended: the memory is the OS's again)."""
    base = spec.base_url
    deadline = time.monotonic() + UNLOAD_WAIT_S
    while time.monotonic() < deadline:
        try:
            doc = session.get(f"{base}/models", headers=headers, timeout=5.0).json()
            entry = next((m for m in doc.get("data", []) if isinstance(m, dict) and m.get("id") == name), {})
            status = entry.get("status") if isinstance(entry.get("status"), dict) else {}
            if status.get("value") == "unloaded":
                return
        except (requests.RequestException, ValueError, AttributeError):
            pass
        time.sleep(0.2)
    raise ServerError(t("ps.err_unload_slow", name=name, seconds=int(UNLOAD_WAIT_S)), t("ps.hint_down"))


__all__ = ["unload"]
