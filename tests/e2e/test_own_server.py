"""Issue 24 with the real engine, through the real CLI: the kit talks only to its own server, and says what it runs.

One install (``qwenkit install --no-service``: the start script runs the test bed's llama-server, packed as the
release asset on the loopback hub), then each test uses it as a user would and leaves it serving again:
- a healthy ``status`` shows context and slots (from ``/props``, after the OS has shown the socket is ours), memory
  in use against the plan, uptime and the log folder; ``--open`` with no browser prints the address;
- ``service start`` returns once the model answers, ``service status`` is a sentence, ``logs`` prints it;
- a rerun with nothing to update never calls a stranger on the port "serving" and never sends it the key (it
  answered ``/health`` 503 "Loading model" before: ``AttributeError`` exit 1; 200: "Up to date … serving");
- a rerun whose engine cannot start names the cause (it was the same ``AttributeError``);
- a planted ``secrets/api-key`` link and a planted ``logs`` link are refused, naming them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.register.managers import FallbackManager
from tests.support import standin
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import MODEL_FILE, MODEL_REPO, catalog_text, serve_engine, write_chat_model
from tests.support.llama import LlamaServer, free_port
from tests.support.stranger import Stranger


@dataclass
class Bed:
    home: Home
    port: int
    env: dict[str, str]
    first_install: subprocess.CompletedProcess[str] | None = None

    def run(self, *argv: str, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bootstrap", *argv], cwd=REPO_ROOT, env={**self.env, **extra},
                              capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)

    def rerun(self) -> subprocess.CompletedProcess[str]:
        return self.run("install", "--yes", "--no-service", "--no-venv")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def health(self) -> int:
        try:
            with requests.Session() as session:
                session.trust_env = False
                return session.get(f"{self.base}/health", timeout=10).status_code
        except requests.RequestException:
            return 0

    def server_pid(self) -> int | None:
        """The listening process on the port, as the OS tells it."""
        for conn in psutil.net_connections("tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr.port == self.port:
                return conn.pid
        return None

    def stop(self) -> None:
        FallbackManager(self.home).stop()

    def ensure_serving(self) -> None:
        if self.health() != 200:
            proc = self.rerun()
            assert proc.returncode == 0, proc.stderr[-3000:]
        assert self.health() == 200


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path) -> Iterator[Bed]:
    root = tmp_path_factory.mktemp("own-server")
    with LoopbackHub(root / "hub") as hub:
        engine_url = serve_engine(hub, engine_asset)
        revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "src" / MODEL_FILE)})
        catalog = root / "catalog.toml"
        catalog.write_text(catalog_text(revision), encoding="utf-8")
        home = Home(root / "Qwen 家 home")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("QWENKIT_", "LLAMA_ARG_", "HF_", "MODELSCOPE_"))
               and k not in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY")}  # no browser, as over SSH
        env.update({"QWENKIT_HOME": str(home.root), "QWENKIT_CATALOG": str(catalog),
                    "QWENKIT_HF_ENDPOINT": hub.endpoint, "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint,
                    "QWENKIT_ENGINE_URL": engine_url, "QWENKIT_LANG": "en", "NO_COLOR": "1",
                    "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"})
        port = free_port()
        b = Bed(home, port, env)
        try:
            proc = b.run("install", "--yes", "--no-service", "--no-venv", "--port", str(port), timeout=600)
            assert proc.returncode == 0, proc.stderr[-3000:]
            b.first_install = proc
            yield b
        finally:
            b.stop()


def test_the_closing_line_names_a_command_that_runs(bed: Bed) -> None:
    """Issue 24: with no launcher written (a source checkout, no venv) the closing line named '<bin>/qwenkit', a file
    that did not exist. Now it names how the install was run, and that command works."""
    assert bed.first_install is not None
    last = bed.first_install.stdout.rstrip().splitlines()[-1]
    said = re.fullmatch(r"Installed in .*\. Rerun '(?P<command>.+) install' any time to upgrade\.", last)
    assert said is not None, last
    assert said["command"] == f"{sys.executable} -m bootstrap"
    python, module = said["command"].split(" -m ")
    bed.ensure_serving()
    status = subprocess.run([python, "-m", module, "status"], cwd=REPO_ROOT, env=bed.env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert status.returncode == 0 and "endpoint" in status.stdout, status.stderr[-2000:]


def test_a_healthy_status_shows_what_the_server_runs_with(bed: Bed) -> None:
    bed.ensure_serving()
    pid = bed.server_pid()
    proc = bed.run("status")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert re.search(r"^context    [\d,]+ tokens per request, \d+ at a time$", text, re.M), text
    assert re.search(r"^memory     [\d.]+ (MiB|GiB) in use(?: \(\+[\d.]+ \w+ in swap\))?; the plan predicted "
                     r"[\d.]+ (MiB|GiB)$", text, re.M), text
    assert re.search(rf"^running    for \d+ (s|min \d+ s) \(PID {pid}\)$", text, re.M), text
    assert f"logs       {bed.home.logs_dir}  ('qwenkit logs')" in text

    doc = json.loads(bed.run("status", "--json").stdout)
    assert doc["health"] == "ok" and doc["port_holder"]["state"] == "ours" and doc["port_holder"]["pid"] == pid
    server = doc["server"]
    assert server["pid"] == pid and server["rss_bytes"] > 1 << 20 and server["uptime_s"] >= 0
    assert server["ctx"] >= 256 and server["slots"] >= 1  # the catalog's -c 512, as llama-server reports it
    assert server["planned_ram_bytes"] == json.loads(bed.home.state_file.read_text())["server"]["planned_ram"] > 0
    assert doc["logs"] == str(bed.home.logs_dir)


def test_open_without_a_browser_prints_the_address(bed: Bed) -> None:
    """No display and no $BROWSER (an SSH session): ``webbrowser.open`` returns False. Before, the kit said "opening
    … in the browser" and nothing opened; now it says no browser could be opened, and the address is on stdout."""
    bed.ensure_serving()
    proc = bed.run("status", "--open")
    assert proc.returncode == 0, proc.stderr
    url = f"{bed.base}/"
    assert f"warning: No browser could be opened here (no display, or none configured): open {url} yourself." \
        in proc.stderr
    assert proc.stdout.splitlines()[-1] == url
    assert "Opened" not in proc.stderr


