"""``write_atomic``: a reader (or a rerun after ``kill -9``) sees the old content or the new, never a torn file; the
mode asked for is the mode the file gets whatever the umask; a failed write leaves the old file and no litter; a
link in the target's place is replaced, never written through.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.core.atomic_file import PUBLIC, fsync_dir, write_atomic
from tests.support.paths import REPO_ROOT

posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX modes and signals")


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_writes_and_replaces_with_a_new_inode(tmp_path: Path) -> None:
    """A reader holding the old file open keeps reading the old bytes: the new file is renamed over it."""
    path = tmp_path / "state.json"
    write_atomic(path, b"old")
    with path.open("rb") as reader:
        write_atomic(path, b"new content")
        assert reader.read() == b"old"
    assert path.read_bytes() == b"new content"
    assert leftovers(tmp_path) == []


@posix_only
@pytest.mark.parametrize("mode", [PUBLIC, 0o600])
def test_the_mode_is_exact_whatever_the_umask(tmp_path: Path, mode: int) -> None:
    """A published file is 0644 even under umask 077; a secret is 0600 even under umask 000 (never wider)."""
    for umask in (0o077, 0o000):
        old = os.umask(umask)
        try:
            path = tmp_path / f"f-{umask:o}"
            write_atomic(path, b"x", mode=mode)
        finally:
            os.umask(old)
        assert stat.S_IMODE(path.stat().st_mode) == mode


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_atomic(path, b"old")
    with pytest.raises(TypeError):
        write_atomic(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"old" and leftovers(tmp_path) == []


def test_a_missing_folder_is_made_and_holds_only_the_file(tmp_path: Path) -> None:
    """A folder a user removed (``rm -r <home>/cache``) is made again by the next write, with no temp file left."""
    write_atomic(tmp_path / "no-such-dir" / "f", b"x")
    assert [p.name for p in (tmp_path / "no-such-dir").iterdir()] == ["f"]
    assert (tmp_path / "no-such-dir" / "f").read_bytes() == b"x"


@posix_only
def test_a_link_in_the_way_is_replaced_not_followed(tmp_path: Path) -> None:
    """A link planted where ``state.json`` goes cannot redirect the write to its target."""
    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"precious")
    path = tmp_path / "state.json"
    path.symlink_to(target)
    write_atomic(path, b"ours")
    assert not path.is_symlink() and path.read_bytes() == b"ours"
    assert target.read_bytes() == b"precious"


def test_fsync_dir_accepts_a_folder(tmp_path: Path) -> None:
    fsync_dir(tmp_path)  # would raise on an error; on Windows it is a no-op by design
    assert tmp_path.is_dir()


_WRITER = """
import sys
from pathlib import Path
from bootstrap.core.atomic_file import write_atomic
path = Path(sys.argv[1])
blobs = [b"a" * (1 << 20), b"b" * (1 << 20)]
i = 0
while True:
    write_atomic(path, blobs[i % 2])
    i += 1
    if i == 3:
        print("running", flush=True)
"""


@posix_only
def test_a_kill_mid_write_leaves_old_or_new_never_torn(tmp_path: Path) -> None:
    """SIGKILL a process that rewrites a 1 MiB file in a loop: the file is whole (all one byte, full length);
    what a kill can leave is only a hidden temp file next to it, never a half-written target."""
    path = tmp_path / "state.json"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert proc.stdout is not None and proc.stdout.readline() == b"running\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    data = path.read_bytes()
    assert len(data) == 1 << 20 and data in (b"a" * (1 << 20), b"b" * (1 << 20))
    assert all(name.startswith(".state.json.") for name in leftovers(tmp_path))
