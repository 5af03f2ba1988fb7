"""Hubs that cannot answer: both hub endpoints on a closed loopback port, proxies and tokens cleared, so a test that
should make no request fails loudly if it makes one (a connection refused at once, never a real network call)."""

from __future__ import annotations

import socket

import pytest

_CLEARED = ("HF_ENDPOINT", "MODELSCOPE_ENDPOINT", "HF_TOKEN", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
            "http_proxy", "ALL_PROXY", "all_proxy")


def closed_port_url() -> str:
    """``http://127.0.0.1:PORT`` for a port that was free a moment ago (nothing listens there)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def point_hubs_nowhere(monkeypatch: pytest.MonkeyPatch, *also_cleared: str) -> None:
    """Both hubs at a closed port, no proxy, no token; ``also_cleared``: more variables to unset (e.g. an override
    of the shipped catalog or pins)."""
    for name in (*_CLEARED, *also_cleared):
        monkeypatch.delenv(name, raising=False)
    dead = closed_port_url()
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", dead)
    monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", dead)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
