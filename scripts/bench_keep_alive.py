"""What an idle model gives back, and what the next request pays for it (``qwenkit ps``, ``stop``, ``--keep-alive``).

    python scripts/bench_keep_alive.py [--rounds N] [--keep S]

On the loopback hub with the test bed's real llama-server, one home through the real CLI: the tiny chat model as
the default, installed with ``--keep-alive S``, and the real Gemma 3 270M Q4_K_M beside it (the router, behind the
kit's front). Measured side by side in this run, for Gemma's child (``qwenkit ps --json``):

- ``rss_loaded`` / ``rss_asleep``: its resident memory loaded, and after the keep-alive put it to sleep
  (llama-server's ``--sleep-idle-seconds``: weights and KV cache freed, the process kept);
- ``wake_s``: the first request after the sleep (the weights loaded again in the same process);
- ``reload_s``: the first request after ``qwenkit stop`` (the child ended; the router starts a new one);
- ``warm_s``: a request right after either (medians of N rounds); ratios to it.
One JSON line.
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
    MODEL_REPO,
    catalog_text,
    model_block,
    serve_engine,
    write_chat_model,
)
from tests.support.llama import free_port  # noqa: E402

GEMMA_ID, GEMMA_REPO, GEMMA_FILE = "gemma-270m", "qwenkit-test/gemma-GGUF", "gemma-3-270m-Q4_K_M.gguf"


def _run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "bootstrap", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900, check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SystemExit(f"qwenkit {' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc


def _row(env: dict[str, str]) -> dict[str, Any]:
    rows = json.loads(_run(env, "ps", "--json").stdout)["models"]
    return next(r for r in rows if r["name"] == GEMMA_ID)


def _ask(base: str, key: str) -> float:
    start = time.monotonic()
    with requests.Session() as session:
        session.trust_env = False
        resp = session.post(f"{base}/v1/chat/completions", timeout=300, headers={"Authorization": f"Bearer {key}"},
                            json={"model": GEMMA_ID, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]})
    if resp.status_code != 200:
        raise SystemExit(f"HTTP {resp.status_code} {resp.text[:300]}")
    return time.monotonic() - start


def _until(env: dict[str, str], state: str, seconds: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        row = _row(env)
        if row["state"] == state:
            return row
        time.sleep(0.5)
    raise SystemExit(f"{GEMMA_ID} never became {state}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=int, default=5, help="the keep-alive in seconds")
    args = parser.parse_args()
    engine_asset = testbed.release_asset()
    gemma = testbed.gemma_model()
    template = testbed.engine_sources() / "models" / "templates" / "google-gemma-2-2b-it.jinja"
    with tempfile.TemporaryDirectory(prefix="bench-keep-") as tmp, LoopbackHub(Path(tmp) / "hub") as hub:
        root = Path(tmp)
        rev = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "src" / MODEL_FILE)})
        rev_gemma = hub.create_repo(GEMMA_REPO, {GEMMA_FILE: gemma})
        catalog = root / "catalog.toml"
        catalog.write_text(catalog_text(rev) + model_block(
            rev_gemma, model_id=GEMMA_ID, repo=GEMMA_REPO, file=GEMMA_FILE, title="Gemma 3 270M (bench)",
            architecture="gemma3", quant="Q4_K_M",
            server_args=("--chat-template-file", str(template), "-c", "1024", "-t", "2")), encoding="utf-8")
        home = Home(root / "home")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("QWENKIT_", "LLAMA_ARG_", "HF_"))}
        env.update({"QWENKIT_HOME": str(home.root), "QWENKIT_CATALOG": str(catalog),
                    "QWENKIT_HF_ENDPOINT": hub.endpoint, "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint,
                    "QWENKIT_ENGINE_URL": serve_engine(hub, engine_asset), "QWENKIT_LANG": "en",
                    "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(ROOT)})
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        try:
            _run(env, "install", "--yes", "--no-service", "--no-venv", "--port", str(port),
                 "--keep-alive", f"{args.keep}s")
            _run(env, "install", GEMMA_ID, "--yes")
            key = home.api_key_file.read_text(encoding="utf-8").strip()
            loaded, asleep, wake, reload, warm = [], [], [], [], []
            for _ in range(args.rounds):
                _ask(base, key)
                loaded.append(_row(env)["rss_bytes"])
                asleep.append(_until(env, "sleeping")["rss_bytes"])
                wake.append(_ask(base, key))
                warm.append(_ask(base, key))
                _run(env, "stop", GEMMA_ID)
                reload.append(_ask(base, key))
                warm.append(_ask(base, key))
        finally:
            FallbackManager(home).stop()
    med = statistics.median
    print(json.dumps({
        "model": "gemma-3-270m Q4_K_M (router child)", "keep_alive_s": args.keep, "rounds": args.rounds,
        "rss_loaded": int(med(loaded)), "rss_asleep": int(med(asleep)),
        "asleep_over_loaded": round(med(asleep) / med(loaded), 3),
        "wake_s": round(med(wake), 3), "reload_s": round(med(reload), 3), "warm_s": round(med(warm), 3),
        "wake_over_warm": round(med(wake) / max(med(warm), 1e-3), 1),
        "reload_over_warm": round(med(reload) / max(med(warm), 1e-3), 1),
    }))


if __name__ == "__main__":
    main()