def test_service_start_waits_for_the_model_and_status_is_a_sentence(bed: Bed) -> None:
    bed.ensure_serving()
    assert bed.run("service", "stop").returncode == 0
    assert bed.health() == 0
    stopped = bed.run("service", "status")
    assert stopped.returncode == 0
    assert (stopped.stdout + stopped.stderr).strip() == (
        "The server is not running (script). It does not start by itself at boot. "
        "Start it with 'qwenkit service start'.")

    start = bed.run("service", "start")
    assert start.returncode == 0, start.stderr
    assert bed.health() == 200  # ready when the command returns, not merely spawned
    assert re.search(rf"^Server ready after [\d.]+ s \(script\): {re.escape(bed.base)}/v1$", start.stdout, re.M)

    status = bed.run("service", "status")
    pid = bed.server_pid()
    assert (status.stdout + status.stderr).strip() == (
        f"The server runs under script (PID {pid}) and answers at {bed.base}/v1. It does not start by itself at boot.")
    doc = json.loads(bed.run("service", "status", "--json").stdout)
    assert doc["active"] is True and doc["health"] == "ok" and doc["port_holder"]["pid"] == pid


def test_a_server_killed_with_sigkill_is_serving_again(bed: Bed) -> None:
    """No service manager (``--no-service``): the supervisor the install started brings a killed server back (before
    this, nothing did: the soak's 'back_s' was null), on the same port, with the same key; ``stop`` ends both."""
    bed.ensure_serving()
    log = bed.home.logs_dir / "server.log"
    seen = log.read_text(encoding="utf-8", errors="replace").count("; watching it")
    deadline = time.monotonic() + 30
    while seen == 0 and time.monotonic() < deadline:  # the supervisor has seen it serve (it polls every 0.5 s)
        time.sleep(0.2)
        seen = log.read_text(encoding="utf-8", errors="replace").count("; watching it")
    first = bed.server_pid()
    assert first is not None and seen >= 1
    os.kill(first, signal.SIGKILL)
    killed = time.monotonic()
    while time.monotonic() - killed < 60 and not (bed.health() == 200 and bed.server_pid() not in (None, first)):
        time.sleep(0.2)
    back = time.monotonic() - killed
    assert bed.health() == 200 and bed.server_pid() not in (None, first), log.read_text()[-2000:]
    assert back < 60
    status = json.loads(bed.run("status", "--json").stdout)
    assert status["healthy"] is True
    assert "llama-server ended (SIGKILL); starting it again in 1 s" in log.read_text(encoding="utf-8")
    supervisor = int((bed.home.run_dir / "server.pid").read_text())
    bed.stop()
    assert bed.health() == 0
    assert not psutil.pid_exists(supervisor) or psutil.Process(supervisor).status() == psutil.STATUS_ZOMBIE


