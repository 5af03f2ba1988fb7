"""GGUF header → ModelProfile: the shape facts the memory model needs, read the way llama.cpp reads them.

Everything here comes from the header alone (keys and tensor sizes), so a plan can be made before a 20 GB file
is downloaded: the header reader fetches only the first megabytes. Facts are from llama.cpp b11434:
``src/llama-model.cpp`` (common hparams, ``n_layer = block_count − nextn_predict_layers``, ``load_swa_pattern``),
``src/llama-hparams.cpp`` (``set_swa_pattern``, ``n_embd_r``/``n_embd_s``), ``src/models/<arch>.cpp``
(per-architecture defaults); the Qwen3.6 numbers are collected in ``docs/models.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bootstrap.core.console import join_names, t
from bootstrap.core.errors import UsageError

if TYPE_CHECKING:
    from bootstrap.plan.gguf_header import GGUFHeader, TensorInfo

# Per-architecture facts llama.cpp hard-codes when the file omits them.
# SWA: (default pattern n, default window or 0 = only when the file sets attention.sliding_window);
# is_swa(il) = il % n < n - 1 (llama-hparams.cpp set_swa_pattern, dense_first = false).
_SWA_DEFAULTS: dict[str, tuple[int, int]] = {
    "gemma2": (2, 4096),  # models/gemma2.cpp: n_swa = 4096, load_swa_pattern(ml, 2)
    "gemma3": (6, 0),  # models/gemma3.cpp: SWA only if sliding_window > 0, load_swa_pattern(ml, 6)
}
# Hybrid Gated-DeltaNet + attention: recurrent unless (il + 1) % full_attention_interval == 0 (default 4),
# unless attention.recurrent_layers lists them (models/qwen35moe.cpp, qwen35.cpp, qwen3next.cpp).
HYBRID_ARCHES = frozenset({"qwen35", "qwen35moe", "qwen3next"})
DENSE_ARCHES = frozenset({"llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3"})
MOE_ARCHES = frozenset({"qwen2moe", "qwen3moe"})
SUPPORTED_ARCHES = DENSE_ARCHES | MOE_ARCHES | HYBRID_ARCHES
# llama-hparams.h LLAMA_MAX_LAYERS: llama.cpp refuses more blocks, and a hostile header must not make us allocate.
MAX_LAYERS = 512

# Routed experts, the tensors --cpu-moe / --n-cpu-moe keep on the CPU (llama.cpp common/arg.cpp; docs/engine.md).
_EXPERT_RE = re.compile(r"\.ffn_(up|down|gate|gate_up)_(ch|)exps\.")
_BLOCK_RE = re.compile(r"^blk\.(\d+)\.")

# CPU_REPACK on x86 with AVX2 (ggml-cpu/repack.cpp ggml_repack_get_optimal_repack_type): Q4_0, Q4_K, IQ4_NL
# and MXFP4 matrices whose ne[1] is a multiple of 8 get an interleaved copy of the same size. Token
# embeddings are read with GET_ROWS, which the repack buffer does not serve, so they are never repacked.
_REPACK_TYPES = frozenset({"Q4_0", "Q4_K", "IQ4_NL", "MXFP4"})


@dataclass(frozen=True)
class LayerWeights:
    """Bytes of one repeating block: dense part (attention/DeltaNet, norms, router, shared expert) vs routed experts.

    ``*_repack`` are the parts the AVX2 CPU backend would copy into a ``CPU_REPACK`` buffer when on the CPU.
    """

    index: int
    dense_bytes: int
    expert_bytes: int
    dense_repack: int = 0
    expert_repack: int = 0


@dataclass(frozen=True)
class ModelProfile:
    """What the memory model needs from a GGUF header.

    ``layers`` holds every block of the file (``block_count``), including MTP/nextn blocks whose tensors
    llama-server skips (their bytes are 0 here); ``-ngl`` counts ``len(layers) + 1``. ``n_layer`` is the
    trunk (``block_count − nextn_predict_layers``). The fields after ``is_moe`` feed the compute-buffer model.
    """

    architecture: str
    n_layer: int
    n_embd: int
    n_vocab: int
    n_ctx_train: int
    n_head: int
    n_head_kv: tuple[int, ...]
    key_length: int
    value_length: int
    n_expert: int
    n_expert_used: int
    kv_layers: tuple[int, ...]
    swa_layers: tuple[int, ...]
    n_swa: int
    recurrent_layers: tuple[int, ...]
    recurrent_bytes_per_seq: int
    layers: tuple[LayerWeights, ...]
    token_embd_bytes: int
    output_bytes: int
    other_bytes: int
    total_weight_bytes: int
    is_moe: bool
    n_ff: int = 0  # largest dense FFN width
    n_ff_exp: int = 0  # routed expert FFN width
    ssm_conv_dim: int = 0  # DeltaNet conv channels: 2·groups·state + inner
    ssm_v_heads: int = 0  # DeltaNet value heads (ssm.time_step_rank)
    output_repack: int = 0  # output.weight (or the tied token_embd copy) if the CPU backend would repack it
    # The MTP head's blocks with their real bytes (``--spec-type draft-mtp`` loads them); empty when the file has
    # no usable head, whatever ``nextn_predict_layers`` says (see ``_mtp_blocks``).
    mtp_layers: tuple[LayerWeights, ...] = ()
    # The chat template has a thinking switch (``template_thinks``): llama-server's ``--reasoning`` means something.
    thinks: bool = False
    # Bytes per (part, ggml type) of the trunk: part "dense", "expert" or "output" (the logits matrix: output.weight,
    # or token_embd when tied). The speed model weighs each type's measured rate by them; empty when the bytes are
    # not this file's own (a profile scaled from another quant, or from the catalog's shape facts).
    weight_types: tuple[tuple[str, str, int], ...] = ()
    # ``<arch>.pooling_type`` (llama.cpp ``enum llama_pooling_type``: 1 mean, 2 cls, 3 last, 4 rank): set by
    # converters on embedding models (Qwen3-Embedding, BGE); 0 for a chat model.
    pooling: int = 0

    @property
    def embedding(self) -> bool:
        """An embedding model (served with ``--embeddings``), told by the pooling its header declares."""
        return self.pooling in POOLING_NAMES

    @property
    def has_mtp(self) -> bool:
        """The file carries a multi-token-prediction head llama-server can draft with."""
        return bool(self.mtp_layers)

    @property
    def mtp_bytes(self) -> int:
        """The head's weight bytes (not in ``total_weight_bytes``: llama-server loads them only with MTP on)."""
        return sum(lw.dense_bytes + lw.expert_bytes for lw in self.mtp_layers)

    @property
    def tied_output(self) -> bool:
        """No ``output.weight``: llama.cpp reuses ``token_embd`` for the logits (a second copy on the GPU)."""
        return self.output_bytes == 0

    @property
    def n_layer_all(self) -> int:
        return len(self.layers)


