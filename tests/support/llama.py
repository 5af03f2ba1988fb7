"""Run the test bed's real llama-server on loopback and talk to it, for tests and scripts.

A test-side harness only: the product starts servers through its own rendered scripts and service units.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import requests


def end_process(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL after 10 s; nothing when it has already ended."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean_env(extra: dict[str, str] | None) -> dict[str, str]:
    """The parent environment without ``LLAMA_ARG_*`` (they silently override flags) plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_") and k != "LLAMA_API_KEY"}
    env.update(extra or {})
    return env


class LlamaServer:
    """A llama-server process on 127.0.0.1 bound to a fresh port, stopped on exit.

    ``args`` are passed after the model; the harness adds only ``--host``, ``--port`` and
    ``--log-colors off`` (plain log lines are parsed by tests).
    """

    def __init__(
        self,
        binary: Path,
        model: Path,
        args: Sequence[str] = (),
        *,
        api_key: str | None = None,
        ready_timeout: float = 120.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.binary = Path(binary)
        self.model = Path(model)
        self.args = list(args)
        self.api_key = api_key
        self.ready_timeout = ready_timeout
        self.env = env
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        log_dir = tempfile.mkdtemp(prefix="llama-server-")
        weakref.finalize(self, shutil.rmtree, log_dir, True)  # the log outlives stop() for log(), not the object
        self._log = open(Path(log_dir, "server.log"), "wb")  # noqa: SIM115
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start the process and wait until ``/health`` answers 200, or raise with the log's tail."""
        cmd = [str(self.binary), "-m", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
               "--log-colors", "off", *self.args]
        if self.api_key:
            cmd += ["--api-key", self.api_key]
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=_clean_env(self.env),
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{self.base_url}/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"llama-server not healthy after {self.ready_timeout:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; the log file stays for ``log()``."""
        if self.proc:
            end_process(self.proc)

    def log(self) -> str:
        """Everything the server printed so far."""
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def post(self, path: str, body: dict[str, Any], *, timeout: float = 120.0) -> Any:
        """POST ``body`` as JSON to ``path`` (``/apply-template``, ``/tokenize``…) and return the JSON answer; raises
        on HTTP errors."""
        resp = requests.post(f"{self.base_url}{path}", json=body, headers=self.headers(), timeout=timeout)
        resp.raise_for_status()
        return resp.json()

    def chat(self, content: str, *, max_tokens: int = 16, timeout: float = 120.0, **extra: Any) -> dict[str, Any]:
        """POST ``/v1/chat/completions`` (non-streaming, greedy) and return the JSON body; raises on HTTP errors."""
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens,
            "temperature": 0,
            **extra,
        }
        resp = requests.post(f"{self.base_url}/v1/chat/completions", json=body, headers=self.headers(),
                             timeout=timeout)
        resp.raise_for_status()
        return resp.json()


class InFlightChat:
    """A streamed chat request running in a thread, to have a generation in flight while something else happens.

    It counts the server-sent ``data:`` chunks as they arrive (``wait_generating`` returns once enough did, so the
    server is known to be generating, not still queueing), and records how the request ended: ``finished`` after
    ``data: [DONE]``, else ``error`` (the connection reset when the server was killed) and ``ended_at`` either way.
    ``ignore_eos`` (a llama-server sampling option) keeps the model going until ``max_tokens`` or the context ends.
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, max_tokens: int = 4096,
                 content: str = "Write a very long story about a lighthouse keeper.",
                 timeout: float = 600.0) -> None:
        self.url = f"{base_url}/v1/chat/completions"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.body: dict[str, Any] = {"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
                                     "stream": True, "ignore_eos": True, "temperature": 0}
        self.timeout = timeout
        self.chunks = 0
        self.finished = False
        self.error: str | None = None
        self.ended_at: float | None = None  # time.monotonic() when the request returned or failed
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._run, name="in-flight-chat", daemon=True)

    def start(self) -> InFlightChat:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            with requests.Session() as session:
                session.trust_env = False  # loopback: never through a proxy from the environment
                with session.post(self.url, json=self.body, headers=self.headers, stream=True,
                                  timeout=(10, self.timeout)) as resp:
                    resp.raise_for_status()
                    for line in resp.iter_lines():
                        if line == b"data: [DONE]":
                            self.finished = True
                        elif line.startswith(b"data: "):
                            self.chunks += 1
        except (requests.RequestException, OSError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.ended_at = time.monotonic()
            self._ended.set()

    def wait_generating(self, chunks: int = 8, timeout: float = 120.0) -> None:
        """Block until ``chunks`` chunks arrived; raise if the request ended first or none came in time."""
        deadline = time.monotonic() + timeout
        while self.chunks < chunks:
            if self._ended.is_set():
                raise RuntimeError(f"the chat ended after {self.chunks} chunks: {self.error or 'finished'}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"only {self.chunks} chunks after {timeout:.0f} s")
            time.sleep(0.05)

    def wait_ended(self, timeout: float) -> bool:
        """Whether the request has ended (returned or failed) within ``timeout``."""
        if not self._ended.wait(timeout):
            return False
        self._thread.join(timeout)  # only its last lines are left to run
        return True
