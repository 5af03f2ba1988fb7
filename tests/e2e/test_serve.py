"""Issue 5 end to end, with real parts only: the loopback hub serves the engine release asset and a model repo;
``qwenkit download`` fetches the model into a home whose path has a space and Chinese characters; the deploy half
of the pipeline installs the engine from the hub (sha256 from the release API), creates the runtime venv, renders
``run_qwen.sh``, starts the server through it, verifies it with real chat requests and records ``state.json``;
then ``qwenkit status`` reports healthy and the server rejects a request without the generated key.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from bootstrap.core.hashing import sha256_file
from bootstrap.core.home import Home
from bootstrap.core.sizes import rate_text
from bootstrap.detect.profile import detect
from bootstrap.fetch.records import PlacedFile
from bootstrap.install.deploy import DeployOptions, DeployResult, deploy
from bootstrap.plan.model_facts import file_candidate
from bootstrap.plan.planner import choose
from bootstrap.register import managers as service
from bootstrap.verify.speculation import speculation_wins
from bootstrap.verify.speed import DECODE_TOKENS
from bootstrap.verify.speed_records import sample_from_json
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

ENGINE_REPO = "ggml-org/llama.cpp"
ENGINE_TAG = "b10434"


@pytest.fixture
def served(hub: LoopbackHub, engine_asset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """The hub serving the engine asset; the product's env pointed at it; a home with a space and Chinese."""
    # The test bed's llama-server is a CPU build: it is served under both Linux asset names, and a machine without
    # a GPU (this one) gets the plain ubuntu-x64 variant.
    for variant in ("ubuntu-vulkan-x64", "ubuntu-x64"):
        hub.add_release_asset(ENGINE_REPO, ENGINE_TAG, engine_asset, f"llama-{ENGINE_TAG}-bin-{variant}.tar.gz")
    home = Home(tmp_path / "我的 模型 home")
    monkeypatch.setenv("QWENKIT_HOME", str(home.root))
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("QWENKIT_ENGINE_URL", f"{hub.endpoint}/{ENGINE_REPO}/releases/download")
    return home


@pytest.fixture
def stop_server(served: Home) -> Iterator[None]:
    yield
    service.FallbackManager(served).stop()


def _qwenkit(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bootstrap", *argv], cwd=REPO_ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=timeout, check=False)


def _download(hub: LoopbackHub, repo: str, path: Path, home: Home) -> PlacedFile:
    hub.create_repo(repo, {path.name: path})
    proc = _qwenkit("download", f"hf:{repo}/{path.name}", "--source", "hf")
    assert proc.returncode == 0, proc.stderr
    placed = home.models_dir / repo / path.name
    assert placed.is_file() and placed.stat().st_size == path.stat().st_size
    return PlacedFile("model", placed, placed.stat().st_size, sha256_file(placed), "hf", hub.commit_of(repo))


def _deploy(home: Home, model: PlacedFile, options: DeployOptions) -> DeployResult:
    hardware = detect(home.root)
    plan = choose([file_candidate(model.path)], hardware)
    return deploy(home, plan, [model], hardware, options)


def _chat(base: str, key: str | None, **extra: object) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 8, "temperature": 0, **extra}
    with requests.Session() as s:
        s.trust_env = False
        return s.post(f"{base}/v1/chat/completions", json=body, headers=headers, timeout=120)


def test_tiny_model_installs_serves_and_reports_healthy(served: Home, hub: LoopbackHub, tmp_path: Path,
                                                        stop_server: None, wheelhouse: Path) -> None:
    model = _download(hub, "qwenkit-test/tiny-llama-GGUF", write_model("llama", tmp_path / "tiny-llama.gguf"),
                      served)
    port = free_port()
    result = _deploy(served, model, DeployOptions(port=port, register_service=False, wheels_dir=wheelhouse,
                                                  extra_args=("-c", "512", "-t", "2")))

    # place: engine from the hub's release asset, venv from the wheelhouse
    assert result.spec.server.is_file() and result.spec.server.parent.name == "b10434-ubuntu-x64"
    assert result.venv is not None and result.venv.python is not None and result.venv.python.is_file()
    assert (served.examples_dir / "agent.py").is_file()
    # render: the script is the one that started the server; it never holds the key
    key = served.api_key_file.read_text().strip()
    assert stat.S_IMODE(served.api_key_file.stat().st_mode) == 0o600
    script = served.run_sh.read_text(encoding="utf-8")
    assert key not in script and "--api-key-file" in script
    assert result.service_manager == "script"
    # verify: a real chat, streamed and not
    assert result.report.stream_ok and result.report.rejects_without_key
    assert result.report.completion_tokens > 0

    base = result.spec.base_url
    assert _chat(base, key).status_code == 200
    assert _chat(base, None).status_code == 401
    assert _chat(base, "sk-wrong").status_code == 401

    status = _qwenkit("status", "--json", timeout=60)
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["healthy"] is True and doc["health"] == "ok"
    assert doc["endpoint"] == f"http://127.0.0.1:{port}/v1"
    assert doc["api_key_file"] == str(served.api_key_file)
    assert doc["web_page"] == {"url": f"http://127.0.0.1:{port}/", "loads": True, "reason": ""}
    # --open hands llama-server's own page, checked to load, to the browser ($BROWSER: a script that records what
    # it was given).
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > "{opened}"\n', encoding="utf-8")
    browser.chmod(0o755)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BROWSER", f"{browser} %s")
        assert _qwenkit("status", "--open", timeout=60).returncode == 0
    assert opened.read_text(encoding="utf-8") == f"http://127.0.0.1:{port}/"
    state = json.loads(served.state_file.read_text(encoding="utf-8"))
    assert state["files"][0]["sha256"] == model.sha256
    assert state["engine"]["build"] == 10434

    # The server is down: status says so with exit 6 and what to do.
    service.FallbackManager(served).stop()
    down = _qwenkit("status", timeout=60)
    assert down.returncode == 6
    assert "run_qwen.sh" in down.stderr


