"""A member whose model sleeps after its keep-alive (``install --keep-alive``, llama-server's
``--sleep-idle-seconds``) is described without waking it: ``team status`` read its ``/slots``, a task that loads
the model again and restarts its idle time, so a team's members never gave their memory back."""

from __future__ import annotations

import time
from pathlib import Path

import requests

from bootstrap.team.members import probe
from tests.support.llama import LlamaServer
from tests.support.tiny_gguf import write_model


def _sleeping(server: LlamaServer) -> bool:
    with requests.Session() as session:
        session.trust_env = False
        doc = session.get(f"{server.base_url}/props", headers={"Authorization": "Bearer k"}, timeout=30).json()
    return doc.get("is_sleeping") is True


def test_keep_alive_asleep_member_is_described_and_stays_asleep(llama_server: Path, tmp_path: Path) -> None:
    model = write_model("llama", tmp_path / "m.gguf", dtype="q8_0", n_layer=2)
    with LlamaServer(llama_server, model, ["-c", "256", "-np", "2", "-t", "2", "--sleep-idle-seconds", "1"],
                     api_key="k") as server:
        deadline = time.monotonic() + 60
        while not _sleeping(server) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _sleeping(server)
        state = probe(server.base_url, "k")
        assert state.state == "ready" and state.slots == 2 and state.busy == 0
        assert _sleeping(server)  # still asleep: nothing was asked that loads it
