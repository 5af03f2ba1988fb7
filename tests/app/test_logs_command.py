"""``qwenkit logs [-f] [-n N]`` through the real CLI on a home's ``logs/server.log`` (the start script's log; the
one the real server writes is read in ``tests/e2e/test_own_server.py``): the last lines byte for byte on stdout,
following across a truncation and a roll (rename + a new file), refusing links, and no traceback for a closed pipe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from tests.support.hub_fixtures import REPO_ROOT


def qwenkit(home: Home, *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bootstrap", *argv], cwd=REPO_ROOT, env=_env(home),
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def _env(home: Home) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    env.update({"QWENKIT_HOME": str(home.root), "QWENKIT_LANG": "en", "PYTHONPATH": str(REPO_ROOT)})
    return env


@pytest.fixture
def home(tmp_path: Path) -> Home:
    home = Home(tmp_path / "Qwen 家 home")
    home.logs_dir.mkdir(parents=True)
    lines = [f"line {i} ünïcödé 模型\n".encode() for i in range(120)] + [b"raw \xff byte, no newline at the end"]
    (home.logs_dir / "server.log").write_bytes(b"".join(lines))
    return home


def test_the_last_lines_byte_for_byte(home: Home) -> None:
    log = (home.logs_dir / "server.log").read_bytes()
    proc = qwenkit(home, "logs")
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout == b"".join(log.splitlines(keepends=True)[-50:])  # the default: 50
    assert qwenkit(home, "logs", "-n", "2").stdout == "line 119 ünïcödé 模型\n".encode() + \
        b"raw \xff byte, no newline at the end"
    assert qwenkit(home, "logs", "-n", "0").stdout == b""
    assert qwenkit(home, "logs", "-n", "100000").stdout == log


def test_bad_input_and_no_log_are_one_line_exit_2(home: Home, tmp_path: Path) -> None:
    bad = qwenkit(home, "logs", "-n", "-3")
    assert bad.returncode == 2 and bad.stderr.decode().splitlines()[0] == \
        "error: -n takes a number of lines, 0 or more (got -3)"
    (home.logs_dir / "server.log").unlink()
    # Nothing installed here (as after an uninstall): the hint said 'qwenkit service start' (issue 41).
    none = qwenkit(home, "logs")
    assert none.returncode == 2
    assert none.stderr.decode().splitlines() == [
        f"error: nothing is installed in {home.root}, so there is no server log",
        "hint: Run 'qwenkit install' (or give the install folder with --home)."]
    assert qwenkit(home, "logs", "-f").returncode == 2  # nothing to wait for either


def test_the_last_lines_of_a_large_log_are_read_once(home: Home) -> None:
    """``-n`` larger than the log on 8 MiB of short lines: every line, byte for byte. The read is linear in the
    file's size (scripts/bench_logs.py measures it; it was quadratic: 61-106 s for 64 MiB, issue 41)."""
    log = home.logs_dir / "server.log"
    data = b"".join(b"%07d llama-server said something\n" % n for n in range(250_000))
    log.write_bytes(data)
    proc = qwenkit(home, "logs", "-n", "1000000000")
    assert proc.returncode == 0 and proc.stdout == data
    assert qwenkit(home, "logs", "-n", "3").stdout == b"".join(data.splitlines(keepends=True)[-3:])


def test_a_linked_log_or_folder_is_refused(home: Home, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not a log\n")
    log = home.logs_dir / "server.log"
    log.unlink()
    log.symlink_to(secret)
    proc = qwenkit(home, "logs")
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().startswith(f"error: {log} is a link; the server's log is never written or read")
    log.unlink()
    home.logs_dir.rmdir()
    home.logs_dir.symlink_to(tmp_path, target_is_directory=True)
    assert qwenkit(home, "logs").returncode == 2


def test_a_closed_pipe_ends_quietly(home: Home) -> None:
    """``qwenkit logs | head -1``: the reader goes away; the kit ends without a traceback (exit 0)."""
    reader = subprocess.Popen(["head", "-c", "10"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    (home.logs_dir / "server.log").write_bytes(b"x" * 10_000_000 + b"\n")  # more than a pipe holds
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "logs", "-n", "1"], cwd=REPO_ROOT, env=_env(home),
                          stdout=reader.stdin, stderr=subprocess.PIPE, timeout=60, check=False)
    assert reader.stdin is not None
    reader.stdin.close()
    reader.wait(30)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr and proc.stderr == b""


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_follow_survives_a_truncation_and_a_roll(home: Home) -> None:
    """``-f`` as ``tail -F``: appended lines as they come, a file truncated in place read again from the top, a
    rolled one (renamed, a new file in its place) finished before the new one is followed; Ctrl-C ends it, exit 0.
    (The pauses only give the 0.25 s poll time to look; the order of the output is what is checked.)"""
    log = home.logs_dir / "server.log"
    # Ctrl-C as a terminal delivers it: a suite started in the background (``cmd &`` in a script) inherits SIGINT
    # ignored, and a Python started with it ignored never raises KeyboardInterrupt.
    follower = subprocess.Popen([sys.executable, "-m", "bootstrap", "logs", "-f", "-n", "1"], cwd=REPO_ROOT,
                                env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_sigint_default)

    def append(text: bytes) -> None:
        with open(log, "ab") as fh:
            fh.write(text)

    try:
        time.sleep(2.0)  # the interpreter starts and prints the last line
        append(b"\nmarker one\n")
        time.sleep(1.0)
        append(b"marker two\n")  # written just before the roll: must not be lost
        log.rename(log.with_name("server.1.log"))
        log.write_bytes(b"marker three\n")
        time.sleep(1.0)
        log.write_bytes(b"")  # truncated in place
        time.sleep(1.0)
        append(b"marker four\n")
        time.sleep(1.0)
    finally:
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=30)
    assert follower.returncode == 0, err
    lines = out.decode("utf-8", "replace").splitlines()
    assert lines[0] == "raw \ufffd byte, no newline at the end"
    assert [ln for ln in lines if ln.startswith("marker")] == ["marker one", "marker two", "marker three",
                                                                "marker four"]
