"""What a client is pointed at: the server's address, its key, the model name it sends, and the context one request
may fill — for this home's install, or for a team gateway a user reaches with their own key (``--endpoint``).

The context is the server's own word when it answers (``GET /props``: ``default_generation_settings.n_ctx`` is the
context of one slot, what one request may fill; llama.cpp ``tools/server/README.md``), else what the install record
says (``-c`` divided over ``-np`` slots unless ``-kvu`` shares one cache between them, llama.cpp ``common/arg.cpp``).
A client told the real window does not assume one of its own (Claude Code assumes 1M tokens for a model it does not
know) and compacts its conversation before the server would have to refuse it.

The key is carried in memory only: clients receive it through their environment (never on a command line, which
every user of the machine can read in the process list), or through the file it already lives in.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from bootstrap.catalog.model_ref import installed_name
from bootstrap.core import settings
from bootstrap.core.console import join_names, t
from bootstrap.core.errors import ServerError, UsageError
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.home import Home
from bootstrap.core.input_checks import check_text
from bootstrap.fetch.http_session import local_session
from bootstrap.fetch.records import cause_text
from bootstrap.place.api_key import read_api_key
from bootstrap.plan.launch_spec import request_ctx_of
from bootstrap.record.state import InstallState, launch_spec, require_state

TIMEOUT_S = 10.0
MAX_KEY = 512  # the longest key the team gateway records (bootstrap/team/config.py)


@dataclass(frozen=True)
class Target:
    """One server a client is pointed at."""

    base_url: str  # http://HOST:PORT, no /v1: Anthropic clients append /v1/messages themselves
    model: str  # the name requests send as "model" (the install's alias, a library model's name)
    ctx: int | None  # tokens one request may fill; None when neither the server nor a record says
    key: str = field(repr=False)
    key_file: Path | None  # where the key lives (an install's secrets/api-key); None when it came from --endpoint
    via: str  # "install" or "endpoint"
    models: tuple[str, ...] = ()  # every chat model this endpoint offers

    @property
    def openai_url(self) -> str:
        """The ``base_url`` OpenAI-compatible clients take."""
        return f"{self.base_url}/v1"


def _chat_models(state: InstallState) -> dict[str, tuple[str, ...]]:
    """Model name → its flags, for every chat model of the install (embedding models take no chat)."""
    names = {state.server.alias: state.server.args}
    for entry in state.library:
        if entry.role == "chat":
            names[entry.name] = entry.args
    return names


def install_target(home: Home, model: str | None) -> Target:
    """This home's install: its endpoint on this machine, its key, the default model (or ``model``, one of its
    chat models) and that model's recorded context."""
    state = require_state(home)
    spec = launch_spec(state, home)
    models = _chat_models(state)
    name = installed_name(model, tuple(models)) if model else spec.alias
    if name not in models:
        raise UsageError(t("launch.err_model", model=name, models=join_names(models)), t("launch.hint_model"))
    return Target(spec.base_url, name, request_ctx_of(models[name]), read_api_key(home), home.api_key_file, "install",
                  tuple(models))


def endpoint_url(text: str) -> str:
    """``--endpoint`` as a base URL: http(s), a host, an optional port, no user, query or fragment; a trailing
    ``/v1`` (how OpenAI clients write it) is taken off."""
    value = check_text("--endpoint", text.strip(), 400).rstrip("/")
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        raise UsageError(t("launch.err_endpoint", url=text), t("launch.hint_endpoint")) from None
    path = parts.path[:-3] if parts.path.endswith("/v1") else parts.path
    if (parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password
            or parts.query or parts.fragment or path.strip("/")):
        raise UsageError(t("launch.err_endpoint", url=text), t("launch.hint_endpoint"))
    return f"{parts.scheme}://{parts.netloc}"


def endpoint_key(key_file: str | None, env: dict[str, str] | None = None) -> str:
    """A user's key for ``--endpoint``: the first line of ``--key-file``, else ``QWENKIT_API_KEY``; never an
    argument (the process list would show it)."""
    if key_file:
        try:
            with open(key_file, encoding="utf-8", errors="replace") as fh:
                text = fh.read(MAX_KEY + 2)
        except OSError as exc:
            raise UsageError(t("launch.err_key_file", path=key_file, reason=os_reason(exc)),
                             t("launch.hint_key")) from None
    else:
        text = settings.api_key(os.environ if env is None else env) or ""
    lines = text.strip().splitlines()
    key = lines[0].strip() if lines else ""
    if not key or len(key) > MAX_KEY or any(c.isspace() or not c.isprintable() for c in key):
        raise UsageError(t("launch.err_no_key"), t("launch.hint_key"))
    return key


def endpoint_target(url: str, key: str, model: str | None) -> Target:
    """A team gateway (or another install) a user reaches with their own key; the model and its context are what
    the endpoint says (``served``)."""
    return Target(endpoint_url(url), model or "", None, key, None, "endpoint")


def _get(session: requests.Session, target: Target, path: str, auth: bool = True) -> requests.Response:
    headers = {"Authorization": f"Bearer {target.key}"} if auth else {}
    return session.get(f"{target.base_url}{path}", headers=headers, timeout=TIMEOUT_S)


def _served_ctx(props: Any) -> int | None:
    settings_doc = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = settings_doc.get("n_ctx") if isinstance(settings_doc, dict) else None
    return n_ctx if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0 else None


def served(target: Target) -> Target:
    """``target`` as the server answers now: ready (``/health``), the key accepted and the model offered
    (``/v1/models``), and the context one request may fill (``/props``). Exit 6 when it does not answer, 2 when it
    refuses the key or does not offer the model."""
    where = target.base_url
    hint = t("launch.hint_server_install") if target.via == "install" else t("launch.hint_server_endpoint")
    with local_session() if target.via == "install" else requests.Session() as session:
        try:
            health = _get(session, target, "/health", auth=False)
            if health.status_code == 503:
                raise ServerError(t("launch.err_loading", url=where), hint)
            listed = _get(session, target, "/v1/models")
            if listed.status_code in (401, 403):
                raise UsageError(t("launch.err_key_refused", url=where, status=listed.status_code),
                                 t("launch.hint_key_refused") if target.via == "endpoint"
                                 else t("launch.hint_key_install"))
            if listed.status_code != 200:
                raise ServerError(t("launch.err_server", url=where, status=listed.status_code), hint)
            ids = [str(m.get("id")) for m in listed.json().get("data", []) if isinstance(m, dict) and m.get("id")]
            model = target.model or (ids[0] if ids else "")
            if not model or (ids and model not in ids):
                raise UsageError(t("launch.err_model", model=model or "-", models=join_names(ids) or "-"),
                                 t("launch.hint_model"))
            props = _get(session, target, f"/props?model={model}" if len(ids) > 1 else "/props")
            ctx = _served_ctx(props.json()) if props.status_code == 200 else None
        except requests.RequestException as exc:
            raise ServerError(t("launch.err_unreachable", url=where, reason=cause_text(exc, TIMEOUT_S)[0]),
                              hint) from None
        except ValueError:  # a reply that is not JSON: not a llama-server (or a gateway in front of one)
            raise ServerError(t("launch.err_not_server", url=where), hint) from None
    return replace(target, model=model, ctx=ctx or target.ctx, models=tuple(ids) or target.models)