# llama.cpp include/llama.h ``enum llama_pooling_type`` → llama-server's ``--pooling`` values (common/arg.cpp).
POOLING_NAMES = {1: "mean", 2: "cls", 3: "last"}


def _pooling(header: GGUFHeader, arch: str) -> int:
    value = header.arch_value("pooling_type", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _unsupported(arch: str) -> UsageError:
    return UsageError(t("memory.unsupported_arch", arch=arch),
                      t("memory.unsupported_arch_hint", known=join_names(sorted(SUPPORTED_ARCHES))))


def _bad_header(arch: str, detail: str) -> UsageError:
    return UsageError(t("memory.bad_hparams", arch=arch, detail=detail))


def _int(value: Any, arch: str, key: str) -> int:
    """A non-negative integer key; bools and floats are not accepted (a hostile header must not pass)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad_header(arch, f"{key} = {value!r}")
    return value


def _per_layer(value: Any, n: int, arch: str, key: str) -> tuple[int, ...]:
    """A key that may be one integer or an array of one per layer (``get_key_or_arr``)."""
    if isinstance(value, (list, tuple)):
        if len(value) < n:
            raise _bad_header(arch, f"{key} has {len(value)} entries, {n} layers")
        return tuple(_int(v, arch, key) for v in value[:n])
    return (_int(value, arch, key),) * n


def _swa_layers(header: GGUFHeader, arch: str, n_layer: int) -> tuple[tuple[int, ...], int]:
    """(SWA layer indexes, window) per ``load_swa_pattern``: a bool array, else pattern n (file or default)."""
    if arch not in _SWA_DEFAULTS:
        return (), 0
    default_n, default_window = _SWA_DEFAULTS[arch]
    window = _int(header.arch_value("attention.sliding_window", default_window), arch, "sliding_window")
    if window <= 0:
        return (), 0
    pattern = header.arch_value("attention.sliding_window_pattern", default_n)
    if isinstance(pattern, (list, tuple)):
        flags = [bool(v) for v in pattern[:n_layer]]
        return tuple(i for i, f in enumerate(flags) if f), window
    n = _int(pattern, arch, "sliding_window_pattern")
    return tuple(il for il in range(n_layer) if n == 0 or il % n < n - 1), window


def _recurrent_layers(header: GGUFHeader, arch: str, n_layer: int, n_layer_all: int) -> tuple[int, ...]:
    if arch not in HYBRID_ARCHES:
        return ()
    listed = header.arch_value("attention.recurrent_layers")
    if isinstance(listed, (list, tuple)):
        return tuple(i for i, f in enumerate(listed[:n_layer_all]) if f and i < n_layer)
    interval = _int(header.arch_value("full_attention_interval", 4), arch, "full_attention_interval")
    if interval < 1:
        raise _bad_header(arch, "full_attention_interval = 0")
    return tuple(il for il in range(n_layer) if (il + 1) % interval != 0)


def _repackable(tensor: TensorInfo) -> bool:
    return tensor.type_name.upper() in _REPACK_TYPES and len(tensor.shape) >= 2 and tensor.shape[1] % 8 == 0


def _weights(tensors: Iterable[TensorInfo], n_layer_all: int, n_layer: int, arch: str
             ) -> tuple[tuple[LayerWeights, ...], int, int, int, int, tuple[LayerWeights, ...]]:
    """Per-layer bytes and the non-layer tensors. Tensors of nextn blocks (>= n_layer) are skipped by default
    (TENSOR_SKIP unless MTP is enabled, models/qwen35moe.cpp ``load_block_mtp``): their bytes are returned apart,
    as the last item."""
    dense = [0] * n_layer_all
    expert = [0] * n_layer_all
    dense_rp = [0] * n_layer_all
    expert_rp = [0] * n_layer_all
    token_embd = output = other = output_rp = 0
    token_embd_rp = 0
    for tensor in tensors:
        match = _BLOCK_RE.match(tensor.name)
        if match:
            il = int(match.group(1))
            if il >= n_layer_all:
                raise _bad_header(arch, f"tensor {tensor.name} beyond block_count {n_layer_all}")
            rp = tensor.nbytes if _repackable(tensor) else 0
            if _EXPERT_RE.search(tensor.name):
                expert[il] += tensor.nbytes
                expert_rp[il] += rp
            else:
                dense[il] += tensor.nbytes
                dense_rp[il] += rp
        elif tensor.name == "token_embd.weight":
            token_embd += tensor.nbytes
            token_embd_rp = tensor.nbytes if _repackable(tensor) else 0
        elif tensor.name == "output.weight":
            output += tensor.nbytes
            output_rp = tensor.nbytes if _repackable(tensor) else 0
        else:
            other += tensor.nbytes
    every = tuple(LayerWeights(i, dense[i], expert[i], dense_rp[i], expert_rp[i]) for i in range(n_layer_all))
    layers = every[:n_layer] + tuple(LayerWeights(i, 0, 0) for i in range(n_layer, n_layer_all))
    return layers, token_embd, output, other, output_rp if output else token_embd_rp, every[n_layer:]


def weight_types(tensors: Iterable[TensorInfo], n_layer: int) -> tuple[tuple[str, str, int], ...]:
    """Bytes per (part, type) a token's matrices come in (``ModelProfile.weight_types``); nextn blocks left out."""
    found: dict[tuple[str, str], int] = {}
    tensors = list(tensors)
    tied = not any(t.name == "output.weight" for t in tensors)
    for tensor in tensors:
        match = _BLOCK_RE.match(tensor.name)
        if match:
            if int(match.group(1)) >= n_layer:
                continue
            part = "expert" if _EXPERT_RE.search(tensor.name) else "dense"
        elif tensor.name == "output.weight" or (tied and tensor.name == "token_embd.weight"):
            part = "output"
        else:
            continue
        key = (part, tensor.type_name.upper())
        found[key] = found.get(key, 0) + tensor.nbytes
    return tuple((part, kind, n) for (part, kind), n in sorted(found.items()))


# The tensors llama.cpp's MTP graph cannot run without (models/qwen35moe.cpp graph_mtp asserts eh_proj, enorm and
# hnorm; load_block_mtp requires them once MTP is enabled).
MTP_REQUIRED = ("nextn.eh_proj.weight", "nextn.enorm.weight", "nextn.hnorm.weight")


def _mtp_blocks(header: GGUFHeader, n_layer: int, n_layer_all: int,
                blocks: tuple[LayerWeights, ...]) -> tuple[LayerWeights, ...]:
    """The nextn blocks when every one carries the head's tensors, else ``()``.

    ``nextn_predict_layers`` alone is not enough: newer Qwen3.6 converts count the MTP block in ``block_count``
    (41) even in base files, and some files state the key without shipping the tensors; llama-server then fails
    to create the MTP context. So the tensors decide.
    """
    if n_layer_all == n_layer:
        return ()
    names = {tensor.name for tensor in header.tensors}
    for il in range(n_layer, n_layer_all):
        if any(f"blk.{il}.{suffix}" not in names for suffix in MTP_REQUIRED):
            return ()
    return blocks


def _trained_context(header: GGUFHeader, arch: str) -> int:
    """``<arch>.context_length``, which llama.cpp requires (``ml.get_key(LLM_KV_CONTEXT_LENGTH, …)`` in
    ``src/llama-model.cpp``: a file without it does not load) and which must not be 0: llama-server loads such a
    file with an explicit ``-c``, but caps every slot's context at it (``n_ctx_slot()`` in
    ``tools/server/server-context.cpp``), so no prompt ever fits — b11434 even aborts on the first request
    (``GGML_ASSERT(n_ctx > 0 …)`` in ``send_error``; tests/plan/test_context.py). Refused before any download."""
    name = f"{arch}.context_length"
    value = header.arch_value("context_length")
    n_ctx_train = _int(value, arch, "context_length") if value is not None else 0
    if n_ctx_train == 0:
        raise UsageError(t("options.err_ctx_train_zero" if value is not None else "options.err_ctx_train_missing",
                           name=name), t("options.hint_ctx_train_zero"))
    return n_ctx_train


def model_profile(header: GGUFHeader) -> ModelProfile:
    """The ModelProfile of a parsed GGUF header; ``UsageError`` (exit 2) for an architecture it cannot model."""
    arch = header.architecture
    if arch not in SUPPORTED_ARCHES:
        raise _unsupported(arch)

    def key(suffix: str, default: Any = None) -> int:
        value = header.arch_value(suffix, default)
        if value is None:
            raise _bad_header(arch, f"{arch}.{suffix} missing")
        return _int(value, arch, suffix)

    n_layer_all = key("block_count")
    if not 0 < n_layer_all <= MAX_LAYERS:
        raise _bad_header(arch, f"block_count = {n_layer_all}")
    n_nextn = key("nextn_predict_layers", 0)
    if n_nextn > n_layer_all:
        raise _bad_header(arch, "nextn_predict_layers > block_count")
    n_layer = n_layer_all - n_nextn
    n_embd = key("embedding_length")
    n_head = max(_per_layer(header.arch_value("attention.head_count"), n_layer_all, arch, "head_count"))
    n_head_kv = _per_layer(header.arch_value("attention.head_count_kv", n_head), n_layer_all, arch, "head_count_kv")
    if n_head == 0 or n_embd == 0:
        raise _bad_header(arch, "head_count or embedding_length is 0")
    key_length = key("attention.key_length", n_embd // n_head)
    value_length = key("attention.value_length", n_embd // n_head)
    n_vocab = header.array_length("tokenizer.ggml.tokens") or key("vocab_size", 0)
    n_expert = key("expert_count", 0)
    n_expert_used = key("expert_used_count", 0)
    n_ff = max(_per_layer(header.arch_value("feed_forward_length", 0), n_layer_all, arch, "feed_forward_length"))
    n_ff_exp = key("expert_feed_forward_length", 0)

    recurrent = _recurrent_layers(header, arch, n_layer, n_layer_all)
    swa, n_swa = _swa_layers(header, arch, n_layer)
    recurrent_set = set(recurrent)
    kv_layers = tuple(il for il in range(n_layer) if il not in recurrent_set)

    conv_dim = v_heads = rs_per_seq = 0
    if recurrent:
        # llama-hparams.cpp: R = (d_conv - 1)·(d_inner + 2·n_group·d_state), S = d_state·d_inner, f32.
        d_conv, d_inner = key("ssm.conv_kernel"), key("ssm.inner_size")
        d_state, n_group = key("ssm.state_size"), key("ssm.group_count")
        v_heads = key("ssm.time_step_rank", 0)
        conv_dim = d_inner + 2 * n_group * d_state
        rs_per_seq = len(recurrent) * 4 * (max(d_conv - 1, 0) * conv_dim + d_state * d_inner)

    n_ctx_train = _trained_context(header, arch)
    layers, token_embd, output, other, output_rp, nextn = _weights(header.tensors, n_layer_all, n_layer, arch)
    total = token_embd + output + other + sum(lw.dense_bytes + lw.expert_bytes for lw in layers)
    return ModelProfile(
        architecture=arch, n_layer=n_layer, n_embd=n_embd, n_vocab=n_vocab,
        n_ctx_train=n_ctx_train, n_head=n_head, n_head_kv=n_head_kv, key_length=key_length,
        value_length=value_length, n_expert=n_expert, n_expert_used=n_expert_used, kv_layers=kv_layers,
        swa_layers=swa, n_swa=n_swa, recurrent_layers=recurrent, recurrent_bytes_per_seq=rs_per_seq,
        layers=layers, token_embd_bytes=token_embd, output_bytes=output, other_bytes=other,
        total_weight_bytes=total, is_moe=n_expert > 0 and any(lw.expert_bytes for lw in layers),
        n_ff=n_ff, n_ff_exp=n_ff_exp, ssm_conv_dim=conv_dim, ssm_v_heads=v_heads, output_repack=output_rp,
        mtp_layers=_mtp_blocks(header, n_layer, n_layer_all, nextn),
        thinks=template_thinks(header.metadata.get("tokenizer.chat_template")),
        pooling=_pooling(header, arch),
        weight_types=weight_types(header.tensors, n_layer),
    )


# What a chat template with a thinking mode says: Qwen3's reads ``enable_thinking`` (the switch llama-server's
# ``--reasoning`` sets, llama.cpp ``common/arg.cpp``) and writes ``<think>``; a template with neither, or a base
# model with none, has no thinking to turn on or off.
_THINKING_MARKS = ("enable_thinking", "<think>")


def template_thinks(template: object) -> bool:
    """Whether a GGUF's ``tokenizer.chat_template`` has a thinking mode."""
    return isinstance(template, str) and any(mark in template for mark in _THINKING_MARKS)

