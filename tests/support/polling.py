"""Waiting for a condition a real process brings about in its own time (a server's save, a model's state)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float, what: str, interval: float = 0.5) -> T:
    """``check()``'s first truthy value within ``timeout`` seconds; an AssertionError naming ``what`` after it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")
