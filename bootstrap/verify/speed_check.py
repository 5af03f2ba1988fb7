"""Measured vs predicted speed at verify: measure (with the A/B of speculative decoding when the server speculates),
compare with the plan's prediction, and on a slow result name the likely cause from this machine's state.

"Slow" is decode below ``SLOW_FRACTION`` of the prediction's LOW end. The low end is already the planner's
pessimistic bound, and on the test bed the fixed measurement of one server varied by up to ~35 % between runs
while six other builds shared its two cores (docs/engine.md, "Measured speed"); 0.75 × low is beyond that
noise and still catches what a user feels: a GPU model spilled to the CPU or sharing VRAM runs at a fraction of the
prediction, not 20 % under it. Prompt speed is shown, not judged: a 64-token prompt understates a GPU's batch
throughput (``speed.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bootstrap.core.console import join_items, t, warn
from bootstrap.core.errors import ServerError
from bootstrap.core.sizes import rate_text
from bootstrap.detect.probes.contention import (
    ContentionReadings,
    probe_contention,
    read_contention,
    read_cpu_clock,
)
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.verify.speculation import compare_speculation
from bootstrap.verify.speed import measure_speed
from bootstrap.verify.speed_records import SpeedCheck, SpeedSample, predicted_range

SLOW_FRACTION = 0.75

# The contention reader (``read_contention``); tests pass one fed with recorded readings.
ContentionReader = Callable[[tuple[float | None, float | None]], ContentionReadings]


@dataclass(frozen=True)
class Checked:
    check: SpeedCheck | None  # None: the measurement failed (a warning; the chat proof already passed)
    spec: LaunchSpec  # the server now running: the A/B may have dropped the speculation flags


def verdict(measured: SpeedSample, predicted: Mapping[str, Any] | None) -> str:
    """"unpredicted" without a usable prediction, "slow" below ``SLOW_FRACTION`` × its low end, else "ok"."""
    decode = predicted_range(predicted, "decode")
    if decode is None:
        return "unpredicted"
    return "slow" if measured.decode_tps < SLOW_FRACTION * decode[1] else "ok"


def check_speed(spec: LaunchSpec, api_key: str, predicted: Mapping[str, Any] | None,
                restart: Callable[[LaunchSpec], None], *, timeout: float = 120.0,
                contention: ContentionReader = read_contention) -> Checked:
    """Measure the running server (both arms when it speculates; ``restart`` switches arms), judge it against
    ``predicted`` (``Plan.speed.to_json()``), and look for the cause of a slow result."""
    start = time.perf_counter()
    outcome = compare_speculation(spec, api_key, restart, timeout=timeout)
    if outcome is None:
        try:
            measured = measure_speed(spec.base_url, api_key, timeout=timeout,
                                     model=spec.alias if spec.router else None)
        except ServerError as exc:  # a report, not a gate: the server already answered the chat proof
            warn(t("speed.not_measured", reason=exc.message))
            return Checked(None, spec)
    else:
        spec = outcome.spec
        measured = outcome.trial.on if outcome.trial.kept == "on" else outcome.trial.off
    clock = read_cpu_clock()  # now, before an idle clock winds down
    judged = verdict(measured, predicted)
    causes = probe_contention(contention(clock), spec.server) if judged == "slow" else ()
    if judged == "slow" and "--rpc" in spec.args:  # the prediction counts no network (planner._predict_speed)
        causes = ("rpc", *causes)
    check = SpeedCheck(measured, None if predicted is None else dict(predicted), judged, causes,
                       None if outcome is None else outcome.trial, time.perf_counter() - start,
                       time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return Checked(check, spec)


def _rate(value: float) -> str:
    """Measured and predicted rates at verify: one decimal below 100 (the slow verdict is a threshold)."""
    return rate_text(value, fine_below=100)


def _predicted_text(predicted: Mapping[str, Any] | None, what: str) -> str:
    rng = predicted_range(predicted, what)
    if rng is None:
        return t("speed.no_prediction")
    return t("speed.predicted", value=_rate(rng[0]), low=_rate(rng[1]), high=_rate(rng[2]))


def speed_lines(check: SpeedCheck) -> tuple[list[str], list[str]]:
    """(information lines, warnings) for the install report and ``status``."""
    m = check.measured
    lines = [t("speed.decode", measured=_rate(m.decode_tps), predicted=_predicted_text(check.predicted, "decode")),
             t("speed.prompt", measured=_rate(m.prompt_tps), tokens=m.prompt_n,
               predicted=_predicted_text(check.predicted, "prompt"))]
    trial = check.speculation
    if trial is not None and trial.on is not None:
        lines.append(t("speed.spec_ab", flags=" ".join(trial.flags), on=_rate(trial.on.decode_tps),
                       off=_rate(trial.off.decode_tps), acceptance=_acceptance(trial.on),
                       kept=t(f"speed.kept_{trial.kept}")))
    elif trial is not None:
        lines.append(t("speed.spec_failed", flags=" ".join(trial.flags), off=_rate(trial.off.decode_tps),
                       reason=trial.on_error or "?"))
    far = _far_off(m.decode_tps, predicted_range(check.predicted, "decode"))
    if far is not None and check.verdict != "slow":  # faster than the estimate by far: say which one to go by
        lines.append(t("speed.far_above", factor=far))
    warnings: list[str] = []
    if check.verdict == "slow":
        rng = predicted_range(check.predicted, "decode")
        low = _rate(rng[1]) if rng is not None else "?"
        causes = join_items(t(f"speed.cause_{c}") for c in check.causes) or t("speed.cause_unknown")
        warnings.append(t("speed.slow", measured=_rate(m.decode_tps), low=low, causes=causes))
    return lines, warnings


FAR_OFF = 3.0  # a measurement this many times the estimate (either way) says the estimate is not to be trusted


def _far_off(measured: float, predicted: tuple[float, float, float] | None) -> str | None:
    """``"10"`` when ``measured`` is at least ``FAR_OFF`` times the estimate's high end, else None (the slow side
    has its own warning)."""
    if predicted is None or predicted[2] <= 0 or measured < FAR_OFF * predicted[2]:
        return None
    return f"{measured / predicted[0]:.0f}"


def measured_when(check: SpeedCheck) -> str:
    """When a recorded measurement was made, as ``status`` shows it ("2026-01-05 10:02 UTC"; a record from before
    the time was kept: "the last install")."""
    when = check.measured_at or ""
    return when.replace("T", " ")[:16] + " UTC" if when else t("speed.when_unknown")


def _acceptance(sample: SpeedSample) -> str:
    rate = sample.acceptance
    return t("speed.no_drafts") if rate is None else f"{rate:.0%}"
