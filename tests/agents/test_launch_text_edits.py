"""``--config``'s edits to a user's file as text (bootstrap/agents/json_text.py, toml_text.py, text_edits.py): the
settings land where the client reads them, and undoing the edits gives back the user's file byte for byte — whatever
its indentation, comments, line endings and other settings."""

from __future__ import annotations

import json

import pytest

from bootstrap.agents.json_text import JsonShapeError, set_members
from bootstrap.agents.text_edits import apply, undo
from bootstrap.agents.toml_text import TomlShapeError, plan_edits
from bootstrap.core.file_formats import tomllib

ENV = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080", "ANTHROPIC_AUTH_TOKEN": "sk-qwenkit-x", "N": 1}
JSON_FILES = [
    "{}",
    "{}\n",
    '{\n  "theme": "dark",\n  "env": {\n    "FOO": "1"\n  }\n}\n',
    '{\r\n  "theme": "dark",\r\n  "permissions": {"allow": ["Bash(ls)"]}\r\n}\r\n',  # Windows line endings
    '{"a": 1, "env": {"ANTHROPIC_BASE_URL": "https://gateway.example"}}',  # one line; a value of ours replaced
    '{\n\t"model": "x",\n\t"b": [1, 2],\n\t"env": {}\n}',  # tabs, an empty object of ours
    '{\n    "nested": {"deep": {"list": [{"k": "v"}]}},\n    "unicode": "张三"\n}\n',
]


@pytest.mark.parametrize("text", JSON_FILES)
def test_launch_config_json_edits_land_and_undo_to_the_same_bytes(text: str) -> None:
    edits = set_members(text, ("env",), ENV)
    new = apply(text, edits)
    doc = json.loads(new)
    assert doc["env"]["ANTHROPIC_BASE_URL"] == ENV["ANTHROPIC_BASE_URL"] and doc["env"]["N"] == 1
    before = json.loads(text)
    assert {k: v for k, v in doc.items() if k != "env"} == {k: v for k, v in before.items() if k != "env"}
    assert undo(new, edits) == text


def test_launch_config_json_keeps_a_users_later_edits_elsewhere() -> None:
    """The user changes another setting after --config: the restore takes back only what the kit wrote."""
    text = '{\n  "theme": "dark"\n}\n'
    edits = set_members(text, ("provider",), {"qwenkit": {"options": {"baseURL": "http://127.0.0.1:8080/v1"}}})
    new = apply(text, edits).replace('"dark"', '"light"')
    assert undo(new, edits) == '{\n  "theme": "light"\n}\n'


def test_launch_config_json_refuses_what_it_cannot_edit_safely() -> None:
    with pytest.raises(JsonShapeError):
        set_members('{\n  // a comment (JSONC)\n  "a": 1\n}', ("env",), ENV)
    with pytest.raises(JsonShapeError):
        set_members('{"env": "not an object"}', ("env",), ENV)
    with pytest.raises(JsonShapeError):
        set_members('{"env": {}, "env": {}}', ("env",), ENV)
    with pytest.raises(JsonShapeError):
        set_members("[1, 2]", ("env",), ENV)


def test_launch_config_undo_refuses_a_span_the_user_changed() -> None:
    text = '{\n  "theme": "dark"\n}\n'
    edits = set_members(text, ("env",), ENV)
    new = apply(text, edits).replace("127.0.0.1:8080", "127.0.0.1:9999")
    assert undo(new, edits) is None


ROOT = {"model_provider": "qwenkit", "model": "tiny", "model_context_window": 65536}
TABLES = {"model_providers.qwenkit": {"name": "QwenClientKit", "base_url": "http://127.0.0.1:8080/v1",
                                      "env_key": "QWENKIT_API_KEY", "wire_api": "responses"}}
TOML_FILES = [
    "",
    'model = "gpt-5.5"\n[tui]\nnotifications = false\n',  # the user's model: commented out, then given back
    '# mine\nmodel_provider = "openai" # their comment\n\n[model_providers.other]\nname = "o"\n',
    "approval_policy = 'never'",  # no final newline
    '[profiles.fast]\nmodel = "gpt-5.5-mini"\n\n[model_providers.azure]\nname = "Azure"\n',
]


@pytest.mark.parametrize("text", TOML_FILES)
def test_launch_config_toml_edits_land_and_undo_to_the_same_bytes(text: str) -> None:
    edits = plan_edits(text, ROOT, TABLES, "qwenkit launch codex --config")
    new = apply(text, edits)
    doc = tomllib.loads(new)
    assert {k: doc[k] for k in ROOT} == ROOT
    assert doc["model_providers"]["qwenkit"] == TABLES["model_providers.qwenkit"]
    before = tomllib.loads(text)
    assert {k: v for k, v in doc.items() if k not in ROOT and k != "model_providers"} == \
        {k: v for k, v in before.items() if k not in ROOT and k != "model_providers"}
    assert undo(new, edits) == text


def test_launch_config_toml_refuses_a_provider_of_the_same_name() -> None:
    with pytest.raises(TomlShapeError):
        plan_edits('[model_providers.qwenkit]\nname = "theirs"\n', ROOT, TABLES, "m")
    with pytest.raises(TomlShapeError):
        plan_edits("model = [\n  'a multi-line value'\n]\n", ROOT, TABLES, "m")
    with pytest.raises(TomlShapeError):
        plan_edits("not toml = = 1", ROOT, TABLES, "m")
