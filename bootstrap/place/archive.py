"""Safe extraction of the engine's release archives (.tar.gz, .zip) into one folder.

Our own checks, not only tarfile's ``data`` filter (which zip lacks, and which older Pythons lack): every member
name is validated before anything is written (no absolute path, drive letter or ``..``), nothing is ever written
through a symlink, links may point only inside the folder (upstream tarballs ship relative ``.so`` links: kept),
devices and fifos are refused, and the member count and the bytes written are capped, so a hostile or broken
archive costs bounded time, memory and disk and is reported as one line naming the member.

A failed extraction may leave partial content in ``dest``: callers extract into a staging folder and drop it.
"""

from __future__ import annotations

import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from bootstrap.core.console import t
from bootstrap.core.disk_space import ensure_space, free_bytes
from bootstrap.core.errors import IntegrityError
from bootstrap.core.fs_errors import os_error

CHUNK = 1 << 20
# What a truncated, corrupt, encrypted or exotic archive raises while being read.
_DAMAGED = (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, UnicodeDecodeError, RuntimeError,
            NotImplementedError)
MAX_MEMBERS = 10_000  # upstream archives hold ~60 files
MAX_TOTAL_BYTES = 4 << 30  # upstream CUDA zips unpack to ~1.5 GB


@dataclass(frozen=True)
class ArchiveLimits:
    """Caps that make a decompression bomb fail fast instead of filling the disk."""

    max_members: int = MAX_MEMBERS
    max_total_bytes: int = MAX_TOTAL_BYTES


DEFAULT_LIMITS = ArchiveLimits()

@dataclass(frozen=True)
class _Member:
    """One archive entry, reduced to what extraction needs (tar and zip alike)."""

    name: str  # as stored, for messages
    parts: tuple[str, ...]  # validated relative path components
    kind: str  # "file" | "dir" | "symlink" | "hardlink"
    size: int
    mode: int
    link: str = ""  # symlink target as stored / hardlink source member name


@dataclass(frozen=True)
class ExtractResult:
    """What was written: files and links (relative paths) and the bytes of regular files."""

    files: int
    links: int
    bytes_written: int


def _refuse(archive: Path, member: str, why: str) -> IntegrityError:
    return IntegrityError(t("engine.err_archive_member", archive=archive.name, member=member[:200], reason=why),
                          t("engine.hint_archive"))


def _amount(n: int) -> str:
    """``4096 MiB`` for the real cap, plain bytes for the small caps tests use."""
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} B"


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def _damaged(archive: Path, exc: BaseException) -> IntegrityError:
    detail = _first_line(exc)
    return IntegrityError(t("engine.err_archive_damaged", archive=archive.name, detail=detail),
                          t("engine.hint_archive"))


def member_parts(name: str) -> tuple[str, ...] | None:
    """The safe relative components of an archive name, or None when it is absolute or climbs out.

    Backslashes count as separators (zips made on Windows use them); a leading ``/``, a drive letter
    (``C:``) or any ``..`` component is refused; ``.`` and empty components are dropped.
    """
    if "\0" in name:
        return None
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) >= 2 and text[1] == ":" and text[0].isalpha()):
        return None
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    if any(p == ".." or ":" in p for p in parts):
        return None
    return parts


def _link_inside(parts: tuple[str, ...], target: str) -> bool:
    """Whether a symlink at ``parts`` pointing at ``target`` stays inside the folder (lexically)."""
    if not target or "\0" in target or target.startswith(("/", "\\")) or (len(target) >= 2 and target[1] == ":"):
        return False
    depth = len(parts) - 1  # the folder holding the link
    for comp in target.replace("\\", "/").split("/"):
        if comp in ("", "."):
            continue
        depth = depth - 1 if comp == ".." else depth + 1
        if depth < 0:
            return False
    return True


# ---- reading members ------------------------------------------------------------------------------------
def _tar_members(archive: Path, tf: tarfile.TarFile, limits: ArchiveLimits) -> Iterator[tuple[_Member, IO[bytes]]]:
    count = declared = 0
    while True:
        info = tf.next()
        if info is None:
            return
        count += 1
        if count > limits.max_members:
            raise _refuse(archive, info.name, t("engine.why_count", limit=limits.max_members))
        declared += info.size if info.isreg() else 0
        if declared > limits.max_total_bytes:
            raise _refuse(archive, info.name, t("engine.why_total", limit=_amount(limits.max_total_bytes)))
        parts = member_parts(info.name)
        if parts is None:
            raise _refuse(archive, info.name, t("engine.why_path"))
        if info.isdir():
            kind = "dir"
        elif info.issym():
            kind = "symlink"
        elif info.islnk():
            kind = "hardlink"
        elif info.isreg():
            kind = "file"
        else:  # character/block device, fifo, or an unknown type
            raise _refuse(archive, info.name, t("engine.why_type"))
        member = _Member(info.name, parts, kind, info.size if kind == "file" else 0, info.mode, info.linkname)
        stream = tf.extractfile(info) if kind == "file" else None
        yield member, stream or _EMPTY
        if stream is not None:
            stream.close()
        # tarfile keeps every header it has read; extraction needs none of them (bounded memory).
        tf.members.clear()


