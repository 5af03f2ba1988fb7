"""``install --keep-alive``: Ollama's forms read as seconds, and the engine flag each becomes."""

from __future__ import annotations

import pytest

from bootstrap.core.errors import UsageError
from bootstrap.plan.keep_alive import (
    DEFAULT_KEEP_ALIVE_S,
    NEVER,
    effective,
    keep_alive_text,
    parse_keep_alive,
    sleep_seconds,
)

pytestmark = pytest.mark.usefixtures("english")


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30), ("5m", 300), ("1h", 3600), ("1h30m", 5400), ("2h5m10s", 7510), ("90", 90), ("0", 0),
    ("-1", NEVER), ("never", NEVER), ("NEVER", NEVER), (" 5M ", 300),
])
def test_keep_alive_forms_are_ollamas(text: str, seconds: int) -> None:
    assert parse_keep_alive(text) == seconds


@pytest.mark.parametrize("text", ["", "5 m", "5d", "-2", "1.5h", "m5", "1h30", "h", "9999h", "never!", "-0"])
def test_keep_alive_bad_duration_is_exit_2_with_the_forms(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_keep_alive(text)
    assert caught.value.message == f"--keep-alive takes a duration (got {text})"
    assert "30s, 5m, 1h or 1h30m" in (caught.value.hint or "")


def test_keep_alive_becomes_the_engines_sleep_flag() -> None:
    assert sleep_seconds(NEVER) is None  # no flag: llama-server's default, -1, keeps it
    assert sleep_seconds(0) == 1  # llama-server refuses 0 ("cannot be 0"): its shortest sleep
    assert sleep_seconds(300) == 300
    assert effective(None) == DEFAULT_KEEP_ALIVE_S == 1800 and effective(0) == 0 and effective(NEVER) == NEVER


@pytest.mark.parametrize("seconds", [0, 1, 59, 60, 90, 3600, 5400, 86399, NEVER])
def test_keep_alive_text_reads_back_as_the_same_value(seconds: int) -> None:
    assert parse_keep_alive(keep_alive_text(seconds)) == seconds
