"""The start-script install's supervisor with real processes (``register/supervisor``).

The real llama-server (the test bed's, a tiny chat model, an API key) under the supervisor: killed with SIGKILL it
serves again (a new process, the same port, the key still required); stopped with SIGSTOP mid-generation it is
found stalled by a one-token chat that gets no answer and restarted (SIGTERM, then SIGKILL). A stand-in that
keeps ``/health`` at 200 while completions hang (upstream #27388) is restarted; one whose slot is generating is
left alone. A server that never served is not restarted: the supervisor ends as it ended. SIGTERM stops both.
The probe interval and deadline are shortened through the product's own variables.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.core.log_files import MAX_BYTES, RotatingLog, roll_if_large, rolled
from bootstrap.register.launchd import LaunchdManager
from bootstrap.register.winsw import WinswManager
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.llama import InFlightChat, free_port

KEY = "sk-supervisor-test-key"
WATCH = {"QWENKIT_PROBE_INTERVAL": "1", "QWENKIT_PROBE_DEADLINE": "2"}


class Supervised:
    """``tests/support/supervised.py`` over ``command`` in its own session, with its log and key."""

    def __init__(self, tmp: Path, command: list[str], port: int, *, cwd: Path = REPO_ROOT, **env: str) -> None:
        self.log = tmp / "server.log"
        key_file = tmp / "api-key"
        key_file.write_text(KEY + "\n", encoding="utf-8")
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.supervised", str(self.log), str(key_file), "--", *command],
            cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **WATCH, **env},
            stdin=subprocess.DEVNULL, start_new_session=True)

    def server_pid(self) -> int | None:
        for conn in psutil.net_connections("tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == self.port:
                return conn.pid
        return None

    def chat(self, *, key: str | None = KEY, timeout: float = 10) -> int:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            with requests.Session() as session:
                session.trust_env = False
                return session.post(f"{self.base}/v1/chat/completions", headers=headers, timeout=timeout,
                                    json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
                                    ).status_code
        except requests.RequestException:
            return 0

    def wait_for(self, check: Callable[[], bool], timeout: float) -> float:
        """Seconds until ``check()`` holds; fails the test after ``timeout``."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if check():
                return time.monotonic() - start
            time.sleep(0.1)
        raise AssertionError(f"not within {timeout} s; log:\n{self.log_text()[-3000:]}")

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)


@pytest.fixture
def supervised_server(tmp_path: Path, llama_server: Path, tiny_models: dict[str, Path]) -> Iterator[Supervised]:
    port = free_port()
    command = [str(llama_server), "-m", str(tiny_models["llama"]), "--host", "127.0.0.1", "--port", str(port),
               "--api-key-file", str(tmp_path / "api-key"), "-c", "512", "-t", "1", "--log-colors", "off"]
    sup = Supervised(tmp_path, command, port, LD_LIBRARY_PATH=str(llama_server.parent))
    try:
        sup.wait_for(lambda: "; watching it" in sup.log_text(), 120)
        assert sup.chat() == 200
        yield sup
    finally:
        sup.stop()


def test_a_server_killed_with_sigkill_serves_again(supervised_server: Supervised) -> None:
    sup = supervised_server
    first = sup.server_pid()
    assert first is not None and psutil.Process(first).name().startswith("llama-server")
    os.kill(first, signal.SIGKILL)
    back = sup.wait_for(lambda: sup.chat() == 200, 60)
    sup.wait_for(lambda: sup.log_text().count("; watching it") == 2, 30)
    second = sup.server_pid()
    assert second not in (None, first)
    assert sup.chat(key=None) == 401  # the restarted server still wants the key
    assert "llama-server ended (SIGKILL); starting it again in 1 s" in sup.log_text()
    assert back < 60
    assert sup.log_text().count(f"listening on {sup.base}") == 2  # both lives' output went through the supervisor


def test_a_server_stopped_mid_generation_is_restarted(supervised_server: Supervised) -> None:
    sup = supervised_server
    first = sup.server_pid()
    assert first is not None
    stream = InFlightChat(sup.base, api_key=KEY, max_tokens=4096).start()
    stream.wait_generating(chunks=4)
    os.kill(first, signal.SIGSTOP)  # /health, /slots and every completion hang from now on
    try:
        sup.wait_for(lambda: "llama-server stalled" in sup.log_text(), 30)
    finally:
        if psutil.pid_exists(first):
            os.kill(first, signal.SIGCONT)
    sup.wait_for(lambda: sup.chat() == 200, 60)
    assert sup.server_pid() not in (None, first)
    assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE


