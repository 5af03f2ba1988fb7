""""Did you mean …?": the names closest to a mistyped one, for the catalog's ids and quants and the CLI's commands."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from bootstrap.core.console import join_names, t


def did_you_mean(wanted: str, names: Iterable[str]) -> str | None:
    """The hint naming up to three of ``names`` closest to ``wanted`` (``difflib.get_close_matches``, case-insensitive,
    shown as spelt in ``names``), or None when none is close."""
    by_lower = {name.lower(): name for name in names}
    close = difflib.get_close_matches(wanted.lower(), list(by_lower), n=3, cutoff=0.6)
    if not close:
        return None
    return t("hint.did_you_mean", names=join_names(f"'{by_lower[c]}'" for c in close))
