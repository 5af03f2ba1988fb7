"""``--config`` and ``--restore``: a client's config file changed by a few recorded edits, and taken back.

The record is ``<home>/agents/written.json`` (owner-only: the edits of Claude Code's settings hold the key): for
each client, the file (its real path: a symlinked dotfile is edited where it lives), whether it existed and with
which mode, the folders the kit created for it, and the edits in the order made. It is written before the file, so
a kill in between still leaves what to take back; a write that fails takes its entry out again, so no record ever
names edits that were not made. The file is written atomically and made owner-only (0600); ``--restore`` puts its
old text and mode back, or removes it, and the folders the kit made, when the kit created it and nothing else was
added since. Where none of the kit's edits is left in the file (the user took them out by hand, as a refused
restore asks), ``--restore`` forgets them.
"""

from __future__ import annotations

import contextlib
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
from bootstrap.core.fs_errors import os_error, os_reason
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


@dataclass(frozen=True)
class Restored:
    """What ``restore`` did: ``undone`` the kit's edits taken out of the file; False when none was left in it (taken
    out by hand, or the file is gone), and only the record was forgotten."""

    entry: Written
    undone: bool


def record_file(home: Home) -> Path:
    return home.agents_dir / "written.json"


def private_dir(home: Home) -> Path:
    """``<home>/agents``, made owner-only: the record holds the edits (Claude Code's hold the key), and a client may
    be given a file there for one run."""
    folder = home.agents_dir
    folder.mkdir(parents=True, exist_ok=True)
    if os.name != "nt":
        folder.chmod(DIR_MODE)
    return folder


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
    private_dir(home)
    write_atomic(record_file(home), (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode(), mode=FILE_MODE)


def _forget(home: Home, client: str) -> None:
    doc = _load(home)
    doc["clients"].pop(client, None)
    _save(home, doc)


def recorded_clients(home: Home) -> tuple[str, ...]:
    """The clients whose config files hold edits of the kit's, by the record."""
    return tuple(_load(home)["clients"])


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


def read_config(path: Path, client: str) -> str | None:
    """The config file's text (None when there is none), refused when it is not a plain text file the kit can
    edit."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(t("launch.err_config_read", path=path, reason=os_reason(exc)),
                         t("launch.hint_config_shape", client=client)) from None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG:
        raise UsageError(t("launch.err_config_kind", path=path), t("launch.hint_config_shape", client=client))
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(t("launch.err_config_kind", path=path), t("launch.hint_config_shape", client=client)) \
            from None
    except OSError as exc:
        raise UsageError(t("launch.err_config_read", path=path, reason=os_reason(exc)),
                         t("launch.hint_config_shape", client=client)) from None


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
    try:
        for folder in created:
            folder.mkdir(mode=DIR_MODE, exist_ok=True)
        write_atomic(path, plan.text.encode("utf-8"), mode=FILE_MODE)
    except OSError as exc:  # nothing was written: no record of edits that are not there
        _forget(home, client)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        error = os_error(exc, path)  # the client's file named, not the temporary one beside it
        if error is None:
            raise
        raise type(error)(error.message, t("launch.hint_config_write", client=client)) from exc


def restore(home: Home, client: str) -> Restored | None:
    """Take back what ``--config`` wrote for ``client``; None when nothing is recorded."""
    entry = recorded(home, client)
    if entry is None:
        return None
    text = read_config(entry.path, client)
    back = None if text is None else undo(text, entry.edits)
    if text is not None and back is None and any(edit.new in text for edit in entry.edits):
        raise UsageError(t("launch.err_restore_changed", path=entry.path),
                         t("launch.hint_restore_changed", client=client))
    if text is not None and back is not None:
        if not entry.existed and back == entry.skeleton:
            entry.path.unlink()
            for folder in reversed(entry.created_dirs):
                try:
                    folder.rmdir()
                except OSError:
                    break  # something else lives there now
        elif back != text:
            write_atomic(entry.path, back.encode("utf-8"), mode=entry.mode if entry.mode is not None else FILE_MODE)
    _forget(home, client)
    return Restored(entry, back is not None)
