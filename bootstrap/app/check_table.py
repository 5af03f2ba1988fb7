"""The doctor's verdicts as an aligned table, in the UI language: shown by ``doctor`` and on the confirmation screen
of ``install`` (kept apart from the doctor command, so ``install`` does not import the probes it never runs).
"""

from __future__ import annotations

import unicodedata

from bootstrap.core.console import t
from bootstrap.detect.hardware import Check


def display_width(text: str) -> int:
    """Terminal columns: CJK and other wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def render_table(checks: tuple[Check, ...]) -> list[str]:
    """Aligned rows ``check  verdict  details``; a hint line follows each warn/fail row."""
    rows = [(t(f"doctor.check_{c.id}") if f"doctor.check_{c.id}" in _known_keys() else c.id,
             t(f"doctor.verdict_{c.verdict}"), c.reason, c.hint if c.verdict != "ok" else "") for c in checks]
    header = (t("doctor.col_check"), t("doctor.col_verdict"), t("doctor.col_detail"))
    w0 = max(display_width(r[0]) for r in [*rows, (header[0],)])
    w1 = max(display_width(r[1]) for r in [*rows, (header[0], header[1])])
    lines = [f"{_pad(header[0], w0)}  {_pad(header[1], w1)}  {header[2]}"]
    for name, verdict, reason, hint in rows:
        lines.append(f"{_pad(name, w0)}  {_pad(verdict, w1)}  {reason}")
        if hint:
            lines.append(f"{' ' * (w0 + w1 + 4)}→ {hint}")
    return lines


def _known_keys() -> set[str]:
    from bootstrap.core.messages import MESSAGES

    return set(MESSAGES)
