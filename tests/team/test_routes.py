"""Which members serve which model: the routes, the default model and the model list key holders see."""

from __future__ import annotations

import pytest

from bootstrap.team import routes
from bootstrap.team.config import Member, ServedModel, Team
from bootstrap.team.members import _parallel, public_name

CHAT = ServedModel("qwen3.6-35b-a3b", 2)
EMBED = ServedModel("qwen3-embedding-0.6b", 4, ("embed",))


def _member(name: str, *models: ServedModel) -> Member:
    return Member(name, f"http://10.0.0.{len(name)}:8080", "member-key-0123456789", 2, models)


def test_each_name_routes_to_the_members_that_serve_it_weighted_by_that_models_slots() -> None:
    team = Team(members=[_member("pc1", CHAT), _member("pc22", EMBED, ServedModel("qwen3.6-35b-a3b", 0))])
    table = {r.model: [(m.name, w) for m, w in r.servers] for r in routes.routes(team)}
    assert table == {"qwen3.6-35b-a3b": [("pc1", 2), ("pc22", 1)],  # slots not known: weight 1
                     "qwen3-embedding-0.6b": [("pc22", 4)], "embed": [("pc22", 4)]}
    assert routes.needs_model_routing(team)


@pytest.mark.parametrize(("members", "chosen", "default"), [
    ([("pc1", (EMBED, CHAT)), ("pc2", (CHAT,))], "", "qwen3.6-35b-a3b"),  # the one most members serve
    ([("pc1", (EMBED,)), ("pc2", (CHAT,))], "", "qwen3-embedding-0.6b"),  # a tie: the first member's first
    ([("pc1", (EMBED, CHAT)), ("pc2", (CHAT,))], "embed", "embed"),  # set with --default-model
    ([("pc1", (CHAT,))], "gone-model", "qwen3.6-35b-a3b"),  # set, but no member serves it any more
    ([("pc1", ())], "", ""),  # nothing known yet
])
def test_the_default_model(members: list[tuple[str, tuple[ServedModel, ...]]], chosen: str, default: str) -> None:
    team = Team(members=[_member(name, *models) for name, models in members], default_model=chosen)
    assert routes.default_model(team) == default


def test_members_serving_the_same_single_model_need_no_routing_script() -> None:
    assert not routes.needs_model_routing(Team(members=[_member("pc1", CHAT), _member("pc2", CHAT)]))
    assert routes.needs_model_routing(Team(members=[_member("pc1", CHAT, EMBED)]))  # the name must be sent


def test_the_model_list_is_names_only_each_model_once() -> None:
    team = Team(members=[_member("pc1", CHAT), _member("pc2", CHAT, EMBED)])
    assert routes.models_document(team, 7) == {"object": "list", "data": [
        {"id": "qwen3.6-35b-a3b", "object": "model", "created": 7, "owned_by": "llamacpp", "aliases": []},
        {"id": "qwen3-embedding-0.6b", "object": "model", "created": 7, "owned_by": "llamacpp",
         "aliases": ["embed"]}]}


@pytest.mark.parametrize(("args", "slots"), [
    (["llama-server", "--alias", "m", "--parallel", "2"], 2), (["llama-server", "-np", "3"], 3),
    (["llama-server", "--ctx-size", "512"], 4),  # llama-server's own default
    (["llama-server", "-np", "-1"], 4), (None, None),
])
def test_a_router_models_slots_from_its_launch_arguments(args: list[str] | None, slots: int | None) -> None:
    assert _parallel(args) == slots


@pytest.mark.parametrize(("name", "shown"), [
    ("/home/li/.local/share/qwenclientkit/models/x/gemma.gguf", "gemma.gguf"),
    ("C:\\Users\\li\\AppData\\Local\\QwenClientKit\\models\\gemma.gguf", "gemma.gguf"),
    ("unsloth/Qwen3.6-35B-A3B-GGUF", "unsloth/Qwen3.6-35B-A3B-GGUF"),  # a hub name, not a path
    ("gemma-3-270m", "gemma-3-270m"),
])
def test_a_single_model_members_path_name_reaches_nobody(name: str, shown: str) -> None:
    assert public_name(name) == shown