class _Empty:
    def read(self, n: int = -1) -> bytes:
        return b""


_EMPTY: IO[bytes] = _Empty()  # type: ignore[assignment]


def _zip_members(archive: Path, zf: zipfile.ZipFile, limits: ArchiveLimits) -> Iterator[tuple[_Member, IO[bytes]]]:
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise _refuse(archive, infos[limits.max_members].filename, t("engine.why_count", limit=limits.max_members))
    declared = 0
    for info in infos:
        declared += info.file_size
        if declared > limits.max_total_bytes:
            raise _refuse(archive, info.filename, t("engine.why_total", limit=_amount(limits.max_total_bytes)))
    for info in infos:
        parts = member_parts(info.filename)
        if parts is None:
            raise _refuse(archive, info.filename, t("engine.why_path"))
        unix_mode = info.external_attr >> 16
        ftype = stat.S_IFMT(unix_mode)
        if info.is_dir():
            kind = "dir"
        elif ftype == stat.S_IFLNK:
            kind = "symlink"
        elif ftype in (0, stat.S_IFREG):
            kind = "file"
        else:
            raise _refuse(archive, info.filename, t("engine.why_type"))
        if kind == "symlink":
            if info.file_size > 4096:
                raise _refuse(archive, info.filename, t("engine.why_link"))
            target = zf.read(info).decode("utf-8", "replace")
            yield _Member(info.filename, parts, kind, 0, unix_mode, target), _EMPTY
            continue
        with zf.open(info) as stream:
            yield _Member(info.filename, parts, kind, info.file_size if kind == "file" else 0, unix_mode), stream


# ---- writing --------------------------------------------------------------------------------------------
class _Writer:
    """Writes validated members under ``root``, never through a symlink, within the byte budget."""

    def __init__(self, archive: Path, root: Path, limits: ArchiveLimits) -> None:
        self.archive = archive
        self.root = root
        self.limits = limits
        self.total = 0
        self.files = 0
        self.links = 0
        self.written: set[tuple[str, ...]] = set()

    def _parent(self, m: _Member, parts: tuple[str, ...]) -> Path:
        """The real directory that will hold ``parts``, created as needed; never a symlink."""
        here = self.root
        for comp in parts[:-1]:
            here = here / comp
            try:
                st = here.lstat()
            except FileNotFoundError:
                here.mkdir(mode=0o755)
                continue
            if not stat.S_ISDIR(st.st_mode):  # a symlink or a file in the way: never write through it
                raise _refuse(self.archive, m.name, t("engine.why_link"))
        return here

    def _clear(self, m: _Member, target: Path) -> None:
        """Make room at ``target`` (a later archive, e.g. cudart, may replace a file); never touch a folder."""
        try:
            st = target.lstat()
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            raise _refuse(self.archive, m.name, t("engine.why_path"))
        target.unlink()

    def dir(self, m: _Member, parts: tuple[str, ...]) -> None:
        if not parts:
            return
        self._parent(m, (*parts, ""))  # creates every component, refusing links

    def file(self, m: _Member, parts: tuple[str, ...], stream: IO[bytes]) -> None:
        if m.size > self.limits.max_total_bytes - self.total:
            raise _refuse(self.archive, m.name, t("engine.why_total", limit=_amount(self.limits.max_total_bytes)))
        target = self._parent(m, parts) / parts[-1]
        self._clear(m, target)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
        mode = 0o755 if m.mode & 0o111 else 0o644
        fd = os.open(target, flags, mode)
        got = 0
        with os.fdopen(fd, "wb") as out:
            while block := stream.read(CHUNK):
                got += len(block)
                if got > m.size:
                    raise _refuse(self.archive, m.name, t("engine.why_size"))
                out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if got != m.size:
            raise _refuse(self.archive, m.name, t("engine.why_size"))
        os.chmod(target, mode)  # the umask may have removed bits we mean to keep
        self.total += got
        self.files += 1
        self.written.add(parts)

    def symlink(self, m: _Member, parts: tuple[str, ...]) -> None:
        if not _link_inside(parts, m.link):
            raise _refuse(self.archive, m.name, t("engine.why_link"))
        target = self._parent(m, parts) / parts[-1]
        self._clear(m, target)
        os.symlink(m.link, target)
        self.links += 1
        self.written.add(parts)

    def hardlink(self, m: _Member, parts: tuple[str, ...], source: tuple[str, ...] | None) -> None:
        """A hard link becomes a copy of a regular file extracted earlier from this archive (works on any FS)."""
        if source is None or source not in self.written:
            raise _refuse(self.archive, m.name, t("engine.why_link"))
        src = self.root.joinpath(*source)
        st = src.lstat()
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(self.archive, m.name, t("engine.why_link"))
        with src.open("rb") as fh:
            self.file(_Member(m.name, parts, "file", st.st_size, st.st_mode), parts, fh)


