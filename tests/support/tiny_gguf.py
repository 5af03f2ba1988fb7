"""Tiny random-weight GGUF models that the real llama-server loads and chats with.

The test bed needs real model files of four structurally different architectures (dense, MoE, interleaved
sliding-window attention, hybrid recurrent + attention) to check what llama-server does with them, and to
validate a memory estimator against llama-server's own log at several shapes. Real checkpoints are GBs; these
are a few MB, written in well under a second with PyPI ``gguf``'s ``GGUFWriter``.

Ground truth for every key, tensor name and shape is llama.cpp (b11434) itself:
``src/llama-model.cpp`` (``llama_model_base::load_hparams``: the keys common to all architectures),
``src/models/{llama,qwen3moe,gemma3,qwen35moe}.cpp`` (``load_arch_hparams`` / ``load_arch_tensors``),
``src/llama-arch.cpp`` (key and tensor name tables), ``src/llama-hparams.cpp`` (``set_swa_pattern``) and
``src/llama-vocab.cpp`` (SPM vocabulary). Shapes below are written in ggml order ``{ne0, ne1, ...}`` in
comments; numpy arrays carry them reversed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, TokenType
from gguf.quants import quantize

ARCHES = ("llama", "qwen3moe", "gemma3", "qwen35moe")

# A ChatML template embedded in every file, so llama-server's Jinja path renders the same prompt for each
# architecture instead of guessing a built-in template from the architecture name.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Control tokens first: SPM defaults are unk 0, bos 1, eos 2 (llama-vocab.cpp, tokenizer_model == "llama").
# "<|im_end|>" is recognised as end-of-generation by its text (llama-vocab.cpp's EOT/EOG name lists).
_SPECIALS: tuple[tuple[str, TokenType], ...] = (
    ("<unk>", TokenType.UNKNOWN),
    ("<s>", TokenType.CONTROL),
    ("</s>", TokenType.CONTROL),
    ("<|im_start|>", TokenType.CONTROL),
    ("<|im_end|>", TokenType.CONTROL),
)
IM_END_ID = 4

# Output-side vocabulary: whole words (with the SPM word-start marker) so greedy text reads as words.
_WORDS = (
    "the", "of", "and", "to", "in", "is", "it", "you", "that", "he", "was", "for", "on", "are", "with",
    "as", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by", "hot", "word",
    "but", "what", "some", "we", "can", "out", "other", "were", "all", "there", "when", "up", "use",
    "your", "how", "said", "an", "each", "she", "which", "do", "their", "time", "if", "will", "way",
    "about", "many", "then", "them", "write", "would", "like", "so", "these", "her", "long", "make",
    "thing", "see", "him", "two", "has", "look", "more", "day", "could", "go", "come", "did", "number",
    "sound", "no", "most", "people", "my", "over", "know", "water", "than", "call", "first", "who", "may",
    "down", "side", "been", "now", "find", "any", "new", "work", "part", "take", "get", "place", "made",
    "live", "where", "after", "back", "little", "only", "round", "man", "year", "came", "show", "every",
    "good", "me", "give", "our", "under", "name", "very", "through", "just", "form", "sentence", "great",
    "think", "say", "help", "low", "line", "differ", "turn", "cause", "much", "mean", "before", "move",
    "right", "boy", "old", "too", "same", "tell", "does", "set", "three", "want", "air", "well", "also",
    "play", "small", "end", "put", "home", "read", "hand", "port", "large", "spell", "add", "even", "land",
    "here", "must", "big", "high", "such", "follow", "act", "why", "ask", "men", "change", "went", "light",
    "kind", "off", "need", "house", "picture", "try", "us", "again", "animal", "point", "mother", "world",
    "near", "build", "self", "earth", "father", "head", "stand", "own", "page", "should", "country",
    "found", "answer", "school", "grow", "study", "still", "learn", "plant", "cover", "food", "sun",
    "four", "between", "state", "keep", "eye", "never", "last", "let", "thought", "city", "tree",
)
_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\"-:;()"
SPM_SPACE = "\u2581"  # SentencePiece's word-start marker


@dataclass(frozen=True)
class TinySpec:
    """Shape of one tiny model; every field can be overridden through ``write_model(**overrides)``.

    ``head_dim`` is written as ``attention.key_length``/``value_length`` (keep it a multiple of 32: quantized
    KV cache types need it). Fields that do not apply to an architecture are ignored for it.
    """

    arch: str
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    n_ctx: int = 4096
    n_vocab: int = 512
    rope_dim: int | None = None  # rope.dimension_count; None: head_dim
    rope_freq_base: float = 10000.0
    rms_eps: float = 1e-6
    # The matrices' type: "f32", "f16", or quantized like a real file — "q8_0", "q4_0", or "q4_0+q8_0" (Q4_0 for
    # the feed-forward weights and experts, Q8_0 for attention, embeddings and output, as llama-quantize keeps the
    # sensitive tensors at more bits). Norms, vectors and the MoE router stay F32; a matrix whose rows are not a
    # multiple of 32 stays in the float type (quantized blocks hold 32 weights).
    dtype: str = "f32"
    tied_output: bool = False  # True: no output.weight, llama.cpp reuses token_embd
    # MoE (qwen3moe, qwen35moe)
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0
    n_ff_shexp: int = 0  # qwen35moe shared expert
    # interleaved SWA (gemma3)
    swa: int = 0  # attention.sliding_window; 0 = no SWA
    swa_pattern: int | None = None  # attention.sliding_window_pattern; None = key absent (llama.cpp uses 6)
    # hybrid (qwen35moe)
    full_attention_interval: int = 0  # every n-th layer (1-based) is full attention, the rest recurrent
    ssm_conv_kernel: int = 4
    ssm_state_size: int = 32  # per-head K/V dim of the delta net
    ssm_group_count: int = 2  # K heads
    ssm_time_step_rank: int = 4  # V heads
    # qwen35moe MTP head: ``nextn_predict_layers`` blocks after the trunk (block_count = n_layer + mtp_layers),
    # each a full-attention MoE block plus the ``blk.N.nextn.*`` tensors (models/qwen35moe.cpp load_block_mtp)
    mtp_layers: int = 0
    # ``<arch>.pooling_type`` (llama.h ``enum llama_pooling_type``: 1 mean, 2 cls, 3 last): an embedding model, as
    # Qwen3-Embedding's converter writes it (3, last token); 0 = key absent (a chat model)
    pooling: int = 0
    chat_template: str = CHAT_TEMPLATE  # tokenizer.chat_template (a Qwen3-style one with a thinking switch, say)
    # for negative tests: tensors / keys left out of the file
    omit_tensors: tuple[str, ...] = field(default=())
    omit_keys: tuple[str, ...] = field(default=())

    # --- facts derived the way llama.cpp derives them (for estimators and test assertions) ---

    @property
    def ssm_inner_size(self) -> int:
        """``ssm.inner_size``; llama.cpp's qwen35moe graph assumes it equals state_size × time_step_rank."""
        return self.ssm_state_size * self.ssm_time_step_rank

    def is_recurrent(self, il: int) -> bool:
        """qwen35moe: ``il`` is a Gated DeltaNet layer (models/qwen35moe.cpp: ``(i+1) % interval != 0``)."""
        return self.arch == "qwen35moe" and (il + 1) % self.full_attention_interval != 0

    def is_swa(self, il: int) -> bool:
        """gemma3: ``il`` uses the sliding window (llama-hparams.cpp ``set_swa_pattern``, dense last)."""
        if self.arch != "gemma3" or self.swa <= 0:
            return False
        n = 6 if self.swa_pattern is None else self.swa_pattern
        return n == 0 or il % n < n - 1

    def kv_layers(self) -> list[int]:
        """Layers that own a KV cache (all but the recurrent ones)."""
        return [il for il in range(self.n_layer) if not self.is_recurrent(il)]


