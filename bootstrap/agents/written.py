"""``--config`` and ``--restore``: a client's config file changed by a few recorded edits, and taken back.

The record is ``<home>/agents/written.json`` (owner-only: the edits of Claude Code's settings hold the key): for
each client, the file (its real path: a symlinked dotfile is edited where it lives), whether it existed and with
which mode, the folders the kit created for it, and the edits in the order made. The file is written atomically
and made owner-only (0600); ``--restore`` puts its old text and mode back, or removes it, and the folders the kit
made, when the kit created it and nothing else was added since.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bootstrap.agents.base import ConfigPlan
from bootstrap.agents.text_edits import Edit, undo
from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.home import Home

SCHEMA = 1
FILE_MODE = 0o600
DIR_MODE = 0o700
MAX_CONFIG = 4 << 20  # a client config larger than this is not one the kit edits


@dataclass(frozen=True)
class Written:
    """What ``--config`` did to one client's file."""

    path: Path
    existed: bool
    mode: int | None  # the file's permission bits before (None: it did not exist)
    created_dirs: tuple[Path, ...]
    skeleton: str
    edits: tuple[Edit, ...]

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "existed": self.existed, "mode": self.mode,
                "created_dirs": [str(p) for p in self.created_dirs], "skeleton": self.skeleton,
                "edits": [e.to_json() for e in self.edits]}


def record_file(home: Home) -> Path:
    return home.root / "agents" / "written.json"


def _load(home: Home) -> dict[str, Any]:
    path = record_file(home)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"schema": SCHEMA, "clients": {}}
    except (OSError, ValueError) as exc:
        raise UsageError(t("launch.err_record", path=path, reason=str(exc)), t("launch.hint_record")) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("clients"), dict):
        raise UsageError(t("launch.err_record", path=path, reason="not a record"), t("launch.hint_record"))
    return doc


def _save(home: Home, doc: dict[str, Any]) -> None:
    path = record_file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.name != "nt":
        path.parent.chmod(DIR_MODE)
    write_atomic(path, (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode(), mode=FILE_MODE)


def recorded(home: Home, client: str) -> Written | None:
    entry = _load(home)["clients"].get(client)
    if not isinstance(entry, dict):
        return None
    try:
        return Written(Path(entry["path"]), bool(entry["existed"]), entry.get("mode"),
                       tuple(Path(p) for p in entry.get("created_dirs", [])), str(entry.get("skeleton", "")),
                       tuple(Edit(int(e["at"]), str(e["old"]), str(e["new"])) for e in entry["edits"]))
    except (KeyError, TypeError, ValueError):
        raise UsageError(t("launch.err_record", path=record_file(home), reason=client), t("launch.hint_record")) \
            from None


def real_path(path: Path) -> Path:
    """Where a config file really is: a symlink (a dotfile manager's) is followed, so the link stays a link."""
    return path.resolve() if path.is_symlink() else path


def read_config(path: Path) -> str | None:
    """The config file's text (None when there is none), refused when it is not a plain text file the kit can
    edit."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(t("launch.err_config_read", path=path, reason=os_reason(exc)), None) from None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG:
        raise UsageError(t("launch.err_config_kind", path=path), None)
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(t("launch.err_config_kind", path=path), None) from None
    except OSError as exc:
        raise UsageError(t("launch.err_config_read", path=path, reason=os_reason(exc)), None) from None


def _missing_dirs(folder: Path) -> list[Path]:
    missing = []
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    return list(reversed(missing))


def write(home: Home, client: str, plan: ConfigPlan, before: str | None) -> None:
    """Write ``plan``'s text into its file (owner-only), after recording what is being done."""
    path = plan.path
    created = _missing_dirs(path.parent)
    mode = None
    if before is not None:
        mode = stat.S_IMODE(path.stat().st_mode)
    entry = Written(path, before is not None, mode, tuple(created), plan.skeleton, plan.edits)
    doc = _load(home)
    doc["clients"][client] = entry.to_json()
    _save(home, doc)  # recorded first: a kill after the write still leaves what to take back
    for folder in created:
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
    write_atomic(path, plan.text.encode("utf-8"), mode=FILE_MODE)


def restore(home: Home, client: str) -> Written | None:
    """Take back what ``--config`` wrote for ``client``; None when nothing is recorded."""
    entry = recorded(home, client)
    if entry is None:
        return None
    text = read_config(entry.path)
    if text is not None:
        back = undo(text, entry.edits)
        if back is None:
            raise UsageError(t("launch.err_restore_changed", path=entry.path), t("launch.hint_restore_changed"))
        if not entry.existed and back == entry.skeleton:
            entry.path.unlink()
            for folder in reversed(entry.created_dirs):
                try:
                    folder.rmdir()
                except OSError:
                    break  # something else lives there now
        elif back != text:
            write_atomic(entry.path, back.encode("utf-8"), mode=entry.mode if entry.mode is not None else FILE_MODE)
    doc = _load(home)
    doc["clients"].pop(client, None)
    _save(home, doc)
    return entry
