"""The API key file: owner-only modes, format, stability across reruns, repairs, and that the key is never shown."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from bootstrap.core.errors import ExitCode, UsageError, exit_code_for
from bootstrap.core.home import Home
from bootstrap.place import api_key
from bootstrap.place.api_key import ensure_api_key, read_api_key, rotate_api_key

KEY_RE = re.compile(r"sk-qwenkit-[A-Za-z0-9_-]{43}")  # token_urlsafe(32): 32 bytes -> 43 base64url characters


pytestmark = [pytest.mark.skipif(os.name == "nt", reason="POSIX modes (Windows relies on the per-user ACL)"),
              pytest.mark.usefixtures("english")]


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "家 home")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_creates_owner_only_key(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    path = ensure_api_key(home)
    assert path == home.api_key_file
    assert _mode(home.secrets_dir) == 0o700
    assert _mode(path) == 0o600
    raw = path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1 and b"\r" not in raw
    key = raw.decode().strip()
    assert KEY_RE.fullmatch(key)
    assert read_api_key(home) == key
    err = capsys.readouterr().err
    assert str(path) in err and key not in err


def test_modes_hold_under_a_permissive_umask(home: Home) -> None:
    old = os.umask(0)
    try:
        ensure_api_key(home)
    finally:
        os.umask(old)
    assert _mode(home.secrets_dir) == 0o700
    assert _mode(home.api_key_file) == 0o600


def test_rerun_keeps_the_key(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    ensure_api_key(home)
    first = read_api_key(home)
    capsys.readouterr()
    ensure_api_key(home)
    assert read_api_key(home) == first
    assert capsys.readouterr().err == ""  # nothing to repair, nothing said


def test_keys_are_unique(tmp_path: Path) -> None:
    keys = set()
    for i in range(5):
        ensure_api_key(Home(tmp_path / str(i)))
        keys.add(read_api_key(Home(tmp_path / str(i))))
    assert len(keys) == 5


def test_too_open_permissions_are_repaired(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    ensure_api_key(home)
    key = read_api_key(home)
    os.chmod(home.secrets_dir, 0o755)
    os.chmod(home.api_key_file, 0o644)
    capsys.readouterr()
    ensure_api_key(home)
    assert _mode(home.secrets_dir) == 0o700
    assert _mode(home.api_key_file) == 0o600
    assert read_api_key(home) == key
    err = capsys.readouterr().err
    assert err.count("owner-only") == 2 and str(home.api_key_file) in err
    assert key not in err


def test_a_users_own_key_is_kept(home: Home) -> None:
    home.secrets_dir.mkdir(parents=True)
    home.api_key_file.write_text("my-own-team-key-0123456789\n")
    os.chmod(home.api_key_file, 0o600)
    ensure_api_key(home)
    assert read_api_key(home) == "my-own-team-key-0123456789"


def test_crlf_is_normalized_without_changing_the_key(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    # llama-server's std::getline keeps "\r": a CRLF file would make the server expect "key\r".
    home.secrets_dir.mkdir(parents=True)
    home.api_key_file.write_bytes(b"sk-qwenkit-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG\r\n")
    ensure_api_key(home)
    assert home.api_key_file.read_bytes() == b"sk-qwenkit-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG\n"
    assert _mode(home.api_key_file) == 0o600
    assert "abcdefghij" not in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"", b"\n", b"short\n", b"#sk-qwenkit-commented-out-by-someone\n",
                                     b"two words here and more\n", b"\xff\xfe\x00binary", b"k" * 5000])
def test_unusable_content_is_replaced(home: Home, content: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    home.secrets_dir.mkdir(parents=True)
    home.api_key_file.write_bytes(content)
    ensure_api_key(home)
    assert KEY_RE.fullmatch(read_api_key(home))
    assert "usable" in capsys.readouterr().err


def test_read_without_a_key_is_a_usage_error(home: Home) -> None:
    with pytest.raises(UsageError) as info:
        read_api_key(home)
    assert exit_code_for(info.value) == ExitCode.USAGE == 2
    assert str(home.api_key_file) in info.value.message
    assert info.value.hint == "run qwenkit install"


def test_read_of_an_empty_key_is_a_usage_error(home: Home) -> None:
    home.secrets_dir.mkdir(parents=True)
    home.api_key_file.write_text("  \n")
    with pytest.raises(UsageError) as info:
        read_api_key(home)
    assert "no API key" in info.value.message and info.value.hint == "run qwenkit install"


def test_a_link_is_refused(home: Home, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("sk-qwenkit-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG\n")
    os.chmod(target, 0o644)
    home.secrets_dir.mkdir(parents=True)
    home.api_key_file.symlink_to(target)
    with pytest.raises(UsageError) as info:
        ensure_api_key(home)
    assert info.value.message == f"{home.api_key_file} is a link; the API key is never read or written through a " \
                                 "link (it could point anywhere)"
    assert _mode(target) == 0o644  # the link was not followed by chmod


def test_the_key_is_never_read_through_a_link(home: Home, tmp_path: Path) -> None:
    """A planted ``secrets/api-key`` link (issue 24): before, ``read_api_key`` followed it and the target's content
    became the key sent to the server. Now the read is refused, naming the link (exit 2), for a link to a file and
    for one to a FIFO (whose open would block forever if it were followed)."""
    target = tmp_path / "planted"
    target.write_text("sk-planted-0123456789abcdef\n")
    home.secrets_dir.mkdir(parents=True)
    home.api_key_file.symlink_to(target)
    with pytest.raises(UsageError) as info:
        read_api_key(home)
    assert exit_code_for(info.value) == 2 and str(home.api_key_file) in info.value.message
    assert "is a link" in info.value.message and "sk-planted" not in info.value.message
    home.api_key_file.unlink()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    home.api_key_file.symlink_to(fifo)
    with pytest.raises(UsageError, match="is a link"):
        read_api_key(home)


def test_a_linked_secrets_folder_is_refused(home: Home, tmp_path: Path) -> None:
    """``secrets`` itself a link to another folder holding a plain ``api-key``: ``lstat`` of the file alone would
    follow the folder's link; the folder is checked too."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "api-key").write_text("sk-planted-0123456789abcdef\n")
    home.root.mkdir(parents=True, exist_ok=True)
    home.secrets_dir.symlink_to(elsewhere, target_is_directory=True)
    for call in (read_api_key, ensure_api_key):
        with pytest.raises(UsageError) as info:
            call(home)
        assert info.value.message.startswith(f"{home.secrets_dir} is a link")


