"""Tokens/s before the download: decode and prompt speed predicted from the placement and each device's bandwidth.

The model (docs/speed.md has the derivation, the fit and the published figures it is checked against):

- **Decode** is set by bytes: each new token reads every weight it uses once. Per device we add the bytes one token
  reads there — the dense part of each layer (attention or DeltaNet, norms, router, shared expert), the routed
  experts actually used (``n_expert_used / n_expert`` of each expert tensor: a token's rows are read, the rest is
  not), the output layer, the KV cache of the layers on that device at ``context_fill`` tokens (a sliding-window
  layer reads at most its window) and the recurrent state (read and written) — and divide by the rate that
  device takes them at (a GPU: its effective bandwidth; the CPU: below). A fixed cost per token and per layer
  (graph build, thread barriers, kernel launches) is added; it is what dominates tiny models. Devices run one after
  the other, so their times add.
- **The CPU is a roofline**: its bytes take ``max(B / (probe bandwidth × CPU_BW_EFFICIENCY), B / (threads ×
  CPU_CORE_RATE × SIMD scale))``. Few threads cannot dequantise and multiply bytes as fast as RAM delivers them
  (one thread of the test bed: about 12 GB/s of Q4/Q8 weights with AVX-512); many threads on a desktop can, and
  then RAM sets the pace and more threads stop helping. The SIMD scale is ``FLOPS_PER_CYCLE`` relative to AVX-512
  (AVX2 ½, NEON ¼): an assumption, since the rate was measured on one AVX-512 CPU only.
- **Prompt** is compute-bound: ``2 × active parameters`` FLOPs per token (plus attention over half the prompt),
  over the device's effective FLOP rate; on a GPU the weights kept in RAM are copied over PCIe once per
  micro-batch (ggml's op offload for batches of 32 tokens or more), which adds ``bytes on CPU / PCIe bandwidth``
  per ``ubatch`` tokens.
- **Measured on this machine** (``hardware.kernel_rates``, when the install measured them with the placed engine
  before its download: ``verify/speed_rates.py``): each quantization type's decode rate (weight bytes/s with the
  plan's threads) and prompt FLOP/s replace the per-thread constant and the derived FLOP rate, a token's bytes split
  by their tensor types (``ModelProfile.weight_types``, else the quant name's main type, ``RATE_TYPES`` standing
  for the rest). RAM still bounds it (the measurement's models are small enough to come from cache): the probe's
  rate × ``CPU_BW_EFFICIENCY``. A GPU's measured rate replaces its peak × efficiency. The prediction says which it
  is: ``source`` "measured" (every device holding bytes measured) or "published" (the constants below).
- **Bandwidths**: the CPU's is the one ``doctor`` measured with the plan's thread count (``probes/bandwidth.py``,
  bytes read per second), else a stated default; a GPU's is its peak from NVML (bus width × memory clock) or Apple's
  figure for the chip. Efficiency factors turn peaks into what llama.cpp reaches: the CPU's per-thread rate and
  FLOP efficiency were fitted on the test bed's CPU with ``scripts/bench_speed.py`` (1 thread), the CPU's
  bandwidth efficiency and the GPU's on published measurements of hybrid and GPU runs (docs/speed.md).
- The range: ±20 % on a CPU (the test bed's repeated runs of one point varied by that much on a shared machine,
  docs/speed.md), ±30 % with a GPU (fitted on few published figures from machines we do not know in full); prompt
  ranges are wider (±35 %, ±50 %): the FLOP rate is derived, not measured.

Thinking changes nothing per token, only how many tokens an answer takes: the UI says so on a separate line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from bootstrap.core.console import t
from bootstrap.core.sizes import rate_text
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.detect.kernel_rates import DeviceRates, KernelRates
from bootstrap.plan.memory import CACHE_TYPES, LaunchSettings, ModelProfile

DEFAULT_CONTEXT_FILL = 1024  # a short prompt and its answer: the article's "short prompts" figure

# --- CPU: a roofline (docs/speed.md has both fits) -------------------------------------------------------------
# Bandwidth-bound: decode's read rate over the probe's once enough threads stream (fitted on published hybrid runs).
CPU_BW_EFFICIENCY = 0.90
# Compute-bound: weight bytes one thread dequantises and multiplies per second with AVX-512 (fitted on the test bed,
# 1 thread, scripts/bench_speed.py); other SIMD classes scale by FLOPS_PER_CYCLE relative to AVX-512.
CPU_CORE_RATE = 12.3e9
CPU_TOKEN_OVERHEAD_S = 0.5e-3  # per token: graph build, sampling, the HTTP server's loop
CPU_LAYER_OVERHEAD_S = 20e-6  # per layer and token: thread barriers between ops
# Without a measurement (a recorded profile, --hardware): dual-channel DDR4-3200, 51.2 GB/s peak, of which a
# multi-threaded read stream reaches about 70 % on desktops; stated in the output.
DEFAULT_CPU_BANDWIDTH = 36e9
DEFAULT_CPU_MEMORY = "DDR4-3200 dual channel"
# Prompt: a derived FLOP rate, cores × clock × FP32 FLOPs per cycle per core (FMA: 2 per lane) × efficiency.
ASSUMED_CPU_HZ = 3.0e9
FLOPS_PER_CYCLE = {"avx512": 64, "avx2": 32, "neon": 16, "other": 8}
CPU_FLOP_EFFICIENCY = 0.27

# --- GPUs (fitted on published figures, docs/speed.md) ------------------------------------------------------------
GPU_BW_EFFICIENCY = {"nvidia": 0.80, "apple": 0.65, "other": 0.55}
GPU_LAYER_OVERHEAD_S = 100e-6  # per layer and token: kernel launches of a layer's many small ops
GPU_SPLIT_OVERHEAD_S = 0.1e-3  # per layer whose experts run on the CPU: activations over PCIe and a sync
# Prompt on a GPU: dense FP16 tensor throughput per byte/s of memory bandwidth (RTX 3060 51 TFLOPS / 360 GB/s,
# RTX 4090 165 / 1008, T4 65 / 320: 140–200; Apple M2 3.6 TFLOPS FP32 / 100 GB/s: 36) × efficiency.
GPU_FLOPS_PER_BYTE = {"nvidia": 150.0, "apple": 36.0, "other": 60.0}
GPU_FLOP_EFFICIENCY = 0.30
PCIE_BANDWIDTH = 20e9  # PCIe 4.0 x16 as host-to-device copies reach it (about 25 GB/s; 3.0 x16 about 12)

# --- Measured on this machine (verify/speed_rates.py → detect/kernel_rates.py) ---------------------------------
# The quantization types the measurement runs, one model each, and which of them stands for every other ggml type:
# the legacy 32-weight blocks run Q4_0-like kernels, 8-bit and float types Q8_0-like ones, the 256-weight K and IQ
# blocks Q4_K-like ones; Q6_K (the K-quant files' output and FFN-down matrices) is its own.
RATE_TYPES = ("Q4_0", "Q8_0", "Q4_K", "Q6_K")
_RATE_TYPE_OF = {"Q4_0": "Q4_0", "Q4_1": "Q4_0", "Q5_0": "Q4_0", "Q5_1": "Q4_0", "IQ4_NL": "Q4_0", "MXFP4": "Q4_0",
                 "Q8_0": "Q8_0", "Q8_1": "Q8_0", "F16": "Q8_0", "BF16": "Q8_0", "F32": "Q8_0", "Q6_K": "Q6_K"}
BYTES_PER_WEIGHT = {"Q4_0": 18 / 32, "Q8_0": 34 / 32, "Q4_K": 144 / 256, "Q6_K": 210 / 256}  # ggml-common.h blocks
_QUANT_TYPE = re.compile(r"(IQ\d_[A-Z]+|Q\d_K|Q\d_\d|MXFP4|BF16|F16|F32)")

CPU_RANGE = 0.20  # decode; prompt ranges are wider (the FLOP rate is derived, not measured)
GPU_RANGE = 0.30
CPU_PROMPT_RANGE = 0.35
GPU_PROMPT_RANGE = 0.50
_HYBRID_FFN = frozenset({"qwen35moe", "qwen2moe", "qwen3next"})  # MoE blocks with a shared expert


@dataclass(frozen=True)
class Device:
    """One device's rates as the model uses them, with where each number came from."""

    name: str  # "cpu" or "gpu"
    bandwidth: float  # peak bytes/s (CPU: the probe's read rate)
    bandwidth_source: str  # "measured", "default", "nvml", "apple-chip", "published", "assumed"
    efficiency: float
    flops: float  # effective FLOP/s for big batches
    core_rate: float = float("inf")  # bytes/s all threads can dequantise and multiply (CPU); a GPU is not bound here
    measured: DeviceRates | None = None  # this machine's measured rates: they replace the three numbers above
    thread_scale: float = 1.0  # the plan's threads over the measurement's (a measured CPU rate scales with them)

    @property
    def effective_bandwidth(self) -> float:
        """The roofline: what memory delivers, unless the cores cannot process it that fast."""
        return min(self.bandwidth * self.efficiency, self.core_rate)

    @property
    def _cap(self) -> float:
        """What memory delivers to the CPU's kernels (a GPU's measured rate already is its memory's)."""
        return self.bandwidth * self.efficiency if self.name == "cpu" else float("inf")

    @property
    def bound(self) -> str:
        if self.measured is not None:
            mean = sum(r.decode_bytes_per_s for r in self.measured.rates) / len(self.measured.rates)
            return "compute" if mean * self.thread_scale < self._cap else "bandwidth"
        return "compute" if self.core_rate < self.bandwidth * self.efficiency else "bandwidth"

    def rate(self, rate_type: str) -> float:
        """Weight bytes/s while decoding ``rate_type`` matrices. Measured, it is still a roofline: the kernels'
        measured rate (a type the measurement lacks takes the mean of the others; scaled to the plan's threads),
        unless memory delivers less (the RAM probe's rate × ``CPU_BW_EFFICIENCY``: the measurement's models are
        small enough to be read from cache, a real model streams from RAM). Unmeasured: the fitted roofline."""
        if self.measured is None:
            return self.effective_bandwidth
        found = self.measured.rate(rate_type)
        rates = [found.decode_bytes_per_s] if found else [r.decode_bytes_per_s for r in self.measured.rates]
        return min(sum(rates) / len(rates) * self.thread_scale, self._cap)

    def flop_rate(self, rate_type: str) -> float:
        """FLOP/s of a prompt batch on ``rate_type`` matrices: measured, else the derived rate."""
        if self.measured is None:
            return self.flops
        found = self.measured.rate(rate_type)
        rates = [found.prompt_flops_per_s] if found else [r.prompt_flops_per_s for r in self.measured.rates]
        return sum(rates) / len(rates) * self.thread_scale

    def decode_seconds(self, by_type: dict[str, float], kv: float) -> float:
        """Seconds one token's bytes take here (``by_type``: weight bytes per rate type; ``kv``: cache and state
        bytes, read at the 8-bit rate when measured)."""
        if self.measured is None:
            return (sum(by_type.values()) + kv) / self.effective_bandwidth
        return sum(b / self.rate(k) for k, b in by_type.items() if b) + (kv / self.rate("Q8_0") if kv else 0.0)

    def prompt_seconds(self, flops: float, by_type: dict[str, float]) -> float:
        """Seconds of ``flops`` prompt FLOPs, split over the rate types by their share of the weights (parameters,
        not bytes: a Q8_0 weight is twice a Q4_0 one's bytes but the same FLOPs)."""
        if self.measured is None:
            return flops / self.flops
        params = {k: b / BYTES_PER_WEIGHT[k] for k, b in by_type.items() if b}
        total = sum(params.values())
        if total <= 0:
            return flops / self.flop_rate("Q4_K")
        return sum(flops * n / total / self.flop_rate(k) for k, n in params.items())


