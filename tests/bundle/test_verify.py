"""``bundle verify``'s bound on reading one served file whole (the CLI runs: tests/e2e/test_bounded_reads.py)."""

from __future__ import annotations

import pytest

from bootstrap.bundle.verify import file_budget
from bootstrap.fetch.http_session import MIN_RATE, RATE_WINDOW, SEGMENT_DEADLINE

MIB = 1 << 20


@pytest.fixture(autouse=True)
def _default_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("QWENKIT_MIN_RATE", "QWENKIT_RATE_WINDOW", "QWENKIT_SEGMENT_DEADLINE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("size", [0, 1, 64 * MIB, 64 * MIB + 1, 640 * MIB, 20 << 30])
def test_a_file_gets_the_download_engines_pace_for_its_size(size: int) -> None:
    """A file is read in one request: the deadline grows with it (600 s per 64 MiB), so a healthy source at the
    engine's own slowest segment pace (64 MiB in 600 s, 109 KiB/s) is never cut, a 20 GB file included; the rate
    floor is the engine's."""
    budget = file_budget(size)
    assert budget.deadline is not None and budget.deadline >= SEGMENT_DEADLINE
    assert size / (64 * MIB / SEGMENT_DEADLINE) <= budget.deadline <= SEGMENT_DEADLINE * (size / (64 * MIB) + 1)
    assert (budget.min_rate, budget.window) == (MIN_RATE, RATE_WINDOW)


def test_the_overrides_reach_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWENKIT_SEGMENT_DEADLINE", "3")
    monkeypatch.setenv("QWENKIT_MIN_RATE", "10")
    monkeypatch.setenv("QWENKIT_RATE_WINDOW", "2")
    assert (file_budget(100 * MIB).deadline, file_budget(1).min_rate, file_budget(1).window) == (6.0, 10.0, 2.0)
