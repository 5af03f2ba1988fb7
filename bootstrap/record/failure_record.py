"""``<home>/logs/last-failure.json``: the last time llama-server could not run, and why (``status`` shows it).

``state.json`` describes only a verified install, so a failed first install or a refused upgrade leaves its cause
here instead: the classified failure, the one-line message and hint the user saw, and the exit code. A successful
install removes it. Written atomically; a damaged file is ignored (it is only a report).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.file_formats import read_record
from bootstrap.core.home import Home
from bootstrap.place.engine_failure import CAUSES, EngineFailed

FILE_NAME = "last-failure.json"
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class FailureRecord:
    when: str  # ISO 8601 UTC
    cause: str
    message: str
    hint: str
    exit_code: int
    log: str | None


def _path(home: Home) -> Path:
    return home.logs_dir / FILE_NAME


def save_failure(home: Home, error: EngineFailed, exit_code: int) -> None:
    """Record a classified failure and the exit code the run ended with (6 when the previous install was put back
    after it)."""
    record = {
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cause": error.failure.cause, "message": error.message, "hint": error.hint or "",
        "exit_code": exit_code, "log": error.failure.log, "failure": error.failure.to_json(),
    }
    home.logs_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(_path(home), (json.dumps(record, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), mode=0o644)


def load_failure(home: Home) -> FailureRecord | None:
    """The recorded failure, or None (none, or not readable as one)."""
    doc: Any = read_record(_path(home), MAX_BYTES)
    if not isinstance(doc, dict) or doc.get("cause") not in CAUSES:
        return None
    fields = ("when", "message", "hint")
    if not all(isinstance(doc.get(k), str) for k in fields) or not isinstance(doc.get("exit_code"), int):
        return None
    log = doc.get("log")
    return FailureRecord(doc["when"], doc["cause"], doc["message"], doc["hint"], doc["exit_code"],
                         log if isinstance(log, str) else None)


def clear_failure(home: Home) -> None:
    """A verified install: the last failure is history."""
    _path(home).unlink(missing_ok=True)
