"""Several models behind one endpoint: what adding one costs, what the set takes in memory, what a switch costs.

    python scripts/bench_models.py [--rounds N]

On the loopback hub with the test bed's real llama-server, one home gets, through the real CLI: the tiny chat
model as the default, the real Gemma 3 270M Q4_K_M beside it (a chat model whose load is real work), and a tiny
embedding model (``qwenkit install MODEL``). Measured, side by side in this one run:

- ``add_s``: each ``qwenkit install MODEL`` (plan, fetch, self-test alone, restart as a router, every model proven);
- ``rerun_s``: the median of three reruns with nothing changed (the no-op);
- memory: the router and its children's RSS (``status --json``) against the sum the plans promised, and per model
  its child's RSS against its plan without the prompt-cache budget (``qwenkit plan MODEL --json``: what is
  allocated at load; the cache fills with use);
- with every model loaded (the kit's ``--models-max``, all three fit): the median one-token chat per model;
- with ``--models-max 1`` (a machine where only one fits): the first request to an unloaded model — the router
  unloads the one in memory and loads the other — against a warm request, per model;
- thinking per role: one Gemma server answering requests with ``enable_thinking`` true and false (the planner and
  the executors of the seed's multi-agent recipe) against the seed's way, two servers of the same model.
One JSON line; ratios are of figures measured in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bootstrap.core.home import Home  # noqa: E402
from bootstrap.register.managers import FallbackManager  # noqa: E402
from tests.support import testbed  # noqa: E402
from tests.support.hub import LoopbackHub  # noqa: E402
from tests.support.install_bed import (  # noqa: E402
    MODEL_FILE,
    MODEL_ID,
    MODEL_REPO,
    catalog_text,
    model_block,
    serve_engine,
    write_chat_model,
)
from tests.support.llama import free_port  # noqa: E402
from tests.support.tiny_gguf import write_model  # noqa: E402

GEMMA_ID, GEMMA_REPO, GEMMA_FILE = "gemma-270m", "qwenkit-test/gemma-GGUF", "gemma-3-270m-Q4_K_M.gguf"
EMBED_ID, EMBED_REPO, EMBED_FILE = "tiny-embed", "qwenkit-test/tiny-embed-GGUF", "tiny-embed-Q8_0.gguf"


def _run(env: dict[str, str], *argv: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "bootstrap", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900, check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SystemExit(f"qwenkit {' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc, time.monotonic() - start


def _ask(base: str, key: str, model: str, embedding: bool) -> float:
    """One request (a one-token chat, or one embedding) on its own connection; seconds to the answer."""
    start = time.monotonic()
    with requests.Session() as session:
        session.trust_env = False
        if embedding:
            resp = session.post(f"{base}/v1/embeddings", json={"model": model, "input": "hello"}, timeout=300,
                                headers={"Authorization": f"Bearer {key}"})
        else:
            resp = session.post(f"{base}/v1/chat/completions", timeout=300,
                                headers={"Authorization": f"Bearer {key}"},
                                json={"model": model, "max_tokens": 1,
                                      "messages": [{"role": "user", "content": "hi"}]})
    if resp.status_code != 200:
        raise SystemExit(f"{model}: HTTP {resp.status_code} {resp.text[:300]}")
    return time.monotonic() - start


def _wait(base: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{base} never answered /health")


def _one_at_a_time(home: Home, key: str, models: list[tuple[str, bool]], rounds: int) -> dict[str, Any]:
    """The home's preset with only the default loaded at startup, served by a router that keeps one model: every
    request to another model unloads one and loads the other."""
    preset = (home.root / "models.ini").read_text(encoding="utf-8").replace("load-on-startup = true",
                                                                             "load-on-startup = false")
    preset = preset.replace("load-on-startup = false", "load-on-startup = true", 1)
    path = home.root / "bench-one.ini"
    path.write_text(preset, encoding="utf-8")
    state = json.loads(home.state_file.read_text(encoding="utf-8"))
    server = home.root / state["engine"]["server"]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_")}
    env.update({"LLAMA_ARG_API_KEY_FILE": str(home.api_key_file), "LD_LIBRARY_PATH": str(server.parent)})
    log = open(home.logs_dir / "bench-one.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([str(server), "--models-preset", str(path), "--models-max", "1", "--host", "127.0.0.1",
                             "--port", str(port), "--api-key-file", str(home.api_key_file)], cwd=home.root, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    cold: dict[str, list[float]] = {m: [] for m, _ in models}
    warm: dict[str, list[float]] = {m: [] for m, _ in models}
    try:
        _wait(base)
        _ask(base, key, models[0][0], models[0][1])  # the default, loaded
        for _ in range(rounds):
            for name, embedding in [*models[1:], models[0]]:
                cold[name].append(_ask(base, key, name, embedding))
                warm[name].append(_ask(base, key, name, embedding))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    return {name: {"cold_s": round(statistics.median(cold[name]), 3), "warm_s": round(statistics.median(warm[name]), 3),
                   "cold_over_warm": round(statistics.median(cold[name]) / max(statistics.median(warm[name]), 1e-3),
                                           1)}
            for name, _ in models}


def _per_model(env: dict[str, str], port: int, names: list[str]) -> dict[str, dict[str, int]]:
    """Each child's RSS (found by its ``--alias``) beside its plan at load: ``host_bytes`` less the prompt cache and
    checkpoints, which fill only with use."""
    import psutil

    router = next(c.pid for c in psutil.net_connections("tcp")
                  if c.status == psutil.CONN_LISTEN and c.laddr.port == port and c.pid)
    rss: dict[str, int] = {}
    for child in psutil.Process(router).children(recursive=True):
        argv = child.cmdline()
        if "--alias" in argv[:-1]:
            rss[argv[argv.index("--alias") + 1]] = child.memory_info().rss
    out = {}
    for name in names:
        doc = json.loads(_run(env, "plan", name, "--json")[0].stdout)["memory"]
        grows = doc["breakdown"]["prompt_cache"] + doc["breakdown"]["checkpoints"]
        out[name] = {"rss_mib": round(rss.get(name, 0) / 2**20),
                     "planned_at_load_mib": round((doc["host_bytes"] - grows) / 2**20)}
    return out


def _rss_mib(pids: list[int]) -> int:
    import psutil

    return round(sum(psutil.Process(pid).memory_info().rss for pid in pids) / 2**20)


def _roles(gemma: Path, template: Path) -> dict[str, Any]:
    """RSS of one server asked with thinking on and off per request, against two servers (one per role)."""
    from tests.support.llama import LlamaServer

    args = ["-c", "2048", "-t", "2", "--jinja", "--chat-template-file", str(template)]
    binary = testbed.engine_dir() / "llama-server"

    def ask(server: LlamaServer, thinking: bool) -> None:
        resp = requests.post(f"{server.base_url}/v1/chat/completions", timeout=120, json={
            "messages": [{"role": "user", "content": "Plan the next step."}], "max_tokens": 8,
            "chat_template_kwargs": {"enable_thinking": thinking}})
        if resp.status_code != 200:
            raise SystemExit(f"roles: HTTP {resp.status_code} {resp.text[:200]}")

    with LlamaServer(binary, gemma, args) as one:
        for i in range(6):
            ask(one, i % 2 == 0)
        assert one.proc is not None
        single = _rss_mib([one.proc.pid])
        with LlamaServer(binary, gemma, args) as other:
            ask(one, True)
            ask(other, False)
            assert other.proc is not None
            pair = _rss_mib([one.proc.pid, other.proc.pid])
    return {"one_server_rss_mib": single, "two_servers_rss_mib": pair, "two_over_one": round(pair / single, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asset = testbed.release_asset()
    gemma = testbed.gemma_model()
    template = testbed.engine_sources() / "models" / "templates" / "google-gemma-2-2b-it.jinja"
    result: dict[str, Any] = {"bench": "models"}
    with tempfile.TemporaryDirectory(prefix="qwenkit-bench-models-") as tmp:
        root = Path(tmp)
        with LoopbackHub(root / "hub") as hub:
            engine_url = serve_engine(hub, asset)
            rev = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "src" / MODEL_FILE)})
            rev_gemma = hub.create_repo(GEMMA_REPO, {GEMMA_FILE: gemma})
            embed = write_model("llama", root / "src" / EMBED_FILE, dtype="q8_0", n_layer=2, pooling=3, seed=3)
            rev_embed = hub.create_repo(EMBED_REPO, {EMBED_FILE: embed})
            catalog = root / "catalog.toml"
            catalog.write_text(
                catalog_text(rev)
                + model_block(rev_gemma, model_id=GEMMA_ID, repo=GEMMA_REPO, file=GEMMA_FILE, title="Gemma 3 270M",
                              architecture="gemma3", quant="Q4_K_M",
                              server_args=("-t", "2", "--chat-template-file", str(template)))
                + model_block(rev_embed, model_id=EMBED_ID, repo=EMBED_REPO, file=EMBED_FILE, title="Tiny embed",
                              server_args=("-t", "2")), encoding="utf-8")
            home = Home(root / "home")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("QWENKIT_", "LLAMA_ARG_", "HF_"))}
            env.update({"QWENKIT_HOME": str(home.root), "QWENKIT_CATALOG": str(catalog), "QWENKIT_LANG": "en",
                        "QWENKIT_HF_ENDPOINT": hub.endpoint, "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint,
                        "QWENKIT_ENGINE_URL": engine_url, "NO_PROXY": "127.0.0.1,localhost",
                        "PYTHONPATH": str(ROOT)})
            port = free_port()
            try:
                _, first = _run(env, "install", "--yes", "--no-service", "--no-venv", "--port", str(port))
                _, add_gemma = _run(env, "install", GEMMA_ID, "--yes")
                _, add_embed = _run(env, "install", EMBED_ID, "--yes")
                reruns = [_run(env, "install", "--yes", "--no-service", "--no-venv")[1] for _ in range(3)]
                key = home.api_key_file.read_text(encoding="utf-8").strip()
                base = f"http://127.0.0.1:{port}"
                models = [(MODEL_ID, False), (GEMMA_ID, False), (EMBED_ID, True)]
                loaded = {name: round(statistics.median(_ask(base, key, name, emb) for _ in range(5)), 3)
                          for name, emb in models}
                status = json.loads(_run(env, "status", "--json")[0].stdout)
                server = status["server"] or {}
                result.update({
                    "first_install_s": round(first, 1), "add_s": {GEMMA_ID: round(add_gemma, 1),
                                                                  EMBED_ID: round(add_embed, 1)},
                    "rerun_s": round(statistics.median(reruns), 2),
                    "planned_ram_mib": {m["name"]: round((m["planned_ram_bytes"] or 0) / 2**20)
                                        for m in status["models"]},
                    "rss_mib": round((server.get("rss_bytes") or 0) / 2**20),
                    "planned_total_mib": round((server.get("planned_ram_bytes") or 0) / 2**20),
                    "all_loaded_request_s": loaded,
                })
                result["rss_over_planned"] = round(result["rss_mib"] / max(result["planned_total_mib"], 1), 2)
                result["per_model"] = _per_model(env, port, [name for name, _ in models])
                FallbackManager(home).stop()
                result["one_loaded_at_a_time"] = _one_at_a_time(home, key, models, args.rounds)
                result["thinking_per_role"] = _roles(gemma, template)
            finally:
                FallbackManager(home).stop()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