def test_keep_alive_sleep_comes_under_the_supervisor(tmp_path: Path, llama_server: Path,
                                                     tiny_models: dict[str, Path]) -> None:
    """A server started with ``--sleep-idle-seconds`` falls asleep while the supervisor probes it every second,
    and wakes for the next request. Before, the probe's one-token chat every minute (every second here) started
    the engine's idle time again: an install's keep-alive never freed the memory under the supervisor."""
    port = free_port()
    command = [str(llama_server), "-m", str(tiny_models["llama"]), "--host", "127.0.0.1", "--port", str(port),
               "--api-key-file", str(tmp_path / "api-key"), "-c", "512", "-t", "1", "--log-colors", "off",
               "--metrics", "--sleep-idle-seconds", "3"]
    sup = Supervised(tmp_path, command, port, LD_LIBRARY_PATH=str(llama_server.parent))

    def asleep() -> bool:
        try:
            return requests.get(f"{sup.base}/props", headers={"Authorization": f"Bearer {KEY}"},
                                timeout=5).json().get("is_sleeping") is True
        except (requests.RequestException, ValueError):
            return False

    try:
        sup.wait_for(lambda: "; watching it" in sup.log_text(), 120)
        assert sup.chat() == 200
        sup.wait_for(asleep, 60)  # 3 s idle, probed every 1 s all along
        assert sup.chat(timeout=60) == 200  # the request wakes it
        assert "stalled" not in sup.log_text()
    finally:
        sup.stop()


@pytest.mark.parametrize("mode", ["stalled", "busy"])
def test_a_stall_is_judged_by_a_chat_and_by_progress(tmp_path: Path, mode: str) -> None:
    """``/health`` 200 and completions unanswered: restarted when no slot moves, left alone while one does."""
    port = free_port()
    sup = Supervised(tmp_path, [sys.executable, str(REPO_ROOT / "tests" / "support" / "stalled_server.py"),
                                str(port), mode], port)
    try:
        sup.wait_for(lambda: sup.server_pid() is not None, 30)
        first = sup.server_pid()
        if mode == "stalled":
            sup.wait_for(lambda: "stalled" in sup.log_text() and sup.server_pid() not in (None, first), 30)
            assert "starting it again in" in sup.log_text()
        else:
            time.sleep(12)  # four probe rounds (1 s apart, 2 s deadline, 2 s between the two looks at /slots)
            assert sup.server_pid() == first and "stalled" not in sup.log_text()
    finally:
        sup.stop()


def test_a_router_is_probed_by_its_default_model(tmp_path: Path) -> None:
    """Several models (``models.ini`` in the home): the router answers 400 to a chat naming no model, so the probe
    names the preset's first model; its child stalled (the stand-in hangs any chat naming one) is found and the
    server restarted. Before, the 400 passed for an answer and a stalled router was never restarted."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.ini").write_text("version = 1\n\n[qwen-default]\nmodel = a.gguf\n\n[embed]\nmodel = b.gguf\n",
                                     encoding="utf-8")
    port = free_port()
    sup = Supervised(tmp_path, [sys.executable, str(REPO_ROOT / "tests" / "support" / "stalled_server.py"),
                                str(port), "router"], port, cwd=home)
    try:
        sup.wait_for(lambda: sup.server_pid() is not None, 30)
        first = sup.server_pid()
        sup.wait_for(lambda: "stalled" in sup.log_text() and sup.server_pid() not in (None, first), 30)
        assert (home / "models-asked.txt").read_text(encoding="utf-8").splitlines()[0] == "qwen-default"
    finally:
        sup.stop()


def test_a_server_that_never_served_is_not_restarted(tmp_path: Path) -> None:
    """It dies at start (SIGILL here, as a build for the wrong CPU does): the supervisor ends the same way, once."""
    script = "import os, signal; print('starting', flush=True); os.kill(os.getpid(), signal.SIGILL)"
    sup = Supervised(tmp_path, [sys.executable, "-c", script], free_port())
    assert sup.proc.wait(timeout=30) == -signal.SIGILL
    log = sup.log_text()
    assert log.count("starting\n") == 1
    assert "ended before it served (SIGILL); not restarting it" in log


FLAKY = """
import os, sys
from pathlib import Path
count = Path(sys.argv[1])
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
print(f"life {n}", flush=True)
if n in (2, 3):
    sys.exit(3)  # a restart that fails before serving: retried, with a longer wait each time
