"""The prompt cache's periodic save, one rule for everyone who runs it: the supervisor (installs without a service
manager, ``register/supervisor.py``) and the cache keeper (installs run by systemd, ``register/cache_keeper.py``).

Every period the slots that changed are saved (trimmed, ``prompt_cache.save``), except:

- **a model at rest**: asleep after its keep-alive (``/props`` ``is_sleeping``) or, in a router, not loaded (400
  with ``autoload=false``). Its slots are empty and ``/slots`` would wake it. ``/props`` is answered during the
  sleep and starts no idle time (b11434 ``server-context.cpp`` ``get_props``: ``create_response(true)``);
  ``autoload=false`` never loads (``server-models.cpp`` ``is_autoload``);
- **nothing decoded since the last save** (``/metrics`` ``llamacpp:n_decode_total``): ``/slots`` is a task that
  starts the engine's idle time again (b11434 ``server-queue.cpp`` ``task_resets_idle_timer``: every task but
  ``/metrics``), so asking it every minute would keep the keep-alive's sleep from ever coming. A server started
  without ``--metrics`` (a script from before) is saved every period; ``prompt_cache.save`` skips a slot whose task
  and prompt did not change.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from bootstrap.register import prompt_cache

SAVE_INTERVAL_S = 60.0
ENV_INTERVAL = "QWENKIT_CACHE_SAVE_INTERVAL"  # seconds; shortens the period for tests


@dataclass(frozen=True)
class Load:
    """What ``/metrics`` says of the work in the server: requests being processed, ``llama_decode`` calls so far."""

    processing: int
    decodes: int


NO_METRICS = Load(-1, -1)  # a server started without --metrics, or whose /metrics is not llama.cpp's


def parse_load(text: str) -> Load:
    """``llamacpp:requests_processing`` and ``llamacpp:n_decode_total`` of llama-server's Prometheus text
    (b11434 ``server-context.cpp`` ``get_metrics``); ``NO_METRICS`` when either is missing."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("llamacpp:requests_processing", "llamacpp:n_decode_total"):
            with contextlib.suppress(ValueError):
                found[name] = int(float(value))
    if len(found) < 2:
        return NO_METRICS
    return Load(found["llamacpp:requests_processing"], found["llamacpp:n_decode_total"])


def seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds from ``env[name]``, else ``default``."""
    try:
        value = float(env.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def interval(env: Mapping[str, str] = os.environ) -> float:
    """The period: a minute, or ``QWENKIT_CACHE_SAVE_INTERVAL`` seconds."""
    return seconds(env, ENV_INTERVAL, SAVE_INTERVAL_S)


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def read_load(session: requests.Session, url: str, key: str, model: str, timeout: float) -> Load | None:
    """Requests processing and decode calls so far (``/metrics``, which starts no idle time); ``NO_METRICS`` for a
    server without it, None when it does not answer within ``timeout``."""
    try:
        resp = session.get(f"{url}/metrics", headers=_auth(key), params={"model": model} if model else None,
                           timeout=timeout)
    except requests.RequestException:
        return None
    return parse_load(resp.text) if resp.status_code == 200 else NO_METRICS


@dataclass
class PeriodicSave:
    """One server life's periodic save: the decode count at the last save and each slot's signature then (a new
    server starts a new ``PeriodicSave``)."""

    decodes_saved: int = -1
    seen: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    done: list[prompt_cache.Done] = field(default_factory=list)  # what the last "saved" run saved

    def run(self, session: requests.Session, cache: prompt_cache.Server, note: prompt_cache.Note, *, model: str = "",
            props_timeout: float = 5.0, metrics_timeout: float = 60.0) -> str:
        """Save what changed, by the module's rule: "resting", "unchanged" (nothing decoded since the last save) or
        "saved" (``prompt_cache.save`` ran; it says itself what went wrong, and skips unchanged slots)."""
        if prompt_cache.resting(session, cache.url, cache.key, model, props_timeout):
            return "resting"
        load = read_load(session, cache.url, cache.key, model, metrics_timeout)
        if load is not None and load is not NO_METRICS:
            if load.decodes == self.decodes_saved:
                return "unchanged"
            self.decodes_saved = load.decodes
        self.done = prompt_cache.save(session, cache, prompt_cache.budget_bytes(cache.folder.parent), note, self.seen)
        return "saved"