def test_logs_prints_what_the_server_wrote(bed: Bed) -> None:
    """The real server's log as the start script keeps it; following and rolling: tests/app/test_logs_command.py."""
    bed.ensure_serving()
    log = bed.home.logs_dir / "server.log"
    for _ in range(20):  # the supervisor may append its "watching it" line meanwhile: compare a log that held still
        before = log.read_bytes()
        proc = bed.run("logs", "-n", "3")
        if log.read_bytes() == before:
            break
        time.sleep(0.5)
    lines = before.splitlines(keepends=True)
    assert proc.returncode == 0 and proc.stdout.encode() == b"".join(lines[-3:])
    assert f"listening on {bed.base}".encode() in b"".join(lines)  # what llama-server logs once bound


@pytest.mark.parametrize("answer", [503, 200], ids=["loading", "healthy"])
def test_a_rerun_never_calls_a_stranger_serving(bed: Bed, tmp_path: Path, answer: int) -> None:
    """Our server down, a stranger on the port answering 503 "Loading model" (before: ``AttributeError: 'str'
    object has no attribute 'cause'``, exit 1) or a healthy 200 (before: "Up to date … serving", exit 0, after it
    had received the key): now exit 6 naming its PID, and it receives no request at all."""
    bed.ensure_serving()
    bed.stop()
    with Stranger(bed.port, tmp_path / "seen.jsonl", health=answer) as stranger:
        proc = bed.rerun()
        name = psutil.Process(stranger.pid).name()
        assert proc.returncode == 6, proc.stderr
        assert "Traceback" not in proc.stderr and "Up to date" not in proc.stdout + proc.stderr
        assert f"error: port {bed.port} is held by PID {stranger.pid} ({name}), not by this install's server" \
            in proc.stderr
        status = bed.run("status")
        assert status.returncode == 6 and f"held by PID {stranger.pid}" in status.stderr
        assert stranger.requests() == []
    proc = bed.rerun()  # the stranger gone, the rerun starts our own server again
    assert proc.returncode == 0, proc.stderr
    assert "Up to date" in proc.stdout and bed.health() == 200


