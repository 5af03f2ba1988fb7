"""The one JSON loader and the one TOML loader: every document is bounded before it is parsed.

Every JSON or TOML input goes through here — the answers file, the catalog, the engine pins, ``--hardware``, a
bundle's manifest, ``state.json`` and the kit's own small records — so each gets the same guards:

- **a regular file**: opened non-blocking (a FIFO cannot hang the open) and checked with ``fstat`` on the open
  descriptor: a FIFO, a device (``/dev/zero``), a socket or a folder is refused. Bundle files are also opened with
  ``O_NOFOLLOW``: a link is refused there (a bundle must be self-contained, ``bundle_manifest``).
- **a size cap**: at most ``limit + 1`` bytes are read, so a huge or endless file costs bounded memory.
- **nesting depth and string length**: both parsers recurse once per nesting level (``json``'s scanner and
  ``tomllib`` alike raise ``RecursionError`` on ``[[[[…`` 100,000 deep), so ``RecursionError`` is caught like any
  parse failure, and what parses is walked (iteratively) to refuse more than ``MAX_DEPTH`` levels or a string
  longer than ``MAX_STRING``: no later stage meets a shape the kit never writes.

Each caller passes ``bad``, which turns a one-line detail into its own error (exit 2 for an answers file or a
catalog, exit 5 for a bundle's manifest): one loader, each input's documented exit code (``unreadable``, when
given, words a failing open or read differently, e.g. exit 2 for a manifest that cannot be read).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError
from bootstrap.core.fs_errors import os_reason

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Bad = Callable[[str], QwenKitError]  # one-line detail → the caller's error

MAX_DEPTH = 32  # the kit's own documents nest 6 levels at most (a bundle manifest's catalog)
MAX_STRING = 64 << 10  # the longest string the kit writes is a path
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # absent on Windows, where FIFOs are no files anyway
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


def read_regular(path: Path, limit: int, bad: Bad, *, follow_links: bool = True, missing_ok: bool = False,
                 unreadable: Bad | None = None) -> bytes | None:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    ``None`` when it does not exist and ``missing_ok``; ``bad`` for a FIFO, device, folder or (``follow_links``
    false) link, or a file over the limit; ``unreadable`` (default ``bad``) with the system's reason when it
    cannot be opened or read (absent, no permission, a name too long).
    """
    def failed(exc: OSError) -> QwenKitError:
        return (unreadable or bad)(os_reason(exc))

    path = Path(path)
    flags = os.O_RDONLY | _O_NONBLOCK | _O_BINARY | (0 if follow_links else _O_NOFOLLOW)
    try:
        if not follow_links and path.is_symlink():  # O_NOFOLLOW's ELOOP would read as "too many links"
            raise bad(t("formats.link", path=path))
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        if missing_ok:
            return None
        raise failed(exc) from exc
    except OSError as exc:
        raise failed(exc) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise bad(t("formats.not_regular", path=path, kind=_kind(info.st_mode)))
        if info.st_size > limit:
            raise bad(t("formats.too_large", path=path, limit=limit))
        if _O_NONBLOCK:  # a regular file never blocks; reads are plain from here
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise failed(exc) from exc
    finally:
        os.close(fd)
    if len(raw) > limit:  # it grew while being read
        raise bad(t("formats.too_large", path=path, limit=limit))
    return raw


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "device"),
                       (stat.S_ISBLK, "device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return t(f"formats.kind_{name}")
    return t("formats.kind_special")


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return t("formats.too_deep", limit=MAX_DEPTH)
    return (" ".join(str(exc).split()) or type(exc).__name__)[:200]


def check_shape(doc: Any, bad: Bad, *, depth: int = MAX_DEPTH, max_string: int = MAX_STRING) -> Any:
    """``doc`` itself, once no container in it is deeper than ``depth`` and no string (key or value) longer than
    ``max_string``; walked with an explicit stack (a recursive walk would fail exactly where it must not)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, str):
            if len(item) > max_string:
                raise bad(t("formats.string_too_long", limit=max_string))
            continue
        if not isinstance(item, (dict, list)):
            continue
        if level > depth:
            raise bad(t("formats.too_deep", limit=depth))
        if isinstance(item, dict):
            stack.extend((key, level) for key in item)
            stack.extend((value, level + 1) for value in item.values())
        else:
            stack.extend((value, level + 1) for value in item)
    return doc


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")  # NaN / Infinity: Python accepts them, RFC 8259 does not


def parse_json(raw: bytes, bad: Bad, *, depth: int = MAX_DEPTH) -> Any:
    """A JSON document (UTF-8, RFC 8259: no NaN/Infinity); every failure, recursion included, is ``bad``."""
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise bad(t("formats.not_json", detail=_one_line(exc))) from None
    return check_shape(doc, bad, depth=depth)


def parse_toml(raw: bytes, bad: Bad, *, depth: int = MAX_DEPTH) -> dict[str, Any]:
    """A TOML document (UTF-8, TOML 1.0); every failure, recursion included, is ``bad``."""
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise bad(t("formats.not_toml", detail=_one_line(exc))) from None
    return check_shape(doc, bad, depth=depth)


def load_json(path: Path, limit: int, bad: Bad, *, follow_links: bool = True) -> Any:
    """``parse_json`` of ``read_regular``."""
    raw = read_regular(path, limit, bad, follow_links=follow_links)
    assert raw is not None
    return parse_json(raw, bad)


def load_toml(path: Path, limit: int, bad: Bad, *, follow_links: bool = True) -> dict[str, Any]:
    """``parse_toml`` of ``read_regular``."""
    raw = read_regular(path, limit, bad, follow_links=follow_links)
    assert raw is not None
    return parse_toml(raw, bad)


def load_document(path: Path, limit: int, bad: Bad) -> Any:
    """A ``.json`` file as JSON, anything else as TOML (a bundle carries its catalog and pins as JSON)."""
    return load_json(path, limit, bad) if Path(path).suffix.lower() == ".json" else load_toml(path, limit, bad)


MAX_RECORD_BYTES = 4 << 20


class _Unusable(QwenKitError):
    """A record of the kit's own that cannot be used (``read_record`` turns it into ``None``)."""


def read_record(path: Path, limit: int = MAX_RECORD_BYTES) -> Any | None:
    """A small JSON record the kit wrote itself (engine marker, swap journal, venv stamp, resume state): ``None``
    when it is absent or unusable for any reason, which each reader treats as "not there" (and rebuilds)."""
    def unusable(detail: str) -> QwenKitError:
        return _Unusable(detail)

    try:
        raw = read_regular(path, limit, unusable, missing_ok=True)
        return None if raw is None else parse_json(raw, unusable)
    except _Unusable:
        return None