@dataclass(frozen=True)
class SpeedPrediction:
    """Predicted tokens/s (decode at ``context_fill`` tokens of context, prompt for a long prompt) and the inputs
    that produced them, so anyone can redo the arithmetic."""

    decode_tps: float
    decode_low: float
    decode_high: float
    prompt_tps: float
    prompt_low: float
    prompt_high: float
    context_fill: int
    cpu_default: bool  # the CPU bandwidth is the stated default, not a measurement
    thinking: bool | None = False  # the server thinks by default: same tokens/s, many more tokens per answer;
    # None: the model has no thinking mode (nothing to say about it)
    inputs: dict[str, Any] = field(default_factory=dict)
    # "measured": every device holding bytes ran its rates on this machine (verify/speed_rates.py); "published":
    # the constants fitted on published runs (no measurement, or one that does not cover a device used)
    source: str = "published"
    rates: KernelRates | None = None  # the measurement the prediction was made from (source "measured")

    @property
    def measured_on(self) -> str | None:
        """When the rates were measured (ISO 8601 UTC), for the screen."""
        return self.rates.measured if self.rates is not None else None

    def to_json(self) -> dict[str, Any]:
        """The prediction in ``plan --json`` and ``state.json`` (where a rerun finds the rates again)."""
        return {"decode_tps": round(self.decode_tps, 2), "decode_low": round(self.decode_low, 2),
                "decode_high": round(self.decode_high, 2), "prompt_tps": round(self.prompt_tps, 1),
                "prompt_low": round(self.prompt_low, 1), "prompt_high": round(self.prompt_high, 1),
                "context_fill": self.context_fill, "source": self.source, "measured_on": self.measured_on,
                "kernel_rates": self.rates.to_json() if self.rates is not None else None, "inputs": self.inputs}


