"""Progress off a terminal (plain lines at a bounded rate) and on one (lines rewritten in place), with a fake clock."""

from __future__ import annotations

import pytest

from bootstrap.core import progress
from bootstrap.core.progress import Progress, Ticker

pytestmark = pytest.mark.usefixtures("english")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_file_off_a_terminal_is_a_start_line_a_few_more_and_a_last_one(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    bars = Progress(100 << 20, quiet=False, terminal=False)
    file = bars.file("m.gguf", 100 << 20, 0)
    for _ in range(1024):  # 100 MiB in 100 KiB reads over 204.8 s: a line per tenth, at most one per 10 s
        clock.now += 0.2
        file.update(100 << 10)
    file.close()
    bars.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "m.gguf: downloading 100.0 MiB"
    assert lines[1] == "m.gguf: 10.1 MiB of 100.0 MiB (10%)"
    assert lines[-1] == "m.gguf: 100.0 MiB in 204.8 s (500.0 KiB/s)"
    assert len(lines) == 11  # start, 10 % … 90 %, done


def test_a_slow_file_still_gets_a_line_a_minute(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    file = Progress(1 << 30, quiet=False, terminal=False).file("big.gguf", 1 << 30, 0)
    for _ in range(30):  # 3 % in 150 s
        clock.now += 5
        file.update(1 << 20)
    assert len(capsys.readouterr().err.splitlines()) == 1 + 2  # start, then at 60 s and 120 s


def test_ticker_off_a_terminal_waits_every_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    ticker = Ticker(terminal=False, every=10, clock=clock)
    for _ in range(250):  # 25 s
        clock.now += 0.1
        ticker.tick(lambda: f"loading… {int(clock.now)} s")
    ticker.close()
    assert capsys.readouterr().err.splitlines() == ["loading… 10 s", "loading… 20 s"]


def test_ticker_on_a_terminal_rewrites_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    ticker = Ticker(terminal=True, clock=clock)
    for _ in range(25):
        ticker.tick(lambda: f"loading… {int(clock.now)} s")
        clock.now += 0.1
    ticker.close()
    err = capsys.readouterr().err
    assert err == "\rloading… 0 s\x1b[K\rloading… 1 s\x1b[K\rloading… 2 s\x1b[K\n"