def test_rotate_writes_a_new_key(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    ensure_api_key(home)
    old = read_api_key(home)
    assert rotate_api_key(home) == home.api_key_file
    new = read_api_key(home)
    assert new != old and KEY_RE.fullmatch(new)
    assert _mode(home.api_key_file) == 0o600
    err = capsys.readouterr().err
    assert "restart" in err and old not in err and new not in err


def test_windows_acl_is_restricted_with_icacls(home: Home, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """No Windows here: the process boundary records the icacls argv (and answers like a refusing icacls once)."""
    import subprocess

    calls: list[list[str]] = []
    answers = iter([subprocess.CompletedProcess([], 0, "processed 1 files", ""),
                    subprocess.CompletedProcess([], 5, "", "Access is denied.")])

    def fake_run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        return next(answers)

    monkeypatch.setattr(api_key, "_is_posix", lambda: False)
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr("getpass.getuser", lambda: "李雷")
    ensure_api_key(home)
    assert calls == [["icacls", str(home.secrets_dir), "/inheritance:r", "/grant:r", "李雷:(OI)(CI)F",
                      "/grant:r", "*S-1-5-18:(OI)(CI)F"]]
    assert capsys.readouterr().err.count("warning") == 0
    ensure_api_key(home)  # a rerun applies it again; a refusal is one warning, the key is kept
    err = capsys.readouterr().err
    assert "Access is denied." in err and "other local users may read" in err
    assert len(calls) == 2
