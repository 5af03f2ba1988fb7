"""The front's idle save waits a minute, or half a model's keep-alive when that is shorter (register/front_cache.py):
a model asleep before its save would lose the agent's prefix, and a save after every short pause writes the whole
slot file each turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootstrap.register.front_cache import IDLE_ENV, IDLE_S, CacheKeeper

PRESET = """version = 1

[qwen]
model = models/qwen.gguf
slot-save-path = prompt-cache/aaaa
sleep-idle-seconds = 30

[coder]
model = models/coder.gguf
slot-save-path = prompt-cache/bbbb
sleep-idle-seconds = 1800

[embed]
model = models/embed.gguf
slot-save-path = prompt-cache/cccc
"""


def _keeper(tmp_path: Path) -> CacheKeeper:
    preset = tmp_path / "models.ini"
    preset.write_text(PRESET, encoding="utf-8")
    keeper = CacheKeeper.from_preset(preset, "http://127.0.0.1:9", "k", lambda _model: 0)
    assert keeper is not None
    return keeper


def test_the_idle_save_waits_a_minute_or_half_the_keep_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(IDLE_ENV, raising=False)
    keeper = _keeper(tmp_path)
    try:
        assert IDLE_S == 60.0
        assert keeper._idle_for("qwen") == 15.0  # asleep after 30 s: saved before
        assert keeper._idle_for("coder") == 60.0
        assert keeper._idle_for("embed") == 60.0  # no keep-alive line: never asleep
    finally:
        keeper.close()


def test_the_idle_pause_can_be_shortened_for_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IDLE_ENV, "2")
    keeper = _keeper(tmp_path)
    try:
        assert keeper._idle_for("coder") == 2.0 and keeper._idle_for("qwen") == 2.0
    finally:
        keeper.close()
