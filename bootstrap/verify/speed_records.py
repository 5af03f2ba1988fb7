"""The records of the speed measurement at verify: what was measured, against what prediction, what it concluded.

Plain data with no network imports, so ``record.state`` can read them back on a no-op rerun. ``state.json`` keeps
them under ``"speed"``; every field is a report, never a reason to reject the install record: an unreadable
``speed`` block (or none, in a record written before it existed) reads as ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# What ``Plan.speed.to_json()`` carries (the planner's prediction); the rest of a prediction is kept, not read.
PREDICTED_KEYS = ("decode_tps", "decode_low", "decode_high", "prompt_tps", "prompt_low", "prompt_high")


@dataclass(frozen=True)
class SpeedSample:
    """One measured arm: llama-server's own ``timings`` of the fixed request (the best of ``runs``)."""

    prompt_tps: float  # timings.prompt_per_second over ``prompt_n`` tokens
    decode_tps: float  # timings.predicted_per_second over ``decode_n`` tokens
    prompt_n: int
    decode_n: int
    runs: int = 1
    draft_n: int | None = None  # timings.draft_n (speculative decoding ran; absent when it drafted nothing)
    draft_accepted: int | None = None  # timings.draft_n_accepted

    @property
    def acceptance(self) -> float | None:
        """Accepted draft tokens over drafted ones, or None when nothing was drafted."""
        if not self.draft_n or self.draft_accepted is None:
            return None
        return self.draft_accepted / self.draft_n

    def to_json(self) -> dict[str, Any]:
        return {"prompt_tps": round(self.prompt_tps, 2), "decode_tps": round(self.decode_tps, 2),
                "prompt_n": self.prompt_n, "decode_n": self.decode_n, "runs": self.runs, "draft_n": self.draft_n,
                "draft_accepted": self.draft_accepted,
                "acceptance": None if self.acceptance is None else round(self.acceptance, 3)}


@dataclass(frozen=True)
class SpecTrial:
    """The A/B of speculative decoding: the same request with and without it; ``kept`` is the faster arm."""

    flags: tuple[str, ...]  # the speculation flags the plan asked for (``--spec-type draft-mtp …``)
    on: SpeedSample | None  # None: the server with speculation failed the measurement (``on_error`` says how)
    off: SpeedSample
    kept: str  # "on" | "off"
    on_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"flags": list(self.flags), "on": None if self.on is None else self.on.to_json(),
                "off": self.off.to_json(), "kept": self.kept, "on_error": self.on_error}


@dataclass(frozen=True)
class SpeedCheck:
    """Measured vs predicted: ``verdict`` is "ok", "slow" (far below the prediction) or "unpredicted"; ``causes``
    are the likely reasons this machine found for a slow one (``detect.probes.contention`` kinds)."""

    measured: SpeedSample
    predicted: Mapping[str, Any] | None
    verdict: str
    causes: tuple[str, ...] = ()
    speculation: SpecTrial | None = None
    measure_s: float = 0.0  # wall seconds the measurement (and the A/B, restarts included) added to verify
    measured_at: str | None = None  # when (UTC, ISO 8601): a figure of that moment's load, not of now

    def to_json(self) -> dict[str, Any]:
        return {"measured": self.measured.to_json(), "predicted": None if self.predicted is None else
                dict(self.predicted), "verdict": self.verdict, "causes": list(self.causes),
                "speculation": None if self.speculation is None else self.speculation.to_json(),
                "measure_s": round(self.measure_s, 2), "measured_at": self.measured_at}


def _number(doc: Mapping[str, Any], name: str) -> float | None:
    value = doc.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _count(doc: Mapping[str, Any], name: str) -> int | None:
    value = doc.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def sample_from_json(doc: Any) -> SpeedSample | None:
    if not isinstance(doc, dict):
        return None
    prompt, decode = _number(doc, "prompt_tps"), _number(doc, "decode_tps")
    prompt_n, decode_n = _count(doc, "prompt_n"), _count(doc, "decode_n")
    if prompt is None or decode is None or prompt_n is None or decode_n is None:
        return None
    return SpeedSample(prompt, decode, prompt_n, decode_n, runs=_count(doc, "runs") or 1,
                       draft_n=_count(doc, "draft_n"), draft_accepted=_count(doc, "draft_accepted"))


def _trial_from_json(doc: Any) -> SpecTrial | None:
    if not isinstance(doc, dict):
        return None
    on, off = sample_from_json(doc.get("on")), sample_from_json(doc.get("off"))
    flags, error = doc.get("flags"), doc.get("on_error")
    error = error if isinstance(error, str) else None
    if (on is None and error is None) or off is None or doc.get("kept") not in ("on", "off") \
            or not isinstance(flags, list):
        return None
    return SpecTrial(tuple(str(f) for f in flags), on, off, str(doc["kept"]), error)


def predicted_range(predicted: Mapping[str, Any] | None, what: str) -> tuple[float, float, float] | None:
    """(value, low, high) of ``decode`` or ``prompt`` from a prediction, or None when it lacks them."""
    if predicted is None:
        return None
    numbers = [_number(predicted, f"{what}_{k}" if k else f"{what}_tps") for k in ("", "low", "high")]
    if any(n is None for n in numbers):
        return None
    value, low, high = (float(n) for n in numbers if n is not None)
    return value, min(low, value), max(high, value)


def check_from_json(doc: Any) -> SpeedCheck | None:
    """A recorded check, or None when absent or unreadable (a report only)."""
    if not isinstance(doc, dict):
        return None
    measured = sample_from_json(doc.get("measured"))
    if measured is None or doc.get("verdict") not in ("ok", "slow", "unpredicted"):
        return None
    predicted = doc.get("predicted")
    causes = doc.get("causes")
    return SpeedCheck(measured, dict(predicted) if isinstance(predicted, dict) else None, str(doc["verdict"]),
                      tuple(str(c) for c in causes) if isinstance(causes, list) else (),
                      _trial_from_json(doc.get("speculation")), _number(doc, "measure_s") or 0.0,
                      doc["measured_at"] if isinstance(doc.get("measured_at"), str) else None)
