"""A model larger than the head's memory, served with one RPC worker on another "machine" (issue 28, part 2).

Hosts on the LAN of network namespaces (tests/support/lan.py): ``worker`` runs the test bed's ``ggml-rpc-server``
bound to its LAN address (never 0.0.0.0), ``head`` runs llama-server with ``--rpc worker:port -ngl 99`` under a
data-memory cap (``prlimit --data``, which counts its private allocations; ``--load-mode none``, no mmap, so the
weights are such allocations). The model is a generated llama of about 140 MB; the cap is what the head uses with
the worker holding the layers, plus half the model: the head alone cannot load the model under it, the head with
its worker answers a chat, and the worker's tensor cache (``-c``) holds the layers after the first load. Then the
worker dies: the head stops with upstream's "Remote RPC server crashed" (llama.cpp has no fail-over here), so
nothing is left serving wrong answers.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support import lan, testbed
from tests.support.offline import netns_available
from tests.support.team_bed import PORT, ServerExited, member_url, wait_ready
from tests.support.tiny_gguf import write_model

pytestmark = [
    pytest.mark.skipif(not netns_available(), reason="unprivileged network namespaces are unavailable here"),
    pytest.mark.skipif(bool(lan.missing_tools()), reason=f"needs {', '.join(lan.missing_tools())}"),
    pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit"),
]

KEY = "head-key-0123456789abcdef"
# The worker caches weight tensors larger than 10 MiB (b11434 ggml-rpc.cpp HASH_THRESHOLD, fixed in this build):
# the generated model's feed-forward matrices are 1024 x 10240 in Q8_0, 11.1 MB each.
CACHE_FROM = 10 << 20
RPC_PORT = 50052
HEAD_ARGS = ("-c", "256", "-np", "1", "-t", "1", "--load-mode", "none", "--no-warmup")  # none: no mmap
CHAT = """
import json, sys, urllib.request as u
req = u.Request(sys.argv[1] + "/v1/chat/completions", method="POST", headers={"Authorization": "Bearer " + sys.argv[2],
    "Content-Type": "application/json"}, data=json.dumps({"messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 8}).encode())
try:
    with u.build_opener(u.ProxyHandler({})).open(req, timeout=120) as resp:
        print(json.dumps({"status": resp.status, "usage": json.loads(resp.read())["usage"]}))
except Exception as exc:
    print(json.dumps({"status": getattr(exc, "code", None), "error": type(exc).__name__}))
"""


def _server(proc: subprocess.Popen[bytes], name: str = "llama-server") -> psutil.Process:
    """The ``name`` process behind ``proc`` (``nsenter`` forks it; ``prlimit`` execs it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        parent = psutil.Process(proc.pid)
        for candidate in [parent, *parent.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                if candidate.name() == name:
                    return candidate
        time.sleep(0.1)
    raise AssertionError(f"no {name} under pid {proc.pid}")


def _data_kib(server: psutil.Process) -> int:
    """VmData: the private writable memory RLIMIT_DATA counts (proc(5))."""
    for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
        if line.startswith("VmData:"):
            return int(line.split()[1])
    raise AssertionError("no VmData")


def _head(host: lan.Host, binary: Path, model: Path, log: Path, *extra: str,
          cap: int | None = None) -> subprocess.Popen[bytes]:
    limit = ["prlimit", f"--data={cap}:{cap}", "--"] if cap else []
    with log.open("ab") as sink:
        return host.popen([*limit, str(binary), "-m", str(model), "--host", host.address, "--port", str(PORT),
                           "--api-key", KEY, *HEAD_ARGS, *extra], stdout=sink, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL)


def _chat(client: lan.Host, url: str) -> dict[str, Any]:
    done = client.run([sys.executable, "-I", "-c", CHAT, url, KEY], text=True, timeout=180)
    return dict(json.loads(done.stdout))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
    proc.kill()
    proc.wait(10)


def _ended_or_never_ready(proc: subprocess.Popen[bytes], client: lan.Host, url: str, seconds: float) -> bool:
    """True when the head exits, or has not answered /health within ``seconds``."""
    try:
        wait_ready(client, url, timeout=seconds, server=proc)
    except (TimeoutError, ServerExited):
        return True
    return False


@pytest.fixture
def office() -> Iterator[lan.Lan]:
    with lan.lan("head", "worker", "client") as net:
        yield net


def test_a_head_serves_a_model_larger_than_its_memory_with_one_rpc_worker(office: lan.Lan, engine_bin_dir: Path,
                                                                          tmp_path: Path) -> None:
    rpc_server = engine_bin_dir / testbed.RPC_TARGET
    assert rpc_server.is_file(), f"the test bed's engine has no {testbed.RPC_TARGET}"
    binary = engine_bin_dir / "llama-server"
    head, worker, client = office.hosts["head"], office.hosts["worker"], office.hosts["client"]
    model = write_model("llama", tmp_path / "big-q8_0.gguf", dtype="q8_0", n_layer=4, n_embd=1024, n_head=8,
                        n_head_kv=8, head_dim=128, n_ff=10240)
    size_kib = model.stat().st_size >> 10
    assert size_kib > 100 << 10
    with (tmp_path / "worker.log").open("ab") as sink:
        worker_proc = worker.popen([str(rpc_server), "-H", worker.address, "-p", str(RPC_PORT), "-t", "1", "-c"],
                                   stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={"HOME": str(tmp_path / "worker-home"), "PATH": "/usr/bin:/bin"})
    time.sleep(1)
    rpc = ("--rpc", f"{worker.address}:{RPC_PORT}", "-ngl", "99")
    url = member_url(head)
    # 1. What the head needs with the worker holding the layers (no cap yet).
    probe = _head(head, binary, model, tmp_path / "probe.log", *rpc)
    wait_ready(client, f"{url}/health", timeout=180, server=probe)
    assert _chat(client, url)["status"] == 200
    with_worker_kib = _data_kib(_server(probe))
    _stop(probe)
    cache = tmp_path / "worker-home" / ".cache" / "llama.cpp" / "rpc"
    cached = [f.stat().st_size for f in cache.iterdir()]
    assert len(cached) == 4 * 3 and all(size > CACHE_FROM for size in cached)  # each layer's three FFN matrices
    cached_kib = sum(cached) >> 10
    cap_kib = with_worker_kib + size_kib // 2
    print(f"model {size_kib} KiB; head with worker {with_worker_kib} KiB VmData; cap {cap_kib} KiB; "
          f"cached {cached_kib} KiB")
    # 2. Under that cap the head alone cannot hold the model.
    alone = _head(head, binary, model, tmp_path / "alone.log", cap=cap_kib << 10)
    assert _ended_or_never_ready(alone, client, f"{url}/health", 60), "the head alone loaded the model under the cap"
    _stop(alone)
    # 3. Under the same cap, with its worker, it answers.
    capped = _head(head, binary, model, tmp_path / "capped.log", *rpc, cap=cap_kib << 10)
    wait_ready(client, f"{url}/health", timeout=180, server=capped)
    reply = _chat(client, url)
    assert reply["status"] == 200 and reply["usage"]["completion_tokens"] > 0, reply
    assert _data_kib(_server(capped)) <= cap_kib
    worker_log = (tmp_path / "worker.log").read_text(errors="replace")
    assert "WARNING: Host" in worker_log  # upstream's warning: bound beyond 127.0.0.1, on the private LAN only
    # 4. The worker dies: the head stops (upstream: a worker crash takes the head down, no fail-over).
    _stop(worker_proc)
    after = _chat(client, url)
    assert after["status"] != 200, after
    capped.wait(30)
    assert "Remote RPC server crashed" in (tmp_path / "capped.log").read_text(errors="replace")
