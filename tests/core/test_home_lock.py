"""The per-home installer lock, held by real processes: a second run is refused and told who holds it, and a
``kill -9`` of the holder frees the home at once (the kernel drops the lock; no stale lock file to clean up)."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.home import Home
from bootstrap.core.home_lock import HomeLocked, home_lock
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.usefixtures("english")

REPO = REPO_ROOT
READY_LIMIT_S = 60  # a guard against a hung child, not a speed assertion

_HOLDER = """
import sys, time
from pathlib import Path
from bootstrap.core.home import Home
from bootstrap.core.home_lock import home_lock
with home_lock(Home(Path(sys.argv[1])), sys.argv[2]):
    print("locked", flush=True)
    time.sleep(300)
"""


@contextlib.contextmanager
def hold_lock(root: Path, what: str = "install") -> Iterator[subprocess.Popen[str]]:
    """A child process holding the lock on ``root`` until the block ends (or the test kills it)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, str(root), what], cwd=REPO, env=env, text=True,
                             encoding="utf-8", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(child.stdout, selectors.EVENT_READ)
            ready = selector.select(READY_LIMIT_S)
        line = child.stdout.readline() if ready else ""
        if line.strip() != "locked":
            child.kill()
            _, err = child.communicate()
            pytest.fail(f"lock holder did not start: {err.strip()}")
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()


def test_a_second_process_is_refused_and_told_who_holds_it(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    with hold_lock(home.root, "install") as child:
        assert home.lock_file.read_text(encoding="utf-8") == f"{child.pid} install\n"
        with pytest.raises(HomeLocked) as refused, home_lock(home, "uninstall"):
            pytest.fail("entered a home another process holds")
    err = refused.value
    assert (err.pid, err.what, err.exit_code) == (child.pid, "install", ExitCode.USAGE)
    assert err.message == f"Another qwenkit is already working in {home.root} (held by pid {child.pid}, install)."
    assert err.hint == "wait for the other qwenkit to finish, or close it"
    assert home.lock_file.read_text(encoding="utf-8") == f"{child.pid} install\n"  # the refused run wrote nothing


def test_kill_9_frees_the_lock_at_once(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    with hold_lock(home.root) as child:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        with home_lock(home, "install"):  # no waiting, no stale-lock cleanup: the kernel dropped it with the process
            assert home.lock_file.read_text(encoding="utf-8") == f"{os.getpid()} install\n"
    assert home.lock_file.is_file()  # never deleted on release (a waiter could lock a fresh inode)


def test_a_home_with_spaces_and_chinese_characters(tmp_path: Path) -> None:
    home = Home(tmp_path / "my models 千问" / "本地 模型")  # not there yet: the lock creates the home
    with home_lock(home, "install"):
        assert home.lock_file.is_file()
    with hold_lock(home.root, "uninstall") as child, pytest.raises(HomeLocked) as refused, home_lock(home):
        pass
    assert (refused.value.pid, refused.value.what) == (child.pid, "uninstall")
    assert str(home.root) in refused.value.message


def test_released_when_the_block_raises_and_not_reentrant(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    with pytest.raises(HomeLocked) as nested, home_lock(home, "install"), home_lock(home, "install"):
        pass
    assert nested.value.pid == os.getpid()
    with pytest.raises(RuntimeError), home_lock(home):
        raise RuntimeError("stage failed")
    with hold_lock(home.root) as child:  # another process takes it right after: the failure released it
        assert home.lock_file.read_text(encoding="utf-8") == f"{child.pid} install\n"


def test_an_empty_record_still_refuses_without_a_pid(tmp_path: Path) -> None:
    """Between the holder's lock and its write the file may be empty: the message then names no pid."""
    home = Home(tmp_path / "home")
    with hold_lock(home.root):
        home.lock_file.write_bytes(b"")
        with pytest.raises(HomeLocked) as refused, home_lock(home):
            pass
    assert refused.value.pid is None
    assert refused.value.message == f"Another qwenkit is already working in {home.root}."


@pytest.mark.skipif(os.name == "nt", reason="O_NOFOLLOW is POSIX")
def test_a_link_planted_as_the_lock_file_is_not_followed(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    home.root.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    home.lock_file.symlink_to(victim)
    with pytest.raises(UsageError) as refused, home_lock(home):
        pass
    assert refused.value.exit_code == ExitCode.USAGE
    assert str(home.lock_file) in refused.value.message
    assert victim.read_text(encoding="utf-8") == "keep me\n"
