"""``<home>/logs/refused.json``: model files an upgrade refused before it changed anything, so a rerun asking for the
same bytes refuses at once (no download, no stop) and says which revision, when, and why.

A refusal is keyed by the file's sha256: the same bytes are refused again whatever the revision is called, and a new
revision or another quant (other bytes) proceeds normally. A damaged file stays refused; a model the engine could
not load is refused only for that engine build (a newer pinned build may know its architecture). Written
atomically and bounded; a damaged record is ignored (at worst the bad revision is downloaded and refused again).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.file_formats import read_record
from bootstrap.core.hashing import is_sha256
from bootstrap.core.home import Home

FILE_NAME = "refused.json"
MAX_BYTES = 256 * 1024
MAX_ENTRIES = 100  # the newest are kept; a home does not collect refusals forever


@dataclass(frozen=True)
class Refusal:
    sha256: str
    file: str  # the file's name in its repository
    revision: str | None  # the hub's commit, when known
    source: str  # "hf", "modelscope", a mirror's host, "bundle", "local"
    when: str  # ISO 8601 UTC
    cause: str  # model_corrupt | model_unsupported
    reason: str  # why, in one clause (the line the refusing run printed, without the file name)
    exit_code: int
    engine_build: int | None = None  # the llama.cpp build that could not load it (model_unsupported only)


def _path(home: Home) -> Path:
    return home.logs_dir / FILE_NAME


def load_refusals(home: Home) -> list[Refusal]:
    """Every recorded refusal that reads back whole (damaged entries are skipped)."""
    doc: Any = read_record(_path(home), MAX_BYTES)
    entries = doc.get("refused") if isinstance(doc, dict) else None
    out: list[Refusal] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not is_sha256(entry.get("sha256")):
            continue
        texts = ("file", "source", "when", "cause", "reason")
        revision = entry.get("revision")
        if not all(isinstance(entry.get(k), str) for k in texts) or not isinstance(entry.get("exit_code"), int) \
                or not (revision is None or isinstance(revision, str)):
            continue
        build = entry.get("engine_build")
        out.append(Refusal(entry["sha256"], entry["file"], revision, entry["source"], entry["when"],
                           entry["cause"], entry["reason"], entry["exit_code"],
                           build if isinstance(build, int) and not isinstance(build, bool) else None))
    return out


def refusal_for(home: Home, sha256s: Iterable[str], engine_build: int | None) -> Refusal | None:
    """The recorded refusal of any of these files' bytes that still stands with ``engine_build`` (the build that
    would run them), newest first; None when none does."""
    wanted = set(sha256s)

    def stands(r: Refusal) -> bool:
        return r.engine_build is None or r.engine_build == engine_build

    return next((r for r in reversed(load_refusals(home)) if r.sha256 in wanted and stands(r)), None)


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def save_refusal(home: Home, refusal: Refusal) -> None:
    """Add ``refusal`` (replacing an older one of the same bytes)."""
    kept = [r for r in load_refusals(home) if r.sha256 != refusal.sha256][-(MAX_ENTRIES - 1):]
    doc = {"refused": [asdict(r) for r in [*kept, refusal]]}
    home.logs_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(_path(home), (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), mode=0o644)