def cpu_device(hardware: HardwareProfile, threads: int) -> Device:
    """The CPU: measured bandwidth when the profile has it, else the stated default; FLOPs and the per-thread byte
    rate from threads and SIMD class."""
    measured = hardware.memory.bandwidth_bytes_per_s
    flags = hardware.cpu.flags
    simd = "avx512" if flags.avx512 else "avx2" if flags.avx2 else "neon" if flags.neon else "other"
    flops = threads * ASSUMED_CPU_HZ * FLOPS_PER_CYCLE[simd] * CPU_FLOP_EFFICIENCY
    core_rate = threads * CPU_CORE_RATE * FLOPS_PER_CYCLE[simd] / FLOPS_PER_CYCLE["avx512"]
    rates = _measured(hardware.kernel_rates, "cpu", hardware.cpu.brand)
    scale = threads / rates.threads if rates is not None else 1.0
    if measured:
        return Device("cpu", float(measured), "measured", CPU_BW_EFFICIENCY, flops, core_rate, rates, scale)
    return Device("cpu", DEFAULT_CPU_BANDWIDTH, "default", CPU_BW_EFFICIENCY, flops, core_rate, rates, scale)


def _measured(rates: KernelRates | None, device: str, cpu_brand: str) -> DeviceRates | None:
    """The measured rates of ``device``, when they were measured on this profile's CPU (a profile edited to another
    CPU keeps no rates of the old one)."""
    if rates is None or rates.cpu_brand != cpu_brand:
        return None
    return rates.device(device)


