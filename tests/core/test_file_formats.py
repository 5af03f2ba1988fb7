"""The core helpers behind every input: the bounded loaders (``file_formats``), the filesystem error table
(``fs_errors``), and how outside values are shown (``display_text``). The CLI-level table is
``tests/e2e/test_hostile_inputs.py``; here each guard is pinned down on its own, with real files, FIFOs and devices."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from bootstrap.core.display_text import masked_url, printable, shown
from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.file_formats import (
    MAX_DEPTH,
    load_document,
    load_json,
    load_toml,
    parse_json,
    parse_toml,
    read_record,
    read_regular,
)
from bootstrap.core.fs_errors import os_error

pytestmark = pytest.mark.usefixtures("english")


def bad(detail: str) -> UsageError:
    return UsageError(detail)


def test_a_regular_file_within_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text('x = 1\ny = ["a", {z = true}]\n')
    assert load_toml(path, 100, bad) == {"x": 1, "y": ["a", {"z": True}]}
    (tmp_path / "a.json").write_text('{"x": [1, 2]}')
    assert load_document(tmp_path / "a.json", 100, bad) == {"x": [1, 2]}
    assert load_document(path, 100, bad)["x"] == 1


@pytest.mark.parametrize(("make", "needle"), [
    (lambda p: os.mkfifo(p), "is a FIFO"),  # would block a plain open() forever
    (lambda p: p.symlink_to("/dev/zero"), "is a device"),  # followed: the target is still no file
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: p.write_bytes(b"x" * 101), "larger than 100 bytes"),
    (lambda p: p.write_bytes(b"\xff\xfe"), "not valid JSON"),
    (lambda p: p.write_bytes(b"[" * 100_000 + b"]" * 100_000), f"nested more than {MAX_DEPTH} levels"),
    (lambda p: p.write_bytes(b'{"a": NaN}'), "not valid JSON"),
])
def test_what_is_not_a_small_well_formed_file_is_one_error(tmp_path: Path, make, needle: str) -> None:
    path = tmp_path / "doc.json"
    make(path)
    limit = 100 if needle.startswith("larger") else 1 << 20
    with pytest.raises(UsageError) as caught:
        load_json(path, limit, bad)
    assert needle in caught.value.message and "\n" not in caught.value.message


def test_nesting_and_string_length_are_bounded_after_any_parse(tmp_path: Path) -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_json(ok.encode(), bad) is not None
    with pytest.raises(UsageError, match="nested more than"):
        parse_json(("[" + ok + "]").encode(), bad)
    with pytest.raises(UsageError, match="nested more than"):  # TOML recursion, caught like any parse failure
        parse_toml(("a = " + "[" * 50_000 + "]" * 50_000).encode(), bad)
    with pytest.raises(UsageError, match="nested more than"):  # dotted keys nest without any recursion
        parse_toml((".".join(f"k{i}" for i in range(100)) + " = 1").encode(), bad)
    with pytest.raises(UsageError, match="longer than"):
        parse_json(b'{"a": "' + b"x" * (1 << 17) + b'"}', bad)


def test_bundle_files_are_not_read_through_links(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read_regular(link, 10, bad) == b"{}"
    with pytest.raises(UsageError, match="is a symbolic link"):
        read_regular(link, 10, bad, follow_links=False)
    assert read_regular(tmp_path / "absent.json", 10, bad, missing_ok=True) is None
    with pytest.raises(UsageError, match="No such file"):
        read_regular(tmp_path / "absent.json", 10, bad)
    with pytest.raises(UsageError, match="cannot open"):
        read_regular(tmp_path / "absent.json", 10, bad, unreadable=lambda d: UsageError(f"cannot open: {d}"))


def test_a_record_of_our_own_that_is_unusable_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    assert read_record(path) is None
    os.mkfifo(path)
    assert read_record(path) is None
    path.unlink()
    path.write_text("[" * 10_000 + "]" * 10_000)
    assert read_record(path) is None
    path.write_text('{"ok": 1}')
    assert read_record(path) == {"ok": 1}


@pytest.mark.parametrize(("code", "writing", "exit_code", "needle"), [
    (errno.ENOSPC, True, ExitCode.UNSUPPORTED, "123 bytes"),
    (errno.EDQUOT, True, ExitCode.UNSUPPORTED, "123 bytes"),
    (errno.EACCES, True, ExitCode.UNSUPPORTED, "cannot write to /x"),
    (errno.EROFS, True, ExitCode.UNSUPPORTED, "cannot write to /x"),
    (errno.EACCES, False, ExitCode.USAGE, "cannot read /x"),
    (errno.ENAMETOOLONG, True, ExitCode.USAGE, "path too long"),
    (errno.ENOTDIR, True, ExitCode.USAGE, "cannot use /x"),
])
def test_filesystem_errors_map_to_exit_codes(code: int, writing: bool, exit_code: ExitCode, needle: str) -> None:
    error = os_error(OSError(code, os.strerror(code), "/x"), writing=writing, needed=123)
    assert error is not None and error.exit_code == exit_code and needle in error.message


def test_an_errno_outside_the_table_stays_a_bug() -> None:
    assert os_error(OSError(errno.EBADF, "Bad file descriptor")) is None
    assert os_error(OSError(errno.EIO, "Input/output error")) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("https://alice:s3cret@mirror.lan/x", "https://alice:***@mirror.lan/x"),
    ("http://TOKEN@host/", "http://***@host/"),
    ("fetch http://a:b@h:1/p and https://c:d@e/q", "fetch http://a:***@h:1/p and https://c:***@e/q"),
    ("https://host/path@v2", "https://host/path@v2"),  # an @ after the path starts is no userinfo
    ("no url here", "no url here"),
])
def test_credentials_in_urls_are_masked(text: str, expected: str) -> None:
    assert masked_url(text) == expected


def test_shown_values_cannot_drive_the_terminal() -> None:
    assert printable("a\x1b[31mb\nc\x07\u202e") == "a\\x1b[31mb\\nc\\x07\\u202e"
    assert shown("x" * 5000, 10) == "x" * 10 + "…(+4990)"
    assert shown("https://u:p@h/\n") == "https://u:***@h/\\n"