def test_real_gemma_installs_and_answers(served: Home, hub: LoopbackHub, gemma_gguf: Path, stop_server: None) -> None:
    model = _download(hub, "qwenkit-test/gemma-3-270m-GGUF", gemma_gguf, served)
    port = free_port()
    # A base model without a chat template (docs/test-bed.md): llama.cpp's built-in gemma template, not Jinja.
    result = _deploy(served, model, DeployOptions(port=port, register_service=False, venv=False,
                                                  extra_args=("--no-jinja", "--chat-template", "gemma")))
    assert result.report.completion_tokens > 0 and result.report.tokens_per_s > 0
    assert result.state.quant == "Q4_K_M"  # general.file_type, not the tied Q8_0 embedding that outweighs it
    key = served.api_key_file.read_text().strip()
    reply = _chat(result.spec.base_url, key)
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"]
    assert _chat(result.spec.base_url, None).status_code == 401
    status = _qwenkit("status", "--json", timeout=60)
    assert status.returncode == 0 and json.loads(status.stdout)["healthy"] is True


FAR_ABOVE = {"decode_tps": 5000.0, "decode_low": 4000.0, "decode_high": 6000.0, "prompt_tps": 90000.0,
             "prompt_low": 80000.0, "prompt_high": 99000.0, "context_fill": 0.1, "inputs": {"recorded": True}}


def test_gemma_with_speculation_is_measured_both_ways_and_a_far_prediction_warns(
        served: Home, hub: LoopbackHub, gemma_gguf: Path, stop_server: None) -> None:
    """Issue 18: the install measures speed after its chat proof; with ``--spec-type`` it runs the A/B on the real
    engine (n-gram speculation needs no draft model) and keeps the faster arm everywhere the server is started
    from; a prediction far above what this machine delivers is recorded next to the measurement and warned about."""
    model = _download(hub, "qwenkit-test/gemma-3-270m-GGUF", gemma_gguf, served)
    spec_flags = ("--spec-type", "ngram-simple")
    result = _deploy(served, model, DeployOptions(
        port=free_port(), register_service=False, venv=False, predicted_speed=FAR_ABOVE,
        extra_args=("--no-jinja", "--chat-template", "gemma", *spec_flags)))

    speed = json.loads(served.state_file.read_text(encoding="utf-8"))["speed"]
    trial = speed["speculation"]
    assert trial["flags"] == list(spec_flags)
    assert trial["on"]["runs"] == trial["off"]["runs"] == 2
    assert trial["on"]["decode_n"] == trial["off"]["decode_n"] == DECODE_TOKENS
    on, off = sample_from_json(trial["on"]), sample_from_json(trial["off"])
    assert on is not None and off is not None
    assert trial["kept"] == ("on" if speculation_wins(on, off) else "off")
    kept = trial[trial["kept"]]
    assert speed["measured"] == kept and speed["predicted"] == FAR_ABOVE
    assert speed["verdict"] == "slow" and speed["measure_s"] > 0
    # the kept arm is what the record, the start script and the running server carry
    script = served.run_sh.read_text(encoding="utf-8")
    carried = "--spec-type" in result.state.server.args
    assert carried == (trial["kept"] == "on") == ("--spec-type" in script) == ("--spec-type" in result.spec.args)
    assert requests.get(f"{result.spec.base_url}/health", timeout=10).status_code == 200

    status = _qwenkit("status", "--json", timeout=60)
    assert status.returncode == 0 and json.loads(status.stdout)["speed"] == speed
    shown = _qwenkit("status", timeout=60)
    assert shown.returncode == 0
    measured = rate_text(kept["decode_tps"], fine_below=100)
    assert f"measured {measured} tokens/s, estimated about 5000 (4000-6000)" in shown.stdout  # output
    # the install's slow verdict, said under the speed it measured then (issue 41: not a warning of now)
    assert "far below the predicted 4000" in shown.stdout and "far below" not in shown.stderr
    assert "speed      as measured at " in shown.stdout
    assert ("kept on" if trial["kept"] == "on" else "turned off") in shown.stdout
