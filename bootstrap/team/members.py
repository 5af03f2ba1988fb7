"""What a member's llama-server says about itself: up or not, the models it serves, their slots and how many are
busy.

llama-server answers ``GET /health`` without a key (503 while loading, 200 when ready); ``GET /props``,
``GET /v1/models`` and ``GET /slots`` need the key (llama.cpp ``tools/server/README.md``). A member serves one
model, or several in router mode (``--models-preset``: ``/props`` says ``"role": "router"``, ``/v1/models`` lists
each model with ``status.value`` loaded/unloaded, and ``/slots`` and ``/props`` answer 400 "model name is missing"
unless ``?model=NAME`` says which child server is meant; b11434 ``tools/server/server-models.cpp``). The slots of a
router's model that is not loaded are read from its launch arguments (``-np N`` in ``status.args``, the router's own
record of the child's command line); ``autoload=false`` keeps the asking from loading anything. A member is asked
directly, not through the gateway, so ``status`` can name the one that is down even while the gateway hides it
from clients. Nothing read here is passed on to a key holder (``team.routes`` builds the gateway's model list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests

from bootstrap.fetch.http_session import local_session
from bootstrap.plan.launch_spec import parallel_of
from bootstrap.team.config import Member, ServedModel, check_model

TIMEOUT_S = 3.0
GATEWAY_HEADER = "X-Qwenkit-Team"  # every answer of a team gateway carries it (templates/team-nginx.conf.j2)
AUTO_PARALLEL = 4  # llama-server's slots without -np ("auto": tools/server/server.cpp sets n_parallel = 4)
STATUSES = ("loaded", "loading", "unloaded", "sleeping", "downloading", "downloaded", "failed")
_ABSOLUTE = re.compile(r"^(/|~|[A-Za-z]:[\\/]|\\\\)")


@dataclass(frozen=True)
class ModelState:
    """One model of a member: its names, its slots and how many are busy (None: not known), loaded or not."""

    id: str
    aliases: tuple[str, ...] = ()
    slots: int | None = None
    busy: int | None = None
    status: str = "loaded"  # router mode: one of STATUSES, or "unknown"


@dataclass(frozen=True)
class MemberState:
    """One member as ``status`` shows it."""

    state: str  # "ready", "loading", "down", "key refused", "not llama-server", "gateway"
    slots: int | None = None
    busy: int | None = None
    models: tuple[ModelState, ...] = ()
    detail: str = ""
    router: bool = False

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @property
    def model(self) -> str:
        return ", ".join(m.id for m in self.models)

    def served(self) -> tuple[ServedModel, ...]:
        """The models as the team record keeps them."""
        return tuple(ServedModel(m.id, m.slots or 0, m.aliases) for m in self.models)


def _get(session: requests.Session, url: str, key: str | None) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return session.get(url, headers=headers, timeout=TIMEOUT_S)


def public_name(name: str) -> str:
    """A single-model server without ``--alias`` names its model by the file's path: the file name only, so no
    member's folders reach a key holder (such a server answers whatever "model" a request names)."""
    return re.split(r"[\\/]", name)[-1] if _ABSOLUTE.match(name) else name


def _names(entry: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    aliases = entry.get("aliases")
    aliases = [a for a in aliases if isinstance(a, str) and a] if isinstance(aliases, list) else []
    return check_model(str(entry["id"])), tuple(check_model(a) for a in aliases if a != entry["id"])


def _parallel(args: object) -> int | None:
    """``-np N`` / ``--parallel N`` from a router child's launch arguments, llama-server's own default without
    them or with ``-1`` (auto); None when there are no arguments to read."""
    if not isinstance(args, list):
        return None
    value = parallel_of([str(w) for w in args])
    return value if value else AUTO_PARALLEL


def _slot_count(reply: requests.Response) -> tuple[int | None, int | None]:
    slots = reply.json() if reply.status_code == 200 else None
    if not isinstance(slots, list):
        return None, None
    return len(slots), sum(1 for s in slots if isinstance(s, dict) and s.get("is_processing"))


def _router_models(session: requests.Session, url: str, key: str, listed: list[Any]) -> tuple[ModelState, ...]:
    out = []
    for entry in listed:
        if not isinstance(entry, dict) or "id" not in entry:
            continue
        name, aliases = _names(entry)
        status = entry.get("status") if isinstance(entry.get("status"), dict) else {}
        value = "failed" if status.get("failed") else str(status.get("value", "unknown"))
        value = value if value in STATUSES else "unknown"
        slots, busy = _parallel(status.get("args")), 0
        if value == "loaded":
            counted = _slot_count(_get(session, f"{url}/slots?model={quote(name, safe='')}&autoload=false", key))
            if counted[0] is not None:
                slots, busy = counted
        out.append(ModelState(name, aliases, slots, busy if slots is not None else None, value))
    return tuple(out)


def _single_model(props: dict[str, Any], listed: list[Any], slots: tuple[int | None, int | None]) -> ModelState:
    entry = next((e for e in listed if isinstance(e, dict) and "id" in e), None)
    if entry is not None:
        name, aliases = _names(entry)
    else:
        name, aliases = str(props.get("model_alias") or props.get("model_path") or "model"), ()
    total = props.get("total_slots")
    return ModelState(public_name(name), tuple(public_name(a) for a in aliases),
                      total if isinstance(total, int) and total > 0 else slots[0], slots[1])


def probe(url: str, key: str) -> MemberState:
    """Ask the llama-server at ``url`` (sessions ignore proxy settings: members are on the intranet, and a
    corporate proxy would answer for them or refuse)."""
    with local_session() as session:
        try:
            health = _get(session, f"{url}/health", None)
        except requests.RequestException as exc:
            return MemberState("down", detail=type(exc).__name__)
        if GATEWAY_HEADER in health.headers:
            return MemberState("gateway", detail="/health")
        if health.status_code == 503:
            return MemberState("loading")
        if health.status_code != 200:
            return MemberState("not llama-server", detail=f"/health answered {health.status_code}")
        try:
            props = _get(session, f"{url}/props", key)
            if props.status_code in (401, 403):
                return MemberState("key refused", detail=f"/props answered {props.status_code}")
            info = props.json() if props.status_code == 200 else {}
            info = info if isinstance(info, dict) else {}
            listing = _get(session, f"{url}/v1/models", key)
            listed = listing.json().get("data", []) if listing.status_code == 200 else []
            listed = listed if isinstance(listed, list) else []
            if info.get("role") == "router":
                models = _router_models(session, url, key, listed)
                router = True
            else:
                # asleep after its keep-alive (``--sleep-idle-seconds``): ``/slots`` would load it again and restart
                # its idle time (llama.cpp tools/server/README.md "Sleeping on Idle"); nothing runs on it
                asleep = info.get("is_sleeping") is True
                counted = (None, 0) if asleep else _slot_count(_get(session, f"{url}/slots", key))
                models = (_single_model(info, listed, counted),)
                router = False
        except (requests.RequestException, ValueError, AttributeError, KeyError) as exc:
            return MemberState("down", detail=type(exc).__name__)
    known = [m.slots for m in models if m.slots is not None]
    busy = [m.busy for m in models if m.busy is not None]
    return MemberState("ready", sum(known) if known else None, sum(busy) if busy else (0 if known else None),
                       models, router=router)


def describe(member: Member) -> MemberState:
    return probe(member.url, member.key)
