"""The engine self-test: run a newly placed llama-server once on a tiny quantized model — load, one token, stop.

``--version`` proves only that the binary starts. A build made for other CPU instructions dies at the first quantized
matrix multiplication (SIGILL), a GPU backend can fail to start, a library can be missing: all of that shows up
here in a second or two, before the model is downloaded and before a working server is stopped for an upgrade.
The model is written by ``selftest_model`` (pinned bytes); the server listens on a free loopback port only for the
test, and its log stays in ``<home>/logs/selftest-<variant>.log`` for the user.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import requests

from bootstrap.core import settings
from bootstrap.core.console import t
from bootstrap.core.processes import NO_WINDOW, SERVER_STOP_TIMEOUT_S
from bootstrap.fetch.http_session import local_session
from bootstrap.place.engine_failure import (
    HTTP_ERROR,
    NO_ANSWER,
    UNKNOWN,
    EngineFailure,
    ExitInfo,
    classify,
    read_log_tail,
)

SELFTEST_TIMEOUT_S = 120.0
_POLL_S = 0.1


@dataclass(frozen=True)
class SelfTest:
    """The outcome: ``failure`` is None when the engine loaded the model and produced a token."""

    seconds: float
    failure: EngineFailure | None
    log: Path

    @property
    def ok(self) -> bool:
        return self.failure is None


def free_port() -> int:
    """A loopback port free now, for a short-lived check server (the self-test, the speed measurement)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def engine_env(server: Path) -> dict[str, str]:
    """What the start script gives the server: no ``LLAMA_ARG_*``, the engine folder on the library path."""
    env = settings.engine_child_env()
    if os.name != "nt":
        folder = str(server.parent)
        env["LD_LIBRARY_PATH"] = folder + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """TERM, then KILL after the stop bound: a test server never outlives its check."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=SERVER_STOP_TIMEOUT_S)


@dataclass(frozen=True)
class Refusal:
    """The running server answered, but not with a token: the HTTP status and the server's own words."""

    status: int
    words: str


def server_words(resp: requests.Response) -> str:
    """What llama-server said in an error answer: ``{"error": {"code", "message", "type"}}`` (llama.cpp
    ``tools/server/server-common.cpp``, ``format_error_response``), else the start of the body."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
        if isinstance(message, str) and message.strip():
            return " ".join(message.split())[:300]
    text = " ".join(resp.text.split())[:300]
    return text or (resp.reason or "-")


def _one_token(session: requests.Session, base: str, timeout: float) -> Refusal | None:
    """``/completion`` with ``n_predict`` 1 (no chat template needed): None when a token came back, else what the
    server answered instead."""
    resp = session.post(f"{base}/completion", json={"prompt": "hello", "n_predict": 1, "temperature": 0},
                        timeout=timeout)
    if resp.status_code != 200:
        return Refusal(resp.status_code, server_words(resp))
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and int(body.get("tokens_predicted") or 0) >= 1:
        return None
    return Refusal(200, t("failure.selftest_no_token"))


def _await(proc: subprocess.Popen[bytes], base: str, deadline: float) -> str | Refusal | None:
    """Poll until the server answered one token (None); else "exited" (the process ended), "timeout", or the
    ``Refusal`` a running server gave."""
    with local_session() as session:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return "exited"
            with contextlib.suppress(requests.RequestException, ValueError):
                if session.get(f"{base}/health", timeout=2).status_code == 200:
                    remaining = max(1.0, deadline - time.monotonic())
                    refusal = _one_token(session, base, remaining)
                    if refusal is None:
                        return None
                    # A server that dies while answering crashed: its exit status says more than any answer.
                    return "exited" if _ended(proc) else refusal
            time.sleep(_POLL_S)
    return "timeout"


def _ended(proc: subprocess.Popen[bytes], grace: float = 1.0) -> bool:
    """Whether the process is gone, waiting ``grace`` seconds for one that is just dying (an abort after the
    reply was sent)."""
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        return False
    return True


def run_selftest(server: Path, model: Path, log: Path, *, args: Sequence[str] = (),
                 timeout: float = SELFTEST_TIMEOUT_S) -> SelfTest:
    """Start ``server`` on ``model`` with the backend flags ``args`` (threads, GPU layers…), ask for one token,
    stop it. Three outcomes are told apart: the process ended by itself (classified from its exit status and the
    log: "stopped" with that status), a running server that answered with an error (``http_error``, its words),
    and one that kept running without answering (``no_answer``)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    base = f"http://127.0.0.1:{free_port()}"
    port = base.rpartition(":")[2]
    argv = [str(server), "-m", str(model), "--host", "127.0.0.1", "--port", port, "-c", "256", "-np", "1", *args]
    start = time.monotonic()
    with open(log, "wb") as out:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=engine_env(server), creationflags=NO_WINDOW)
        except OSError as exc:
            return SelfTest(0.0, classify(None, f"{exc.strerror or exc}", log_path=str(log)), log)
        try:
            why = _await(proc, base, start + timeout)
        finally:
            if proc.poll() is None:
                stop_server(proc)
    seconds = time.monotonic() - start
    if why is None:
        return SelfTest(seconds, None, log)
    tail = read_log_tail(log)
    if isinstance(why, Refusal):
        return SelfTest(seconds, EngineFailure(HTTP_ERROR, why.words, http_status=why.status, log=str(log)), log)
    if why == "exited":
        return SelfTest(seconds, classify(ExitInfo.from_returncode(proc.returncode), tail, log_path=str(log)), log)
    failure = classify(None, tail, log_path=str(log))  # still running at the deadline: the log may say why
    if failure.cause == UNKNOWN:
        failure = EngineFailure(NO_ANSWER, t("failure.selftest_no_answer", seconds=int(timeout)), log=str(log))
    return SelfTest(seconds, failure, log)


def selftest_engine(server: Path, log: Path, *, args: Sequence[str] = (),
                    timeout: float = SELFTEST_TIMEOUT_S) -> SelfTest:
    """Write the pinned self-test model into a temporary folder and run ``run_selftest`` on it."""
    from bootstrap.place.selftest_model import write_selftest_model

    with tempfile.TemporaryDirectory(prefix="qwenkit-selftest-") as tmp:
        model = write_selftest_model(Path(tmp))
        return run_selftest(server, model, log, args=args, timeout=timeout)
