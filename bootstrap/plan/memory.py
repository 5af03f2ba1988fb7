"""ModelProfile + launch settings → the bytes llama-server will allocate, per device.

The planner uses this to choose context, KV type, ``-ngl`` and ``--n-cpu-moe`` before anything is downloaded, so
every term mirrors a buffer llama-server reports at ``-lv 4`` (``docs/engine.md``, "Memory log lines"):

- weights (``load_tensors: <buft> model buffer size``): per-layer tensor bytes from the header. ``-ngl K`` puts
  the output layer and the last K−1 blocks on the GPU (``llama-model.cpp``: ``i_gpu_start = n_layer_all + 1 −
  K``); token embeddings always stay on the CPU; with a tied output the GPU gets its own copy of
  ``token_embd``; ``--n-cpu-moe N`` keeps the routed experts of blocks 0…N−1 on the CPU.
- KV (``llama_kv_cache: size``): exact. ``src/llama-context.cpp`` pads ``n_ctx`` to 256 and, without a unified
  cache, gives each of ``n_seq`` streams ``PAD(n_ctx/n_seq, 256)`` cells; ``src/llama-kv-cache-iswa.cpp`` gives
  SWA layers ``PAD(min(cells, n_swa·(unified ? n_seq : 1) + n_ubatch), 256)``, or with ``--swa-full`` the full
  cells (``size_swa = size_base``: what lets a restored slot be reused, docs/prompt-cache.md). A layer's KV lives on
  its device.
- recurrent state (``llama_memory_recurrent: size``): exact, ``max(1, n_seq)`` copies (``llama-model.cpp``).
- output (``llama_context: output buffer``): ``n_vocab·4·n_seq`` (``output_reserve`` with the server's
  ``n_outputs_max`` = slots).
- repack (``CPU_REPACK``): AVX2 copies of Q4_0/Q4_K/IQ4_NL/MXFP4 matrices kept on the CPU (``--no-repack``: 0).
  AMX repacks more types and is not modelled.
- compute (``sched_reserve: compute buffer size``): the worst-case graph for ``min(n_ctx, n_ubatch)`` tokens.
  Exact terms (from ``llama-graph.cpp``): the KQ masks, an input of ``n_kv × n_tokens`` elements per cache
  (full and SWA), f16 with flash attention, f32 without; without flash attention the ``n_kv·n_tokens·n_head``
  f32 score matrix; with flash attention an f32 K/V cache is cast to f16 one layer at a time
  (``n_kv·n_embd_kv·2``). The activation term is EMPIRICAL, ggml-alloc's high-water mark over one layer:
  ``n_tokens · 4 · (max(a·E, 3.2E + 0.8Q + 4K, 3F + 5E if F > E, 2.29C + 3.51·64·H) + 10)`` bytes, with E the
  embedding width, a = 7 with Q/K norms (qwen3*, gemma3) else 6, Q/K the query/key widths, F the FFN width
  (MoE: expert width × experts used), C/H the DeltaNet conv channels / value heads (chunk 64). Fitted on
  llama-server b11434 CPU runs of 16 tiny shapes (E 64–640, F 128–2048, C 256–2048, all within 0.2 %)
  and checked on Gemma 3 270M (ub 256–2048, within 2 % with flash attention, +6 % without).
  No logits term: the server reserves one output per slot and those rows reuse freed blocks.
- MTP (``--spec-type draft-mtp --spec-draft-n-max N``, ``mtp_draft > 0`` on a profile with a head): the head's
  blocks are loaded (``common_model_params_to_llama``: ``load_mtp``) on their block's device, routed experts
  by ``--n-cpu-moe`` like any block; the draft context (``common_speculative_init_result``: same ``n_ctx`` and
  slots, ``LLAMA_CONTEXT_TYPE_MTP``) holds a plain KV cache of the head's layers alone (``llama-model.cpp``
  ``create_memory``: ``filter = il >= n_layer``) and a compute buffer of one block's graph; the target's
  recurrent state keeps ``1 + n_rs_seq`` rows per sequence for rollback (``llama-memory-recurrent.cpp``;
  ``common_params_speculative::need_n_rs_seq`` = N for draft-mtp). Checked on the test bed's tiny qwen35moe
  with a head (b11434, CPU): RS 0.11 → 0.33 MiB at N = 2, KV +1 layer, model +the head's bytes.
- prompt cache (``--cache-ram N``, ``server_prompt_cache``): host memory that grows as distinct prompts are saved
  (each idle slot's state: KV and context checkpoints) up to N MiB, then evicts the oldest; llama-server's default
  is 8192 MiB (``common/common.h`` ``cache_ram_mib``), never freed while the model is loaded. Counted at its limit.
- context checkpoints (``--ctx-checkpoints N``, up to N per slot, host memory): a copy of the part of a sequence's
  state that cannot be rolled back, made only for SWA and recurrent models (``server-context.cpp``
  ``do_checkpoint``): the SWA layers' window (``n_swa`` cells) plus one recurrent state. Checked on Gemma 3 270M
  (b11434 CPU): "created context checkpoint … size = 7.506 MiB" = 15 SWA layers × 512 cells × 1 KiB. With
  ``--swa-full`` the server sets its ``n_swa`` to 0 and makes none for a model without recurrent layers.
- GPU: compute buffers of CUDA/Metal/Vulkan and op-offload copies (a GPU computing a big batch copies in the
  weights of one CPU-kept layer) are MODELLED from the sources, NOT validated: the test bed has no GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bootstrap.core.console import join_names, t
from bootstrap.core.errors import UsageError
from bootstrap.plan.model_profile import LayerWeights, ModelProfile, model_profile

__all__ = [
    "CACHE_TYPES",
    "LaunchSettings",
    "LayerWeights",
    "MemoryEstimate",
    "ModelProfile",
    "checkpoint_bytes",
    "estimate",
    "kv_bytes_per_token",
    "model_profile",
    "mtp_head_on_gpu",
    "prompt_state_bytes",
]

MIB = 1024 * 1024
# Bytes per element of KV cache types (ggml block sizes: q8_0 34 B / 32, q4_0 18, q4_1 20, q5_0 22, q5_1 24,
# iq4_nl 18). Quantized types need a head dimension divisible by 32.
CACHE_TYPES: dict[str, float] = {
    "f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32,
    "q5_0": 22 / 32, "q5_1": 24 / 32, "iq4_nl": 18 / 32,
}
_BLOCK = {"q8_0": (32, 34), "q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24),
          "iq4_nl": (32, 18)}
_QK_NORM_ARCHES = frozenset({"qwen3", "qwen3moe", "qwen35", "qwen35moe", "qwen3next", "gemma3"})
# ggml-cuda offloads an op whose weights sit in host memory once a batch has >= 32 tokens (op_offload).
_OFFLOAD_MIN_BATCH = 32


@dataclass(frozen=True)
class LaunchSettings:
    """The llama-server flags that change memory (``-c -ub -b -ctk -ctv -np -kvu -fa -ngl --n-cpu-moe``…)."""

    ctx: int
    ubatch: int = 512
    batch: int = 2048
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    n_parallel: int = 1
    kv_unified: bool = True
    flash_attn: bool = True
    n_gpu_layers: int = 0  # llama.cpp -ngl: counts the output layer; K>0 = output + last K-1 layers on GPU
    n_cpu_moe: int = 0  # experts of the FIRST N layers stay on CPU (--n-cpu-moe N)
    mmproj_bytes: int = 0
    mmproj_on_gpu: bool = True
    cpu_repack: bool = False  # extra host buffer when the CPU backend repacks weights (AVX2 CPU_REPACK)
    mtp_draft: int = 0  # --spec-draft-n-max with --spec-type draft-mtp; 0 = MTP off (the head is not loaded)
    cache_ram_mib: int = 0  # --cache-ram: the prompt cache's limit in MiB (0 = off)
    ctx_checkpoints: int = 0  # --ctx-checkpoints: per slot (SWA and recurrent models only)
    swa_full: bool = False  # --swa-full: SWA layers keep the whole context (no effect on a model without SWA)


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per buffer, split by device; ``kv_cells``/``swa_cells`` are per stream, as llama-server logs them."""

    weights_gpu: int
    weights_cpu: int
    kv_gpu: int
    kv_cpu: int
    recurrent_gpu: int
    recurrent_cpu: int
    compute_gpu: int
    compute_cpu: int
    output: int
    mmproj_gpu: int
    mmproj_cpu: int
    repack: int
    kv_cells: int
    swa_cells: int
    mtp_gpu: int = 0  # the MTP head with MTP on: its weights, its draft context's KV and compute buffer
    mtp_cpu: int = 0
    prompt_cache: int = 0  # host: the prompt cache at its --cache-ram limit
    checkpoints: int = 0  # host: every slot's context checkpoints at their --ctx-checkpoints limit

    @property
    def gpu_total(self) -> int:
        return (self.weights_gpu + self.kv_gpu + self.recurrent_gpu + self.compute_gpu + self.mmproj_gpu
                + self.mtp_gpu)

    @property
    def host_total(self) -> int:
        return (self.weights_cpu + self.kv_cpu + self.recurrent_cpu + self.compute_cpu + self.output
                + self.mmproj_cpu + self.repack + self.mtp_cpu + self.prompt_cache + self.checkpoints)


