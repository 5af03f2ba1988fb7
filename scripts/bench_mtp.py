"""Benchmark: the MTP head on the test bed's real llama-server, side by side in one run: one JSON line.

The tiny qwen35moe with a real nextn block (tests/support/tiny_gguf.py ``mtp_layers=1``) is served without
speculation and with ``--spec-type draft-mtp --spec-draft-n-max N`` for each N asked; each server answers the same
greedy prompts. Reported per setting: drafted and accepted tokens (from each reply's ``timings``), acceptance,
decode tokens/s (generated tokens over the summed ``predicted_ms``), and whether the greedy text equals the
no-speculation text (speculative decoding must not change it). Random weights draft badly: the acceptance here
says nothing about Qwen3.6's real head, only that the machinery runs.

    python scripts/bench_mtp.py [--n-max 1 2 3] [--tokens 128]

Output::

    {"bench": "mtp", "engine": …, "tokens": 128, "baseline_tps": …,
     "runs": [{"n_max": 2, "drafted": …, "accepted": …, "acceptance": …, "tps": …, "ratio": …, "same_text": true}]}
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import testbed
from tests.support.llama import LlamaServer
from tests.support.tiny_gguf import write_model

PROMPTS = ("Tell me about the sun and the water.", "Write a long story about a city.", "What is the answer?")
COMMON = ["-c", "2048", "-np", "1", "--fit", "off", "-ngl", "0", "--jinja", "-t", "2"]


def serve(binary: Path, model: Path, extra: list[str], tokens: int) -> dict[str, object]:
    """Every prompt once, greedy, against one server; totals from the replies' ``timings``."""
    drafted = accepted = generated = 0
    ms = 0.0
    texts = []
    with LlamaServer(binary, model, [*COMMON, *extra]) as server:
        for prompt in PROMPTS:
            reply = server.chat(prompt, max_tokens=tokens, temperature=0.0, top_k=1, seed=1)
            timings = reply["timings"]
            drafted += int(timings.get("draft_n", 0))
            accepted += int(timings.get("draft_n_accepted", 0))
            generated += int(timings["predicted_n"])
            ms += float(timings["predicted_ms"])
            texts.append(reply["choices"][0]["message"]["content"])
    return {"drafted": drafted, "accepted": accepted, "tps": generated / (ms / 1000) if ms else 0.0,
            "texts": texts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-max", type=int, nargs="+", default=[1, 2, 3], help="draft lengths to run")
    parser.add_argument("--tokens", type=int, default=128, help="tokens generated per prompt")
    args = parser.parse_args(argv)
    binary = testbed.engine_dir() / "llama-server"
    with tempfile.TemporaryDirectory(prefix="bench-mtp-") as tmp:
        model = write_model("qwen35moe", Path(tmp) / "tiny-mtp.gguf", mtp_layers=1)
        base = serve(binary, model, [], args.tokens)
        runs = []
        for n in args.n_max:
            got = serve(binary, model, ["--spec-type", "draft-mtp", "--spec-draft-n-max", str(n)], args.tokens)
            runs.append({"n_max": n, "drafted": got["drafted"], "accepted": got["accepted"],
                         "acceptance": round(got["accepted"] / got["drafted"], 4) if got["drafted"] else 0.0,
                         "tps": round(float(got["tps"]), 1),  # type: ignore[arg-type]
                         "ratio": round(float(got["tps"]) / float(base["tps"]), 3),  # type: ignore[arg-type]
                         "same_text": got["texts"] == base["texts"]})
    print(json.dumps({"bench": "mtp", "engine": str(binary), "tokens": args.tokens,
                      "baseline_tps": round(float(base["tps"]), 1), "runs": runs},  # type: ignore[arg-type]
                     separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
