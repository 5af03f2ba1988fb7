"""Measure this machine's kernel rates with the placed engine, in a few seconds, before any model byte is downloaded.

What it measures (the speed model's inputs, ``plan/speed.py``; docs/speed.md): for each quantization type the
planned model mostly reads (of ``speed.RATE_TYPES``: Q4_0, Q8_0, Q4_K, Q6_K), a llama model of known bytes whose
matrices are all that type (``speed_models.py``: the planned model's row lengths, as many layers as make the bytes
per token it reads on the CPU, 16-256 MiB, so it comes from cache or streams from RAM as the real one will) is
served by the engine on the CPU alone (``-dev none``, the plan's ``-t`` and repack setting). A warm-up, one
``PROMPT_TOKENS``-token prompt, ``DECODE_RUNS`` short prompts with ``DECODE_TOKENS`` generated (``cache_prompt``
off, ``ignore_eos``), and llama-server's own ``timings``:

- decode: weight bytes per second = bytes per token ÷ (seconds per token − the per-token and per-layer overheads
  the speed model adds back), the median run (a server serves at its typical speed, not its best: with the best of
  two runs the test bed's predictions were about 10 % high on average, docs/speed.md);
- prompt: FLOP/s = 2 × parameters × prompt tokens ÷ (prompt seconds − one read of the weights at the decode rate).

Where the plan offloads to a GPU, one more model (sized the same way for the GPU's bytes, every layer on it) gives
the GPU's rates.

Bounded: ``MEASURE_BUDGET_S`` for everything (writing the models, starting servers, requests); a type not reached by
then is left out (the speed model takes the mean of the measured ones for it), and nothing measured means the
constants fitted on published runs stay in force. The server's output goes to ``<home>/logs/speed-rates.log``.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import requests

from bootstrap.core.processes import NO_WINDOW
from bootstrap.detect.kernel_rates import DeviceRates, KernelRates, TypeRate
from bootstrap.fetch.http_session import local_session
from bootstrap.place.engine_selftest import engine_env, free_port, stop_server
from bootstrap.plan import speed
from bootstrap.verify.speed_models import RateModel, write_rate_model

MEASURE_BUDGET_S = 20.0  # the whole measurement, every type and the GPU: about 2 s per type on the test bed
PROMPT_TOKENS = 64
DECODE_TOKENS = 12
DECODE_RUNS = 3
# A measurement model reads about as many bytes per token as the planned model does on that device, between these:
# a model that fits in cache runs faster per byte than one streamed from RAM (one thread here: Q8_0 at 18-21 GB/s
# from a 133 MB model, 9-15 GB/s from 400 MB and from the real 384 MB llama-q8-0.4g, side by side), so the
# measurement must stream as the real model will; beyond a few hundred MB nothing changes but the seconds spent.
MIN_MODEL_BYTES = 16 << 20
MAX_MODEL_BYTES = 256 << 20
DEFAULT_SHAPE = (2048, 5632)  # (embedding, FFN width) when the plan does not say: a 1-3B dense model's
HEAD_DIM = 128
MAX_LAYERS = 256
_MIN_SHARE = 0.25  # weights' share of a token's time assumed at least this (overheads are estimates)
_TOKENS = [10 + (i * 7) % 250 for i in range(PROMPT_TOKENS)]  # byte tokens of the SPM vocabulary, no repeats nearby
_POLL_S = 0.05


@dataclass(frozen=True)
class RateRequest:
    """How to run the engine for the measurement: the plan's threads and repack setting, and the GPU (if any)."""

    threads: int
    repack: bool = True
    types: tuple[str, ...] = speed.RATE_TYPES  # the types to measure on the CPU (the model's main ones)
    cpu_bytes: int = MAX_MODEL_BYTES  # the CPU models' size (``model_bytes`` of the planned model's CPU bytes)
    shape: tuple[int, int] = DEFAULT_SHAPE  # the planned model's (embedding, FFN) widths: its rows' lengths
    gpu_name: str | None = None  # the device the plan offloads to (``--list-devices`` name); None: CPU only
    gpu_type: str = "Q4_K"
    gpu_bytes: int = MAX_MODEL_BYTES
    env: tuple[tuple[str, str], ...] = ()  # extra environment for the engine (tests: a GPU's visibility)