def _pad(n: int, to: int = 256) -> int:
    return (n + to - 1) // to * to


def _row_bytes(cache_type: str, n: int) -> int:
    """``ggml_row_size``: bytes of ``n`` elements of a cache type (quantized: whole 32-element blocks)."""
    if cache_type in _BLOCK:
        block, size = _BLOCK[cache_type]
        return -(-n // block) * size
    return int(CACHE_TYPES[cache_type] * n)


def _check(profile: ModelProfile, s: LaunchSettings) -> None:
    for name in (s.cache_type_k, s.cache_type_v):
        if name not in CACHE_TYPES:
            raise UsageError(t("memory.bad_cache_type", value=name, known=join_names(CACHE_TYPES)))
    if (s.ctx < 1 or s.ubatch < 1 or s.batch < 1 or s.n_parallel < 1 or s.n_gpu_layers < 0 or s.n_cpu_moe < 0
            or s.mtp_draft < 0 or s.cache_ram_mib < 0 or s.ctx_checkpoints < 0):
        raise UsageError(t("memory.bad_settings", settings=repr(s)))
    if s.cache_type_v in _BLOCK and not s.flash_attn:
        # llama-context.cpp: "quantized V cache requires flash_attn to be enabled"
        raise UsageError(t("memory.quantized_v_needs_fa"))


def kv_bytes_per_token(profile: ModelProfile, cache_type_k: str = "f16", cache_type_v: str = "f16",
                       swa_full: bool = False) -> float:
    """KV bytes one token of context costs on the full-attention layers (e.g. 20,480 for Qwen3.6 at f16); with
    ``swa_full`` on every attention layer (the SWA layers then keep every token too)."""
    full = [il for il in profile.kv_layers if swa_full or il not in set(profile.swa_layers)]
    return sum(profile.n_head_kv[il] * (profile.key_length * CACHE_TYPES[cache_type_k]
                                        + profile.value_length * CACHE_TYPES[cache_type_v]) for il in full)


def _activation_floats(p: ModelProfile) -> float:
    """Per-token f32 high-water mark of one layer's intermediates (EMPIRICAL, see the module docstring)."""
    e = p.n_embd
    q = p.n_head * p.key_length
    k = max(p.n_head_kv, default=0) * p.key_length
    # Q/K norms (qwen3*, gemma3) keep one more E-sized tensor alive in the attention block.
    terms = [(7 if p.architecture in _QK_NORM_ARCHES else 6) * e, 3.2 * e + 0.8 * q + 4 * k]
    f = p.n_ff_exp * p.n_expert_used if p.is_moe else p.n_ff
    if f > e:  # FFN intermediates no larger than E reuse the attention's freed blocks
        terms.append(3 * f + 5 * e)
    if p.recurrent_layers:
        terms.append(2.29 * p.ssm_conv_dim + 3.51 * 64 * p.ssm_v_heads)  # chunked delta net, chunk 64
    return max(terms) + 10


def _compute(p: ModelProfile, s: LaunchSettings, n_tokens: int, full_cells: int, swa_cells: int) -> int:
    """One backend's worst-case graph: masks + FA-off scores + activations + f32-cache casts.

    No logits term: the server reserves one output per slot (``n_outputs_max`` = slots), and those few
    ``n_vocab`` rows fit in blocks the layers freed (Gemma 3 270M, 262k vocabulary: 1 slot or 4, same buffer).
    Older builds reserved ``n_ubatch`` logit rows, hence third-party figures like 0.83 GiB for Qwen3.6 at 32k.
    """
    mask_elem = 2 if s.flash_attn else 4
    swa = set(p.swa_layers)
    has_full = any(il not in swa for il in p.kv_layers)
    n_kv = full_cells if has_full else swa_cells  # the largest attention of any layer
    # Masks are [n_kv, n_tokens/n_stream, 1, n_stream] with n_kv the cells of one stream.
    masks = (full_cells * has_full + swa_cells * bool(swa)) * n_tokens * mask_elem
    scores = 0 if s.flash_attn else n_kv * n_tokens * p.n_head * 4
    activations = int(n_tokens * 4 * _activation_floats(p))
    # Flash attention reads f16: an f32 K or V cache is cast per layer (llama-graph.cpp build_attn_mha).
    width = max(p.n_head_kv, default=0)
    f32_width = p.key_length * (s.cache_type_k == "f32") + p.value_length * (s.cache_type_v == "f32")
    casts = n_kv * width * 2 * f32_width if s.flash_attn else 0
    return masks + scores + activations + casts


def estimate(profile: ModelProfile, settings: LaunchSettings) -> MemoryEstimate:
    """Bytes llama-server allocates for ``profile`` launched with ``settings`` (see the module docstring)."""
    p, s = profile, settings
    _check(p, s)
    cache = _cache_layout(p, s)
    offload = _offload(p, s)
    weights = _weights(p, offload, s.n_cpu_moe)
    kv_gpu, kv_cpu = _kv(p, s, cache, offload)
    mtp = s.mtp_draft if p.has_mtp else 0
    rs_gpu, rs_cpu = _recurrent(p, cache.n_seq * (1 + mtp), offload)
    compute_gpu, compute_cpu = _compute_split(p, s, cache, offload, weights.kept_on_cpu)
    mm_gpu = s.mmproj_bytes if s.mmproj_on_gpu and offload.output_gpu else 0
    mtp_gpu, mtp_cpu = _mtp_head(p, s, cache, offload) if mtp else (0, 0)
    return MemoryEstimate(
        weights_gpu=weights.gpu, weights_cpu=weights.cpu, kv_gpu=kv_gpu, kv_cpu=kv_cpu,
        recurrent_gpu=rs_gpu, recurrent_cpu=rs_cpu, compute_gpu=compute_gpu, compute_cpu=compute_cpu,
        output=p.n_vocab * 4 * cache.n_seq, mmproj_gpu=mm_gpu, mmproj_cpu=s.mmproj_bytes - mm_gpu,
        repack=weights.repack if s.cpu_repack else 0, kv_cells=cache.cells, swa_cells=cache.swa_cells,
        mtp_gpu=mtp_gpu, mtp_cpu=mtp_cpu, prompt_cache=s.cache_ram_mib * MIB,
        checkpoints=s.n_parallel * s.ctx_checkpoints * checkpoint_bytes(p, s),
    )


def checkpoint_bytes(profile: ModelProfile, settings: LaunchSettings) -> int:
    """One context checkpoint: a sequence's SWA window (``n_swa`` cells of every SWA layer) and its recurrent
    state; 0 for a model without either (llama-server makes none for it). With ``--swa-full`` the server's
    ``n_swa`` is 0 (``server_context``): no checkpoint for the SWA layers, only for a recurrent state."""
    p, s = profile, settings
    if s.swa_full:
        return p.recurrent_bytes_per_seq if p.recurrent_layers else 0
    swa = sum(_row_bytes(s.cache_type_k, p.n_head_kv[il] * p.key_length)
              + _row_bytes(s.cache_type_v, p.n_head_kv[il] * p.value_length) for il in p.swa_layers)
    recurrent = p.recurrent_bytes_per_seq if p.recurrent_layers else 0
    return swa * p.n_swa + recurrent


def prompt_state_bytes(profile: ModelProfile, settings: LaunchSettings) -> int:
    """What the prompt cache keeps for one prompt that fills the context: its full-attention KV and one
    checkpoint's worth (the SWA window, the recurrent state); with ``--swa-full`` the SWA layers' KV of every
    token instead of the window."""
    per_token = kv_bytes_per_token(profile, settings.cache_type_k, settings.cache_type_v, settings.swa_full)
    return int(per_token * settings.ctx
               + checkpoint_bytes(profile, settings))


def mtp_head_on_gpu(profile: ModelProfile, settings: LaunchSettings) -> bool:
    """Whether ``settings`` put every block of the MTP head, routed experts included, on the GPU."""
    offload = _offload(profile, settings)
    return profile.has_mtp and all(offload.on_gpu(lw.index) and lw.index >= settings.n_cpu_moe
                                   for lw in profile.mtp_layers)


def _mtp_head(p: ModelProfile, s: LaunchSettings, cache: _CacheLayout, offload: _Offload) -> tuple[int, int]:
    """The head's bytes (GPU, CPU) with MTP on: weights, the draft context's KV (one layer per head block, the
    target's cells and streams) and its compute buffer (one block's graph, on the head's device)."""
    out = {True: 0, False: 0}
    for lw in p.mtp_layers:
        gpu = offload.on_gpu(lw.index)
        out[gpu] += lw.dense_bytes
        out[gpu and lw.index >= s.n_cpu_moe] += lw.expert_bytes
        n_kv = p.n_head_kv[min(lw.index, len(p.n_head_kv) - 1)]
        per_cell = (_row_bytes(s.cache_type_k, n_kv * p.key_length)
                    + _row_bytes(s.cache_type_v, n_kv * p.value_length))
        out[gpu] += per_cell * cache.cells * cache.n_stream
    head_gpu = offload.on_gpu(p.mtp_layers[-1].index)
    n_tokens = min(cache.n_ctx, cache.n_ubatch)
    out[head_gpu] += _compute(replace(p, swa_layers=()), s, n_tokens, cache.cells, 0)
    return out[True], out[False]


@dataclass(frozen=True)
class _CacheLayout:
    """How llama-server sizes its caches for these settings (the module docstring's KV item)."""

    n_ctx: int  # padded to 256
    n_seq: int  # slots (-np)
    cells: int  # full-attention cells per stream
    n_stream: int  # 1 with a unified cache, else one per slot
    n_ubatch: int
    swa_cells: int  # sliding-window cells per stream (0: no SWA layer)


def _cache_layout(p: ModelProfile, s: LaunchSettings) -> _CacheLayout:
    n_seq = s.n_parallel
    n_ctx = _pad(s.ctx)
    if s.kv_unified:
        cells, n_stream = n_ctx, 1
    else:
        cells, n_stream = _pad(n_ctx // n_seq), n_seq
    n_batch = min(n_ctx, s.batch)
    n_ubatch = min(n_batch, s.ubatch)
    swa_cells = _pad(min(cells, p.n_swa * (n_seq if s.kv_unified else 1) + n_ubatch)) if p.swa_layers else 0
    if s.swa_full and p.swa_layers:  # llama-kv-cache-iswa.cpp: "using full-size SWA cache", size_swa = size_base
        swa_cells = cells
    return _CacheLayout(n_ctx, n_seq, cells, n_stream, n_ubatch, swa_cells)


@dataclass(frozen=True)
class _Offload:
    """What ``-ngl`` puts on the GPU: the output layer and the blocks from ``gpu_start`` on."""

    ngl: int  # -ngl, capped at every block plus the output layer
    gpu_start: int  # llama-model.cpp ``i_gpu_start``

    def on_gpu(self, il: int) -> bool:
        return il >= self.gpu_start

    @property
    def output_gpu(self) -> bool:
        return self.ngl > 0


def _offload(p: ModelProfile, s: LaunchSettings) -> _Offload:
    n_layer_all = p.n_layer_all
    ngl = min(s.n_gpu_layers, n_layer_all + 1)
    return _Offload(ngl, n_layer_all + 1 - ngl if ngl > 0 else n_layer_all + 1)


@dataclass(frozen=True)
class _Weights:
    gpu: int
    cpu: int
    repack: int  # CPU_REPACK copies of the matrices kept on the CPU
    kept_on_cpu: int  # largest CPU-resident block a GPU may have to copy in for a big batch (op offload)


def _weights(p: ModelProfile, offload: _Offload, n_cpu_moe: int) -> _Weights:
    """Tensor bytes per device: blocks by ``-ngl``, routed experts of the first ``n_cpu_moe`` blocks on the CPU,
    token embeddings always on the CPU (and copied to the GPU for a tied output)."""
    weights = {True: 0, False: 0}
    repack = 0
    kept_on_cpu = 0
    for lw in p.layers:
        gpu = offload.on_gpu(lw.index)
        experts_gpu = gpu and lw.index >= n_cpu_moe
        weights[gpu] += lw.dense_bytes
        weights[experts_gpu] += lw.expert_bytes
        cpu_part = (0 if gpu else lw.dense_bytes) + (0 if experts_gpu else lw.expert_bytes)
        kept_on_cpu = max(kept_on_cpu, cpu_part)
        repack += (0 if gpu else lw.dense_repack) + (0 if experts_gpu else lw.expert_repack)
    output_gpu = offload.output_gpu
    weights[False] += p.token_embd_bytes
    weights[output_gpu] += p.output_bytes + p.other_bytes
    if p.tied_output and output_gpu:
        weights[True] += p.token_embd_bytes  # TENSOR_DUPLICATED: the output layer's own copy
    if not output_gpu:
        repack += p.output_repack
    return _Weights(weights[True], weights[False], repack, kept_on_cpu)


def _kv(p: ModelProfile, s: LaunchSettings, cache: _CacheLayout, offload: _Offload) -> tuple[int, int]:
    """KV cache bytes (GPU, CPU): each layer's cache lives on that layer's device."""
    kv = {True: 0, False: 0}
    swa = set(p.swa_layers)
    for il in p.kv_layers:
        n = cache.swa_cells if il in swa else cache.cells
        per_cell = (_row_bytes(s.cache_type_k, p.n_head_kv[il] * p.key_length)
                    + _row_bytes(s.cache_type_v, p.n_head_kv[il] * p.value_length))
        kv[offload.on_gpu(il)] += per_cell * n * cache.n_stream
    return kv[True], kv[False]


def _recurrent(p: ModelProfile, n_seq: int, offload: _Offload) -> tuple[int, int]:
    """Recurrent state bytes (GPU, CPU): ``max(1, n_seq)`` copies, split evenly over the recurrent layers."""
    rs = {True: 0, False: 0}
    if p.recurrent_layers:
        per_layer = p.recurrent_bytes_per_seq // len(p.recurrent_layers) * max(1, n_seq)
        for il in p.recurrent_layers:
            rs[offload.on_gpu(il)] += per_layer
    return rs[True], rs[False]


def _compute_split(p: ModelProfile, s: LaunchSettings, cache: _CacheLayout, offload: _Offload,
                   kept_on_cpu: int) -> tuple[int, int]:
    """Compute buffer bytes (GPU, CPU) for a batch of ``min(n_ctx, n_ubatch)`` tokens."""
    n_tokens = min(cache.n_ctx, cache.n_ubatch)
    graph = _compute(p, s, n_tokens, cache.cells, cache.swa_cells)
    if offload.ngl == 0:
        return 0, graph
    compute_gpu = graph
    if n_tokens >= _OFFLOAD_MIN_BATCH:
        compute_gpu += kept_on_cpu
    all_on_gpu = offload.gpu_start == 0
    # The CPU still gathers the token embeddings; it runs whole layers only when some stay on it.
    compute_cpu = n_tokens * 4 * p.n_embd if all_on_gpu else graph
    return compute_gpu, compute_cpu
