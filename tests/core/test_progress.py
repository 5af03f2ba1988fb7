"""Progress off a terminal (plain lines at a bounded rate) and on one (lines rewritten in place), with a fake clock;
the bar's units (MiB, as the plan says) and a terminal that states no size, through a real pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

import pytest

from bootstrap.core import progress
from bootstrap.core.progress import Progress, Ticker, duration_text
from tests.support.hub_fixtures import REPO_ROOT

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
    # with the rate so far and the time left at that rate: a log in a pipe shows an ETA as a bar does
    assert lines[1] == "m.gguf: 10.1 MiB of 100.0 MiB (10%), 500.0 KiB/s, about 3 min 4 s left"
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


def test_a_resumed_download_says_what_is_left_of_what_total(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    file = Progress(100 << 20, quiet=False, terminal=False).file("m.gguf", 100 << 20, 40 << 20)
    clock.now += 12
    file.update(60 << 20)
    file.close()
    lines = capsys.readouterr().err.splitlines()
    # one story: 60 MiB left of 100 MiB, not "resuming at 40" then "downloading 100"
    assert lines == ["m.gguf: resuming the download, 60.0 MiB left of 100.0 MiB (40.0 MiB kept from an earlier run)",
                     "m.gguf: 100.0 MiB in 12.0 s (5.0 MiB/s)"]


@pytest.mark.parametrize("terminal", [False, True])
def test_a_copy_and_a_check_are_not_called_downloads(terminal: bool, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LINES", "30")
    bars = Progress(2 << 20, quiet=False, terminal=terminal)
    for name, verb in (("a.gguf", "copy"), ("b.gguf", "check")):
        file = bars.file(name, 1 << 20, 0, verb)
        file.update(1 << 20)
        file.close()
    bars.close()
    err = capsys.readouterr().err
    assert "a.gguf: copying 1.0 MiB from the bundle" in err and "b.gguf: checking 1.0 MiB" in err
    assert "downloading" not in err


def test_duration_text_reads_as_people_say_it() -> None:
    assert [duration_text(s) for s in (0.4, 59, 61, 3599, 3600, 7505)] == \
        ["0 s", "59 s", "1 min 1 s", "59 min 59 s", "1 h 0 min", "2 h 5 min"]


_BARS = r"""
import time
from bootstrap.core.console import set_language
set_language("en")
from bootstrap.core.progress import Progress
bars = Progress(8 << 20, quiet=False)
file = bars.file("m.gguf", 8 << 20, 0)
for _ in range(8):
    file.update(1 << 20)
    time.sleep(0.3)
file.close()
bars.close()
"""


def _on_a_terminal(rows: int, columns: int, env: dict[str, str]) -> str:
    """What a real pseudo-terminal of that size shows of two bars (the size a terminal states is what tqdm asks)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-c", _BARS], stdin=slave, stdout=slave, stderr=slave, env=env,
                            cwd=REPO_ROOT)
    os.close(slave)
    seen = b""
    try:
        while select.select([master], [], [], 30)[0]:
            try:
                block = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not block:
                break
            seen += block
    finally:
        os.close(master)
        proc.wait(timeout=30)
    return seen.decode("utf-8", "replace")


@pytest.mark.parametrize(("rows", "columns", "extra"), [(24, 100, {}), (0, 0, {}), (0, 0, {"COLUMNS": "0"})])
def test_bars_show_binary_units_and_draw_on_a_terminal_of_no_size(rows: int, columns: int,
                                                                  extra: dict[str, str]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(PYTHONPATH=str(REPO_ROOT), **extra)
    shown = _on_a_terminal(rows, columns, env)
    drawn = [line for line in re.split(r"[\r\n]+|\x1b\[A", shown) if line.strip()]
    # both bars drawn to the end (a 0×0 terminal used to get blank lines only), in the plan's units
    assert any(re.match(r"m\.gguf: 100%\|.*\| 8\.0 MiB / 8\.0 MiB \[.*MiB/s\]", line) for line in drawn), shown
    assert any(re.match(r"total: 100%\|.*\| 8\.0 MiB / 8\.0 MiB", line) for line in drawn), shown
    assert "MB" not in shown.replace("MiB", "")