def gpu_device(vendor: str, bandwidth: int | None, rates: DeviceRates | None = None) -> Device:
    """A GPU from its peak bandwidth (NVML, Apple's figure, or the maker's published figure for AMD/Intel:
    ``detect/probes/gpu_models.py``); without one, an assumed 200 GB/s. ``rates``: what the engine measured on it
    (they replace the peak and its efficiency)."""
    kind = vendor if vendor in GPU_BW_EFFICIENCY else "other"
    source = ("apple-chip" if kind == "apple" else "nvml" if kind == "nvidia" else "published") if bandwidth \
        else "assumed"
    peak = float(bandwidth or 200e9)
    return Device("gpu", peak, source, GPU_BW_EFFICIENCY[kind], peak * GPU_FLOPS_PER_BYTE[kind] * GPU_FLOP_EFFICIENCY,
                  measured=rates)


def rate_type(ggml_type: str) -> str:
    """The measured type (``RATE_TYPES``) whose kernels stand for ``ggml_type``'s."""
    return _RATE_TYPE_OF.get(ggml_type.upper(), "Q4_K")


def quant_rate_type(quant: str | None) -> str:
    """The main ggml type a quant name says ("UD-Q4_K_XL" → Q4_K, "Q8_0" → Q8_0), as its measured type."""
    found = _QUANT_TYPE.search((quant or "").upper())
    return rate_type(found.group(1)) if found else "Q4_K"


