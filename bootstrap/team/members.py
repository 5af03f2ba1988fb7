"""What a member's llama-server says about itself: up or not, its slots, how many are busy, its model.

llama-server answers ``GET /health`` without a key (503 while loading, 200 when ready); ``GET /props`` and
``GET /slots`` need the key (llama.cpp ``tools/server/README.md``): ``/props`` gives ``total_slots``, ``/slots`` one
record per slot with ``is_processing``. A member is asked directly, not through the gateway, so ``status`` can name
the one that is down even while the gateway hides it from clients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from bootstrap.fetch.http_session import local_session
from bootstrap.team.config import Member

TIMEOUT_S = 3.0


@dataclass(frozen=True)
class MemberState:
    """One member as ``status`` shows it."""

    state: str  # "ready", "loading", "down", "key refused", "not llama-server"
    slots: int | None = None
    busy: int | None = None
    model: str = ""
    detail: str = ""

    @property
    def ready(self) -> bool:
        return self.state == "ready"


def _get(session: requests.Session, url: str, key: str | None) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return session.get(url, headers=headers, timeout=TIMEOUT_S)


def _model_name(props: dict[str, Any]) -> str:
    path = str(props.get("model_alias") or props.get("model_path") or "")
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def probe(url: str, key: str) -> MemberState:
    """Ask the llama-server at ``url`` (sessions ignore proxy settings: members are on the intranet, and a
    corporate proxy would answer for them or refuse)."""
    with local_session() as session:
        try:
            health = _get(session, f"{url}/health", None)
        except requests.RequestException as exc:
            return MemberState("down", detail=type(exc).__name__)
        if health.status_code == 503:
            return MemberState("loading")
        if health.status_code != 200:
            return MemberState("not llama-server", detail=f"/health answered {health.status_code}")
        try:
            props = _get(session, f"{url}/props", key)
            if props.status_code in (401, 403):
                return MemberState("key refused", detail=f"/props answered {props.status_code}")
            info = props.json() if props.status_code == 200 else {}
            slots_reply = _get(session, f"{url}/slots", key)
            slots = slots_reply.json() if slots_reply.status_code == 200 else None
        except (requests.RequestException, ValueError) as exc:
            return MemberState("down", detail=type(exc).__name__)
    total = info.get("total_slots") if isinstance(info, dict) else None
    busy = sum(1 for s in slots if isinstance(s, dict) and s.get("is_processing")) if isinstance(slots, list) else None
    return MemberState("ready", total if isinstance(total, int) else None, busy,
                       _model_name(info) if isinstance(info, dict) else "")


def describe(member: Member) -> MemberState:
    return probe(member.url, member.key)
