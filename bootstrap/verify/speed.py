"""Measure the installed server's speed the same way every time, with llama-server's own ``timings``.

The method (fixed, so two installs, two machines or two arms of an A/B compare):
1. a warm-up request (a few tokens), so first-use costs (page faults of mmapped weights, graph allocation, a GPU's
   JIT) are not measured;
2. ``runs`` measured requests to llama-server's native ``/completion``, each the SAME prompt of exactly
   ``PROMPT_TOKENS`` tokens followed by exactly ``DECODE_TOKENS`` generated ones:
   - the prompt is sent as token ids: ``MEASURE_TEXT`` through the server's own ``/tokenize``
     (``add_special: false``), cut to ``PROMPT_TOKENS`` (repeated if a tokenizer packs it shorter), so its length
     does not depend on the model's tokenizer or chat template; ``timings.prompt_n`` confirms what was processed;
   - ``cache_prompt: false`` (tools/server/server-schema.cpp) so no run reuses the previous one's KV cache;
   - ``ignore_eos: true`` and ``n_predict`` fix the generated count; ``seed`` fixes the sampling;
3. the figures are ``timings.prompt_per_second`` and ``timings.predicted_per_second`` (server-common.cpp
   ``server_slot_stats::to_json``), plus ``draft_n`` / ``draft_n_accepted`` when speculative decoding drafted
   tokens (the same function adds them only then).
One request measures both: decode speed after a 64-token context differs from after a 5-token one by far less
than run-to-run noise, and a second request would double the cost on slow machines. The sizes are small on
purpose: the e2e suite installs hundreds of times on two cores (a GPU's prompt throughput is higher at larger
batches: a 64-token prompt understates it, the same way every time). At 128 + 32 tokens the measurement took
0.65× as long as the chat proof before it on the loaded test bed (``scripts/bench_verify_speed.py``): halved.
"""

from __future__ import annotations

import time
from typing import Any

import requests

from bootstrap.core.console import t
from bootstrap.core.errors import ServerError
from bootstrap.fetch.http_session import local_session
from bootstrap.verify.chat import checked_json, post_json
from bootstrap.verify.speed_records import SpeedSample

PROMPT_TOKENS = 64
DECODE_TOKENS = 16
WARMUP_TOKENS = 8
SEED = 42
# A fixed, ordinary paragraph (no repeats, so n-gram speculation gets no free matches): ~190 tokens in Gemma's and
# Qwen's tokenizers, more than PROMPT_TOKENS in any.
MEASURE_TEXT = (
    "The lighthouse keeper climbed the spiral stairs every evening at dusk, carrying a lamp, a notebook and a "
    "thermos of strong tea. From the gallery he could see the fishing boats returning to the harbour, the gulls "
    "circling above the breakwater, and the long shadow of the headland stretching across the water. He wrote "
    "down the wind, the height of the swell and the colour of the sky, as his father had done before him, "
    "although nobody had asked to read those notes for many years. On clear nights the beam reached the islands "
    "to the west; in fog he started the horn and counted the seconds between its calls. Winter storms sometimes "
    "cut the road to the village for a week, and then he lived on tinned soup, dry bread and the radio. In spring "
    "botanists came to count the orchids on the cliffs, and in summer children asked him whether ghosts lived in "
    "the tower. He always told them that the only ghost was the draught under the door."
)


def measure_speed(base_url: str, api_key: str, *, runs: int = 1, timeout: float = 120.0,
                  model: str | None = None) -> SpeedSample:
    """Warm up, then ``runs`` measured requests; the best figures of the runs (noise only ever slows a run down).
    ``model``: the model a router routes the requests to (several models: ``LaunchSpec.router``; a router answers
    400 to a request naming none). A failed request is a ``ServerError`` (exit 6)."""
    headers = {"Authorization": f"Bearer {api_key}"}
    named = {"model": model} if model else {}
    with local_session() as session:
        tokens = _prompt_tokens(session, base_url, headers, timeout, named)
        _complete(session, base_url, headers, tokens[:WARMUP_TOKENS], 2, timeout, named)
        timings = [_complete(session, base_url, headers, tokens, DECODE_TOKENS, timeout, named) for _ in range(runs)]
    return _best(timings)


def _prompt_tokens(session: requests.Session, base_url: str, headers: dict[str, str], timeout: float,
                   named: dict[str, str] | None = None) -> list[int]:
    """``MEASURE_TEXT`` as exactly ``PROMPT_TOKENS`` token ids of this model (``/tokenize``, no BOS added)."""
    doc = checked_json(post_json(session, f"{base_url}/tokenize", "POST /tokenize", timeout,
                                 {"content": MEASURE_TEXT, "add_special": False, **(named or {})}, headers),
                       "POST /tokenize")
    tokens = [t for t in doc.get("tokens") or [] if isinstance(t, int)]
    if not tokens:
        raise _bad("POST /tokenize", "no tokens")
    while len(tokens) < PROMPT_TOKENS:
        tokens += tokens
    return tokens[:PROMPT_TOKENS]


def _complete(session: requests.Session, base_url: str, headers: dict[str, str], tokens: list[int], n_predict: int,
              timeout: float, named: dict[str, str] | None = None) -> dict[str, Any]:
    what = "POST /completion"
    body = {"prompt": tokens, "n_predict": n_predict, "ignore_eos": True, "cache_prompt": False, "seed": SEED,
            "stream": False, **(named or {})}
    doc = checked_json(post_json(session, f"{base_url}/completion", what, timeout, body, headers), what)
    timings = doc.get("timings")
    if not isinstance(timings, dict) or not isinstance(timings.get("predicted_per_second"), (int, float)):
        raise _bad(what, "no timings")
    return timings


def _bad(what: str, detail: str) -> ServerError:
    return ServerError(t("verify.err_request", what=what, detail=detail), t("verify.hint_server"))


def _best(runs: list[dict[str, Any]]) -> SpeedSample:
    """The fastest run's decode (with its draft statistics) and the fastest prompt processing."""
    fastest = max(runs, key=lambda r: float(r["predicted_per_second"]))
    prompt = max(float(r.get("prompt_per_second") or 0.0) for r in runs)
    draft_n, accepted = fastest.get("draft_n"), fastest.get("draft_n_accepted")
    return SpeedSample(prompt_tps=prompt, decode_tps=float(fastest["predicted_per_second"]),
                       prompt_n=int(fastest.get("prompt_n") or 0), decode_n=int(fastest.get("predicted_n") or 0),
                       runs=len(runs), draft_n=draft_n if isinstance(draft_n, int) else None,
                       draft_accepted=accepted if isinstance(accepted, int) else None)


def timed_measure(base_url: str, api_key: str, *, runs: int = 1, timeout: float = 120.0) -> tuple[SpeedSample, float]:
    """``measure_speed`` and the wall seconds it took (what it adds to an install)."""
    start = time.perf_counter()
    sample = measure_speed(base_url, api_key, runs=runs, timeout=timeout)
    return sample, time.perf_counter() - start
