"""A client that keeps chatting with an install's server while something else happens (an upgrade, a stop).

It sends one short chat every ``interval`` seconds on its own thread, so a request is often in flight when the
server is stopped, and records every failure and the longest outage: from the sending of the first request of a
failed stretch to the sending of the first request answered after it (the client's clock). Send times, not answer
times: how long an answer takes on a busy machine is latency, not an outage.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import requests


def chat(port: int, key_file: Path, *, timeout: float = 30, max_tokens: int = 4,
         model: str | None = None) -> requests.Response:
    """One non-streamed chat with the key in ``key_file`` (no proxies: the server is local); ``model``: the
    router's model to ask (none: the server's own)."""
    key = key_file.read_text(encoding="utf-8").strip()
    body: dict[str, object] = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": max_tokens}
    if model is not None:
        body["model"] = model
    with requests.Session() as session:
        session.trust_env = False
        return session.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=timeout,
                            headers={"Authorization": f"Bearer {key}"}, json=body)


class ChattingClient:
    """``with ChattingClient(port, key_file) as client: …``; then ``client.sent``, ``client.failed``,
    ``client.longest_outage_s`` (0 when no request failed)."""

    def __init__(self, port: int, key_file: Path, *, interval: float = 0.5, timeout: float = 10) -> None:
        self.port, self.key_file, self.interval, self.timeout = port, key_file, interval, timeout
        self.sent = 0
        self.failed: list[str] = []
        self.longest_outage_s = 0.0
        self._failing_since: float | None = None  # send time of the first request of the current failed stretch
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sent += 1
            sent_at = time.monotonic()
            try:
                resp = chat(self.port, self.key_file, timeout=self.timeout)
                ok = resp.status_code == 200
                if not ok:
                    self.failed.append(f"HTTP {resp.status_code}")
            except requests.RequestException as exc:
                ok = False
                self.failed.append(type(exc).__name__)
            if not ok and self._failing_since is None:
                self._failing_since = sent_at
            elif ok and self._failing_since is not None:
                self.longest_outage_s = max(self.longest_outage_s, sent_at - self._failing_since)
                self._failing_since = None
            self._stop.wait(self.interval)

    def __enter__(self) -> ChattingClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
