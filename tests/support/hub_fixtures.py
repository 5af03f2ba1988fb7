"""pytest fixtures for the loopback hub, and a runner for SDK snippets in a subprocess.

The SDKs read their endpoint and cache variables at import time, so each SDK check runs in a fresh
interpreter with an environment that points only at the loopback hub (no proxies, no tokens, no
telemetry), which also keeps a misbehaving SDK from touching the network.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.hub import LoopbackHub

REPO_ROOT = Path(__file__).resolve().parents[2]

# Variables that could send an SDK elsewhere or change what it does; never inherited by snippets.
_SCRUB_PREFIXES = ("HF_", "HUGGINGFACE_", "MODELSCOPE_", "QWENKIT_")
_SCRUB_NAMES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}


def seeded_bytes(n: int, seed: int) -> bytes:
    """Deterministic incompressible test content."""
    return random.Random(seed).randbytes(n)


def sdk_env(hub: LoopbackHub, home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment that points huggingface_hub and modelscope at ``hub`` with caches under ``home``."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB_NAMES and not k.startswith(_SCRUB_PREFIXES)}
    env.update(
        {
            "HF_ENDPOINT": hub.endpoint,
            "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "HF_HOME": str(home / "hf"),
            "MODELSCOPE_ENDPOINT": hub.endpoint,
            "MODELSCOPE_CACHE": str(home / "modelscope"),
            "MODELSCOPE_DOWNLOAD_INTRA_CLOUD": "false",
            "DO_NOT_TRACK": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


def run_python(
    code: str, env: Mapping[str, str], *, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a snippet in a fresh interpreter (bounded by ``timeout``)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=dict(env),
        cwd=str(cwd or REPO_ROOT),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def last_json(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON document a snippet printed as its last stdout line (fails with the snippet's stderr)."""
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        raise AssertionError(
            f"snippet failed (rc={proc.returncode})\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-8000:]}"
        )
    return json.loads(lines[-1])


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[LoopbackHub]:
    """A started loopback hub whose store lives in this test's tmp dir."""
    with LoopbackHub(tmp_path / "hub") as h:
        yield h


@pytest.fixture
def sdk_run(hub: LoopbackHub, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``sdk_run(code, env=None, timeout=120)`` runs a snippet with SDK variables aimed at ``hub``."""
    home = tmp_path / "sdk-home"
    home.mkdir(exist_ok=True)

    def run(
        code: str, *, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return run_python(code, sdk_env(hub, home, env), timeout=timeout, cwd=tmp_path)

    return run
