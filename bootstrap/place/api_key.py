"""The server's API key: one secret in ``<home>/secrets/api-key``, readable only by its owner.

llama-server reads it with ``--api-key-file`` (one key per line, ``#`` lines are comments; ``std::getline`` keeps
a trailing ``\\r``, so the file is always written with a bare ``\\n``). Scripts and unit files name the file, never
the key, so the secret lives in exactly one place and no message ever prints it.

Permissions: on POSIX the folder is 0700 and the file 0600 (the temp file ``write_atomic`` renames into place is
already 0600, so the key is never readable by others, even briefly); a rerun repairs modes that became too open.
Windows: ``os.chmod`` only toggles the read-only flag. The default home under ``%LOCALAPPDATA%`` inherits a
per-user ACL, but the ``%SystemDrive%\\QwenClientKit`` fallback (non-ASCII profile paths) inherits the drive
root's, which lets every local user read. So ``secrets/`` gets its own ACL with ``icacls`` (part of Windows, no
pywin32): inheritance removed, full control for the installing user and for SYSTEM (a WinSW service runs as
LocalSystem and must read the key). Not run here (no Windows): the argv is tested, the effect is not.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path

from bootstrap.core import console
from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.errors import UsageError
from bootstrap.core.fs_errors import mapped, os_reason
from bootstrap.core.home import Home
from bootstrap.core.processes import run_command

KEY_PREFIX = "sk-qwenkit-"
DIR_MODE = 0o700
FILE_MODE = 0o600
# A usable key: one token of printable ASCII without spaces (it travels in an HTTP header), not starting with
# "#" (llama-server would read the line as a comment). Generated keys are 11 + 43 characters; users may put
# their own key in the file, so any such token of a sane length is kept.
_VALID_KEY = re.compile(r"[!-~]{16,512}")
_MAX_READ = 4096  # bounded read: a huge or binary file is simply not a key


def new_key() -> str:
    """A fresh key: the prefix says what it is (secret scanners, humans), then 256 random bits."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def _is_posix() -> bool:
    return os.name != "nt"


def _check_regular(path: Path) -> os.stat_result | None:
    """lstat ``path``: ``None`` when absent; a link or a folder is refused (chmod and reads would follow it)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(console.t("apikey.io", path=path, reason=os_reason(exc)),
                         console.t("apikey.hint.install")) from exc
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(console.t("apikey.link", path=path), console.t("apikey.hint.remove"))
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(console.t("apikey.not_file", path=path), console.t("apikey.hint.remove"))
    return st


def _ensure_dir(home: Home) -> None:
    """Create ``secrets/`` owner-only; tighten it if it exists with group/other access."""
    folder = home.secrets_dir
    folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)  # the mode is filtered by the umask: chmod below
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(console.t("apikey.link" if stat.S_ISLNK(st.st_mode) else "apikey.not_file", path=folder),
                         console.t("apikey.hint.remove"))
    if not _is_posix():
        _restrict_windows_acl(folder)
    elif stat.S_IMODE(st.st_mode) != DIR_MODE:
        os.chmod(folder, DIR_MODE)
        if stat.S_IMODE(st.st_mode) & 0o077:
            console.warn(console.t("apikey.perms_fixed", path=folder, mode=f"{DIR_MODE:04o}"))


SYSTEM_SID = "*S-1-5-18"  # LocalSystem, by SID so it works on every display language of Windows


def windows_acl_argv(folder: Path, user: str) -> list[str]:
    """``icacls`` arguments making ``folder`` (and what it will hold) private to ``user`` and SYSTEM.

    ``/inheritance:r`` drops inherited entries; ``/grant:r`` replaces any explicit grant; ``(OI)(CI)F``: full
    control inherited by files and subfolders (icacls documentation, Microsoft Learn).
    """
    return ["icacls", str(folder), "/inheritance:r", "/grant:r", f"{user}:(OI)(CI)F", "/grant:r",
            f"{SYSTEM_SID}:(OI)(CI)F"]


def _restrict_windows_acl(folder: Path) -> None:
    """Apply ``windows_acl_argv``; a refusal is a warning (the key still works, only less private)."""
    import getpass

    result = run_command(windows_acl_argv(folder, getpass.getuser()), timeout=30)
    detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
    if result.returncode != 0:
        console.warn(console.t("apikey.acl_failed", path=folder, detail=detail[0]))


_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; on Windows the lstat before the open is the check
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted in the key's place must not block the open
_O_BINARY = getattr(os, "O_BINARY", 0)


def _read_raw(path: Path) -> bytes:
    """At most ``_MAX_READ + 1`` bytes of the key file, never through a link: ``O_NOFOLLOW`` closes the moment
    between the ``lstat`` check and the open, and anything but a regular file is refused after it."""
    fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(console.t("apikey.not_file", path=path), console.t("apikey.hint.remove"))
        if _O_NONBLOCK:
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(_MAX_READ + 1)
    finally:
        os.close(fd)


def _check_folder(home: Home) -> None:
    """``secrets/`` itself must be a real folder: a link there would send every read and write of the key to
    wherever it points (``lstat`` on the file alone follows a linked parent)."""
    try:
        st = home.secrets_dir.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(console.t("apikey.link" if stat.S_ISLNK(st.st_mode) else "apikey.not_file",
                                   path=home.secrets_dir), console.t("apikey.hint.remove"))


def _parse(raw: bytes) -> str | None:
    """The key in ``raw``, or ``None`` when it is not exactly one usable key."""
    if len(raw) > _MAX_READ:
        return None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    key = text.strip()
    if not _VALID_KEY.fullmatch(key) or key.startswith("#"):
        return None
    return key


def _write_key(path: Path, key: str) -> None:
    write_atomic(path, (key + "\n").encode("ascii"), mode=FILE_MODE)


def ensure_api_key(home: Home) -> Path:
    """Make sure ``<home>/secrets/api-key`` holds a usable key; return its path.

    A rerun keeps the existing key (clients keep working after an upgrade) and only repairs what is wrong: modes
    that are too open, CRLF line endings; a file holding no usable key is replaced, with a warning.
    """
    path = home.api_key_file
    try:
        _ensure_dir(home)
        st = _check_regular(path)
        if st is None:
            _write_key(path, new_key())
            console.info(console.t("apikey.created", path=path))
            return path
        raw = _read_raw(path)
        key = _parse(raw)
        if key is None:
            _write_key(path, new_key())
            console.warn(console.t("apikey.replaced_invalid", path=path))
            return path
        if raw != (key + "\n").encode("ascii"):
            _write_key(path, key)  # same key, exact bytes llama-server compares against
            console.warn(console.t("apikey.normalized", path=path))
        elif _is_posix() and stat.S_IMODE(st.st_mode) != FILE_MODE:
            os.chmod(path, FILE_MODE)
            if stat.S_IMODE(st.st_mode) & 0o077:
                console.warn(console.t("apikey.perms_fixed", path=path, mode=f"{FILE_MODE:04o}"))
    except OSError as exc:
        raise UsageError(console.t("apikey.io", path=path, reason=os_reason(exc)),
                         console.t("apikey.hint.install")) from exc
    return path


def _others_can_use(path: Path, folder: bool) -> bool | None:
    """lstat ``path`` (a link or the wrong kind is refused, as everywhere here); ``None`` when absent, else
    whether group or others have any access to it."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    if not (stat.S_ISDIR if folder else stat.S_ISREG)(st.st_mode):
        raise UsageError(console.t("apikey.link" if stat.S_ISLNK(st.st_mode) else "apikey.not_file", path=path),
                         console.t("apikey.hint.remove"))
    return bool(stat.S_IMODE(st.st_mode) & 0o077)


