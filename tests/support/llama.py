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
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import requests


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
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def log(self) -> str:
        """Everything the server printed so far."""
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

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
