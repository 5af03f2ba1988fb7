"""``qwenkit install --rpc``: a head that uses an RPC worker's memory for a model it cannot hold alone (issue 28).

The home is a real install (the test bed's engine and the loopback hub). Its plan is made for a machine whose RAM
the ``--hardware`` profile states: 150 MiB past the planner's reserve, too little for the generated 146 MiB llama
(``install`` alone is exit 3). The worker is ``qwenkit team worker-start`` on another host of the LAN of network
namespaces, reached from the head through a tunnel on its loopback, as over ``ssh -L``. With ``--rpc`` the plan
counts the worker's memory (``--list-devices --rpc``), sends to it only the layers the head cannot hold, the start
script carries ``--rpc``, a real chat answers, and ``status`` names the worker; when the worker dies, ``status``
names it as the reason. A rerun while the server holds the worker uses the worker's recorded memory (asking
it again would wait for the server to let go). ``plan --rpc`` previews the plan the install then takes. A second
model added beside it makes the server a router whose preset keeps ``rpc`` in the default model's section only.
A worker that does not answer, one of another build (its HELLO's protocol version) and a public address are
refused by name, and the install that serves stays as it was.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from bootstrap.core.sizes import GIB, MIB
from tests.support import lan
from tests.support.chat_client import chat
from tests.support.install_bed import InstallBed, write_chat_model
from tests.support.llama import free_port
from tests.support.offline import netns_available
from tests.support.rpc_peers import other_build_worker, tunnel
from tests.support.tiny_gguf import write_model

RPC_PORT = 50052
HEAD_RAM = 150 * MIB  # what the plan may use: the model (146 MiB), its cache and buffers need more


@pytest.fixture
def office() -> Iterator[lan.Lan]:
    if not netns_available() or lan.missing_tools():
        pytest.skip("network namespaces or their tools are unavailable here")
    with lan.lan("worker") as net:
        yield net


def _state(bed: InstallBed) -> dict[str, Any]:
    return json.loads(bed.home.state_file.read_text(encoding="utf-8"))


def _small_head(bed: InstallBed, tmp_path: Path) -> Path:
    """This machine's ``doctor --json`` with RAM for which the planner's budget is ``HEAD_RAM`` (planner.budget_for:
    total less a 2 GiB reserve, less 0.5 GiB)."""
    doctor = bed.run("doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    doc = json.loads(doctor.stdout)
    total = int(2.5 * GIB) + HEAD_RAM
    doc["memory"] = {"total_bytes": total, "available_bytes": total}
    path = tmp_path / "small-head.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _chat(bed: InstallBed) -> requests.Response:
    return chat(_state(bed)["server"]["port"], bed.home.api_key_file, timeout=120, max_tokens=8)


def test_a_head_serves_a_model_larger_than_its_memory_with_a_worker(
        office: lan.Lan, make_bed: Callable[..., InstallBed], tmp_path: Path) -> None:
    model = write_model("llama", tmp_path / "big" / "tiny-chat-Q8_0.gguf", dtype="q8_0", n_layer=4, n_embd=1024,
                        n_head=8, n_head_kv=8, head_dim=128, n_ff=10240)
    bed = make_bed(model=model, server_args=("-c", "512", "-t", "1"))
    fresh = bed.run("install", "--yes", "--no-service", "--no-venv", "--rpc", "127.0.0.1:50052")
    assert fresh.returncode == 2 and "needs this PC's own install first" in fresh.stderr, fresh.stderr[-2000:]
    preview = bed.run("plan", "--rpc", "127.0.0.1:50052")  # the preview asks through the same engine
    assert preview.returncode == 2 and "needs this PC's own install first" in preview.stderr, preview.stderr
    first = bed.install("--no-venv")
    assert first.returncode == 0, first.stderr[-3000:]
    small = _small_head(bed, tmp_path)
    alone = bed.install("--no-venv", "--verify", "--hardware", str(small))  # plan again, for this memory
    assert alone.returncode == 3 and "does not fit" in alone.stderr, alone.stderr[-2000:]
    assert _chat(bed).status_code == 200  # refused before anything changed: the install still serves

    public = bed.install("--no-venv", "--rpc", "8.8.8.8:50052")
    assert public.returncode == 2 and "8.8.8.8 is not a private address" in public.stderr
    nobody = f"127.0.0.1:{free_port()}"
    silent = bed.install("--no-venv", "--hardware", str(small), "--rpc", nobody)
    assert silent.returncode == 4 and f"the RPC worker {nobody} does not answer" in silent.stderr, silent.stderr
    with other_build_worker(6) as port:
        older = bed.install("--no-venv", "--hardware", str(small), "--rpc", f"127.0.0.1:{port}")
    assert older.returncode == 6, older.stderr[-2000:]
    assert f"the RPC worker 127.0.0.1:{port} failed the handshake" in older.stderr
    assert "same engine build" in older.stderr
    assert _chat(bed).status_code == 200 and "--rpc" not in _state(bed)["server"]["plan_args"]

    worker = office.hosts["worker"]
    env = {**bed.env(), "HOME": str(tmp_path / "worker-user")}

    def on_worker(*args: str) -> subprocess.CompletedProcess[str]:
        return worker.run([sys.executable, "-m", "bootstrap", "team", *args], check=False, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[2], timeout=120)

    started = on_worker("worker-start", "--host", worker.address, "--port", str(RPC_PORT), "--accept-rpc-risk")
    assert started.returncode == 0, started.stderr
    try:
        with tunnel(worker, worker.address, RPC_PORT) as port:
            endpoint = f"127.0.0.1:{port}"
            preview = bed.run("plan", "--hardware", str(small), "--rpc", endpoint)  # what install --rpc will do
            assert preview.returncode == 0, preview.stderr[-2000:]
            assert f"RPC workers: RPC0 at {endpoint}" in preview.stderr
            assert "on this PC and its RPC workers" in preview.stdout
            assert re.search(r"RPC workers 0\.\d of [\d.]+ GiB usable, RAM 0\.\d of 0\.1 GiB usable", preview.stdout)
            planned = preview.stdout.strip().splitlines()[-1].split()
            assert planned[planned.index("--rpc") + 1] == endpoint
            head = bed.install("--no-venv", "--hardware", str(small), "--rpc", endpoint)
            assert head.returncode == 0, head.stderr[-3000:]
            assert f"RPC workers: RPC0 at {endpoint}" in head.stderr
            assert "on this PC and its RPC workers" in head.stderr
            assert re.search(r"memory +RPC workers 0\.\d of [\d.]+ GiB, RAM 0\.\d of 0\.1 GiB", head.stderr)
            state = _state(bed)
            assert state["request"]["rpc"] == [endpoint]
            args = state["server"]["args"]
            assert args[args.index("--rpc") + 1] == endpoint
            layers = int(args[args.index("-ngl") + 1])
            assert 0 < layers < 5  # some layers (of 4 blocks and the output) here, the rest on the worker
            assert planned[planned.index("-ngl") + 1] == str(layers)  # as the preview said
            assert args[args.index("--cache-ram") + 1] == "0"
            assert f"--rpc {endpoint}" in bed.home.start_script("Linux").read_text(encoding="utf-8").replace(
                "'", "").replace('"', "")
            answered = _chat(bed)
            assert answered.status_code == 200 and answered.json()["usage"]["completion_tokens"] > 0
            log = (bed.home.team_dir / "logs" / "rpc-worker.log").read_text(errors="replace")
            assert "Accepted client connection" in log
            status = bed.run("status")
            assert status.returncode == 0, status.stderr
            assert f"RPC worker {endpoint}: answers" in status.stdout

            # A change while the server holds the worker (one head at a time): the worker is not asked again, its
            # recorded memory is used, and the new server takes the worker over.
            assert [d["endpoint"] for d in state["server"]["rpc_devices"]] == [endpoint]
            held = bed.run("plan", "--hardware", str(small), "--rpc", endpoint)
            assert held.returncode == 0 and f"RPC worker {endpoint} serves this PC's running server" in held.stderr
            again = bed.install("--no-venv", "--verify", "--hardware", str(small))
            assert again.returncode == 0, again.stderr[-3000:]
            assert f"RPC worker {endpoint} serves this PC's running server" in again.stderr
            assert _chat(bed).status_code == 200
            same = bed.install("--no-venv", "--hardware", str(small))  # a rerun keeps the workers
            assert same.returncode == 0, same.stderr[-2000:]
            assert _state(bed)["request"]["rpc"] == [endpoint]

            # A second model beside it: the router's preset keeps the workers in the default model's section only
            # (the added model is planned for this PC alone), and both answer through the one endpoint.
            second = write_chat_model(tmp_path / "second" / "tiny-second-Q8_0.gguf", seed=1)
            added = bed.install("--no-venv", str(second))
            assert added.returncode == 0, added.stderr[-3000:]
            sections = re.split(r"^\[(.+)\]$", (bed.home.root / "models.ini").read_text(encoding="utf-8"),
                                flags=re.MULTILINE)
            preset = dict(zip(sections[1::2], sections[2::2], strict=True))
            assert set(preset) == {"tiny-chat", "tiny-second-Q8_0"}
            assert f"rpc = {endpoint}" in preset["tiny-chat"] and "cache-ram = 0" in preset["tiny-chat"]
            assert "rpc" not in preset["tiny-second-Q8_0"]
            served_on = _state(bed)["server"]["port"]
            for name in preset:
                answer = chat(served_on, bed.home.api_key_file, timeout=120, max_tokens=8, model=name)
                assert answer.status_code == 200, (name, answer.text[:300])
            status = bed.run("status")
            assert status.returncode == 0 and f"RPC worker {endpoint}: answers" in status.stdout, status.stderr

            assert on_worker("worker-stop").returncode == 0  # the worker dies: its head goes down with it
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                status = bed.run("status")
                if status.returncode != 0:
                    break
                time.sleep(1)
            assert status.returncode == 6, status.stdout + status.stderr
            assert f"RPC worker {endpoint}: does not answer" in status.stdout
            assert f"RPC worker {endpoint}: does not answer; the server cannot run without it" in status.stderr
            assert "qwenkit team worker-start" in status.stderr
            doc = json.loads(bed.run("status", "--json").stdout)
            assert doc["rpc_workers"] == [{"endpoint": endpoint, "answers": False}]
    finally:
        on_worker("worker-stop")