def _type_shares(p: ModelProfile, quant: str | None) -> dict[str, dict[str, float]]:
    """Per part ("dense", "expert", "output"): each rate type's share of its bytes, from the file's own tensor
    types when the profile has them, else all of the quant name's main type."""
    by_part: dict[str, dict[str, float]] = {}
    for part, kind, n in p.weight_types:
        slot = by_part.setdefault(part, {})
        slot[rate_type(kind)] = slot.get(rate_type(kind), 0.0) + n
    main = {quant_rate_type(quant): 1.0}
    shares = {}
    for part in ("dense", "expert", "output"):
        found = by_part.get(part)
        total = sum(found.values()) if found else 0.0
        shares[part] = {k: v / total for k, v in found.items()} if found and total > 0 else main
    return shares


@dataclass(frozen=True)
class _Split:
    """Bytes one decoded token reads on each device, and the counts the overheads need."""

    weights: dict[str, float]
    kv: dict[str, float]
    layers: dict[str, int]
    switches: int  # GPU↔CPU hand-overs per token
    parts: dict[str, dict[str, float]] = field(default_factory=dict)  # device → "dense"/"expert"/"output" → bytes

    def by_type(self, device: str, shares: dict[str, dict[str, float]]) -> dict[str, float]:
        """The weight bytes ``device`` reads per token, per rate type."""
        out: dict[str, float] = {}
        for part, n in self.parts.get(device, {}).items():
            for kind, share in shares[part].items():
                out[kind] = out.get(kind, 0.0) + n * share
        return out


def _expert_share(p: ModelProfile) -> float:
    return p.n_expert_used / p.n_expert if p.is_moe and p.n_expert else 1.0


def _decode_bytes(p: ModelProfile, s: LaunchSettings, fill: int) -> _Split:
    """Per-device bytes of one token: ``-ngl K`` puts the output layer and blocks from ``n_layer_all + 1 − K`` on the
    GPU; ``--n-cpu-moe N`` keeps the experts of blocks 0…N−1 on the CPU (the placement memory.py models)."""
    n_all = p.n_layer_all
    ngl = min(s.n_gpu_layers, n_all + 1)
    gpu_start = n_all + 1 - ngl if ngl > 0 else n_all + 1
    weights = {"cpu": 0.0, "gpu": 0.0}
    kv = {"cpu": 0.0, "gpu": 0.0}
    layers = {"cpu": 0, "gpu": 0}
    parts = {dev: {"dense": 0.0, "expert": 0.0, "output": 0.0} for dev in ("cpu", "gpu")}
    share = _expert_share(p)
    swa = set(p.swa_layers)
    kv_set = set(p.kv_layers)
    rs_per_layer = p.recurrent_bytes_per_seq / len(p.recurrent_layers) if p.recurrent_layers else 0.0
    k_el, v_el = CACHE_TYPES[s.cache_type_k], CACHE_TYPES[s.cache_type_v]
    trail = []
    for lw in p.layers[:p.n_layer]:
        dev = "gpu" if lw.index >= gpu_start else "cpu"
        experts = "gpu" if dev == "gpu" and lw.index >= s.n_cpu_moe else "cpu"
        weights[dev] += lw.dense_bytes
        weights[experts] += lw.expert_bytes * share
        parts[dev]["dense"] += lw.dense_bytes
        parts[experts]["expert"] += lw.expert_bytes * share
        layers[dev] += 1
        trail += [dev, experts]
        if lw.index in kv_set:
            cells = min(fill, p.n_swa) if lw.index in swa and p.n_swa else fill
            kv[dev] += cells * p.n_head_kv[lw.index] * (p.key_length * k_el + p.value_length * v_el)
        elif rs_per_layer:
            kv[dev] += 2 * rs_per_layer  # the recurrent state is read and written back
    out = "gpu" if ngl > 0 else "cpu"
    weights[out] += (p.output_bytes or p.token_embd_bytes) + p.other_bytes
    parts[out]["output"] += (p.output_bytes or p.token_embd_bytes) + p.other_bytes
    trail.append(out)
    switches = sum(1 for a, b in pairwise(trail) if a != b)
    return _Split(weights, kv, layers, switches, parts)