os.execv(sys.executable, [sys.executable, sys.argv[2], sys.argv[3], "busy"])
"""


def test_a_restart_that_fails_is_retried_with_backoff(tmp_path: Path) -> None:
    """It served, died, and the next two starts fail before serving: unlike a first start, those are retried
    (after 1 s, then 2 s, then 4 s) until one serves again."""
    port = free_port()
    stand_in = REPO_ROOT / "tests" / "support" / "stalled_server.py"
    sup = Supervised(tmp_path, [sys.executable, "-c", FLAKY, str(tmp_path / "lives"), str(stand_in), str(port)],
                     port)
    try:
        sup.wait_for(lambda: "; watching it" in sup.log_text(), 30)
        first = sup.server_pid()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        sup.wait_for(lambda: sup.log_text().count("; watching it") == 2, 60)
        log = sup.log_text()
        assert [f"life {n}" in log for n in (1, 2, 3, 4)] == [True] * 4
        assert "ended (SIGKILL); starting it again in 1 s" in log
        assert "ended (exit code 3); starting it again in 2 s" in log
        assert "ended (exit code 3); starting it again in 4 s" in log
        assert sup.proc.poll() is None
    finally:
        sup.stop()


def test_sigterm_stops_the_server_and_restarts_nothing(supervised_server: Supervised) -> None:
    sup = supervised_server
    server = sup.server_pid()
    assert server is not None
    os.kill(sup.proc.pid, signal.SIGTERM)  # the supervisor alone: it stops the server itself
    assert sup.proc.wait(timeout=15) == 0
    assert not psutil.pid_exists(server) or psutil.Process(server).status() == psutil.STATUS_ZOMBIE
    time.sleep(2)
    assert sup.server_pid() is None


def test_the_log_rolls_by_size_and_keeps_three(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    with RotatingLog(path, max_bytes=1000) as log:
        for n in range(100):
            log.write(f"line {n:03d} ".encode() + b"x" * 40 + b"\n")  # 50 bytes each: 20 per file
    assert path.stat().st_size <= 1000
    assert [rolled(path, n).stat().st_size for n in (1, 2, 3)] == [1000, 1000, 1000]
    assert not rolled(path, 4).exists()
    assert rolled(path, 3).read_bytes().startswith(b"line 020 ")  # the oldest two files' lines are gone
    assert path.read_bytes().splitlines()[-1].startswith(b"line 099 ")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    roll_if_large(path, max_bytes=100)  # the kit's own logs: rolled before a run appends
    assert not path.exists() and rolled(path, 1).read_bytes().splitlines()[-1].startswith(b"line 099 ")


def test_a_supervised_log_never_grows_past_its_bound(tmp_path: Path) -> None:
    """A chatty server (2 MB of output) under a 100 kB bound: four files at most, the newest lines kept."""
    script = "import sys\nfor n in range(40000): print(f'request {n:05d} ' + 'x' * 40)\n"
    sup = Supervised(tmp_path, [sys.executable, "-c", script], free_port(), QWENKIT_LOG_MAX_BYTES="100000")
    sup.proc.wait(timeout=60)
    files = sorted(tmp_path.glob("server.log*"))
    assert [f.name for f in files] == ["server.log", "server.log.1", "server.log.2", "server.log.3"]
    assert all(f.stat().st_size <= 100_000 for f in files)
    assert "request 39999" in sup.log_text()


def test_each_start_begins_a_bounded_log(tmp_path: Path) -> None:
    """launchd and the Task Scheduler append without a bound while one server runs: a start rolls a large log
    first (the supervisor and WinSW roll as they write)."""
    home = Home(tmp_path / "home")
    home.logs_dir.mkdir(parents=True)
    log = home.logs_dir / "server.log"
    log.write_bytes(b"x" * MAX_BYTES)
    launchd = LaunchdManager(home, uid=501, agents_dir=tmp_path / "agents")
    assert launchd.log_file == log
    launchd.prepare_logs()
    assert not log.exists() and rolled(log, 1).stat().st_size == MAX_BYTES
    winsw = WinswManager(home, winsw_source=None)
    winsw.log_file.write_bytes(b"x" * MAX_BYTES)
    winsw.prepare_logs()  # WinSW rolls its own: left alone
    assert winsw.log_file.stat().st_size == MAX_BYTES
