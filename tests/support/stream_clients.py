"""Streaming chat clients, run as a program on a host of the LAN (tests/support/lan.py) or here.

    python tests/support/stream_clients.py URL KEY --clients N --seconds S [--max-tokens T]

Each of N threads sends streaming ``/v1/chat/completions`` requests one after another for S seconds (a request
that has begun is finished). One JSON line per request on stdout, as it ends: ``start``/``end`` (seconds since the
program began), ``first`` (seconds to the first content token, or null), ``tokens`` (content events), ``reads``
(the socket reads that brought them: as many as the tokens when the stream is passed through unbuffered),
``status`` and ``error`` (null, or what went wrong: before or after the first token). Used by the team gateway's
e2e test and ``scripts/bench_team.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Any

import requests

PROMPT = "Write a short story about a lighthouse keeper and a storm."
_lock = threading.Lock()


def one_request(session: requests.Session, url: str, key: str, max_tokens: int, began: float) -> dict[str, Any]:
    """One streamed chat; what happened to it."""
    start = time.monotonic()
    record: dict[str, Any] = {"start": round(start - began, 3), "first": None, "tokens": 0, "reads": 0,
                              "status": None, "error": None}
    body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": max_tokens, "stream": True,
            "temperature": 0.8}
    try:
        with session.post(f"{url}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"},
                          stream=True, timeout=(5, 120)) as resp:
            record["status"] = resp.status_code
            if resp.status_code != 200:
                record["error"] = f"HTTP {resp.status_code}"
                return record
            pending = b""
            for chunk in resp.raw.stream(65536, decode_content=True):
                record["reads"] += 1
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                        continue
                    event = json.loads(line[6:])
                    delta = (event.get("choices") or [{}])[0].get("delta", {})
                    if delta.get("content"):
                        record["tokens"] += 1
                        if record["first"] is None:
                            record["first"] = round(time.monotonic() - start, 3)
    except Exception as exc:  # requests' errors, urllib3's for a stream cut mid-way (ProtocolError), bad JSON
        record["error"] = type(exc).__name__
    finally:
        record["end"] = round(time.monotonic() - began, 3)
    if record["error"] is None and record["tokens"] == 0:
        record["error"] = "no tokens"
    return record


def _client(url: str, key: str, max_tokens: int, began: float, until: float) -> None:
    with requests.Session() as session:
        session.trust_env = False
        # A connection per request: a kept-alive socket the server has closed fails the next request with
        # "Remote end closed connection without response", which is the client's doing, not the server's.
        session.headers["Connection"] = "close"
        while time.monotonic() < until:
            record = one_request(session, url, key, max_tokens, began)
            with _lock:
                print(json.dumps(record), flush=True)
            if record["error"]:
                time.sleep(0.2)  # a refused connection must not spin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url", help="the OpenAI base URL, ending in /v1")
    parser.add_argument("key")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--max-tokens", type=int, default=48)
    args = parser.parse_args(argv)
    began = time.monotonic()
    until = began + args.seconds
    threads = [threading.Thread(target=_client, args=(args.url.rstrip("/"), args.key, args.max_tokens, began, until))
               for _ in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
