"""``qwenkit doctor [--json]``: detect this machine and judge it (detect stage, DESIGN.md §1).

``--json`` prints exactly the hardware profile document on stdout (the ``--hardware FILE.json`` input of plan and
install). Without it, a short aligned table goes to stdout in the UI language (``doctor > report.txt``), and every
warning about the engine is repeated as a warning line on stderr so a too-old driver cannot be missed.

Exit code: always 0 once the report is made, even with ``warn`` or ``fail`` verdicts: the report is the product,
and ``install`` decides what a failure means for it (exit 3 there when the machine cannot run a model).
"""

from __future__ import annotations

import argparse
import time

from bootstrap import __version__
from bootstrap.app.check_table import render_table
from bootstrap.core import console, settings
from bootstrap.core.console import t
from bootstrap.core.home import resolve_home
from bootstrap.core.home_modes import world_writable
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.detect.profile import detect
from bootstrap.install.measure import recorded_rates
from bootstrap.plan.engine_variant import check_engine, cuda_toolkit_hint


def report(profile: HardwareProfile, seconds: float) -> None:
    """The human report on stdout (the engine's warnings again on stderr)."""
    console.out(t("doctor.title", version=__version__))
    for line in render_table(profile.checks):
        console.out(line)
    counts = {v: sum(1 for c in profile.checks if c.verdict == v) for v in ("ok", "warn", "fail")}
    for check in profile.checks:
        if check.id == "engine" and check.verdict != "ok":
            console.warn(check.reason)
    offer = cuda_toolkit_hint(profile, settings.cuda_toolkit_env())
    if offer:
        console.out(offer)
    console.out(t("doctor.summary", ok=counts["ok"], warn=counts["warn"], fail=counts["fail"]))
    console.out(t("doctor.elapsed", seconds=f"{seconds:.2f}"))


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    home = resolve_home(getattr(args, "home", None))
    # The speed this machine's last install measured here goes along (--hardware files made from this keep it).
    profile = recorded_rates(home, detect(home.root, engine=check_engine, reach=True))
    if getattr(args, "json", False):
        console.emit_json(profile.to_json())
    else:
        report(profile, time.perf_counter() - started)
    for path in world_writable(home):  # stderr, also with --json: its stdout stays the profile alone
        console.warn(t("modes.world_writable", path=path))
    return 0
