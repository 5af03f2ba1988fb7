"""``FieldReader``: typed access to a JSON document read back (state, hardware profile) where every defect is one
error naming the dotted field, through the document's own error factory — never a KeyError or TypeError.
"""

from __future__ import annotations

from typing import Any

import pytest

from bootstrap.core.errors import UsageError
from bootstrap.core.json_fields import FieldReader

pytestmark = pytest.mark.usefixtures("english")

DOC: dict[str, Any] = {
    "schema": 1, "name": "x", "note": None, "on": True, "count": 3,
    "engine": {"build": 10434, "args": ["-c", "512"]},
    "files": [{"size": 1}, {"size": -1}],
    "mixed": [{"size": 1}, "not an object"],
    "kind": "model", "service": None,
}


class Bad(UsageError):
    """The error the document's factory builds, keeping the field and detail apart for assertions."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field, self.detail = field, detail


def reader(doc: Any = DOC) -> FieldReader:
    return FieldReader(doc, "", Bad)


def error(call: Any) -> tuple[str, str]:
    with pytest.raises(Bad) as err:
        call()
    return err.value.field, err.value.detail


def test_well_typed_fields_read_back() -> None:
    r = reader()
    assert (r.integer("schema", minimum=1), r.text("name"), r.opt_text("note"), r.flag("on")) == (1, "x", None, True)
    assert r.opt_integer("missing") is None and r.opt_integer("count", minimum=3) == 3
    engine = r.obj("engine")
    assert engine.integer("build") == 10434 and engine.strings("args") == ("-c", "512")
    assert r.opt_obj("service") is None and r.opt_obj("absent") is None
    assert r.choice("kind", ("model", "mmproj")) == "model"
    assert r.items("files")[0].integer("size") == 1


@pytest.mark.parametrize("doc", [[], "text", None, 3])
def test_a_document_that_is_not_an_object_is_named_as_the_document(doc: Any) -> None:
    assert error(lambda: reader(doc)) == ("(document)", "expected object")


def test_missing_and_mistyped_fields_name_the_dotted_path() -> None:
    r = reader()
    assert error(lambda: r.text("absent")) == ("absent", "missing")
    assert error(lambda: r.text("count")) == ("count", "expected string")
    assert error(lambda: r.flag("count")) == ("count", "expected true/false")
    assert error(lambda: r.obj("engine").text("build")) == ("engine.build", "expected string")
    assert error(lambda: r.obj("engine").integer("args")) == ("engine.args", "expected integer")
    assert error(lambda: r.obj("name")) == ("name", "expected object")
    assert error(lambda: r.items("engine")) == ("engine", "expected list")
    assert error(lambda: r.strings("files")) == ("files", "expected list of strings")


def test_a_boolean_is_not_an_integer() -> None:
    """JSON ``true`` is Python's ``1``: a count or a port must not accept it."""
    assert error(lambda: reader().integer("on")) == ("on", "expected integer")


def test_list_items_carry_their_index() -> None:
    items = reader().items("files")
    assert error(lambda: items[1].integer("size")) == ("files[1].size", "must be at least 0, got -1")
    assert error(lambda: reader().items("mixed")) == ("mixed[1]", "expected object")


def test_null_is_accepted_only_where_optional() -> None:
    r = reader()
    assert error(lambda: r.text("note")) == ("note", "expected string")
    assert error(lambda: r.integer("service")) == ("service", "expected integer")


def test_choice_names_what_is_allowed() -> None:
    field, detail = error(lambda: reader().choice("kind", ("shard", "mmproj")))
    assert field == "kind" and detail == "must be one of shard, mmproj, got 'model'"