DEFAULTS: dict[str, TinySpec] = {
    # Dense llama: n_embd = n_head × head_dim (llama.cpp insists n_rot == head_dim for LLM_ARCH_LLAMA).
    "llama": TinySpec("llama", n_layer=4, n_embd=128, n_head=4, n_head_kv=2, head_dim=32, n_ff=128),
    # qwen3moe: every layer MoE, Q/K norms; n_ff (feed_forward_length) is informational only.
    "qwen3moe": TinySpec("qwen3moe", n_layer=4, n_embd=64, n_head=4, n_head_kv=2, head_dim=32, n_ff=128,
                         n_expert=8, n_expert_used=2, n_ff_exp=32),
    # gemma3: 12 layers with llama.cpp's default pattern 6 → layers 5 and 11 global, 10 SWA (as in the 270M).
    "gemma3": TinySpec("gemma3", n_layer=12, n_embd=64, n_head=4, n_head_kv=1, head_dim=32, n_ff=128,
                       swa=128),
    # qwen35moe (Qwen3.6-35B-A3B's arch): 8 layers, interval 4 → layers 3 and 7 full attention, 6 DeltaNet.
    "qwen35moe": TinySpec("qwen35moe", n_layer=8, n_embd=64, n_head=4, n_head_kv=2, head_dim=64, n_ff=128,
                          n_expert=8, n_expert_used=2, n_ff_exp=32, n_ff_shexp=32, full_attention_interval=4,
                          rope_freq_base=10_000_000.0),
}