def _layer_params(p: ModelProfile, il: int) -> tuple[float, float]:
    """(parameters a token uses, all parameters) of block ``il``, from the header's shapes."""
    e = p.n_embd
    if il in set(p.recurrent_layers):
        inner = p.ssm_conv_dim / 2  # conv channels = inner + 2·groups·state, and groups·state = inner/2 here
        mixer = e * (p.ssm_conv_dim + 2 * inner)  # qkv, gate, out projections
    else:
        q = p.n_head * p.key_length * (2 if p.architecture in _HYBRID_FFN or p.architecture == "qwen35" else 1)
        kv = 2 * p.n_head_kv[il] * p.key_length
        mixer = e * (q + kv) + p.n_head * p.value_length * e
    if p.is_moe:
        one = 3 * e * p.n_ff_exp
        shared = one if p.architecture in _HYBRID_FFN else 0
        return mixer + one * p.n_expert_used + shared, mixer + one * p.n_expert + shared
    ffn = 3 * e * p.n_ff
    return mixer + ffn, mixer + ffn


def prompt_flops_per_token(p: ModelProfile, prompt_tokens: int) -> float:
    """2 FLOPs per active parameter, plus attention scores and values over half the prompt on the KV layers. The
    output layer is left out: the server computes logits for a prompt's last token only."""
    active = sum(_layer_params(p, il)[0] for il in range(p.n_layer))
    attention = 0.0
    for il in p.kv_layers:
        span = min(prompt_tokens / 2, p.n_swa) if il in set(p.swa_layers) and p.n_swa else prompt_tokens / 2
        attention += 2 * span * p.n_head * (p.key_length + p.value_length)
    return 2 * active + attention


