"""Which members serve which model: the gateway's routing table, its default model and its model list.

A request names its model (``"model"`` in the JSON body, or ``?model=`` on a GET, as llama-server's router reads
it); the gateway sends it only to members that serve that model, balanced by that model's slots on each member. A
name no member serves is answered 404 by the gateway itself. A request that names no model goes to the team's
default model (``default_model``), and the gateway writes that name into it, so a member serving several models
knows which one is meant. ``GET /v1/models`` through the gateway is the union of what the members serve
(``models_document``), built from the record with OpenAI's fields only: no member's command line, path or
settings reaches a key holder.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from bootstrap.team.config import Member, Team


@dataclass(frozen=True)
class Route:
    """One model and the members that serve it: ``(member, weight)``, the weight being its slots for the model."""

    number: int
    model: str
    servers: tuple[tuple[Member, int], ...]


def _serving(members: list[Member]) -> dict[str, list[tuple[Member, int]]]:
    """Every name (id or alias) a member answers to → the members answering to it, in member order."""
    table: dict[str, list[tuple[Member, int]]] = {}
    for member in members:
        for model in member.models:
            for name in model.names:
                servers = table.setdefault(name, [])
                if all(m is not member for m, _ in servers):
                    servers.append((member, max(1, model.slots)))
    return table


def routes(team: Team) -> list[Route]:
    """One route per model name, numbered from 1 in the order the members list them."""
    return [Route(number, name, tuple(servers))
            for number, (name, servers) in enumerate(_serving(team.members).items(), start=1)]


def default_model(team: Team) -> str:
    """The model a request without ``"model"`` gets: the one set with ``team start --default-model``, else the
    model served by the most members (ties: the first member's first model); "" when no model is known."""
    names = _serving(team.members)
    if team.default_model in names:
        return team.default_model
    counts = Counter({model.id: len(names[model.id]) for member in team.members for model in member.models})
    order = list(dict.fromkeys(model.id for member in team.members for model in member.models))
    return max(order, key=lambda name: (counts[name], -order.index(name)), default="")


def needs_model_routing(team: Team) -> bool:
    """Whether nginx alone (balancing over every member) would send some request to a member that cannot serve
    it: members that serve different models, or one that serves several (which needs the model named)."""
    sets = {frozenset(name for model in m.models for name in model.names) for m in team.members}
    return len(sets) > 1 or any(len(m.models) > 1 for m in team.members)


def models_document(team: Team, created: int) -> dict[str, object]:
    """``GET /v1/models`` through the gateway: each model once, with its aliases, in OpenAI's list shape."""
    seen: dict[str, list[str]] = {}
    for member in team.members:
        for model in member.models:
            aliases = seen.setdefault(model.id, [])
            aliases += [a for a in model.aliases if a not in aliases]
    data = [{"id": name, "object": "model", "created": created, "owned_by": "llamacpp", "aliases": aliases}
            for name, aliases in seen.items()]
    return {"object": "list", "data": data}
