"""``logs/last-failure.json``: the last time llama-server could not run, for ``status`` — written atomically,
read back only when it is a well-formed record of a known cause (it is a report: a damaged one is ignored, never an
error), and removed by a verified install.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.place.engine_failure import OUT_OF_MEMORY, EngineFailure
from bootstrap.record.failure_record import MAX_BYTES, clear_failure, load_failure, save_failure

pytestmark = pytest.mark.usefixtures("english")


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home")


def record_path(home: Home) -> Path:
    return home.logs_dir / "last-failure.json"


def oom(home: Home) -> EngineFailure:
    return EngineFailure(OUT_OF_MEMORY, "cudaMalloc failed: out of memory", wanted_bytes=3 << 30, device="CUDA0",
                         log=str(home.logs_dir / "server.log"))


def test_a_saved_failure_reads_back_with_the_exit_code_of_the_run(home: Home) -> None:
    """The message and hint the user saw, the cause, the log, and the run's exit code (6 when the previous install
    was put back, whatever the cause's own code)."""
    failure = oom(home)
    error = failure.error("llama-server")
    save_failure(home, error, 6)
    got = load_failure(home)
    assert got is not None
    assert (got.cause, got.message, got.hint, got.exit_code, got.log) == (
        OUT_OF_MEMORY, error.message, error.hint, 6, failure.log)
    assert got.when.endswith("Z") and "T" in got.when
    doc = json.loads(record_path(home).read_text(encoding="utf-8"))
    assert doc["failure"]["wanted_bytes"] == 3 << 30 and doc["failure"]["device"] == "CUDA0"
    if os.name != "nt":
        assert stat.S_IMODE(record_path(home).stat().st_mode) == 0o644  # a report, no secret in it


def test_the_logs_folder_is_made_and_a_second_failure_replaces_the_first(home: Home) -> None:
    save_failure(home, oom(home).error("llama-server"), 3)
    crash = EngineFailure("crash", "signal 11", signal="SIGSEGV")
    save_failure(home, crash.error("llama-server"), 6)
    got = load_failure(home)
    assert got is not None and (got.cause, got.exit_code, got.log) == ("crash", 6, None)


def test_clear_removes_it_and_is_idempotent(home: Home) -> None:
    save_failure(home, oom(home).error("llama-server"), 3)
    clear_failure(home)
    assert load_failure(home) is None and not record_path(home).exists()
    clear_failure(home)  # nothing there: no error
    clear_failure(Home(home.root / "never-installed"))  # no home, no logs folder either


@pytest.mark.parametrize("content", [
    b"{not json",
    b"[]",
    b'{"cause": "meteor", "when": "w", "message": "m", "hint": "h", "exit_code": 6}',
    b'{"cause": "crash", "when": "w", "message": 3, "hint": "h", "exit_code": 6}',
    b'{"cause": "crash", "when": "w", "message": "m", "hint": "h", "exit_code": "6"}',
    b'{"cause": "crash", "when": "w", "message": "m", "hint": "h"}',
    b'{"cause": "crash", "when": "w", "message": "m", "hint": "h", "exit_code": 6, "pad": "'
    + b"x" * MAX_BYTES + b'"}',
])
def test_a_damaged_or_foreign_record_reads_as_none(home: Home, content: bytes) -> None:
    """Broken JSON, another shape, an unknown cause, mistyped fields, or a file too large to be ours: ignored."""
    home.logs_dir.mkdir(parents=True)
    record_path(home).write_bytes(content)
    assert load_failure(home) is None


def test_a_log_that_is_not_text_is_dropped_not_fatal(home: Home) -> None:
    home.logs_dir.mkdir(parents=True)
    record_path(home).write_text(json.dumps({"cause": "crash", "when": "w", "message": "m", "hint": "",
                                             "exit_code": 6, "log": 42}), encoding="utf-8")
    got = load_failure(home)
    assert got is not None and got.log is None