def predict(profile: ModelProfile, settings: LaunchSettings, hardware: HardwareProfile, threads: int, *,
            gpu_vendor: str | None = None, gpu_bandwidth: int | None = None,
            context_fill: int = DEFAULT_CONTEXT_FILL, prompt_tokens: int = 2048,
            thinking: bool | None = False, quant: str | None = None) -> SpeedPrediction:
    """Tokens/s for ``profile`` placed by ``settings``; ``gpu_vendor``/``gpu_bandwidth``: the GPU the placement
    uses (None when it runs on the CPU only). ``hardware.kernel_rates``, when this machine measured them, replace
    the fitted constants; ``quant`` names the file's quant (its main type, when the profile has no tensor types)."""
    fill = max(1, min(context_fill, settings.ctx))
    cpu = cpu_device(hardware, threads)
    gpu = gpu_device(gpu_vendor, gpu_bandwidth, _measured(hardware.kernel_rates, "gpu", hardware.cpu.brand)) \
        if gpu_vendor and settings.n_gpu_layers > 0 else None
    split = _decode_bytes(profile, settings, fill)
    shares = _type_shares(profile, quant)
    unified = gpu is not None and gpu_vendor == "apple"
    if unified and gpu and cpu.bandwidth_source == "default" and gpu.bandwidth_source == "apple-chip":
        # one memory: the CPU cores read the same unified memory (their share of it is lower than the GPU's)
        cpu = replace(cpu, bandwidth=gpu.bandwidth, bandwidth_source="apple-chip",
                      efficiency=CPU_BW_EFFICIENCY * 0.6)
    devices = {"cpu": cpu, **({"gpu": gpu} if gpu else {})}
    used = [k for k in devices if split.weights[k] + split.kv[k] > 0]
    source = "measured" if all(devices[k].measured is not None for k in used) else "published"
    cpu_default = cpu.bandwidth_source == "default" and "cpu" in used
    seconds = CPU_TOKEN_OVERHEAD_S + split.layers["cpu"] * CPU_LAYER_OVERHEAD_S
    if gpu:
        seconds += split.layers["gpu"] * GPU_LAYER_OVERHEAD_S + (0 if unified else split.switches / 2
                                                                  * GPU_SPLIT_OVERHEAD_S)
    for name, dev in devices.items():
        seconds += dev.decode_seconds(split.by_type(name, shares), split.kv[name])
    decode = 1.0 / seconds

    flops = prompt_flops_per_token(profile, prompt_tokens)
    ubatch = min(settings.ubatch, prompt_tokens)
    cpu_types = split.by_type("cpu", shares)
    if gpu:
        # ggml's op offload: big batches run on the GPU; CPU-kept weights cross PCIe once per micro-batch.
        transfer = 0.0 if unified else split_cpu_weights(profile, settings) / PCIE_BANDWIDTH / ubatch
        every = {k: cpu_types.get(k, 0.0) + v for k, v in split.by_type("gpu", shares).items()}
        prompt_s = gpu.prompt_seconds(flops, every) + transfer
    else:
        prompt_s = cpu.prompt_seconds(flops, cpu_types) + cpu.decode_seconds(cpu_types, 0.0) / ubatch
    prompt = 1.0 / prompt_s
    spread = GPU_RANGE if gpu else CPU_RANGE
    prompt_spread = GPU_PROMPT_RANGE if gpu else CPU_PROMPT_RANGE
    inputs: dict[str, Any] = {
        "threads": threads,
        "decode_bytes_per_token": {k: int(split.weights[k] + split.kv[k]) for k in devices},
        "weights_bytes_per_token": {k: int(split.weights[k]) for k in devices},
        "kv_bytes_per_token": {k: int(split.kv[k]) for k in devices},
        "weights_by_type": {k: {kind: int(n) for kind, n in split.by_type(k, shares).items() if n} for k in devices},
        "layers": {k: split.layers[k] for k in devices},
        "expert_share": _expert_share(profile),
        # the rows' lengths (embedding, FFN or expert width): what a measurement model mirrors (verify/speed_rates)
        "shape": [profile.n_embd, (profile.n_ff_exp if profile.is_moe else profile.n_ff) or 4 * profile.n_embd],
        "devices": {k: _device_json(d) for k, d in devices.items()},
        "prompt_flops_per_token": int(flops),
        "prompt_tokens": prompt_tokens,
        "ubatch": ubatch,
        "overheads_s": {"cpu_token": CPU_TOKEN_OVERHEAD_S, "cpu_layer": CPU_LAYER_OVERHEAD_S,
                        "gpu_layer": GPU_LAYER_OVERHEAD_S, "gpu_split": GPU_SPLIT_OVERHEAD_S},
        "pcie_bytes_per_s": PCIE_BANDWIDTH if gpu and not unified else None,
        "cpu_default_memory": DEFAULT_CPU_MEMORY if cpu.bandwidth_source == "default" else None,
        "range": {"decode": spread, "prompt": prompt_spread},
    }
    rates = hardware.kernel_rates
    return SpeedPrediction(decode_tps=decode, decode_low=decode * (1 - spread), decode_high=decode * (1 + spread),
                           prompt_tps=prompt, prompt_low=prompt * (1 - prompt_spread),
                           prompt_high=prompt * (1 + prompt_spread), context_fill=fill,
                           cpu_default=cpu_default, thinking=thinking, inputs=inputs, source=source,
                           rates=rates if source == "measured" else None)


