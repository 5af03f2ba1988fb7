"""The install's network check is honest before its question (issue 24): with no source answering, the check table
says so — and that the way out is an offline bundle or a proxy — before ``Continue?``, not "network ok".

Through the real CLI on a terminal (a pty: the question is asked only there), answering "n", so nothing is
downloaded and the check is all that is seen. The hubs are a closed loopback port (connection refused, as a machine
without a route or a proxy meets them) or the loopback hub (reachable); no real network is touched. The probe is
bounded (``detect.probes.network.REACH_BUDGET``); how long it adds to an install: ``scripts/bench_network.py``.
"""

from __future__ import annotations

import os
import pty
import re
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT

_SCRUB = ("HF_", "QWENKIT_", "MODELSCOPE_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
          "all_proxy")


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def install_answering_no(home: Path, endpoint: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``qwenkit install`` (the shipped catalog) on a terminal, "n" typed ahead; stdout and stderr as one stream,
    in the order written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.update({"QWENKIT_HF_ENDPOINT": endpoint, "QWENKIT_MODELSCOPE_ENDPOINT": endpoint,
                "QWENKIT_ENGINE_URL": closed_port_url(), "QWENKIT_LANG": "en", "NO_COLOR": "1",
                "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(REPO_ROOT)})
    master, slave = pty.openpty()
    try:
        os.write(master, b"n\n")
        return subprocess.run([sys.executable, "-m", "bootstrap", "install", "--home", str(home), "--no-service",
                               "--no-venv", *extra], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env=env, cwd=str(REPO_ROOT), text=True, timeout=120, check=False)
    finally:
        os.close(slave)
        os.close(master)


def network_row(out: str) -> tuple[int, str]:
    """Where the check table's network row starts, and its text up to the next row (it wraps)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("network"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return out.index(lines[start]), " ".join(line.strip() for line in lines[start:end])


def test_no_source_answering_is_said_before_the_question(tmp_path: Path) -> None:
    proc = install_answering_no(tmp_path / "home", closed_port_url())
    out = proc.stdout
    assert proc.returncode == 0 and "Cancelled; nothing was changed." in out, out[-3000:]
    at, row = network_row(out)
    assert "network  WARN" in row and "network  ok" not in out, row
    assert "hf blocked (connection refused)" in row and "modelscope blocked (connection refused)" in row, row
    assert "No download source answers from here: install from an offline bundle (--bundle DIR" in row, row
    assert "--source modelscope" not in row  # what just failed is no way out
    assert at < out.index("Continue? [Y/n]")
    assert not (tmp_path / "home" / "models").exists()


def test_reachable_sources_are_named_with_their_time(tmp_path: Path) -> None:
    """A passing network row is counted on the short screen and shown, sources and times, with ``--verbose``."""
    with LoopbackHub(tmp_path / "hub") as hub:
        short = install_answering_no(tmp_path / "home", hub.endpoint)
        proc = install_answering_no(tmp_path / "home", hub.endpoint, "--verbose")
    assert short.returncode == 0 and "network" not in short.stdout, short.stdout[-3000:]
    assert re.search(r"(The other|All) \d+ checks (of this machine )?passed", short.stdout), short.stdout[-3000:]
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:]
    at, row = network_row(out)
    assert "network  ok" in row and "hf reachable (" in row and "modelscope reachable (" in row, row
    assert at < out.index("Continue? [Y/n]")