def _common_top(names: list[tuple[str, ...]]) -> str | None:
    """The single top-level folder every member lives under (``llama-b10434/``), if there is one."""
    tops = {p[0] for p in names if p}
    if len(tops) != 1 or not any(len(p) > 1 for p in names):
        return None
    return tops.pop()


def _strip(parts: tuple[str, ...], top: str | None) -> tuple[str, ...]:
    return parts[1:] if top is not None and parts and parts[0] == top else parts


def _scan_names(archive: Path, kind: str, limits: ArchiveLimits) -> tuple[list[tuple[str, ...]], int]:
    """Member paths and the bytes their regular files declare, read once before writing: to decide whether a
    single top folder is stripped, and whether the disk can take the extracted files."""
    names: list[tuple[str, ...]] = []
    total = 0
    for member, _stream in _members(archive, kind, limits, headers_only=True):
        names.append(member.parts)
        total += member.size
    return names, total


def _members(archive: Path, kind: str, limits: ArchiveLimits, *,
             headers_only: bool = False) -> Iterator[tuple[_Member, IO[bytes]]]:
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                yield from _zip_members(archive, zf, limits)
        else:
            with tarfile.open(archive, mode="r:gz") as tf:
                for member, stream in _tar_members(archive, tf, limits):
                    yield member, (_EMPTY if headers_only else stream)
    except _DAMAGED as exc:
        raise _damaged(archive, exc) from exc


def archive_kind(name: str) -> str:
    """``tar.gz`` or ``zip`` from a file name; anything else is not an engine archive."""
    lower = name.lower()
    if lower.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if lower.endswith(".zip"):
        return "zip"
    raise IntegrityError(t("engine.err_archive_damaged", archive=name, detail="not a .tar.gz or .zip"))


def _extract_member(archive: Path, writer: _Writer, member: _Member, stream: IO[bytes], top: str | None) -> None:
    parts = _strip(member.parts, top)
    if member.kind == "dir":
        writer.dir(member, parts)
    elif not parts:
        raise _refuse(archive, member.name, t("engine.why_path"))
    elif member.kind == "file":
        try:
            writer.file(member, parts, stream)
        except _DAMAGED as exc:  # a bad CRC or a truncated stream inside this member
            raise _refuse(archive, member.name, t("engine.why_damaged", detail=_first_line(exc))) from exc
    elif member.kind == "symlink":
        writer.symlink(member, parts)
    else:
        source = member_parts(member.link)
        writer.hardlink(member, parts, _strip(source, top) if source is not None else None)


def extract_archive(archive: Path, dest: Path, *, kind: str | None = None, strip_top: bool = True,
                    limits: ArchiveLimits = DEFAULT_LIMITS) -> ExtractResult:
    """Extract ``archive`` into the existing folder ``dest``; ``IntegrityError`` names the first bad member.

    ``strip_top``: when every member sits under one top folder (upstream's ``llama-b<N>/``), drop it, so the
    engine's files land directly in ``dest``. Execute bits are kept (0755), other files get 0644. A disk that
    cannot take the declared bytes is ``UnsupportedMachine`` (exit 3) naming them, before anything is written or
    when it fills up meanwhile (``fs_errors``).
    """
    archive, dest = Path(archive), Path(dest)
    kind = kind or archive_kind(archive.name)
    names, total = _scan_names(archive, kind, limits)
    top = _common_top(names) if strip_top else None
    ensure_space(total, free_bytes(dest), dest)  # exit 3 with the bytes needed, before the first byte is written
    writer = _Writer(archive, dest, limits)
    try:
        for member, stream in _members(archive, kind, limits):
            _extract_member(archive, writer, member, stream, top)
    except OSError as exc:  # the disk filled up anyway (another program), or the folder became unwritable
        error = os_error(exc, dest, needed=max(total - writer.total, 1))
        if error is None:
            raise
        raise error from exc
    _check_links_resolve(archive, dest)
    return ExtractResult(writer.files, writer.links, writer.total)


def _check_links_resolve(archive: Path, dest: Path) -> None:
    """Every symlink, followed for real (links to links), still ends inside ``dest``.

    The per-member check is lexical; a chain such as ``a -> sub/inner/..`` with ``sub/inner -> ..`` is only
    caught by resolving it.
    """
    root = dest.resolve()
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in (*dirnames, *filenames):
            path = Path(dirpath, name)
            if path.is_symlink():
                real = Path(os.path.realpath(path))
                if real != root and root not in real.parents:
                    raise _refuse(archive, str(path.relative_to(dest)), t("engine.why_link"))
