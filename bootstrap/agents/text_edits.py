"""Edits to a user's config file as text, so that taking them back leaves every other byte as it was.

A client's config file is the user's: comments, key order, indentation and the settings of other tools stay
untouched. ``--config`` therefore never re-serialises a file; it inserts or replaces a few spans of text, and
records each as (what was there, what the kit put there). ``--restore`` finds each span the kit put there — it
must still be there exactly once — and puts the old text back. The user may have edited everything else meanwhile;
those edits stay. A span the user changed is not guessed at: the restore stops and says which file to fix by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    """``old`` (empty for an insertion) replaced by ``new`` at offset ``at`` of the text the edit was made in."""

    at: int
    old: str
    new: str

    def to_json(self) -> dict[str, object]:
        return {"at": self.at, "old": self.old, "new": self.new}


def apply(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with every edit made (offsets refer to ``text``; the edits do not overlap). At one offset, the
    replacement of what is there is made first and insertions go before it, the first one given first."""
    out = text
    order = sorted(enumerate(edits), key=lambda pair: (pair[1].at, bool(pair[1].old), pair[0]), reverse=True)
    for _, edit in order:
        if out[edit.at:edit.at + len(edit.old)] != edit.old:
            raise ValueError(f"edit at {edit.at} does not match the text")
        out = out[:edit.at] + edit.new + out[edit.at + len(edit.old):]
    return out


def undo(text: str, edits: Sequence[Edit]) -> str | None:
    """``text`` with each edit's ``new`` span put back to its ``old``; None when a span is no longer there exactly
    once (the user changed it, or copied it)."""
    out = text
    for edit in reversed(edits):
        if not edit.new or out.count(edit.new) != 1:
            return None
        out = out.replace(edit.new, edit.old, 1)
    return out