def test_another_homes_server_on_the_port_is_not_ours(bed: Bed, llama_server: Path, tiny_models: dict[str, Path],
                                                     tmp_path: Path) -> None:
    """Another home's llama-server serving the same model name on our port (two homes of one catalog model; here
    the test bed's engine, outside this home, with no key). Before: the rerun said "Up to date: tiny-chat … is
    serving" (exit 0) and ``status`` "healthy" — about a server that is not this install's. Now both name it
    (exit 6). (That nothing reaches it is shown by the recording stranger above: llama-server logs no requests.)"""
    bed.ensure_serving()
    bed.stop()
    other = LlamaServer(llama_server, tiny_models["llama"], ["-c", "256", "-np", "1", "-t", "1", "--alias",
                                                             "tiny-chat"])
    other.port, other.base_url = bed.port, bed.base  # on this install's recorded port
    with other:
        rerun = bed.rerun()
        assert rerun.returncode == 6, rerun.stderr
        assert f"error: port {bed.port} is held by PID {other.proc.pid} (llama-server)" in rerun.stderr
        assert "Up to date" not in rerun.stdout + rerun.stderr
        status = bed.run("status")
        assert status.returncode == 6 and f"held by PID {other.proc.pid} (llama-server)" in status.stderr
    bed.ensure_serving()


def test_a_rerun_whose_engine_cannot_start_names_the_cause(bed: Bed) -> None:
    """The unchanged install's engine cannot start any more (here it fails as the dynamic loader does when a library
    is missing: the test bed's stand-in in front of the real binary, ``tests/support/standin.py``): the restart
    fails for a named cause (exit 3, the library named). Before, ``_keep_serving`` re-raised that ``EngineFailed``
    with the wrong arguments: ``AttributeError: 'str' object has no attribute 'cause'`` (exit 1)."""
    bed.ensure_serving()
    bed.stop()
    engine = next(p for p in bed.home.engines_dir.iterdir() if p.is_dir())
    server = engine / "llama-server"
    server.rename(engine / standin.REAL)
    server.write_text(standin.loader_error("libggml-base.so.0"), encoding="utf-8")
    server.chmod(0o755)
    try:
        proc = bed.rerun()
        assert proc.returncode == 3, proc.stderr
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
        assert len(errors) == 1 and "libggml-base.so.0" in errors[0] and "Traceback" not in proc.stderr
        assert "AttributeError" not in proc.stderr
    finally:
        server.unlink()
        (engine / standin.REAL).rename(server)
    bed.ensure_serving()


def test_a_planted_key_link_is_refused_and_never_followed(bed: Bed, tmp_path: Path) -> None:
    """``secrets/api-key`` replaced by a link to a file holding the same key: before, ``status`` read through it
    (healthy, exit 0); now the link is named (status exit 6, rerun exit 2) and the key never read through it."""
    bed.ensure_serving()
    key = bed.home.api_key_file
    planted = tmp_path / "planted-key"
    shutil.copy2(key, planted)
    original = key.read_bytes()
    key.unlink()
    key.symlink_to(planted)
    try:
        status = bed.run("status")
        assert status.returncode == 6
        assert f"{key} is a link; the API key is never read or written through a link" in status.stderr
        rerun = bed.rerun()
        assert rerun.returncode == 2 and f"error: {key} is a link" in rerun.stderr
    finally:
        key.unlink()
        key.write_bytes(original)
        key.chmod(0o600)
    assert bed.run("status").returncode == 0


def test_a_planted_logs_link_is_refused_by_service_start(bed: Bed, tmp_path: Path) -> None:
    """``logs`` replaced by a link elsewhere: ``service start`` (and ``logs``) refuse it, naming it, and nothing is
    written where it points."""
    bed.ensure_serving()
    assert bed.run("service", "stop").returncode == 0
    logs = bed.home.logs_dir
    kept = tmp_path / "kept-logs"
    shutil.move(str(logs), kept)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    logs.symlink_to(elsewhere, target_is_directory=True)
    try:
        start = bed.run("service", "start")
        assert start.returncode == 2 and f"error: {logs} is a link" in start.stderr
        assert bed.run("logs").returncode == 2
        assert list(elsewhere.iterdir()) == [] and bed.health() == 0
    finally:
        logs.unlink()
        shutil.move(str(kept), logs)
    bed.ensure_serving()