def _device_json(d: Device) -> dict[str, Any]:
    """One device's inputs in ``plan --json``: the fitted roofline, and the measured rates when they were used."""
    out: dict[str, Any] = {"bandwidth_bytes_per_s": int(d.bandwidth), "source": d.bandwidth_source,
                           "efficiency": d.efficiency, "effective_flops": int(d.flops),
                           "effective_bandwidth_bytes_per_s": int(d.effective_bandwidth), "bound": d.bound}
    if d.name == "cpu":
        out["core_rate_bytes_per_s"] = int(d.core_rate)
    if d.measured is not None:
        out["measured"] = {"threads": d.measured.threads, "thread_scale": round(d.thread_scale, 3),
                           "name": d.measured.name,
                           "decode_bytes_per_s": {k: int(d.rate(k)) for k in RATE_TYPES},
                           "prompt_flops_per_s": {k: int(d.flop_rate(k)) for k in RATE_TYPES}}
    return out


def split_cpu_weights(p: ModelProfile, s: LaunchSettings) -> float:
    """All weight bytes kept in RAM by the placement (not just one token's share): what op offload copies."""
    n_all = p.n_layer_all
    ngl = min(s.n_gpu_layers, n_all + 1)
    gpu_start = n_all + 1 - ngl if ngl > 0 else n_all + 1
    total = 0.0
    for lw in p.layers[:p.n_layer]:
        on_gpu = lw.index >= gpu_start
        total += (0 if on_gpu else lw.dense_bytes) + (0 if on_gpu and lw.index >= s.n_cpu_moe else lw.expert_bytes)
    return total


def describe(prediction: SpeedPrediction, *, thinking: bool = True, will_measure: bool = False,
             embedding: bool = False, last_measured: tuple[float, str] | None = None) -> list[str]:
    """The speed lines of ``plan`` and the install screen: tokens/s with the range, where the numbers come from
    (this machine's measurement, or the published-run constants — ``will_measure``: the install measures before
    its download), the assumption when the RAM bandwidth was not measured, and (``thinking``, for a model that has
    a thinking mode) what thinking does to an answer's length. An ``embedding`` model generates nothing: only how
    fast it reads its input. ``last_measured``: (tokens/s, when) the installed server generated at its last
    verify, for the same model and quant: the estimate's range beside a figure this machine really gave."""
    p = prediction
    if embedding:
        lines = [t("plan.speed_embed", prompt=rate_text(p.prompt_tps), prompt_low=rate_text(p.prompt_low),
                   prompt_high=rate_text(p.prompt_high))]
        thinking = False
    else:
        lines = [t("plan.speed_tps", tps=rate_text(p.decode_tps), low=rate_text(p.decode_low),
                   high=rate_text(p.decode_high), prompt=rate_text(p.prompt_tps), prompt_low=rate_text(p.prompt_low),
                   prompt_high=rate_text(p.prompt_high), fill=p.context_fill)]
    if p.source == "measured":
        lines.append(t("speed_source.measured_here", when=(p.measured_on or "").replace("T", " ").rstrip("Z")))
    else:
        lines.append(t("speed_source.published_will_measure" if will_measure else "speed_source.published"))
    if last_measured is not None and not embedding:  # what the server itself did here: the figure to go by
        lines.append(t("plan.speed_last_measured", decode=rate_text(last_measured[0]), when=last_measured[1]))
    if p.cpu_default:
        lines.append(t("plan.speed_default_ram", memory=t("plan.speed_default_memory"),
                       gbps=f"{DEFAULT_CPU_BANDWIDTH / 1e9:.0f}"))
    if thinking and p.thinking is not None:
        lines.append(t("plan.speed_thinking_on" if p.thinking else "plan.speed_thinking_off"))
    return lines