def spec_for(arch: str, **overrides: Any) -> TinySpec:
    """The default spec of ``arch`` with ``overrides`` applied (raises on unknown arch or field)."""
    if arch not in DEFAULTS:
        raise ValueError(f"unknown arch {arch!r}; known: {', '.join(ARCHES)}")
    return dataclasses.replace(DEFAULTS[arch], **overrides)


# --------------------------------------------------------------------------------------------------------
# vocabulary


def build_vocab(n_vocab: int) -> tuple[list[str], list[float], list[int]]:
    """An SPM vocabulary: 5 control/unknown tokens, 256 byte tokens, single characters, then words.

    Byte tokens ``<0x00>``…``<0xFF>`` must all exist (llama-vocab.cpp ``byte_to_token`` throws otherwise, and
    the newline token is looked up through them). Scores only matter for prompt tokenization merges.
    """
    tokens: list[str] = [t for t, _ in _SPECIALS]
    types: list[int] = [int(k) for _, k in _SPECIALS]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [int(TokenType.BYTE)] * 256
    pieces = [SPM_SPACE, *_CHARS, *(SPM_SPACE + c for c in _CHARS[:26])]
    pieces += [SPM_SPACE + w for w in dict.fromkeys(_WORDS)]
    syllables = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "sa", "do", "fu")
    i = 0
    while len(tokens) + len(pieces) < n_vocab:  # filler words for large vocab overrides, still pronounceable
        a, b, c = syllables[i % 12], syllables[(i // 12) % 12], syllables[(i // 144) % 12]
        pieces.append(f"{SPM_SPACE}{a}{b}{c}{i // 1728 or ''}")
        i += 1
    minimum = len(tokens) + 1 + len(_CHARS)
    if n_vocab < minimum:
        raise ValueError(f"n_vocab must be >= {minimum} (specials, bytes, characters)")
    pieces = pieces[: n_vocab - len(tokens)]
    tokens += pieces
    types += [int(TokenType.NORMAL)] * len(pieces)
    scores = [0.0] * (len(_SPECIALS) + 256) + [-float(i) for i in range(len(pieces))]
    assert len(set(tokens)) == len(tokens), "duplicate token text"
    return tokens, scores, types


def text_token_ids(tokens: list[str], types: list[int]) -> list[int]:
    """Ids of whole-word tokens (word-start marker + at least two characters): what greedy output may use."""
    return [i for i, (tok, k) in enumerate(zip(tokens, types, strict=True))
            if k == int(TokenType.NORMAL) and tok.startswith(SPM_SPACE) and len(tok) > 2]


@dataclass(frozen=True)
class Vocab:
    """A tokenizer written instead of the generated SPM one: a real model's vocabulary (a BPE one with its merges
    and pre-tokenizer, say), for tests that need real special tokens or grammars a toy vocabulary cannot spell.

    Keys as llama.cpp reads them (``src/llama-vocab.cpp`` ``llama_vocab::impl::load``): ``tokenizer.ggml.model``
    ("gpt2" for byte-level BPE), ``tokenizer.ggml.pre``, ``tokens``, ``token_type``, ``merges`` (BPE) or
    ``scores`` (SPM)."""

    model: str
    tokens: list[str]
    types: list[int]
    eos_id: int
    bos_id: int | None = None
    pad_id: int | None = None
    pre: str | None = None
    merges: list[str] | None = None
    scores: list[float] | None = None

    def metadata(self) -> list[tuple[str, str, Any]]:
        kv: list[tuple[str, str, Any]] = [("tokenizer.ggml.model", "str", self.model)]
        if self.pre is not None:
            kv.append(("tokenizer.ggml.pre", "str", self.pre))
        kv += [("tokenizer.ggml.tokens", "arr", self.tokens), ("tokenizer.ggml.token_type", "arr", self.types)]
        if self.merges is not None:
            kv.append(("tokenizer.ggml.merges", "arr", self.merges))
        if self.scores is not None:
            kv.append(("tokenizer.ggml.scores", "arr", self.scores))
        kv.append(("tokenizer.ggml.eos_token_id", "u32", self.eos_id))
        if self.bos_id is not None:
            kv.append(("tokenizer.ggml.bos_token_id", "u32", self.bos_id))
        if self.pad_id is not None:
            kv.append(("tokenizer.ggml.padding_token_id", "u32", self.pad_id))
        return kv


# --------------------------------------------------------------------------------------------------------
# tensors


def _is_ffn(name: str) -> bool:
    return ".ffn_" in name


_Q4_0, _Q8_0 = GGMLQuantizationType.Q4_0, GGMLQuantizationType.Q8_0
_QUANT_OF: dict[str, Callable[[str], GGMLQuantizationType | None]] = {
    "q8_0": lambda _name: _Q8_0,
    "q4_0": lambda _name: _Q4_0,
    "q4_0+q8_0": lambda name: _Q4_0 if _is_ffn(name) else _Q8_0,
}
DTYPES = ("f32", "f16", *_QUANT_OF)


class _Tensors:
    """Collects named random tensors in ggml shape order; seeded so a spec + seed gives identical bytes."""

    def __init__(self, spec: TinySpec, seed: int) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(seed)
        self.items: dict[str, np.ndarray] = {}
        self.mat_dtype = np.float16 if spec.dtype == "f16" else np.float32
        self.quant: dict[str, GGMLQuantizationType] = {}  # name -> type, applied when the file is written

    def mat(self, name: str, *ne: int, scale: float | None = None) -> np.ndarray:
        """A weight matrix ``{ne0 (fan-in), ne1, ...}`` with N(0, 1/fan_in) entries."""
        std = scale if scale is not None else 1.0 / np.sqrt(ne[0])
        arr = (self.rng.standard_normal(tuple(reversed(ne))) * std).astype(self.mat_dtype)
        self.items[name] = arr
        qtype = _QUANT_OF.get(self.spec.dtype, lambda _n: None)(name)
        if qtype is not None and ne[0] % 32 == 0 and "ffn_gate_inp" not in name:
            self.quant[name] = qtype
        return arr

    def vec(self, name: str, *ne: int, fill: float | None = None, low: float = 0.0,
            high: float = 0.0) -> None:
        """An F32 tensor (norm weights, biases): constant ``fill`` or uniform(low, high)."""
        shape = tuple(reversed(ne))
        if fill is not None:
            arr = np.full(shape, fill, dtype=np.float32)
        else:
            arr = self.rng.uniform(low, high, shape).astype(np.float32)
        self.items[name] = arr


def _tensors_common(t: _Tensors, n_vocab: int, quiet_ids: Iterable[int]) -> None:
    """token_embd, output_norm and (unless tied) output, with the output rows of non-word tokens silenced.

    Zeroed rows give those tokens logit 0 while word tokens get random ± logits, so greedy decoding picks
    words instead of ``<0x23>``-style bytes, single letters or control tokens (docs/test-bed.md).
    """
    s = t.spec
    quiet = list(quiet_ids)
    embd = t.mat("token_embd.weight", s.n_embd, n_vocab, scale=1.0)
    t.vec("output_norm.weight", s.n_embd, fill=1.0)
    if not s.tied_output:
        out = t.mat("output.weight", s.n_embd, n_vocab, scale=4.0 / np.sqrt(s.n_embd))
        out[quiet, :] = 0
    else:
        # Tied: the rows also feed the input, so shrink rather than zero them; the RMS norm after the
        # embedding lookup undoes the scale on the input side, the logits stay near 0 on the output side.
        embd[quiet, :] *= 1e-3


def _attn(t: _Tensors, il: int, n_q: int, qk_norm: bool) -> None:
    """Separate Q/K/V/O projections (llama-model.cpp ``create_tensor_qkv``: ``{n_embd, n_q|n_kv}``)."""
    s = t.spec
    p = f"blk.{il}."
    n_kv = s.head_dim * s.n_head_kv
    t.mat(p + "attn_q.weight", s.n_embd, n_q)
    t.mat(p + "attn_k.weight", s.n_embd, n_kv)
    t.mat(p + "attn_v.weight", s.n_embd, n_kv)
    t.mat(p + "attn_output.weight", s.head_dim * s.n_head, s.n_embd)
    if qk_norm:
        t.vec(p + "attn_q_norm.weight", s.head_dim, fill=1.0)
        t.vec(p + "attn_k_norm.weight", s.head_dim, fill=1.0)


def _dense_ffn(t: _Tensors, il: int) -> None:
    s = t.spec
    p = f"blk.{il}."
    t.mat(p + "ffn_gate.weight", s.n_embd, s.n_ff)
    t.mat(p + "ffn_up.weight", s.n_embd, s.n_ff)
    t.mat(p + "ffn_down.weight", s.n_ff, s.n_embd)


def _moe_ffn(t: _Tensors, il: int) -> None:
    """Router ``{n_embd, n_expert}``, stacked experts ``{n_embd, n_ff_exp, n_expert}`` (down transposed)."""
    s = t.spec
    p = f"blk.{il}."
    t.mat(p + "ffn_gate_inp.weight", s.n_embd, s.n_expert)
    t.mat(p + "ffn_gate_exps.weight", s.n_embd, s.n_ff_exp, s.n_expert)
    t.mat(p + "ffn_up_exps.weight", s.n_embd, s.n_ff_exp, s.n_expert)
    t.mat(p + "ffn_down_exps.weight", s.n_ff_exp, s.n_embd, s.n_expert)


def _tensors_llama(t: _Tensors) -> None:
    """models/llama.cpp ``load_arch_tensors`` (dense branch, n_expert == 0)."""
    s = t.spec
    for il in range(s.n_layer):
        t.vec(f"blk.{il}.attn_norm.weight", s.n_embd, fill=1.0)
        _attn(t, il, s.head_dim * s.n_head, qk_norm=False)
        t.vec(f"blk.{il}.ffn_norm.weight", s.n_embd, fill=1.0)
        _dense_ffn(t, il)


def _tensors_qwen3moe(t: _Tensors) -> None:
    """models/qwen3moe.cpp ``load_arch_tensors``: attention with Q/K norm, every layer MoE."""
    s = t.spec
    for il in range(s.n_layer):
        t.vec(f"blk.{il}.attn_norm.weight", s.n_embd, fill=1.0)
        _attn(t, il, s.head_dim * s.n_head, qk_norm=True)
        t.vec(f"blk.{il}.ffn_norm.weight", s.n_embd, fill=1.0)
        _moe_ffn(t, il)


def _tensors_gemma3(t: _Tensors) -> None:
    """models/gemma3.cpp ``load_arch_tensors``: pre and post norms around attention and FFN, Q/K norms."""
    s = t.spec
    for il in range(s.n_layer):
        p = f"blk.{il}."
        t.vec(p + "attn_norm.weight", s.n_embd, fill=1.0)
        _attn(t, il, s.head_dim * s.n_head, qk_norm=True)
        t.vec(p + "post_attention_norm.weight", s.n_embd, fill=1.0)
        t.vec(p + "ffn_norm.weight", s.n_embd, fill=1.0)
        _dense_ffn(t, il)
        t.vec(p + "post_ffw_norm.weight", s.n_embd, fill=1.0)


def _tensors_qwen35moe(t: _Tensors) -> None:
    """models/qwen35moe.cpp ``load_block_trunk``: gated attention or Gated DeltaNet, then MoE + shared expert.

    Full-attention layers project Q and its output gate together (``{n_embd, head_dim·n_head·2}``). DeltaNet
    layers: key_dim = state·groups, value_dim = state·time_step_rank, conv over 2·key_dim + value_dim
    channels.
    """
    s = t.spec
    key_dim = s.ssm_state_size * s.ssm_group_count
    value_dim = s.ssm_state_size * s.ssm_time_step_rank
    conv_dim = 2 * key_dim + value_dim
    for il in range(s.n_layer):
        p = f"blk.{il}."
        t.vec(p + "attn_norm.weight", s.n_embd, fill=1.0)
        t.vec(p + "post_attention_norm.weight", s.n_embd, fill=1.0)
        if not s.is_recurrent(il):
            _attn(t, il, s.head_dim * s.n_head * 2, qk_norm=True)
        else:
            t.mat(p + "attn_qkv.weight", s.n_embd, conv_dim)
            t.mat(p + "attn_gate.weight", s.n_embd, value_dim)
            # ssm_conv1d stays F32 (ggml_ssm_conv); ssm_a = -exp(A_log) is a negative decay rate.
            t.vec(p + "ssm_conv1d.weight", s.ssm_conv_kernel, conv_dim, low=-0.5, high=0.5)
            t.vec(p + "ssm_dt.bias", s.ssm_time_step_rank, low=-0.5, high=0.5)
            t.vec(p + "ssm_a", s.ssm_time_step_rank, low=-1.5, high=-0.5)
            t.mat(p + "ssm_beta.weight", s.n_embd, s.ssm_time_step_rank)
            t.mat(p + "ssm_alpha.weight", s.n_embd, s.ssm_time_step_rank)
            t.vec(p + "ssm_norm.weight", s.ssm_state_size, fill=1.0)
            t.mat(p + "ssm_out.weight", value_dim, s.n_embd)
        _moe_ffn(t, il)
        t.vec(p + "ffn_gate_inp_shexp.weight", s.n_embd, low=-0.1, high=0.1)
        t.mat(p + "ffn_gate_shexp.weight", s.n_embd, s.n_ff_shexp)
        t.mat(p + "ffn_up_shexp.weight", s.n_embd, s.n_ff_shexp)
        t.mat(p + "ffn_down_shexp.weight", s.n_ff_shexp, s.n_embd)
    for il in range(s.n_layer, s.n_layer + s.mtp_layers):
        _mtp_block(t, il)


def _mtp_block(t: _Tensors, il: int) -> None:
    """models/qwen35moe.cpp ``load_block_mtp``: a gated full-attention block with MoE + shared expert, then the
    nextn tensors (llama-arch.cpp LLM_TENSOR_NEXTN_*): ``eh_proj {2·n_embd, n_embd}`` joins the normed token
    embedding and the trunk's hidden state, ``enorm``/``hnorm`` (required, graph_mtp asserts them) and
    ``shared_head_norm``. ``embed_tokens`` and ``shared_head_head`` are optional there (the model's token_embd
    and output serve) and left out, as in the published Qwen3.6 MTP GGUFs' smaller files."""
    s = t.spec
    p = f"blk.{il}."
    t.vec(p + "attn_norm.weight", s.n_embd, fill=1.0)
    t.vec(p + "post_attention_norm.weight", s.n_embd, fill=1.0)
    _attn(t, il, s.head_dim * s.n_head * 2, qk_norm=True)
    _moe_ffn(t, il)
    t.vec(p + "ffn_gate_inp_shexp.weight", s.n_embd, low=-0.1, high=0.1)
    t.mat(p + "ffn_gate_shexp.weight", s.n_embd, s.n_ff_shexp)
    t.mat(p + "ffn_up_shexp.weight", s.n_embd, s.n_ff_shexp)
    t.mat(p + "ffn_down_shexp.weight", s.n_ff_shexp, s.n_embd)
    t.mat(p + "nextn.eh_proj.weight", 2 * s.n_embd, s.n_embd)
    t.vec(p + "nextn.enorm.weight", s.n_embd, fill=1.0)
    t.vec(p + "nextn.hnorm.weight", s.n_embd, fill=1.0)
    t.vec(p + "nextn.shared_head_norm.weight", s.n_embd, fill=1.0)


_ARCH_TENSORS: dict[str, Callable[[_Tensors], None]] = {
    "llama": _tensors_llama,
    "qwen3moe": _tensors_qwen3moe,
    "gemma3": _tensors_gemma3,
    "qwen35moe": _tensors_qwen35moe,
}


# --------------------------------------------------------------------------------------------------------
# metadata


def _mrope_sections(n_rot: int) -> list[int]:
    """Four IMRoPE sections summing to n_rot/2, in Qwen's 11:11:10 proportion ([11, 11, 10, 0] for 64)."""
    half = n_rot // 2
    a = half * 11 // 32
    return [a, a, half - 2 * a, 0]


def _metadata(spec: TinySpec, vocab: Vocab | None = None) -> list[tuple[str, str, Any]]:
    """(key, kind, value) triples; kind is u32/f32/str/bool/arr. Keys per llama-arch.cpp's LLM_KV table."""
    a = spec.arch
    n_rot = spec.rope_dim if spec.rope_dim is not None else spec.head_dim
    kv: list[tuple[str, str, Any]] = [
        ("general.name", "str", f"tiny-{a}"),
        (f"{a}.context_length", "u32", spec.n_ctx),
        (f"{a}.embedding_length", "u32", spec.n_embd),
        (f"{a}.block_count", "u32", spec.n_layer + spec.mtp_layers),
        (f"{a}.feed_forward_length", "u32", spec.n_ff),
        (f"{a}.attention.head_count", "u32", spec.n_head),
        (f"{a}.attention.head_count_kv", "u32", spec.n_head_kv),
        (f"{a}.attention.key_length", "u32", spec.head_dim),
        (f"{a}.attention.value_length", "u32", spec.head_dim),
        (f"{a}.attention.layer_norm_rms_epsilon", "f32", spec.rms_eps),
        (f"{a}.rope.dimension_count", "u32", n_rot),
        (f"{a}.rope.freq_base", "f32", spec.rope_freq_base),
    ]
    if a in ("qwen3moe", "qwen35moe"):
        kv += [
            (f"{a}.expert_count", "u32", spec.n_expert),
            (f"{a}.expert_used_count", "u32", spec.n_expert_used),
            (f"{a}.expert_feed_forward_length", "u32", spec.n_ff_exp),
        ]
    if a == "gemma3" and spec.swa > 0:
        kv.append((f"{a}.attention.sliding_window", "u32", spec.swa))
        if spec.swa_pattern is not None:
            kv.append((f"{a}.attention.sliding_window_pattern", "u32", spec.swa_pattern))
    if spec.pooling:
        kv.append((f"{a}.pooling_type", "u32", spec.pooling))
    if a == "qwen35moe":
        kv += [
            (f"{a}.expert_shared_feed_forward_length", "u32", spec.n_ff_shexp),
            (f"{a}.full_attention_interval", "u32", spec.full_attention_interval),
            (f"{a}.rope.dimension_sections", "arr", _mrope_sections(n_rot)),
            (f"{a}.ssm.conv_kernel", "u32", spec.ssm_conv_kernel),
            (f"{a}.ssm.state_size", "u32", spec.ssm_state_size),
            (f"{a}.ssm.group_count", "u32", spec.ssm_group_count),
            (f"{a}.ssm.time_step_rank", "u32", spec.ssm_time_step_rank),
            (f"{a}.ssm.inner_size", "u32", spec.ssm_inner_size),
        ]
        if spec.mtp_layers:
            kv.append((f"{a}.nextn_predict_layers", "u32", spec.mtp_layers))
    if vocab is not None:
        kv += vocab.metadata()
    else:
        tokens, scores, types = build_vocab(spec.n_vocab)
        kv += [
            ("tokenizer.ggml.model", "str", "llama"),
            ("tokenizer.ggml.tokens", "arr", tokens),
            ("tokenizer.ggml.scores", "arr", scores),
            ("tokenizer.ggml.token_type", "arr", types),
            ("tokenizer.ggml.bos_token_id", "u32", 1),
            ("tokenizer.ggml.eos_token_id", "u32", IM_END_ID),
            ("tokenizer.ggml.unknown_token_id", "u32", 0),
        ]
    kv += [
        ("tokenizer.ggml.add_bos_token", "bool", False),
        ("tokenizer.chat_template", "str", spec.chat_template),
    ]
    return kv


def _check(spec: TinySpec) -> None:
    """Fail early, in Python, on shapes llama.cpp would reject or mis-handle."""
    if spec.arch not in DEFAULTS:
        raise ValueError(f"unknown arch {spec.arch!r}")
    if spec.n_head % spec.n_head_kv:
        raise ValueError("n_head must be a multiple of n_head_kv")
    if spec.arch == "llama" and spec.rope_dim not in (None, spec.head_dim):
        raise ValueError("llama requires rope_dim == head_dim (llama-model.cpp 'invalid n_rot')")
    if spec.arch in ("qwen3moe", "qwen35moe") and not 0 < spec.n_expert_used <= spec.n_expert:
        raise ValueError("MoE needs 0 < n_expert_used <= n_expert")
    if spec.arch == "qwen35moe":
        if spec.full_attention_interval < 1:
            raise ValueError("qwen35moe needs full_attention_interval >= 1")
        if spec.mtp_layers not in (0, 1):
            raise ValueError("qwen35moe's MTP graph supports exactly one nextn block (graph_mtp asserts it)")
        if spec.ssm_time_step_rank % spec.ssm_group_count:
            raise ValueError("ssm_time_step_rank (V heads) must be a multiple of ssm_group_count (K heads)")
    if spec.dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}")


# A hook that sets chosen weights after the random ones are drawn (in float, before quantization): the tensors by
# name (numpy arrays in reversed ggml order, as ``_Tensors`` holds them) and the spec.
WeightHook = Callable[[dict[str, np.ndarray], TinySpec], None]


def write_model(arch: str, path: Path, *, seed: int = 0, vocab: Vocab | None = None,
                weights: WeightHook | None = None, **overrides: Any) -> Path:
    """Write a tiny random ``arch`` model to ``path`` (TinySpec fields as ``overrides``) and return ``path``.

    Deterministic for a given (arch, overrides, seed). ``omit_tensors``/``omit_keys`` leave named items out,
    for tests of llama-server's load errors. ``vocab``: a real tokenizer instead of the generated one (its size
    sets ``n_vocab``; no output rows are silenced: ``weights`` decides what the model says). ``weights``: chosen
    weights over the random ones (tests/support/qwen_chat_model.py designs a model that answers that way).
    """
    if vocab is not None:
        overrides["n_vocab"] = len(vocab.tokens)
    spec = spec_for(arch, **overrides)
    _check(spec)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    if vocab is None:
        tokens, _, types = build_vocab(spec.n_vocab)
        words = set(text_token_ids(tokens, types))
        quiet = [i for i in range(len(tokens)) if i not in words]
    else:
        quiet = []
    t = _Tensors(spec, seed)
    _tensors_common(t, spec.n_vocab, quiet)
    _ARCH_TENSORS[arch](t)
    if weights is not None:
        weights(t.items, spec)

    writer = GGUFWriter(path, arch)  # writes general.architecture (and general.alignment default)
    try:
        for key, kind, value in _metadata(spec, vocab):
            if key in spec.omit_keys:
                continue
            if kind == "u32":
                writer.add_uint32(key, int(value))
            elif kind == "f32":
                writer.add_float32(key, float(value))
            elif kind == "bool":
                writer.add_bool(key, bool(value))
            elif kind == "str":
                writer.add_string(key, str(value))
            else:
                writer.add_array(key, value)
        for name, arr in t.items.items():
            if name in spec.omit_tensors:
                continue
            qtype = t.quant.get(name)
            if qtype is None:
                writer.add_tensor(name, arr)
            else:  # gguf-py's reference quantizers (the same block layouts as ggml-common.h)
                writer.add_tensor(name, quantize(arr.astype(np.float32), qtype), raw_dtype=qtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    return path


def write_all(directory: Path, *, seed: int = 0) -> dict[str, Path]:
    """Every architecture's default model under ``directory`` as ``tiny-<arch>.gguf``."""
    return {a: write_model(a, Path(directory) / f"tiny-{a}.gguf", seed=seed) for a in ARCHES}
