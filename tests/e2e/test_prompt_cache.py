"""The prompt cache across restarts, through the real CLI and real servers (docs/prompt-cache.md).

One install of the tiny Qwen chat model (hybrid recurrent, ``qwen35moe``, with the kit's derived template) by
``qwenkit install``, shared by the tests in order; each sends the real Claude Code's recorded first request
(``tests/data/agent_prefix``, ~12.9k tokens) and reads how much of it the server reused from the server's own answer
(Anthropic ``usage.cache_read_input_tokens``). Selected with ``-k prompt_cache``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.place.api_key import read_api_key
from bootstrap.plan.prompt_cache import BUDGET_FILE, cache_key
from bootstrap.record.state import launch_spec, load_state
from bootstrap.register import prompt_cache, slot_files
from tests.support.agent_prefix import load_claude_first_request
from tests.support.hub import LoopbackHub
from tests.support.install_bed import QWEN_MODEL_FILE, QWEN_MODEL_REPO, InstallBed, qwen_catalog_text, serve_engine
from tests.support.llama import free_port
from tests.support.polling import wait_for
from tests.support.qwen_chat_model import qwen_chat_model

SERVER_ARGS = ("-c", "32768", "-np", "1", "-t", "2")
SAVE_INTERVAL_S = "3"  # the supervisor's periodic save, short for the tests (300 s in the product)


@dataclass
class CacheBed:
    bed: InstallBed
    port: int

    @property
    def home(self) -> Home:
        return self.bed.home

    def run(self, *argv: str, timeout: float = 600) -> Any:
        proc = self.bed.run(*argv, timeout=timeout)
        assert proc.returncode == 0, (argv, proc.stdout[-2000:], proc.stderr[-4000:])
        return proc

    @property
    def folder(self) -> Path:
        spec = launch_spec(load_state(self.home), self.home)
        assert spec.prompt_cache_dir is not None
        return spec.prompt_cache_dir

    def ask(self) -> dict[str, Any]:
        """The recorded request (only ``stream`` off, to read the usage in one answer): the server's usage."""
        return self.send({**load_claude_first_request(), "stream": False})

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One request to ``/v1/messages``, not streamed: the server's own tokens read and reused."""
        resp = requests.post(f"http://127.0.0.1:{self.port}/v1/messages", json=body, timeout=900,
                             headers={"Authorization": f"Bearer {read_api_key(self.home)}"})
        assert resp.status_code == 200, resp.text[:2000]
        usage = resp.json()["usage"]
        return {"read": usage["input_tokens"], "reused": usage.get("cache_read_input_tokens", 0)}

    def server_pid(self) -> int:
        """The home's llama-server process (the supervisor's child)."""
        return next(p.pid for p in psutil.process_iter(["name", "cmdline"]) if p.info["name"] == "llama-server"
                    and str(self.home.root) in " ".join(p.info["cmdline"] or []))

    def server_log(self) -> str:
        return (self.home.logs_dir / "server.log").read_text(encoding="utf-8", errors="replace")

    def long_reads(self) -> int:
        """How many times a server of this home read 10,000 tokens or more of a prompt (its own timing lines)."""
        return len(re.findall(r"prompt eval time = +[\d.]+ ms / +\d{5,} tokens", self.server_log()))

    def kit_log(self) -> str:
        path = self.home.logs_dir / "prompt-cache.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.fixture(scope="module")
def cache_bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path) -> Iterator[CacheBed]:
    root = tmp_path_factory.mktemp("prompt-cache")
    with LoopbackHub(root / "hub") as hub:
        revision = hub.create_repo(QWEN_MODEL_REPO, {QWEN_MODEL_FILE: qwen_chat_model()})
        bed = InstallBed(hub, Home(root / "home"), root / "catalog.toml", serve_engine(hub, engine_asset),
                         extra_env={"QWENKIT_CACHE_SAVE_INTERVAL": SAVE_INTERVAL_S})
        bed.catalog.write_text(qwen_catalog_text(revision, server_args=SERVER_ARGS), encoding="utf-8")
        port = free_port()
        proc = bed.install("--port", str(port), "--no-venv", timeout=900)
        assert proc.returncode == 0, proc.stderr[-4000:]
        cache = CacheBed(bed, port)
        try:
            yield cache
        finally:
            bed.run("service", "stop")


def test_prompt_cache_used_after_service_restart(cache_bed: CacheBed) -> None:
    cold = cache_bed.ask()
    assert cold["read"] > 10_000, cold  # the whole prefix, read once
    warm = cache_bed.ask()
    assert warm["reused"] > 10_000, warm
    cache_bed.run("service", "restart")
    saved, _bad = slot_files.listed(cache_bed.folder)
    assert [f.slot for f in saved] == [0]
    after = cache_bed.ask()
    assert after["reused"] >= len(saved[0].tokens) - 1 > 10_000, (after, len(saved[0].tokens))
    assert after["read"] < 100, after
    status = json.loads(cache_bed.run("status", "--json").stdout)
    assert status["prompt_cache"]["files"] == 1 and status["prompt_cache"]["tokens"] == len(saved[0].tokens)
    assert "Prompt cache: 1 saved slot(s)" in cache_bed.run("status").stdout


def test_prompt_cache_used_after_stop_and_start(cache_bed: CacheBed) -> None:
    cache_bed.ask()
    cache_bed.run("service", "stop")
    cache_bed.run("service", "start")
    after = cache_bed.ask()
    assert after["reused"] > 10_000 and after["read"] < 100, after
    assert "prompt cache: slot 0 restored" in cache_bed.kit_log()
    # the stop after a restore keeps the saved prefix as it is: no trim that reads the whole prefix again (a
    # restored slot has no checkpoint to trim from)
    long_reads = cache_bed.long_reads()
    cache_bed.run("service", "restart")
    assert cache_bed.long_reads() == long_reads
    assert cache_bed.ask()["reused"] > 10_000


