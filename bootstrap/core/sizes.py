"""Byte counts and token rates as people read them: the one place they are turned into text, and the binary units
sizes use."""

from __future__ import annotations

MIB = 1 << 20
GIB = 1 << 30


def gib_text(count: int, decimals: int = 1) -> str:
    """``22.5``: a byte count in GiB, for sentences that name the unit themselves."""
    return f"{count / GIB:.{decimals}f}"


def human_size(count: int, decimals: int = 1) -> str:
    """``1.5 GiB``, ``12.0 MiB``, ``3.0 KiB``, ``512 B``: the one way sizes are shown."""
    for unit, power in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << power:
            return f"{count / (1 << power):.{decimals}f} {unit}"
    return f"{count} B"


def rate_text(tokens_per_s: float, fine_below: float = 10) -> str:
    """``7.2``, ``34``, ``5000``: a token rate, one decimal below ``fine_below`` (where it matters: a measurement
    judged against a threshold says ``24.1``, not the ``24`` it was compared as more than)."""
    return f"{tokens_per_s:.1f}" if tokens_per_s < fine_below else f"{tokens_per_s:.0f}"