def exposed(home: Home) -> list[Path]:
    """The key file and its folder when other users can read (or enter) them; ``stat`` only, for ``status``."""
    if not _is_posix():
        return []
    found = []
    for path, folder in ((home.secrets_dir, True), (home.api_key_file, False)):
        try:
            if _others_can_use(path, folder):
                found.append(path)
        except (UsageError, OSError):
            continue
    return found


def repair_modes(home: Home) -> None:
    """The cheap half of ``ensure_api_key`` for a rerun with nothing to install: ``stat`` the folder and the key
    and make them owner-only again when they became readable by others (a warning says so); no byte is read."""
    if not _is_posix():
        return
    with mapped(home.secrets_dir):
        for path, mode in ((home.secrets_dir, DIR_MODE), (home.api_key_file, FILE_MODE)):
            if _others_can_use(path, folder=mode == DIR_MODE):
                os.chmod(path, mode)
                console.warn(console.t("apikey.perms_fixed", path=path, mode=f"{mode:04o}"))


def read_api_key(home: Home) -> str:
    """The key clients send as ``Authorization: Bearer <key>`` (verify stage, status, examples)."""
    path = home.api_key_file
    try:
        _check_folder(home)
        if _check_regular(path) is None:
            raise UsageError(console.t("apikey.missing", path=path), console.t("apikey.hint.install"))
        raw = _read_raw(path)
    except OSError as exc:
        raise UsageError(console.t("apikey.io", path=path, reason=os_reason(exc)),
                         console.t("apikey.hint.install")) from exc
    key = _parse(raw)
    if key is None:
        if not raw.strip():
            raise UsageError(console.t("apikey.missing", path=path), console.t("apikey.hint.install"))
        raise UsageError(console.t("apikey.invalid", path=path), console.t("apikey.hint.install"))
    return key


def rotate_api_key(home: Home) -> Path:
    """Replace the key with a fresh one; a running server keeps the old key until it restarts."""
    path = home.api_key_file
    try:
        _ensure_dir(home)
        _check_regular(path)
        _write_key(path, new_key())
    except OSError as exc:
        raise UsageError(console.t("apikey.io", path=path, reason=os_reason(exc)),
                         console.t("apikey.hint.install")) from exc
    console.info(console.t("apikey.rotated", path=path))
    return path
