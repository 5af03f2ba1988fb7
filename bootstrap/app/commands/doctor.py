"""``qwenkit doctor [--json]``: detect this machine and judge it (detect stage, DESIGN.md §1).

``--json`` prints exactly the hardware profile document on stdout (the ``--hardware FILE.json`` input of plan and
install). Without it, a short aligned table goes to stderr in the UI language, and every warning about the engine
is repeated as a warning line so a too-old driver cannot be missed.

Exit code: always 0 once the report is made, even with ``warn`` or ``fail`` verdicts: the report is the product,
and ``install`` decides what a failure means for it (exit 3 there when the machine cannot run a model).
"""

from __future__ import annotations

import argparse
import time
import unicodedata

from bootstrap import __version__
from bootstrap.core import console, settings
from bootstrap.core.console import t
from bootstrap.core.home import resolve_home
from bootstrap.detect.hardware import Check, HardwareProfile
from bootstrap.detect.profile import detect
from bootstrap.plan.engine_variant import check_engine, cuda_toolkit_hint


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


def report(profile: HardwareProfile, seconds: float) -> None:
    """The human report on stderr."""
    console.info(t("doctor.title", version=__version__))
    for line in render_table(profile.checks):
        console.info(line)
    counts = {v: sum(1 for c in profile.checks if c.verdict == v) for v in ("ok", "warn", "fail")}
    for check in profile.checks:
        if check.id == "engine" and check.verdict != "ok":
            console.warn(check.reason)
    offer = cuda_toolkit_hint(profile, settings.cuda_toolkit_env())
    if offer:
        console.info(offer)
    console.info(t("doctor.summary", ok=counts["ok"], warn=counts["warn"], fail=counts["fail"]))
    console.info(t("doctor.elapsed", seconds=f"{seconds:.2f}"))


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    profile = detect(resolve_home(getattr(args, "home", None)).root, engine=check_engine)
    if getattr(args, "json", False):
        console.emit_json(profile.to_json())
    else:
        report(profile, time.perf_counter() - started)
    return 0
