"""The prompt cache in router mode (several models), through the real CLI and real servers (docs/prompt-cache.md).

A router install by ``qwenkit install``: the tiny Qwen chat model (hybrid recurrent, ``qwen35moe``) as the default,
and a tiny llama chat model beside it (``install MODEL``). Each test sends the real Claude Code's recorded first
request (``tests/data/agent_prefix``) to the Qwen model and reads how much of it the server reused from the server's
own answer (``usage``), after the kit's own stop and start, and after a model was unloaded by the router and loaded
again. Selected with ``-k prompt_cache``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.place.api_key import read_api_key
from bootstrap.record.state import launch_spec, load_state
from bootstrap.register import slot_files
from tests.e2e.test_prompt_cache import CacheBed
from tests.support.agent_prefix import load_claude_first_request
from tests.support.hub import LoopbackHub
from tests.support.install_bed import (
    MODEL_FILE,
    MODEL_ID,
    MODEL_REPO,
    QWEN_MODEL_FILE,
    QWEN_MODEL_ID,
    QWEN_MODEL_REPO,
    InstallBed,
    model_block,
    qwen_catalog_text,
    serve_engine,
    write_chat_model,
)
from tests.support.llama import end_process, free_port
from tests.support.polling import wait_for
from tests.support.qwen_chat_model import qwen_chat_model

SERVER_ARGS = ("-c", "32768", "-np", "1", "-t", "2")
IDLE_S = "1"  # the front's save after a model's requests end, short for the tests


class RouterBed(CacheBed):
    """The Qwen prompt-cache bed's helpers with each model's own folder and state."""

    def folders(self) -> dict[str, Path]:
        return launch_spec(load_state(self.home), self.home).model_cache_dirs()

    def ask(self) -> dict[str, Any]:
        """The recorded request to the Qwen model (``stream`` off): the server's own tokens read and reused."""
        return self.send({**load_claude_first_request(), "stream": False, "model": QWEN_MODEL_ID})

    def state(self, model: str) -> str:
        resp = requests.get(f"http://127.0.0.1:{self.port}/models", timeout=60,
                            headers={"Authorization": f"Bearer {read_api_key(self.home)}"})
        return next(m["status"]["value"] for m in resp.json()["data"] if m["id"] == model)

    def saved_tokens(self, model: str) -> int:
        files, _bad = slot_files.listed(self.folders()[model])
        return sum(len(f.tokens) for f in files)


@pytest.fixture(scope="module")
def router_bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path) -> Iterator[RouterBed]:
    root = tmp_path_factory.mktemp("prompt-cache-router")
    with LoopbackHub(root / "hub") as hub:
        revision = hub.create_repo(QWEN_MODEL_REPO, {QWEN_MODEL_FILE: qwen_chat_model()})
        other = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "src" / MODEL_FILE, seed=7)})
        bed = InstallBed(hub, Home(root / "home"), root / "catalog.toml", serve_engine(hub, engine_asset),
                         extra_env={"QWENKIT_CACHE_IDLE_S": IDLE_S})
        bed.catalog.write_text(qwen_catalog_text(revision, server_args=SERVER_ARGS) + model_block(other),
                               encoding="utf-8")
        port = free_port()
        proc = bed.install("--port", str(port), "--no-venv", timeout=900)
        assert proc.returncode == 0, proc.stderr[-4000:]
        cache = RouterBed(bed, port)
        try:
            cache.run("install", MODEL_ID, "--yes", timeout=900)
            yield cache
        finally:
            bed.run("service", "stop")


def test_prompt_cache_router_each_model_has_its_own_folder(router_bed: RouterBed) -> None:
    folders = router_bed.folders()
    assert set(folders) == {QWEN_MODEL_ID, MODEL_ID} and len(set(folders.values())) == 2
    preset = (router_bed.home.root / "models.ini").read_text(encoding="utf-8")
    for folder in folders.values():
        assert folder.is_dir()
        assert f"slot-save-path = {folder.relative_to(router_bed.home.root)}" in preset


def test_prompt_cache_router_used_after_stop_and_start(router_bed: RouterBed) -> None:
    cold = router_bed.ask()
    assert cold["read"] > 10_000, cold
    router_bed.run("service", "stop")
    saved = router_bed.saved_tokens(QWEN_MODEL_ID)
    assert saved > 10_000
    router_bed.run("service", "start")
    after = router_bed.ask()
    assert after["reused"] >= saved - 1 and after["read"] < 100, (after, saved)
    status = json.loads(router_bed.run("status", "--json").stdout)["prompt_cache"]
    assert status["models"][QWEN_MODEL_ID]["tokens"] == saved and status["models"][MODEL_ID]["files"] == 0
    text = router_bed.run("status").stdout
    assert f"  {QWEN_MODEL_ID}: 1 saved slot(s), {saved} tokens" in text and f"  {MODEL_ID}: nothing saved" in text


def test_prompt_cache_router_model_unloaded_and_loaded_again_reuses_its_prefix(router_bed: RouterBed) -> None:
    for path in router_bed.folders()[QWEN_MODEL_ID].iterdir():
        path.unlink()  # nothing saved: what the next load finds is what the front saved before the unload
    router_bed.ask()
    router_bed.run("stop", QWEN_MODEL_ID)  # the router unloads it: its slots are gone
    assert router_bed.saved_tokens(QWEN_MODEL_ID) > 10_000
    wait_for(lambda: router_bed.state(QWEN_MODEL_ID) == "unloaded", 120, "the unload")
    after = router_bed.ask()  # the front restores its saved slots as it loads it
    assert after["reused"] > 10_000 and after["read"] < 100, after


def _set_word(argv: list[str], flag: str, value: str) -> list[str]:
    out = list(argv)
    out[out.index(flag) + 1] = value
    return out


def test_prompt_cache_router_model_unloaded_by_lru_reuses_its_prefix_when_loaded_again(router_bed: RouterBed) -> None:
    """The install's own front and router command line, with ``--models-max 1`` (the default model alone loads at
    startup): a request for the other model makes the router unload the Qwen one (LRU)."""
    router_bed.run("service", "stop")
    home = router_bed.home.root
    spec = launch_spec(load_state(router_bed.home), router_bed.home)
    text = spec.preset_file.read_text(encoding="utf-8")
    first = text.index("load-on-startup = true") + 1
    (home / "models-lru.ini").write_text(
        text[:first] + text[first:].replace("load-on-startup = true", "load-on-startup = false"), encoding="utf-8")
    argv = _set_word(_set_word(_set_word(spec.argv(), "--models-max", "1"), "--models-preset", "models-lru.ini"),
                     "--port", str(router_bed.port))
    for path in router_bed.folders()[QWEN_MODEL_ID].iterdir():
        path.unlink()  # what the reload finds is what the front saved before the other model's load
    env = {**os.environ, **spec.child_env(), "QWENKIT_CACHE_IDLE_S": "60"}  # no idle save: only the one before
    with (home / "logs" / "lru.log").open("ab") as log:
        proc = subprocess.Popen(argv, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: _answers(router_bed) and router_bed.state(QWEN_MODEL_ID) == "loaded", 300, "the router")
        assert router_bed.ask()["read"] > 10_000
        resp = requests.post(f"http://127.0.0.1:{router_bed.port}/v1/chat/completions", timeout=600,
                             headers={"Authorization": f"Bearer {read_api_key(router_bed.home)}"},
                             json={"model": MODEL_ID, "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]})
        assert resp.status_code == 200, resp.text[:500]
        assert router_bed.state(QWEN_MODEL_ID) == "unloaded"  # the router's LRU
        assert router_bed.saved_tokens(QWEN_MODEL_ID) > 10_000  # saved before that load
        after = router_bed.ask()
        assert after["reused"] > 10_000 and after["read"] < 100, after
    finally:
        end_process(proc)
    router_bed.run("service", "start")


def _answers(router_bed: RouterBed) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{router_bed.port}/health", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def test_prompt_cache_router_used_after_a_switch_over_and_after_a_keep_alive_sleep(router_bed: RouterBed) -> None:
    router_bed.ask()
    router_bed.run("install", "--keep-alive", "4s", "--yes", "--no-venv", timeout=900)  # an upgrade's switch-over
    assert "slot-save-path" in (router_bed.home.root / "models.ini").read_text(encoding="utf-8")
    after = router_bed.ask()
    assert after["reused"] > 10_000 and after["read"] < 100, after
    for path in router_bed.folders()[QWEN_MODEL_ID].iterdir():
        path.unlink()  # what the wake finds is what the front saved once the model's requests ended
    router_bed.ask()
    wait_for(lambda: router_bed.state(QWEN_MODEL_ID) == "sleeping", 120, "the keep-alive's sleep")
    assert router_bed.saved_tokens(QWEN_MODEL_ID) > 10_000
    woken = router_bed.ask()  # the front restores its saved slots as it wakes it
    assert woken["reused"] > 10_000 and woken["read"] < 100, woken
