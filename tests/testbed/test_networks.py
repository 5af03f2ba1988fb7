"""Networks as they are: no network at all, a hub whose packets vanish, and what ``doctor`` sees (issue 16).

- only loopback (a network namespace, ``tests/support/offline.py``): ``download`` and ``install`` fail in seconds,
  exit 4, with one line per source naming the cause (DNS) in the user's language; ``plan`` still works;
- Hugging Face black-holed (a loopback port that accepts and never answers) and ModelScope the loopback hub:
  ``--source auto`` takes ModelScope within the race budget, not after the hub's read timeout;
- ``doctor`` reports each source's state, in its table and in ``--json``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.test_download_command import FILES, REPO, catalog_toml
from tests.support.hub import LoopbackHub
from tests.support.offline import Offline, netns_available
from tests.support.paths import REPO_ROOT

NETNS = pytest.mark.skipif(not netns_available(),
                           reason="unprivileged network namespaces (unshare --user --net) are unavailable here")
SCRUB = ("HF_", "QWENKIT_", "MODELSCOPE_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
         "all_proxy", "TZ", "LANG", "LC_")
DEFAULT_MODEL = "qwen3.5-4b"  # any shipped catalog id: the hubs cannot be reached either way


def _env(tmp_path: Path, lang: str, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    return {**base, "PYTHONPATH": str(REPO_ROOT), "QWENKIT_HOME": str(tmp_path / "home"), "QWENKIT_LANG": lang,
            "NO_COLOR": "1", "TZ": "UTC", **extra}


def _run(offline: Offline, argv: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    cmd, child_env = offline.wrap([sys.executable, "-m", "bootstrap", *argv], env)
    start = time.monotonic()
    proc = subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL, cwd=REPO_ROOT)
    return proc, time.monotonic() - start


def _errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith(("error:", "错误"))]


@NETNS
@pytest.mark.parametrize(("lang", "words"), [("en", ["cannot reach hf (huggingface.co): DNS lookup failed",
                                                     "cannot reach modelscope (modelscope.cn): DNS lookup failed"]),
                                            ("zh", ["无法连接下载源 hf（huggingface.co）：域名解析失败",
                                                    "无法连接下载源 modelscope（modelscope.cn）：域名解析失败"])])
@pytest.mark.parametrize("command", [["download", DEFAULT_MODEL], ["install", "--yes", "--no-service"]])
def test_no_network_fails_in_seconds_with_one_line(tmp_path: Path, lang: str, words: list[str],
                                                   command: list[str]) -> None:
    proc, seconds = _run(Offline(tmp_path, netns=True), command, _env(tmp_path, lang))
    assert proc.returncode == 4, proc.stderr
    assert seconds < 15, seconds  # interpreter start, imports and a DNS failure: never a connect or read timeout
    errors = _errors(proc.stderr)
    assert len(errors) == 1 and all(w in errors[0] for w in words), proc.stderr
    assert "HTTPSConnectionPool" not in proc.stderr and "Errno" not in proc.stderr
    assert "--bundle" in proc.stderr and "resume" not in proc.stderr and "续传" not in proc.stderr
    if command[0] == "install":  # the plan (made offline from the catalog's shape facts) comes before the error
        lines = proc.stderr.splitlines()
        planned = [i for i, ln in enumerate(lines) if ln.startswith(("Plan: ", "方案："))]
        assert planned and planned[0] < lines.index(errors[0]), proc.stderr


@NETNS
def test_plan_works_with_no_network(tmp_path: Path) -> None:
    proc, _ = _run(Offline(tmp_path, netns=True), ["plan"], _env(tmp_path, "en"))
    assert proc.returncode == 0, proc.stderr
    assert "llama-server" in proc.stdout + proc.stderr


@NETNS
def test_doctor_reports_each_source_blocked(tmp_path: Path) -> None:
    offline = Offline(tmp_path, netns=True)
    proc, seconds = _run(offline, ["doctor"], _env(tmp_path, "en"))
    assert proc.returncode == 0 and seconds < 15, proc.stderr
    assert "hf blocked (DNS lookup failed); modelscope blocked (DNS lookup failed)" in proc.stdout  # the table
    proc, _ = _run(offline, ["doctor", "--json"], _env(tmp_path, "en"))
    sources = json.loads(proc.stdout)["network"]["sources"]
    assert [(s["name"], s["host"], s["state"]) for s in sources] == [("hf", "huggingface.co", "dns"),
                                                                     ("modelscope", "modelscope.cn", "dns")]


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as srv:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"


def test_auto_takes_modelscope_when_hf_is_black_holed(tmp_path: Path, hub: LoopbackHub, black_hole: str) -> None:
    hub.create_repo(REPO, FILES)
    (tmp_path / "catalog.toml").write_text(catalog_toml(), encoding="utf-8")
    env = _env(tmp_path, "en", QWENKIT_HF_ENDPOINT=black_hole, QWENKIT_MODELSCOPE_ENDPOINT=hub.endpoint,
               QWENKIT_CATALOG=str(tmp_path / "catalog.toml"), NO_PROXY="127.0.0.1,localhost")
    offline = Offline(tmp_path, netns=False)  # the hub lives in this namespace; the guard still refuses the rest
    proc, seconds = _run(offline, ["download", "tiny"], env)
    assert proc.returncode == 0, proc.stderr
    # The race budget (3 s, named in the message below), not HF's 15 s read timeout (slack for a busy machine).
    assert seconds < 15, seconds
    assert "cannot reach hf" in proc.stderr and "no answer within 3 s" in proc.stderr
    placed = [ln for ln in (proc.stdout + proc.stderr).splitlines() if " sha256 " in ln]
    assert len(placed) == 2 and all(ln.endswith("from modelscope") for ln in placed), proc.stdout + proc.stderr
    assert offline.attempts() == []


def test_doctor_reports_a_black_holed_hub(tmp_path: Path, hub: LoopbackHub, black_hole: str) -> None:
    env = _env(tmp_path, "en", QWENKIT_HF_ENDPOINT=black_hole, QWENKIT_MODELSCOPE_ENDPOINT=hub.endpoint,
               NO_PROXY="127.0.0.1,localhost")
    proc, seconds = _run(Offline(tmp_path, netns=False), ["doctor", "--json"], env)
    assert proc.returncode == 0, proc.stderr
    states = [s["state"] for s in json.loads(proc.stdout)["network"]["sources"]]
    assert states == ["timeout", "reachable"] and seconds < 15