def test_prompt_cache_used_after_supervisor_restart(cache_bed: CacheBed) -> None:
    """The server dies (SIGKILL: nothing is saved at that moment); the supervisor starts it again and restores
    what its periodic save kept."""
    cache_bed.ask()
    folder = cache_bed.folder
    before = (folder / slot_files.file_name(0)).stat().st_mtime
    wait_for(lambda: (folder / slot_files.file_name(0)).stat().st_mtime > before, 60, "the periodic save")
    restored_before = cache_bed.server_log().count("prompt cache: slot 0 restored")
    os.kill(cache_bed.server_pid(), signal.SIGKILL)
    wait_for(lambda: cache_bed.server_log().count("prompt cache: slot 0 restored") > restored_before, 120,
              "the supervisor's restart and restore")
    after = cache_bed.ask()
    assert after["reused"] > 10_000 and after["read"] < 100, after


def test_prompt_cache_used_after_upgrade_switch_over(cache_bed: CacheBed) -> None:
    """An upgrade that keeps model, engine and template (here: a new context) keeps the cache; its new server is
    restored before the install says it is done."""
    cache_bed.ask()
    old = cache_bed.server_pid()
    proc = cache_bed.bed.install("--port", str(cache_bed.port), "--no-venv", "--ctx", "24576", timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert cache_bed.server_pid() != old  # a new server answers
    assert "24576" in psutil.Process(cache_bed.server_pid()).cmdline()
    after = cache_bed.ask()
    assert after["reused"] > 10_000 and after["read"] < 100, after


def test_prompt_cache_corrupt_file_is_ignored_with_a_log_line(cache_bed: CacheBed) -> None:
    cache_bed.ask()
    cache_bed.run("service", "stop")
    path = cache_bed.folder / slot_files.file_name(0)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a save cut short (a full disk, a crash)
    cache_bed.run("service", "start")  # starts and is ready
    assert "slot0.slot ignored" in cache_bed.kit_log() + cache_bed.server_log()
    after = cache_bed.ask()
    assert after["reused"] == 0 and after["read"] > 10_000, after  # read again, never answered from a bad file
    path.write_bytes(b"not a slot file at all, longer than a header")
    cache_bed.run("service", "restart")  # the restart saves a good one again first
    assert slot_files.read_tokens(path)


def test_prompt_cache_of_another_key_is_never_used_and_the_budget_holds(cache_bed: CacheBed) -> None:
    """A slot file in the folder of another model revision, engine build or template (what an upgrade of any of
    them leaves) is not restored, and the next save removes it; a budget smaller than a file keeps none."""
    folder = cache_bed.folder
    good = folder / slot_files.file_name(0)
    cache_bed.run("service", "stop")  # saves: the file is whole
    assert good.exists()
    stale = folder.parent / cache_key("0" * 64, folder.name, "")
    stale.mkdir()
    (stale / good.name).write_bytes(good.read_bytes())
    good.unlink()
    cache_bed.run("service", "start")
    after = cache_bed.ask()
    assert after["reused"] == 0, after  # the other key's file was not used
    cache_bed.run("service", "restart")  # saved before the stop: the other key's folder goes
    assert not stale.exists()
    assert good.exists(), cache_bed.kit_log()[-2000:]
    assert good.stat().st_size > 1 << 20  # ~2 MB for the recorded prefix on the tiny model
    (folder.parent / BUDGET_FILE).write_text(json.dumps({"mib": 1}), encoding="utf-8")
    cache_bed.run("service", "restart")
    assert sum(p.stat().st_size for p in folder.parent.rglob("*.slot*")) <= 1 << 20
    assert "over the budget" in cache_bed.kit_log()


def test_prompt_cache_a_busy_slot_is_waited_for_before_a_stop(cache_bed: CacheBed) -> None:
    """The save before a stop waits for a slot that is busy for a moment (an answer ending, another saver's trim:
    the supervisor's minute), instead of skipping it: the stop would then cut that other save short and leave no
    file at all (seen once in a combined run of this file). Called in-process, so the answer is surely running."""
    cache_bed.run("service", "start")
    folder = cache_bed.folder
    good = folder / slot_files.file_name(0)
    system = load_claude_first_request()["system"]
    text = system if isinstance(system, str) else "\n".join(str(block.get("text", "")) for block in system)
    body = {"messages": [{"role": "system", "content": text}, {"role": "user", "content": "Say hello."}],
            "max_tokens": 600, "ignore_eos": True}  # seconds of answer: within the wait
    headers = {"Authorization": f"Bearer {read_api_key(cache_bed.home)}"}
    answered: list[int] = []

    def answer() -> None:
        resp = requests.post(f"http://127.0.0.1:{cache_bed.port}/v1/chat/completions", json=body, timeout=900,
                             headers=headers)
        answered.append(resp.status_code)

    worker = threading.Thread(target=answer)
    worker.start()
    try:
        wait_for(lambda: any(s.get("is_processing") and s.get("next_token", [{}])[0].get("n_decoded", 0) > 0
                              for s in requests.get(f"http://127.0.0.1:{cache_bed.port}/slots", headers=headers,
                                                    timeout=30).json()), 300, "the answer to stream")
        good.unlink(missing_ok=True)
        prompt_cache.save_before_stop(launch_spec(load_state(cache_bed.home), cache_bed.home))
        saved = good.exists()  # by this save, or by the supervisor's minute once the answer ended: either is whole
    finally:
        worker.join(900)
    assert answered == [200]
    assert saved, cache_bed.kit_log()[-2000:]
    assert len(slot_files.read_tokens(good)) >= prompt_cache.MIN_TOKENS
