"""``copy_verified`` on real files: good copies land whole, any altered byte or size is refused and leaves nothing.

Writer-thread failures are real ones: a temp path that is a link to ``/dev/full`` (ENOSPC on every write) and a
child process under ``RLIMIT_FSIZE`` (EFBIG); both must surface as errors, not hang the reader.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from bootstrap.core.errors import ExitCode, IntegrityError, UnsupportedMachine, UsageError
from bootstrap.fetch.verified_copy import BLOCK, copy_hashing, copy_verified
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
SIZE = 2 * BLOCK + 12_345  # spans several blocks and ends mid-block


def make(path: Path, size: int = SIZE) -> tuple[bytes, str]:
    data = os.urandom(size)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data, hashlib.sha256(data).hexdigest()


def writer_threads() -> list[threading.Thread]:
    return [th for th in threading.enumerate() if th.name == "verified-copy-writer"]


@pytest.fixture
def bundle(tmp_path: Path) -> tuple[Path, bytes, str]:
    data, sha = make(tmp_path / "bundle" / "payload" / "models" / "m.gguf")
    return tmp_path / "bundle" / "payload" / "models" / "m.gguf", data, sha


def test_good_copy_is_exact_and_leaves_no_temp(tmp_path: Path, bundle: tuple[Path, bytes, str]) -> None:
    src, data, sha = bundle
    dest, work = tmp_path / "home" / "models" / "m.gguf", tmp_path / "partial"
    seen: list[int] = []
    copy_verified(src, dest, len(data), sha, work, progress=seen.append)
    assert dest.read_bytes() == data
    assert sum(seen) == len(data) and len(seen) == 3  # one call per block
    assert list(work.iterdir()) == []
    assert writer_threads() == []


def test_uppercase_digest_is_accepted(tmp_path: Path, bundle: tuple[Path, bytes, str]) -> None:
    src, data, sha = bundle
    copy_verified(src, tmp_path / "out" / "m", len(data), sha.upper(), tmp_path / "work")
    assert (tmp_path / "out" / "m").read_bytes() == data


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_one_flipped_byte_is_refused(tmp_path: Path, bundle: tuple[Path, bytes, str], where: str,
                                     english: None) -> None:
    src, data, sha = bundle
    offset = {"start": 0, "middle": len(data) // 2, "end": len(data) - 1}[where]
    altered = bytearray(data)
    altered[offset] ^= 0x01
    src.write_bytes(altered)
    dest, work = tmp_path / "home" / "m.gguf", tmp_path / "partial"
    with pytest.raises(IntegrityError) as info:
        copy_verified(src, dest, len(data), sha, work)
    assert info.value.exit_code == ExitCode.INTEGRITY
    assert str(src) in info.value.message and sha in info.value.message
    assert hashlib.sha256(altered).hexdigest() in info.value.message
    assert not dest.exists()
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("delta", [-1, 1, -SIZE])
def test_wrong_size_is_refused_before_copying(tmp_path: Path, bundle: tuple[Path, bytes, str], delta: int,
                                              english: None) -> None:
    src, data, sha = bundle
    src.write_bytes(data[:len(data) + delta] if delta < 0 else data + b"\0" * delta)
    dest, work = tmp_path / "home" / "m.gguf", tmp_path / "partial"
    seen: list[int] = []
    with pytest.raises(IntegrityError) as info:
        copy_verified(src, dest, len(data), sha, work, progress=seen.append)
    assert f"is {len(data) + delta} bytes; the bundle manifest says {len(data)}" in info.value.message
    assert seen == []  # refused before a byte was copied
    assert not dest.exists() and not work.exists()


def test_existing_destination_is_untouched_on_failure(tmp_path: Path, bundle: tuple[Path, bytes, str]) -> None:
    src, data, _sha = bundle
    dest = tmp_path / "home" / "m.gguf"
    dest.parent.mkdir()
    dest.write_bytes(b"the previous, working model")
    with pytest.raises(IntegrityError):
        copy_verified(src, dest, len(data), "0" * 64, tmp_path / "partial")
    assert dest.read_bytes() == b"the previous, working model"
    assert list((tmp_path / "partial").iterdir()) == []


def test_existing_destination_is_replaced_on_success(tmp_path: Path, bundle: tuple[Path, bytes, str]) -> None:
    src, data, sha = bundle
    dest = tmp_path / "home" / "m.gguf"
    dest.parent.mkdir()
    dest.write_bytes(b"an older file")
    copy_verified(src, dest, len(data), sha, tmp_path / "partial")
    assert dest.read_bytes() == data


def test_missing_source_is_one_integrity_line(tmp_path: Path, english: None) -> None:
    with pytest.raises(IntegrityError) as info:
        copy_verified(tmp_path / "absent.gguf", tmp_path / "d", 1, "0" * 64, tmp_path / "w")
    assert "absent.gguf" in info.value.message and "\n" not in info.value.message
    assert info.value.hint


def test_directory_source_is_refused(tmp_path: Path, english: None) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(IntegrityError, match="not a regular file"):
        copy_verified(tmp_path / "dir", tmp_path / "d", 0, "0" * 64, tmp_path / "w")


def test_copy_onto_itself_is_a_usage_error(bundle: tuple[Path, bytes, str], tmp_path: Path, english: None) -> None:
    src, data, sha = bundle
    alias = src.parent / ".." / "models" / src.name  # the same file by another spelling
    with pytest.raises(UsageError, match="both the source and the destination"):
        copy_verified(src, alias, len(data), sha, tmp_path / "w")
    assert src.read_bytes() == data


def test_a_digest_that_is_not_hex_is_a_bug(tmp_path: Path, bundle: tuple[Path, bytes, str]) -> None:
    """The digest names the temp file, so a caller passing an unvalidated one must not write outside work_dir."""
    src, data, _sha = bundle
    with pytest.raises(ValueError, match="sha256 hex digest"):
        copy_verified(src, tmp_path / "d", len(data), "../../escape" + "0" * 52, tmp_path / "w")
    assert not (tmp_path / "w").exists()


def test_reads_never_exceed_the_limit(tmp_path: Path, bundle: tuple[Path, bytes, str]) -> None:
    """A source that grows (or is a device) is read to ``size + 1`` bytes at most: the disk cannot fill up."""
    src, data, _sha = bundle
    digest, copied = copy_hashing(src, tmp_path / "tmp", BLOCK + 7)
    assert copied == BLOCK + 7
    assert digest == hashlib.sha256(data[:BLOCK + 7]).hexdigest()
    assert (tmp_path / "tmp").read_bytes() == data[:BLOCK + 7]


def test_disk_full_in_the_writer_thread_is_exit_3(tmp_path: Path, bundle: tuple[Path, bytes, str],
                                                  english: None) -> None:
    src, data, sha = bundle
    work = tmp_path / "partial"
    work.mkdir()
    (work / f"{sha}.copy").symlink_to("/dev/full")  # every write fails with ENOSPC
    dest = tmp_path / "home" / "m.gguf"
    with pytest.raises(UnsupportedMachine) as info:
        copy_verified(src, dest, len(data), sha, work)
    assert info.value.exit_code == ExitCode.UNSUPPORTED
    assert "filled up" in info.value.message
    assert not dest.exists() and list(work.iterdir()) == []
    assert writer_threads() == []


def test_other_write_errors_surface_without_hanging(tmp_path: Path, bundle: tuple[Path, bytes, str]) -> None:
    """Under RLIMIT_FSIZE (SIGXFSZ ignored) the writer's write fails with EFBIG after one block: one line, exit 3."""
    src, data, sha = bundle
    script = textwrap.dedent(f"""
        import errno, resource, signal, sys
        from pathlib import Path
        from bootstrap.core.errors import UnsupportedMachine
        from bootstrap.fetch.verified_copy import copy_verified
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({BLOCK + 1}, {BLOCK + 1}))
        try:
            copy_verified(Path({str(src)!r}), Path({str(tmp_path / "d" / "m")!r}), {len(data)}, {sha!r},
                          Path({str(tmp_path / "w")!r}))
        except UnsupportedMachine as exc:
            sys.exit(0 if isinstance(exc.__cause__, OSError) and exc.__cause__.errno == errno.EFBIG else 3)
        sys.exit(4)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "d" / "m").exists() and list((tmp_path / "w").iterdir()) == []


def test_interrupt_mid_copy_leaves_nothing(tmp_path: Path, bundle: tuple[Path, bytes, str]) -> None:
    src, data, sha = bundle
    dest, work = tmp_path / "home" / "m.gguf", tmp_path / "partial"

    def interrupt(_n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        copy_verified(src, dest, len(data), sha, work, progress=interrupt)
    assert not dest.exists() and list(work.iterdir()) == []
    assert writer_threads() == []


def test_real_gemma_file_copies_verified(tmp_path: Path, gemma_gguf: Path) -> None:
    from tests.support import testbed

    dest = tmp_path / "models" / gemma_gguf.name
    copy_verified(gemma_gguf, dest, testbed.GEMMA_SIZE, testbed.GEMMA_SHA256, tmp_path / "partial")
    assert dest.stat().st_size == testbed.GEMMA_SIZE
    with dest.open("rb") as fh:
        assert hashlib.file_digest(fh, "sha256").hexdigest() == testbed.GEMMA_SHA256
