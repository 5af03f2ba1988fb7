"""Verify stage, several models: every model of the endpoint answers a real request through the router, with the key.

A router (llama-server ``--models-preset``) answers ``/health`` before any model is loaded, so health proves little:
each model is asked for what it is for — one chat token, or one embedding of the right shape — naming it in
``"model"``, and the router must have been started with the key (``verify/key_guard.py``). The first request to
an unloaded model loads it: the timeout covers a cold load.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bootstrap.core.console import t
from bootstrap.core.errors import ServerError
from bootstrap.fetch.http_session import local_session
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.server_identity import require_ours
from bootstrap.verify.chat import checked_json, post_json
from bootstrap.verify.key_guard import require_key_guard

EMBED_PROBE = "QwenClientKit 检查 check"


@dataclass(frozen=True)
class ModelAnswer:
    name: str
    role: str
    seconds: float  # the first answer, a cold load included
    dimension: int | None = None  # an embedding's length


def _chat(session: Any, spec: LaunchSpec, name: str, auth: dict[str, str], timeout: float) -> None:
    body = {"model": name, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, "temperature": 0}
    what = f"POST /v1/chat/completions ({name})"
    doc = checked_json(post_json(session, f"{spec.openai_base_url}/chat/completions", what, timeout, body,
                                 headers=auth), what)
    if not doc.get("choices"):
        raise ServerError(t("models_check.err_no_answer", name=name), t("verify.hint_server"))


def _embedding(session: Any, spec: LaunchSpec, name: str, auth: dict[str, str], timeout: float) -> int:
    what = f"POST /v1/embeddings ({name})"
    doc = checked_json(post_json(session, f"{spec.openai_base_url}/embeddings", what, timeout,
                                 {"model": name, "input": EMBED_PROBE}, headers=auth), what)
    data = doc.get("data") or [{}]
    vector = data[0].get("embedding") if isinstance(data[0], dict) else None
    if not isinstance(vector, list) or not vector or not all(isinstance(v, (int, float)) for v in vector):
        raise ServerError(t("models_check.err_no_vector", name=name), t("verify.hint_server"))
    return len(vector)


def check_models(spec: LaunchSpec, api_key: str, models: Sequence[tuple[str, str]], timeout: float
                 ) -> list[ModelAnswer]:
    """Ask each ``(name, role)`` through the endpoint; ``ServerError`` (exit 6) naming the first that fails."""
    holder = require_ours(spec)  # the key goes only to this home's server
    auth = {"Authorization": f"Bearer {api_key}"}
    answers = []
    with local_session() as session:
        first = models[0][0]
        require_key_guard(spec, holder, lambda: post_json(
            session, f"{spec.openai_base_url}/chat/completions", "POST /v1/chat/completions", timeout,
            {"model": first, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}, headers={}
        ).status_code)
        for name, role in models:
            start = time.monotonic()
            dimension = None
            if role == "embedding":
                dimension = _embedding(session, spec, name, auth, timeout)
            else:
                _chat(session, spec, name, auth, timeout)
            answers.append(ModelAnswer(name, role, time.monotonic() - start, dimension))
    return answers


def listed_models(spec: LaunchSpec, api_key: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The router's ``GET /models``: every model with its ``status`` (loaded, loading, unloaded)."""
    with local_session() as session:
        resp = session.get(f"{spec.base_url}/models", headers={"Authorization": f"Bearer {api_key}"},
                           timeout=timeout)
        doc = checked_json(resp, "GET /models")
    data = doc.get("data")
    return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []
