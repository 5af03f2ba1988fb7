"""An offline bundle's table of contents: ``payload/manifest.json`` and its twin ``payload/SHA256SUMS``.

A bundle is a plain directory (USB drive, share, or any static web server; DESIGN.md §4)::

    QwenClientKit-Setup[.exe] …          setup executables (this OS's, and any given with --setup)
    README.txt
    payload/manifest.json                this document (schema 1)
    payload/SHA256SUMS                   ``sha256sum -c`` format, run from the bundle root
    payload/engines/<tag>/<asset>        engine assets (a flat mirror: QWENKIT_ENGINE_URL=<root>/payload/engines)
    payload/models/<repo>/<path>         model files and mmproj
    payload/wheels/<platform>/*.whl      the runtime venv's wheels per platform (bundle_platforms)

The manifest lists every file (size, sha256, kind) plus the catalog entries and engine pins the bundle was made
for, so an install from it needs nothing else. ``SHA256SUMS`` lists the same files and the manifest's own digest:
each file checks the other, so a one-byte change anywhere in either is detected (and admins can check a copy with
``sha256sum -c payload/SHA256SUMS`` from the bundle root). This is integrity against a bad copy or a careless edit,
not authenticity: whoever can rewrite the whole bundle can rewrite both.

``bundle create`` writes the manifest last (after deleting an old one first), so a folder without one is an
unfinished bundle, never a trusted one.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import IntegrityError, UsageError
from bootstrap.core.file_formats import parse_json, read_regular
from bootstrap.core.hashing import is_sha256

MANIFEST = "payload/manifest.json"
SUMS = "payload/SHA256SUMS"
SCHEMA = 1
KINDS = ("model", "mmproj", "engine", "wheel", "setup", "doc")
PAYLOAD = "payload/"

MAX_MANIFEST_BYTES = 64 << 20  # a manifest larger than this is not one this kit wrote


@dataclass(frozen=True)
class BundleFile:
    """One file of the bundle. ``path`` is relative to the bundle root, ``/``-separated."""

    path: str
    size: int
    sha256: str
    kind: str  # one of KINDS
    repo: str | None = None  # model/mmproj: the hub repo (owner/name) it came from
    revision: str | None = None  # model/mmproj: the commit it came from
    platform: str | None = None  # engine: its variant; wheel: its wheels folder; setup: its OS

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"path": self.path, "size": self.size, "sha256": self.sha256, "kind": self.kind}
        for key in ("repo", "revision", "platform"):
            if getattr(self, key) is not None:
                doc[key] = getattr(self, key)
        return doc


@dataclass(frozen=True)
class Manifest:
    """What a bundle holds and was made for."""

    created: str  # ISO 8601 UTC
    tool_version: str  # the kit version that made it
    platforms: tuple[str, ...]  # bundle_platforms names
    python_versions: tuple[str, ...]  # "3.11" …: the wheels cover these
    models: tuple[str, ...]  # "id:quant" bundled, the default first
    catalog: Mapping[str, Any]  # a catalog document (catalog.parse_catalog) naming only what is bundled
    engines: Mapping[str, Any]  # an engines document (engine_pins.parse_pins), every asset with sha256 and size
    files: tuple[BundleFile, ...]
    raw_sha256: str = field(default="", compare=False)  # digest of the manifest bytes it was read from

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "created": self.created, "tool_version": self.tool_version,
                "platforms": list(self.platforms), "python_versions": list(self.python_versions),
                "models": list(self.models), "catalog": dict(self.catalog), "engines": dict(self.engines),
                "files": [f.to_json() for f in self.files]}

    def by_path(self) -> dict[str, BundleFile]:
        return {f.path: f for f in self.files}

    def of_kind(self, *kinds: str) -> list[BundleFile]:
        return [f for f in self.files if f.kind in kinds]


# ---- writing ---------------------------------------------------------------------------------------------------


def dumps(manifest: Manifest) -> bytes:
    """The manifest's bytes (UTF-8 JSON: non-ASCII file names stay readable)."""
    return (json.dumps(manifest.to_json(), ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def sums_text(manifest_bytes: bytes, files: Sequence[BundleFile]) -> bytes:
    """``SHA256SUMS``: ``<hex>  <path>`` per line (GNU coreutils text format), the manifest first.

    The paths never hold a newline or a backslash (``_check_path``), so no line needs coreutils' escaping.
    """
    lines = [f"{hashlib.sha256(manifest_bytes).hexdigest()}  {MANIFEST}"]
    lines += [f"{f.sha256}  {f.path}" for f in files]
    return ("\n".join(lines) + "\n").encode("utf-8")


def write(root: Path, manifest: Manifest) -> bytes:
    """Publish the manifest pair: ``SHA256SUMS`` first, then the manifest (whose presence marks a bundle done)."""
    raw = dumps(manifest)
    write_atomic(root / SUMS, sums_text(raw, manifest.files))
    write_atomic(root / MANIFEST, raw)
    return raw


def unlisted(root: Path, listed: Container[str]) -> list[str]:
    """Paths under ``payload/`` (files, or links of any kind, never followed) that are not listed, deepest first,
    besides the manifest pair itself."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root / PAYLOAD, topdown=False, followlinks=False):
        here = Path(dirpath)
        for name in sorted([*filenames, *(d for d in dirnames if (here / d).is_symlink())]):
            rel = (here / name).relative_to(root).as_posix()
            if rel not in listed and rel not in (MANIFEST, SUMS):
                found.append(rel)
    return found


def file_state(root: Path, rel: str) -> str | None:
    """``None`` when the listed ``rel`` is a regular file inside the bundle folder ``root``; else ``"missing"``
    (absent, or not a file), or ``"link"``: a symbolic link, or a path through one that leaves the folder.

    A bundle is self-contained (copied to a stick, served by a web server that may not follow links): what the
    manifest lists must be in the folder itself, whatever its bytes hash to.
    """
    path = root / rel
    try:
        info = path.lstat()
    except OSError:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "link"
    if not stat.S_ISREG(info.st_mode):
        return "missing"
    if Path(os.path.realpath(root)) not in Path(os.path.realpath(path)).parents:
        return "link"  # a folder on the way is a link leading out
    return None


def unpublish(root: Path) -> None:
    """Remove the manifest before changing a bundle: until it is written again the folder is no bundle."""
    (root / MANIFEST).unlink(missing_ok=True)


# ---- reading -----------------------------------------------------------------------------------------------------


def damaged(where: str, detail: str) -> IntegrityError:
    return IntegrityError(t("sources.err_bad_manifest", where=where, detail=detail), t("bundle.hint_recopy"))


def _check_path(rel: Any) -> bool:
    """A safe relative path: no absolute path, drive, ``..``, backslash or control character."""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
        return False
    if any(ord(c) < 32 for c in rel):
        return False
    parts = PurePosixPath(rel).parts
    return bool(parts) and ".." not in parts and "." not in parts and ":" not in parts[0] \
        and rel not in (MANIFEST, SUMS)


def _opt_str(entry: Mapping[str, Any], key: str, where: str, i: int) -> str | None:
    value = entry.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise damaged(where, f"files[{i}].{key}")
    return value


def _file(entry: Any, i: int, where: str) -> BundleFile:
    if not isinstance(entry, dict):
        raise damaged(where, f"files[{i}] is not an object")
    rel, size, sha256, kind = entry.get("path"), entry.get("size"), entry.get("sha256"), entry.get("kind")
    if not _check_path(rel):
        raise damaged(where, f"files[{i}].path")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise damaged(where, f"files[{i}].size")
    if not is_sha256(sha256):
        raise damaged(where, f"files[{i}].sha256")
    if kind not in KINDS:
        raise damaged(where, f"files[{i}].kind")
    if kind != "setup" and kind != "doc" and not rel.startswith(PAYLOAD):
        raise damaged(where, f"files[{i}].path (outside payload/)")
    return BundleFile(rel, size, sha256, kind, _opt_str(entry, "repo", where, i),
                      _opt_str(entry, "revision", where, i), _opt_str(entry, "platform", where, i))


def _strings(doc: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise damaged(where, f"{key} must be a list of strings")
    return tuple(value)


def parse(raw: bytes, sums: bytes | None, where: str) -> Manifest:
    """Validate a manifest and its ``SHA256SUMS`` twin; any disagreement is an integrity failure (exit 5)."""
    if sums is None:
        raise damaged(where, f"{SUMS} is missing")
    doc = parse_json(raw, lambda detail: damaged(where, detail))
    if not isinstance(doc, dict):
        raise damaged(where, "not a JSON object")
    if isinstance(doc.get("schema"), int) and doc["schema"] > SCHEMA:
        raise UsageError(t("bundle.err_newer", where=where, version=str(doc.get("tool_version", "?"))),
                         t("bundle.hint_newer"))
    if doc.get("schema") != SCHEMA:
        raise damaged(where, f"schema must be {SCHEMA}")
    files = doc.get("files")
    if not isinstance(files, list):
        raise damaged(where, "files must be a list")
    parsed = tuple(_file(entry, i, where) for i, entry in enumerate(files))
    if len({f.path for f in parsed}) != len(parsed):
        raise damaged(where, "a path is listed twice")
    for key in ("catalog", "engines"):
        if not isinstance(doc.get(key), dict):
            raise damaged(where, f"{key} must be an object")
    for key in ("created", "tool_version"):
        if not isinstance(doc.get(key), str):
            raise damaged(where, f"{key} must be a string")
    if sums != sums_text(raw, parsed):
        raise IntegrityError(t("bundle.err_sums_mismatch", where=where), t("bundle.hint_recopy"))
    return Manifest(doc["created"], doc["tool_version"], _strings(doc, "platforms", where),
                    _strings(doc, "python_versions", where), _strings(doc, "models", where), doc["catalog"],
                    doc["engines"], parsed, hashlib.sha256(raw).hexdigest())


def _read_local(path: Path) -> bytes | None:
    """One of the manifest pair: a regular file inside the bundle (a FIFO, a device or a link is a damaged
    bundle, exit 5), bounded in size; ``None`` when absent; exit 2 when it cannot be read."""
    def unreadable(detail: str) -> UsageError:
        return UsageError(t("bundle.err_read", path=str(path), detail=detail))

    return read_regular(path, MAX_MANIFEST_BYTES, lambda detail: damaged(str(path), detail), follow_links=False,
                        missing_ok=True, unreadable=unreadable)


def read_dir(root: Path) -> Manifest:
    """The manifest of a bundle folder; ``UsageError`` (exit 2) when the folder is no bundle."""
    raw = _read_local(root / MANIFEST)
    if raw is None:
        raise UsageError(t("sources.err_no_bundle", where=str(root)), t("bundle.hint_no_bundle"))
    return parse(raw, _read_local(root / SUMS), str(root / MANIFEST))


# ---- checking a bundle folder against its manifest (stat only; hashing is ``bundle verify``'s) --------------


@dataclass(frozen=True)
class Problem:
    path: str
    kind: str  # "missing" | "size" | "altered" | "extra"
    message: str  # localized, one line


def problem(path: str, kind: str, **fields: Any) -> Problem:
    return Problem(path, kind, t(f"bundle.problem_{kind}", path=path, **fields))


def file_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:  # gone since it was looked at
        return None


def stat_problems(root: Path, manifest: Manifest) -> list[Problem]:
    """What ``stat`` alone shows: listed files missing, links (``bundle_manifest.file_state``) or of another size,
    unlisted files under ``payload/``."""
    problems = []
    for entry in manifest.files:
        state = file_state(root, entry.path)
        size = file_size(root / entry.path) if state is None else None
        if state is not None or size is None:
            problems.append(problem(entry.path, state or "missing"))
        elif size != entry.size:
            problems.append(problem(entry.path, "size", expected=entry.size, actual=size))
    return problems + extra_problems(root, {f.path for f in manifest.files})


def extra_problems(root: Path, listed: set[str]) -> list[Problem]:
    """Files (or links, or anything not a folder) under ``payload/`` that the manifest does not list."""
    return [problem(rel, "extra") for rel in sorted(unlisted(root, listed))]
