"""Detect this machine: every probe, then the doctor's checks, as one hardware profile (the detect stage's output).

The records live in ``hardware``, the probes in ``probes``, the verdicts in ``checks``; this module runs them in
that order. The engine verdict is a plan decision (``plan.engine_variant.check_engine``): callers above the plan
stage pass it in as ``engine``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from bootstrap import __version__
from bootstrap.detect.checks import Judge, run_checks
from bootstrap.detect.hardware import HardwareProfile, utc_now, with_checks
from bootstrap.detect.probes import Readings, probe_all, read_all


def detect(home: Path, env: Mapping[str, str] | None = None, engine: Judge | None = None,
           reach: bool = False) -> HardwareProfile:
    """Run every probe on this machine and the doctor's checks; the result is the profile document.

    ``env`` defaults to the process environment (proxy and CA variables, Windows install dirs); it is passed down
    as data, like ``home.default_home`` does, so probes stay testable. ``reach``: also probe each download source
    (``doctor``; a few seconds at most, so ``plan`` and ``install`` do not).
    """
    readings = read_all(home, os.environ if env is None else env, reach)
    return profile_from_readings(readings, created=utc_now(), engine=engine)


def profile_from_readings(readings: Readings, created: str, kit_version: str = __version__,
                          engine: Judge | None = None) -> HardwareProfile:
    """The full profile (records + the doctor's checks) from a ``probes.Readings``: live or recorded."""
    profile = probe_all(readings, created=created, kit_version=kit_version)
    return with_checks(profile, run_checks(profile, engine=engine))
