"""The prompt cache across restarts for a sliding-window model, through the real CLI and real servers.

Gemma 3 270M (15 of its 18 layers sliding-window, ``n_swa`` 512) installed by ``qwenkit install`` from the loopback
hub: the plan gives it ``--swa-full`` (docs/prompt-cache.md: without it a restored SWA slot is never reused), the
start script passes it, and a prefix longer than the window is reused after ``service stop`` + ``service start``
and after the supervisor restarts a killed server. Tokens read and reused are the server's own (Anthropic
``usage``), never times. Selected with ``-k prompt_cache``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from bootstrap.core.home import Home
from bootstrap.record.state import launch_spec, load_state
from bootstrap.register import slot_files
from bootstrap.render.start_scripts import render_text
from tests.e2e.test_prompt_cache import CacheBed
from tests.support.agent_prefix import cut_request
from tests.support.bundle_bed import GEMMA_ID, GEMMA_REPO, gemma_catalog
from tests.support.hub import LoopbackHub
from tests.support.install_bed import (
    MODEL_FILE,
    MODEL_ID,
    MODEL_REPO,
    InstallBed,
    model_block,
    serve_engine,
    write_chat_model,
)
from tests.support.llama import free_port
from tests.support.testbed import GEMMA_FILE

PREFIX_CHARS = 5000  # ~1,300 Gemma tokens: past the 512-token window, read in ~10 s on two busy cores
SAVE_INTERVAL_S = "3"  # the supervisor's periodic save, short for the tests (60 s in the product)
WINDOW = 512  # Gemma 3 270M's n_swa (tests/plan/test_memory.py)


class SwaBed(CacheBed):
    """The Qwen prompt-cache bed's helpers (the home, ``run``, the server's log and pid, the cache folder) with
    the cut request Gemma reads in seconds."""

    def ask(self, model: str | None = None) -> dict[str, int]:
        """The cut recorded request, not streamed: the server's tokens read and reused."""
        body = cut_request(PREFIX_CHARS)
        if model is not None:
            body["model"] = model
        return self.send(body)


@pytest.fixture(scope="module")
def swa_bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path, gemma_gguf: Path) -> Iterator[SwaBed]:
    root = tmp_path_factory.mktemp("prompt-cache-swa")
    with LoopbackHub(root / "hub") as hub:
        gemma_rev = hub.create_repo(GEMMA_REPO, {GEMMA_FILE: gemma_gguf})
        chat_rev = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "src" / MODEL_FILE)})
        bed = InstallBed(hub, Home(root / "home"), root / "catalog.toml", serve_engine(hub, engine_asset),
                         extra_env={"QWENKIT_CACHE_SAVE_INTERVAL": SAVE_INTERVAL_S})
        bed.catalog.write_text(gemma_catalog(gemma_rev, model_block(chat_rev)), encoding="utf-8")
        port = free_port()
        proc = bed.install("--port", str(port), "--no-venv", timeout=900)
        assert proc.returncode == 0, proc.stderr[-4000:]
        swa = SwaBed(bed, port)
        try:
            yield swa
        finally:
            bed.run("service", "stop")


def test_prompt_cache_swa_model_is_started_with_swa_full(swa_bed: SwaBed) -> None:
    """The plan's choice, recorded and rendered: the start script (and a .bat rendered from the same record)
    passes --swa-full; the server runs with it."""
    plan = json.loads(swa_bed.run("plan", GEMMA_ID, "--json").stdout)
    assert plan["settings"]["swa_full"] is True and "--swa-full" in plan["args"]
    assert {r["topic"]: r["value"] for r in plan["reasons"]}["swa_full"] == "on"
    server = load_state(swa_bed.home).server
    assert "--swa-full" in server.plan_args and server.args.count("--swa-full") == 1
    assert "--swa-full" in swa_bed.home.run_sh.read_text(encoding="utf-8").split()
    spec = launch_spec(load_state(swa_bed.home), swa_bed.home)
    assert spec.server_args().count("--swa-full") == 1
    assert '  "--swa-full" ^' in render_text(replace(spec, system="Windows"), "bat").splitlines()
    assert "--swa-full" in psutil.Process(swa_bed.server_pid()).cmdline()
    assert "using full-size SWA cache" in swa_bed.server_log()


def test_prompt_cache_swa_prefix_reused_after_stop_and_start(swa_bed: SwaBed) -> None:
    cold = swa_bed.ask()
    assert cold["read"] >= 1_024 >= 2 * WINDOW, cold  # twice the window: the SWA layers alone could not keep it
    warm = swa_bed.ask()
    assert warm["reused"] >= cold["read"] - 4, warm
    swa_bed.run("service", "stop")
    saved, _bad = slot_files.listed(swa_bed.folder)
    assert [f.slot for f in saved] == [0] and len(saved[0].tokens) >= 1_024
    swa_bed.run("service", "start")
    after = swa_bed.ask()
    assert after["reused"] >= len(saved[0].tokens) - 1 and after["read"] < 50, (after, len(saved[0].tokens))


def test_prompt_cache_swa_prefix_reused_after_supervisor_restart(swa_bed: SwaBed) -> None:
    """The server dies (SIGKILL); the supervisor starts it again and restores what its periodic save kept."""
    swa_bed.ask()
    path = swa_bed.folder / slot_files.file_name(0)
    before = path.stat().st_mtime
    deadline = time.monotonic() + 60
    while path.stat().st_mtime <= before:
        assert time.monotonic() < deadline, "no periodic save"
        time.sleep(0.5)
    restored = swa_bed.server_log().count("prompt cache: slot 0 restored")
    os.kill(swa_bed.server_pid(), signal.SIGKILL)
    deadline = time.monotonic() + 120
    while swa_bed.server_log().count("prompt cache: slot 0 restored") <= restored:
        assert time.monotonic() < deadline, "the supervisor did not restart and restore"
        time.sleep(0.5)
    after = swa_bed.ask()
    assert after["reused"] >= 1_024 and after["read"] < 50, after


def test_prompt_cache_swa_router_preset_carries_swa_full(swa_bed: SwaBed) -> None:
    """A second model turns the install into a router: Gemma's models.ini section keeps --swa-full (llama.cpp's INI
    boolean), the tiny llama's (no SWA layer) gets none, and Gemma answers through the router with it."""
    swa_bed.run("install", MODEL_ID, "--yes", timeout=900)
    sections: dict[str, list[str]] = {}
    current = ""
    for line in swa_bed.home.root.joinpath("models.ini").read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = []
        elif current:
            sections[current].append(line.replace(" ", ""))
    assert "swa-full=true" in sections[GEMMA_ID], sections
    assert not any(line.startswith("swa-full") for line in sections[MODEL_ID]), sections
    answer = swa_bed.ask(GEMMA_ID)
    assert answer["read"] + answer["reused"] >= 1_024
    child = next(p for p in psutil.process_iter(["name", "cmdline"]) if p.info["name"] == "llama-server"
                 and GEMMA_FILE in " ".join(p.info["cmdline"] or []) and "--port" in (p.info["cmdline"] or []))
    assert "--swa-full" in child.cmdline()
