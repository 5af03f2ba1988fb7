"""Typed, bounded access to a JSON document whose every defect is one line naming the dotted field.

Shared by the documents the kit reads back (the hardware profile, ``state.json``); each passes its own error
factory so the message and hint fit the document (``--hardware FILE.json`` vs the install record).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bootstrap.core.console import join_names, t
from bootstrap.core.errors import UsageError

BadField = Callable[[str, str], UsageError]  # (dotted field, detail) → the error to raise


class FieldReader:
    """One JSON object; ``bad`` builds the error for a missing or mistyped field."""

    def __init__(self, doc: Any, path: str, bad: BadField) -> None:
        if not isinstance(doc, dict):
            raise bad(path or "(document)", t("doctor.err_type", expected="object"))
        self.doc: dict[str, Any] = doc
        self.path = path
        self.bad = bad

    def _name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _get(self, key: str, check: Callable[[Any], bool], expected: str, optional: bool = False) -> Any:
        if key not in self.doc:
            if optional:
                return None
            raise self.bad(self._name(key), t("doctor.err_missing"))
        value = self.doc[key]
        if value is None and optional:
            return None
        if not check(value):
            raise self.bad(self._name(key), t("doctor.err_type", expected=expected))
        return value

    def text(self, key: str) -> str:
        return self._get(key, lambda v: isinstance(v, str), "string")

    def opt_text(self, key: str) -> str | None:
        return self._get(key, lambda v: isinstance(v, str), "string or null", optional=True)

    def flag(self, key: str) -> bool:
        return self._get(key, lambda v: isinstance(v, bool), "true/false")

    def opt_flag(self, key: str) -> bool | None:
        return self._get(key, lambda v: isinstance(v, bool), "true/false or null", optional=True)

    def integer(self, key: str, minimum: int = 0) -> int:
        value = self._get(key, lambda v: isinstance(v, int) and not isinstance(v, bool), "integer")
        if value < minimum:
            raise self.bad(self._name(key), t("doctor.err_range", minimum=minimum, value=value))
        return value

    def opt_integer(self, key: str, minimum: int = 0) -> int | None:
        if self.doc.get(key) is None:
            return None
        return self.integer(key, minimum)

    def obj(self, key: str) -> FieldReader:
        return FieldReader(self._get(key, lambda v: isinstance(v, dict), "object"), self._name(key), self.bad)

    def opt_obj(self, key: str) -> FieldReader | None:
        value = self._get(key, lambda v: isinstance(v, dict), "object or null", optional=True)
        return None if value is None else FieldReader(value, self._name(key), self.bad)

    def items(self, key: str) -> list[FieldReader]:
        items = self._get(key, lambda v: isinstance(v, list), "list")
        return [FieldReader(item, f"{self._name(key)}[{i}]", self.bad) for i, item in enumerate(items)]

    def opt_items(self, key: str) -> list[FieldReader]:
        """``items`` for a list that older documents lack (absent or null reads as empty)."""
        items = self._get(key, lambda v: isinstance(v, list), "list or null", optional=True) or []
        return [FieldReader(item, f"{self._name(key)}[{i}]", self.bad) for i, item in enumerate(items)]

    def strings(self, key: str) -> tuple[str, ...]:
        items = self._get(key, lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                          "list of strings")
        return tuple(items)

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self.text(key)
        if value not in allowed:
            raise self.bad(self._name(key), t("doctor.err_choice", allowed=join_names(allowed), value=value))
        return value
