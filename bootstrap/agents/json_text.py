"""Setting a few members of a JSON config file as text edits (``text_edits``), leaving every other byte alone.

The file is read with the standard library's decoder, which also gives where each value ends
(``JSONDecoder.raw_decode``), so the kit knows the span of every member of the objects it touches. A member it sets
that is there already is replaced from its key to the end of its value (the key makes that span unique, so the
restore finds it again); the others are inserted right after the object's ``{``, indented as the object's first
member is. Strict JSON only: a file with comments (JSONC) is refused rather than half-understood.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bootstrap.agents.text_edits import Edit

_WS = " \t\r\n"
_DECODER = json.JSONDecoder()


class JsonShapeError(ValueError):
    """The file is not what the kit can edit: not one JSON object, a member it sets is not an object, or a key
    appears twice."""


@dataclass(frozen=True)
class Member:
    key: str
    start: int  # the key's opening quote
    value_start: int
    value_end: int  # just after the value
    value: Any


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def members(text: str, start: int) -> tuple[list[Member], int]:
    """The members of the object whose ``{`` is at ``start``, and the offset of its ``}``."""
    found: list[Member] = []
    i = _skip(text, start + 1)
    if text[i:i + 1] == "}":
        return found, i
    while True:
        if text[i:i + 1] != '"':
            raise JsonShapeError(f"a key was expected at offset {i}")
        key, j = _DECODER.raw_decode(text, i)
        j = _skip(text, j)
        if text[j:j + 1] != ":":
            raise JsonShapeError(f"':' was expected at offset {j}")
        value_start = _skip(text, j + 1)
        value, value_end = _DECODER.raw_decode(text, value_start)
        found.append(Member(key, i, value_start, value_end, value))
        k = _skip(text, value_end)
        if text[k:k + 1] == ",":
            i = _skip(text, k + 1)
        elif text[k:k + 1] == "}":
            return found, k
        else:
            raise JsonShapeError(f"',' or '}}' was expected at offset {k}")


def _line_indent(text: str, at: int) -> str:
    line_start = text.rfind("\n", 0, at) + 1
    line = text[line_start:at]
    return line[:len(line) - len(line.lstrip(" \t"))]


def _render(value: Any, indent: str, step: str) -> str:
    """``value`` as JSON whose continuation lines sit under ``indent``."""
    return json.dumps(value, ensure_ascii=False, indent=step).replace("\n", "\n" + indent)


def _insert(text: str, obj: int, found: list[Member], close: int, values: Mapping[str, Any]) -> Edit:
    """Insert ``values`` as members right after the ``{`` at ``obj``."""
    outer = _line_indent(text, obj)
    if found:
        gap = text[obj + 1:found[0].start]
        if "\n" not in gap:  # a one-line object: stay on its line
            body = "".join(f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}, "
                           for k, v in values.items())
            return Edit(obj + 1, "", body)
        indent = gap.rsplit("\n", 1)[1]
    else:
        indent = outer + "  "
    step = indent[len(outer):] if indent.startswith(outer) and len(indent) > len(outer) else "  "
    lines = [f"\n{indent}{json.dumps(k, ensure_ascii=False)}: {_render(v, indent, step)}" for k, v in values.items()]
    if found:
        return Edit(obj + 1, "", ",".join(lines) + ",")
    return Edit(obj + 1, text[obj + 1:close], ",".join(lines) + "\n" + outer)


def _only(found: list[Member], key: str) -> Member | None:
    same = [m for m in found if m.key == key]
    if len(same) > 1:
        raise JsonShapeError(f"the key {key!r} appears {len(same)} times")
    return same[0] if same else None


def set_members(text: str, path: Sequence[str], values: Mapping[str, Any]) -> list[Edit]:
    """The edits that make ``values`` members of the object at ``path`` (created when missing) in the JSON
    document ``text``. Members already equal are left as they are."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise JsonShapeError(str(exc)) from None
    if not isinstance(doc, dict):
        raise JsonShapeError("the file is not one JSON object")
    obj = _skip(text, 0)
    for depth, key in enumerate(path):
        found, close = members(text, obj)
        member = _only(found, key)
        if member is None:
            nested: Any = dict(values)
            for outer_key in reversed(path[depth + 1:]):
                nested = {outer_key: nested}
            return [_insert(text, obj, found, close, {key: nested})]
        if not isinstance(member.value, dict):
            raise JsonShapeError(f"{key!r} is not an object")
        obj = member.value_start
    found, close = members(text, obj)
    edits, inserts = [], {}
    for key, value in values.items():
        member = _only(found, key)
        if member is None:
            inserts[key] = value
        elif member.value != value or type(member.value) is not type(value):
            indent = _line_indent(text, member.start)
            step = "  "
            new = text[member.start:member.value_start] + _render(value, indent, step)
            edits.append(Edit(member.start, text[member.start:member.value_end], new))
    if inserts:
        edits.append(_insert(text, obj, found, close, inserts))
    return edits


def get_path(doc: Any, path: Sequence[str]) -> Any:
    """``doc[path[0]][path[1]]…``, or None where the path is missing."""
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc
