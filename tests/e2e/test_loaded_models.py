"""What is loaded, unloading it, idle memory given back (issue 40 item 2), through the real CLI and the real engine.

One home: the tiny chat model as the default, installed with a short ``--keep-alive``; first served alone (one
llama-server: ``--sleep-idle-seconds``), then with the real Gemma 3 270M beside it (the router over ``models.ini``,
behind the kit's front: a ``sleep-idle-seconds`` line per model, ``/models/unload``). Memory is the OS's word: the
resident set of the process that holds the model (a router's child for Gemma), before and after. The tests run in
file order on one install (module fixture) so the suite pays for one install and one added model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.register.managers import FallbackManager
from tests.app.test_zh_output import leaks
from tests.e2e.test_browser import gemma_args
from tests.support.bundle_bed import GEMMA_ID, GEMMA_REPO
from tests.support.hub import LoopbackHub
from tests.support.install_bed import (
    MODEL_FILE,
    MODEL_ID,
    MODEL_REPO,
    InstallBed,
    catalog_text,
    model_block,
    one_line_error,
    serve_engine,
    write_chat_model,
)
from tests.support.llama import free_port
from tests.support.testbed import GEMMA_FILE

KEEP_S = 6  # short enough to wait for, long enough that a request and a look fit inside it on two busy cores
WAIT_S = 120.0  # bound on a wait for a state the server reaches by itself (never a speed claim)


class Bed:
    def __init__(self, install: InstallBed, port: int) -> None:
        self.install, self.port = install, port

    def run(self, *argv: str, lang: str = "en") -> Any:
        return self.install.run(*argv, env=self.install.env(QWENKIT_LANG=lang))

    def ps(self) -> dict[str, dict[str, Any]]:
        proc = self.run("ps", "--json")
        assert proc.returncode in (0, 6), proc.stderr
        return {m["name"]: m for m in json.loads(proc.stdout)["models"]}

    def key(self) -> str:
        return self.install.home.api_key_file.read_text(encoding="utf-8").strip()

    def chat(self, model: str) -> requests.Response:
        with requests.Session() as session:
            session.trust_env = False
            return session.post(f"http://127.0.0.1:{self.port}/v1/chat/completions", timeout=300,
                                headers={"Authorization": f"Bearer {self.key()}"},
                                json={"model": model, "max_tokens": 2,
                                      "messages": [{"role": "user", "content": "hello"}]})

    def loaded_row(self, model: str) -> dict[str, Any]:
        """``model`` as ``ps`` shows it right after a request woke it: asked again when the machine was so slow
        that it fell asleep before the look (the keep-alive is short)."""
        for _ in range(5):
            answer = self.chat(model)
            assert answer.status_code == 200, answer.text
            row = self.ps()[model]
            if row["state"] == "loaded":
                return row
        pytest.fail(f"{model} never showed as loaded after a request: {row}")

    def wait_for(self, model: str, state: str) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            row = self.ps()[model]
            if row["state"] == state:
                return row
            time.sleep(1.0)
        pytest.fail(f"{model} did not become {state} within {WAIT_S} s: {row}")


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path, gemma_gguf: Path) -> Iterator[Bed]:
    root = tmp_path_factory.mktemp("loaded")
    with LoopbackHub(root / "hub") as hub:
        rev = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "src" / MODEL_FILE)})
        rev_gemma = hub.create_repo(GEMMA_REPO, {GEMMA_FILE: gemma_gguf})
        catalog = root / "catalog.toml"
        catalog.write_text(catalog_text(rev) + model_block(
            rev_gemma, model_id=GEMMA_ID, repo=GEMMA_REPO, file=GEMMA_FILE, server_args=gemma_args(),
            title="Gemma 3 270M (test)", architecture="gemma3", quant="Q4_K_M"), encoding="utf-8")
        install = InstallBed(hub, Home(root / "Qwen 家 home"), catalog, serve_engine(hub, engine_asset))
        port = free_port()
        try:
            first = install.install("--no-venv", "--port", str(port), "--keep-alive", f"{KEEP_S}s")
            assert first.returncode == 0, first.stderr[-3000:]
            yield Bed(install, port)
        finally:
            FallbackManager(install.home).stop()


def test_keep_alive_one_model_sleeps_when_idle_and_ps_command_shows_it(bed: Bed) -> None:
    home = bed.install.home
    assert f"--sleep-idle-seconds {KEEP_S}" in home.run_sh.read_text(encoding="utf-8")
    state = json.loads(home.state_file.read_text(encoding="utf-8"))
    assert state["request"]["keep_alive"] == KEEP_S
    loaded = bed.loaded_row(MODEL_ID)
    assert loaded["default"] and loaded["pid"] and loaded["rss_bytes"] and loaded["keep_alive_s"] == KEEP_S
    assert loaded["planned_ram_bytes"] and loaded["slots"]
    table = bed.run("ps")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split()[:2] == ["MODEL", "STATE"]
    assert f"A model idle for {KEEP_S}s is unloaded and its memory given back" in table.stdout
    # one model's server: no front counts its requests, and the engine publishes neither figure
    assert (loaded["busy"], loaded["idle_s"], loaded["unloads_in_s"]) == (None, None, None)
    asleep = bed.wait_for(MODEL_ID, "sleeping")  # the engine freed it by itself, after the keep-alive
    assert asleep["pid"] == loaded["pid"]  # the same server, still listening: only the model went
    assert asleep["rss_bytes"] < loaded["rss_bytes"], (loaded, asleep)
    print(f"one model: RSS loaded {loaded['rss_bytes']} B, asleep {asleep['rss_bytes']} B")
    words = bed.run("ps").stdout
    assert "asleep (reloads on the next request)" in words
    status = json.loads(bed.run("status", "--json").stdout)
    assert status["healthy"] and status["models"][0]["loaded"] == "sleeping", status  # status says it too
    assert bed.loaded_row(MODEL_ID)["pid"] == loaded["pid"]  # the next request wakes it
    status = json.loads(bed.run("status", "--json").stdout)
    assert status["healthy"], status["problems"]


def test_unload_of_the_only_model_is_refused_with_what_to_run(bed: Bed) -> None:
    proc = bed.run("stop", MODEL_ID)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert f"{MODEL_ID} is the only model of this install" in line and f"after {KEEP_S}s idle" in line
    assert "'qwenkit service stop'" in proc.stderr and "--keep-alive 5m" in proc.stderr


def test_keep_alive_is_kept_across_reruns_and_changed_by_one(bed: Bed) -> None:
    home = bed.install.home
    same = bed.install.install("--no-venv", "--keep-alive", f"{KEEP_S}s")
    assert same.returncode == 0, same.stderr[-2000:]
    assert same.stdout.startswith("Up to date: ")  # the same keep-alive: nothing to do
    changed = bed.install.install("--no-venv", "--keep-alive", "1h")
    assert changed.returncode == 0, changed.stderr[-2000:]
    assert f"the idle time before a model is unloaded changes from {KEEP_S}s to 1h" in changed.stderr
    assert "--sleep-idle-seconds 3600" in home.run_sh.read_text(encoding="utf-8")
    rerun = bed.install.install("--no-venv")  # no --keep-alive: the recorded one stays
    assert rerun.returncode == 0 and rerun.stdout.startswith("Up to date: "), rerun.stderr[-2000:]
    assert json.loads(home.state_file.read_text(encoding="utf-8"))["request"]["keep_alive"] == 3600
    never = bed.install.install("--no-venv", "--keep-alive", "never")
    assert never.returncode == 0, never.stderr[-2000:]
    assert "--sleep-idle-seconds" not in home.run_sh.read_text(encoding="utf-8")
    assert "Idle models stay loaded (install --keep-alive never)" in bed.run("ps").stdout
    back = bed.install.install("--no-venv", "--keep-alive", str(KEEP_S))  # a bare number: seconds
    assert back.returncode == 0, back.stderr[-2000:]
    assert f"--sleep-idle-seconds {KEEP_S}" in home.run_sh.read_text(encoding="utf-8")


def test_keep_alive_bad_duration_is_exit_2(bed: Bed) -> None:
    for value in ("5 minutes", "5d", "-2", "1h30", "9999999h"):
        proc = bed.install.install("--no-venv", "--keep-alive", value)
        assert proc.returncode == 2, (value, proc.stderr)
        assert one_line_error(proc) == f"--keep-alive takes a duration (got {value})"
        assert "30s, 5m, 1h or 1h30m" in proc.stderr


def test_unload_through_the_router_gives_the_memory_back_and_the_next_request_reloads(bed: Bed) -> None:
    added = bed.install.run("install", GEMMA_ID, "--yes")
    assert added.returncode == 0, added.stderr[-3000:]
    preset = (bed.install.home.root / "models.ini").read_text(encoding="utf-8")
    assert preset.count(f"sleep-idle-seconds = {KEEP_S}") == 2  # each model's own section
    loaded = bed.loaded_row(GEMMA_ID)
    child = loaded["pid"]
    assert child and psutil.Process(child).name() == "llama-server"
    assert loaded["rss_bytes"] > 150 << 20, loaded  # Gemma's 253 MB of weights are resident while it is loaded
    # the front's figures: nothing in flight, idle since that request, the keep-alive less that
    assert loaded["busy"] == 0 and 0 <= loaded["idle_s"] <= loaded["idle_s"] + loaded["unloads_in_s"] <= KEEP_S
    rows = bed.ps()
    assert set(rows) == {MODEL_ID, GEMMA_ID} and rows[MODEL_ID]["default"]
    with requests.Session() as session:
        session.trust_env = False
        assert session.get(f"http://127.0.0.1:{bed.port}/qwenkit/activity", timeout=30).status_code == 401

    stopped = bed.run("stop", GEMMA_ID)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.strip() == (f"{GEMMA_ID} is unloaded: its memory is given back, its files stay; the next "
                                      "request that names it loads it again")
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    after = bed.ps()[GEMMA_ID]
    assert (after["state"], after["pid"], after["rss_bytes"]) == ("unloaded", None, None)
    again = bed.run("stop", GEMMA_ID)
    assert (again.returncode, again.stdout.strip()) == (0, f"{GEMMA_ID} is not loaded: nothing to free")

    start = time.monotonic()
    reloaded = bed.chat(GEMMA_ID)
    reload_s = time.monotonic() - start
    assert reloaded.status_code == 200, reloaded.text
    start = time.monotonic()
    assert bed.chat(GEMMA_ID).status_code == 200
    warm_s = time.monotonic() - start
    row = bed.ps()[GEMMA_ID]
    assert row["state"] in ("loaded", "sleeping") and row["pid"] not in (None, child)
    print(f"router: Gemma child RSS loaded {loaded['rss_bytes']} B, after stop: process gone; "
          f"first request after unload {reload_s:.2f} s, next {warm_s:.2f} s")


def test_keep_alive_router_child_sleeps_and_frees_its_weights(bed: Bed) -> None:
    loaded = bed.loaded_row(GEMMA_ID)
    asleep = bed.wait_for(GEMMA_ID, "sleeping")
    assert asleep["pid"] == loaded["pid"]  # the child stays, on its port; the weights and KV cache go
    assert asleep["rss_bytes"] < loaded["rss_bytes"] - (100 << 20), (loaded, asleep)
    assert asleep["idle_s"] >= KEEP_S - 1 and asleep["unloads_in_s"] is None
    print(f"router: Gemma child RSS loaded {loaded['rss_bytes']} B, asleep {asleep['rss_bytes']} B")
    status = bed.run("status")
    assert status.returncode == 0 and "asleep" in status.stdout, status.stdout
    assert bed.loaded_row(GEMMA_ID)["pid"] == loaded["pid"]  # woken by the next request


def test_unload_bad_input_and_the_server_down(bed: Bed) -> None:
    unknown = bed.run("stop", "gemma-3-270")
    assert unknown.returncode == 2
    assert one_line_error(unknown).startswith("no installed model is named gemma-3-270 (installed: ")
    assert f"'{GEMMA_ID}'" in unknown.stderr  # did you mean
    beside = bed.install.run("install", GEMMA_ID, "--yes", "--keep-alive", "1m")
    assert beside.returncode == 2 and "--keep-alive is set for the whole install" in beside.stderr
    zh = bed.run("ps", lang="zh").stdout + bed.run("stop", "x", lang="zh").stderr
    print(bed.run("ps").stdout + zh)  # what a user sees, for the report
    assert "模型" in zh and "状态" in zh
    assert leaks(zh, literals=(str(bed.install.home.root),)) == []
    assert bed.run("service", "stop").returncode == 0
    try:
        down = bed.run("ps")
        assert down.returncode == 6 and MODEL_ID in down.stdout and GEMMA_ID in down.stdout
        assert "the server does not answer" in down.stderr and "'qwenkit service start'" in down.stderr
        stop = bed.run("stop", GEMMA_ID)
        assert stop.returncode == 6 and "does not answer" in one_line_error(stop)
    finally:
        assert bed.run("service", "start").returncode == 0
