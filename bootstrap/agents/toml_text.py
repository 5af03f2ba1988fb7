"""Setting a few keys of a TOML config file (Codex's ``config.toml``) as text edits (``text_edits``).

TOML wants every key of the root table before the first ``[table]`` header, and a key or a table defined twice is
an error (toml.io v1.0.0, "Table"). So the root keys the kit sets go in one marked block at the very top of the
file; a root key the user had set already is commented out in place (its line kept, so the restore puts it back);
each table the kit adds is a marked block at the end of the file. The result is parsed again (``tomllib``) before
anything is written; a file the kit cannot edit safely this way is refused, never rewritten.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from bootstrap.agents.text_edits import Edit
from bootstrap.core.file_formats import tomllib  # tomli on Python 3.10

_HEADER = re.compile(r"^\s*\[")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class TomlShapeError(ValueError):
    """The file cannot take the kit's keys as text edits (a table the kit adds exists, a key it sets spans lines)."""


def value_text(value: Any) -> str:
    """``value`` as a TOML value: strings as basic strings (JSON's escapes are TOML's), booleans, integers,
    tables as inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{key_text(k)} = {value_text(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML text for {type(value).__name__}")


def key_text(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _root_line(text: str, key: str) -> tuple[int, str] | None:
    """(offset, line) of the one-line assignment of root key ``key``, or None when it is not written so."""
    offset = 0
    pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
    for line in text.splitlines(keepends=True):
        if _HEADER.match(line):
            return None
        if pattern.match(line):
            try:
                parsed = tomllib.loads(line)
            except tomllib.TOMLDecodeError:
                return None
            return (offset, line.rstrip("\r\n")) if key in parsed else None
        offset += len(line)
    return None


def plan_edits(text: str, root: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]], marker: str
               ) -> list[Edit]:
    """The edits that set ``root`` keys and add ``tables`` (dotted names) to the TOML document ``text``, each
    block headed by the comment ``marker``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlShapeError(str(exc)) from None
    edits: list[Edit] = []
    for key, value in root.items():
        if key in doc:
            if doc[key] == value:
                continue
            found = _root_line(text, key)
            if found is None:
                raise TomlShapeError(f"the root key {key!r} is not a one-line assignment")
            at, line = found
            edits.append(Edit(at, line, f"# {line}  # {marker}"))
    block = "".join(f"{key_text(k)} = {value_text(v)}\n" for k, v in root.items()
                    if doc.get(k) != v)
    if block:  # first in the list: at offset 0 it goes before a commented-out first line
        edits.insert(0, Edit(0, "", f"# {marker}\n{block}\n"))
    tail = ""
    for name, values in tables.items():
        parts = name.split(".")
        node: Any = doc
        for part in parts:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            raise TomlShapeError(f"[{name}] is there already")
        tail += f"\n# {marker}\n[{'.'.join(key_text(p) for p in parts)}]\n"
        tail += "".join(f"{key_text(k)} = {value_text(v)}\n" for k, v in values.items())
    if tail:
        lead = "" if not text or text.endswith("\n") else "\n"
        edits.append(Edit(len(text), "", lead + tail))
    return edits
