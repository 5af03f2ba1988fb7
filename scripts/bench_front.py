"""What the kit's front before llama-server's router costs (register/router_front.py), measured side by side.

    python scripts/bench_front.py [--rounds N] [--tokens N] [--model tiny|gemma]

The test bed's real llama-server runs as a router over a preset of two models (the real Gemma 3 270M as the
default, a tiny chat model beside it), once started directly on a port and once through ``qwenkit front`` (the
command the start script runs in router mode), both at once, the requests interleaved so load on the machine hits
both alike. Measured for each:

The requests go to ``--model`` (the tiny model by default: its answers take milliseconds, so what the hop adds is
not drowned in generation time; ``gemma`` for a model doing real work).

- ``one_token_s``: the median of ``--rounds`` one-token chats, each on its own connection (the overhead of one more
  hop: connect, read the request, name the model, relay);
- ``first_token_s`` and ``tokens_per_s`` of a streamed answer of ``--tokens`` tokens (the relay of server-sent
  events chunk by chunk);
- ``four_streams_tokens_per_s``: four streamed answers at once, tokens in all over the wall time;
- the front's own resident memory.
``--slot-save`` gives each model a ``slot-save-path`` (as an install's models.ini does, docs/prompt-cache.md), so the
front's prompt cache keeper runs (register/front_cache.py): its check before each request and its save after.
One JSON line; ``*_ratio`` is front over direct, from figures of this run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import testbed  # noqa: E402
from tests.support.llama import free_port  # noqa: E402
from tests.support.tiny_gguf import write_model  # noqa: E402

KEY = "sk-bench-front"
PRESET = """version = 1
[gemma]
model = {gemma}
c = 1024
t = 2
no-jinja = true
chat-template = gemma
load-on-startup = true
[tiny]
model = {tiny}
c = 512
t = 2
load-on-startup = true
"""


def _wait(base: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with requests.Session() as session:
                session.trust_env = False
                ok = session.get(f"{base}/v1/models", headers={"Authorization": f"Bearer {KEY}"}, timeout=2)
                if ok.status_code == 200 and all(m["status"]["value"] == "loaded" for m in ok.json()["data"]):
                    return
        except (requests.RequestException, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise SystemExit(f"{base}: the models never loaded")


def _one_token(base: str, model: str) -> float:
    start = time.monotonic()
    with requests.Session() as session:
        session.trust_env = False
        resp = session.post(f"{base}/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"}, timeout=120,
                            json={"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]})
    if resp.status_code != 200:
        raise SystemExit(f"{base}: HTTP {resp.status_code} {resp.text[:200]}")
    return time.monotonic() - start


def _stream(base: str, model: str, tokens: int) -> tuple[float, int, float]:
    """(seconds to the first content chunk, chunks with content, seconds in all) of one streamed answer."""
    start = time.monotonic()
    first, count = 0.0, 0
    with requests.Session() as session:
        session.trust_env = False
        with session.post(f"{base}/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"}, stream=True,
                          timeout=300, json={"model": model, "max_tokens": tokens, "stream": True,
                                             "ignore_eos": True,
                                             "messages": [{"role": "user", "content": "Tell a long story."}]}) as r:
            for line in r.iter_lines():
                if not line.startswith(b"data: {"):
                    continue
                delta = json.loads(line[6:])["choices"][0]["delta"] if json.loads(line[6:]).get("choices") else {}
                if delta.get("content"):
                    count += 1
                    first = first or time.monotonic() - start
    return first, count, time.monotonic() - start


def _parallel(base: str, model: str, tokens: int, clients: int = 4) -> float:
    results: list[int] = []
    start = time.monotonic()
    threads = [threading.Thread(target=lambda: results.append(_stream(base, model, tokens)[1])) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(results) / (time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--model", choices=("tiny", "gemma"), default="tiny")
    parser.add_argument("--slot-save", action="store_true", help="each model with a slot-save-path (the keeper on)")
    args = parser.parse_args()
    server = testbed.engine_dir() / "llama-server"
    with tempfile.TemporaryDirectory(prefix="bench-front-") as tmp:
        root = Path(tmp)
        tiny = write_model("llama", root / "tiny.gguf", dtype="q8_0", n_layer=4)
        preset = PRESET.format(gemma=testbed.gemma_model(), tiny=tiny)
        if args.slot_save:
            for name in ("gemma", "tiny"):
                (root / "cache" / name).mkdir(parents=True)
                preset = preset.replace(f"[{name}]\n", f"[{name}]\nslot-save-path = cache/{name}\n")
        (root / "models.ini").write_text(preset, encoding="utf-8")
        (root / "key").write_text(KEY, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_")}
        env.update({"LLAMA_ARG_API_KEY_FILE": str(root / "key"), "LD_LIBRARY_PATH": str(server.parent),
                    "PYTHONPATH": str(ROOT)})
        router = [str(server), "--models-preset", "models.ini", "--models-max", "2", "--api-key-file", "key"]
        direct_port, front_port = free_port(), free_port()
        logs = [open(root / name, "wb") for name in ("direct.log", "front.log")]  # noqa: SIM115 - closed below
        procs = [
            subprocess.Popen([*router, "--host", "127.0.0.1", "--port", str(direct_port)], cwd=root, env=env,
                             stdout=logs[0], stderr=subprocess.STDOUT),
            subprocess.Popen([sys.executable, "-m", "bootstrap", "front", "--host", "127.0.0.1", "--port",
                              str(front_port), "--model", "gemma", "--", *router], cwd=root, env=env,
                             stdout=logs[1], stderr=subprocess.STDOUT),
        ]
        bases = {"direct": f"http://127.0.0.1:{direct_port}", "front": f"http://127.0.0.1:{front_port}"}
        try:
            for base in bases.values():
                _wait(base)
            one: dict[str, list[float]] = {k: [] for k in bases}
            for _ in range(args.rounds):
                for kind, base in bases.items():
                    one[kind].append(_one_token(base, args.model))
            streams: dict[str, list[tuple[float, int, float]]] = {k: [] for k in bases}
            for _ in range(5):
                for kind, base in bases.items():
                    streams[kind].append(_stream(base, args.model, args.tokens))
            four = {kind: _parallel(base, args.model, args.tokens) for kind, base in bases.items()}
            front_rss = psutil.Process(procs[1].pid).memory_info().rss
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=30)
            for log in logs:
                log.close()
    result: dict[str, Any] = {"bench": "front", "model": args.model, "rounds": args.rounds, "tokens": args.tokens,
                              "slot_save": args.slot_save,
                              "load_1min": round(os.getloadavg()[0], 1)}
    for kind in bases:
        firsts = [s[0] for s in streams[kind]]
        rates = [s[1] / max(s[2] - s[0], 1e-6) for s in streams[kind]]
        result[kind] = {"one_token_s": round(statistics.median(one[kind]), 4),
                        "first_token_s": round(statistics.median(firsts), 4),
                        "tokens_per_s": round(statistics.median(rates), 1),
                        "four_streams_tokens_per_s": round(four[kind], 1)}
    for figure in ("one_token_s", "first_token_s", "tokens_per_s", "four_streams_tokens_per_s"):
        result[f"{figure}_ratio"] = round(result["front"][figure] / max(result["direct"][figure], 1e-9), 3)
    result["front_rss_mib"] = round(front_rss / 2**20, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