def model_bytes(bytes_per_token: float) -> int:
    """The measurement models' size for a planned model reading ``bytes_per_token`` on a device."""
    return int(max(MIN_MODEL_BYTES, min(MAX_MODEL_BYTES, bytes_per_token)))


def _round(n: int, type_name: str) -> int:
    """A row length the type's blocks divide (256 for K-quants, 32 for the others), at least one block."""
    block = 256 if type_name.endswith("_K") else 32
    return max(block, round(n / block) * block)


def rate_model(folder: Path, type_name: str, size: int, *, shape: tuple[int, int] = DEFAULT_SHAPE) -> RateModel:
    """The measurement model of ``type_name``: the planned model's row lengths (``shape``: its embedding width and
    FFN width, rounded to whole blocks; a kernel's speed per byte depends on them), as many layers as make about
    ``size`` bytes per token."""
    n_embd, n_ff = (_round(n, type_name) for n in shape)
    n_head = max(1, n_embd // HEAD_DIM) if n_embd % HEAD_DIM == 0 else 1
    n_head_kv = max(1, n_head // 4) if n_head % 4 == 0 else n_head
    n_kv = n_embd // n_head * n_head_kv
    per_layer = speed.BYTES_PER_WEIGHT[speed.rate_type(type_name)] * (2 * n_embd * n_embd + 2 * n_embd * n_kv
                                                                        + 3 * n_embd * n_ff)
    n_layer = max(1, min(MAX_LAYERS, round(size / per_layer)))
    return write_rate_model(folder, type_name, n_layer=n_layer, n_embd=n_embd, n_ff=n_ff, n_head=n_head,
                            n_head_kv=n_head_kv)


@contextlib.contextmanager
def _serving(server: Path, model: Path, args: Sequence[str], log: Path, env: dict[str, str],
             deadline: float) -> Iterator[str | None]:
    """llama-server on ``model`` on a free loopback port: its base URL once ``/health`` answers, or None when it
    exited or the deadline passed first. Stopped on leaving."""
    base = f"http://127.0.0.1:{free_port()}"
    argv = [str(server), "-m", str(model), "--host", "127.0.0.1", "--port", base.rpartition(":")[2], *args]
    with open(log, "ab") as out:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    creationflags=NO_WINDOW)
        except OSError:
            yield None
            return
        try:
            yield _ready(proc, base, deadline)
        finally:
            stop_server(proc)


def _ready(proc: subprocess.Popen[bytes], base: str, deadline: float) -> str | None:
    with local_session() as session:
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(requests.RequestException):
                if session.get(f"{base}/health", timeout=2).status_code == 200:
                    return base
            time.sleep(_POLL_S)
    return None


def _complete(session: requests.Session, base: str, prompt: list[int], n_predict: int,
              deadline: float) -> dict[str, Any] | None:
    """llama-server's ``timings`` of one uncached completion, or None (refused, malformed, out of time)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0.5:
        return None
    body = {"prompt": prompt, "n_predict": n_predict, "cache_prompt": False, "ignore_eos": True, "temperature": 0}
    try:
        resp = session.post(f"{base}/completion", json=body, timeout=remaining)
        timings = resp.json().get("timings") if resp.status_code == 200 else None
    except (requests.RequestException, ValueError, AttributeError):
        return None
    needs = ("predicted_per_second", "prompt_per_second", "prompt_n") if n_predict > 1 else \
        ("prompt_per_second", "prompt_n")  # one token: its "decode" is timed as 0 s
    ok = isinstance(timings, dict) and all(isinstance(timings.get(k), (int, float)) and timings[k] > 0
                                           for k in needs)
    return timings if ok else None


def rates_from_timings(model: RateModel, decode: Sequence[dict[str, Any]], prompt: dict[str, Any], *,
                       gpu: bool = False) -> TypeRate:
    """The type's rates from llama-server's ``timings`` (the median of the ``decode`` runs; the ``prompt`` run):
    the speed model's overheads for this model's layers come off a token's time first, as ``speed.predict`` adds
    them back."""
    decode_tps = statistics.median(float(t["predicted_per_second"]) for t in decode)
    best_prompt = prompt
    per_layer = speed.GPU_LAYER_OVERHEAD_S if gpu else speed.CPU_LAYER_OVERHEAD_S
    token_s = 1.0 / decode_tps
    weights_s = max(token_s - speed.CPU_TOKEN_OVERHEAD_S - model.n_layer * per_layer, _MIN_SHARE * token_s)
    decode_rate = model.weight_bytes / weights_s
    n_prompt = float(best_prompt["prompt_n"])
    prompt_s = n_prompt / float(best_prompt["prompt_per_second"])
    flop_s = max(prompt_s - model.weight_bytes / decode_rate, _MIN_SHARE * prompt_s)
    return TypeRate(model.type_name, int(decode_rate), int(2 * model.params * n_prompt / flop_s))


def _measure_one(server: Path, model: RateModel, args: Sequence[str], log: Path, env: dict[str, str],
                 deadline: float, *, gpu: bool) -> TypeRate | None:
    """Warm-up (pages the weights in), one ``PROMPT_TOKENS`` prompt (its prompt timing), ``DECODE_RUNS`` short
    prompts with ``DECODE_TOKENS`` generated (their decode timing)."""
    with _serving(server, model.path, args, log, env, deadline) as base:
        if base is None:
            return None
        with local_session() as session:
            if _complete(session, base, _TOKENS[:4], 2, deadline) is None:
                return None
            prompt = _complete(session, base, _TOKENS, 1, deadline)
            decode = [_complete(session, base, _TOKENS[:4], DECODE_TOKENS, deadline) for _ in range(DECODE_RUNS)]
    done = [r for r in decode if r is not None]
    if prompt is None or not done:
        return None
    return rates_from_timings(model, done, prompt, gpu=gpu)


def measure_rates(server: Path, request: RateRequest, *, engine: str, cpu_brand: str, log: Path,
                  budget_s: float = MEASURE_BUDGET_S) -> KernelRates | None:
    """This machine's rates with ``server`` (see the module docstring); None when nothing could be measured in
    ``budget_s`` (the server would not start here, or the machine is too busy to answer in time)."""
    start = time.monotonic()
    deadline = start + budget_s
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    env = {**engine_env(server), **dict(request.env)}
    common = ["-c", "512", "-np", "1", "-fa", "on", "-b", "512", "-ub", "512", "-t", str(request.threads),
              "-tb", str(request.threads), *([] if request.repack else ["--no-repack"])]
    cpu: list[TypeRate] = []
    gpu: list[TypeRate] = []
    with tempfile.TemporaryDirectory(prefix="qwenkit-rates-") as tmp:
        for type_name in request.types:
            if time.monotonic() >= deadline:
                break
            model = rate_model(Path(tmp), type_name, request.cpu_bytes, shape=request.shape)
            found = _measure_one(server, model, [*common, "-dev", "none", "-ngl", "0"], log, env, deadline,
                                 gpu=False)
            model.path.unlink(missing_ok=True)
            if found is not None:
                cpu.append(found)
        if request.gpu_name is not None and time.monotonic() < deadline:
            model = rate_model(Path(tmp), request.gpu_type, request.gpu_bytes, shape=request.shape)
            found = _measure_one(server, model, [*common, "-ngl", "999"], log, env, deadline, gpu=True)
            if found is not None:
                gpu.append(found)
    devices = tuple(DeviceRates(name, request.threads, tuple(found), label)
                    for name, found, label in (("cpu", cpu, ""), ("gpu", gpu, request.gpu_name or "")) if found)
    if not devices:
        return None
    return KernelRates(engine, cpu_brand, datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                       int((time.monotonic() - start) * 1000), devices)
