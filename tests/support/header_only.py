"""GGUF files that carry the real header of a big Qwen3.6 model, and raw hand-built headers for hostile tests.

1. Header-only files (``write_header_only``, ``qwen36_35b_a3b_header``, ``qwen36_27b_header``): the metadata, the full
   248,320-token tokenizer and every tensor info with the real shape and a quant-type mix near the published files,
   but no tensor data: the file ends after the header and its alignment padding. They set ``qwenkit.header_only``
   (``bootstrap.plan.gguf_header.HEADER_ONLY_KEY``) so the product's reader waives its "tensor data inside the file"
   check.
   llama-server cannot load them, and ``gguf.GGUFReader`` refuses them (it maps tensor data); they are for readers
   and planners. ``with_data=True`` writes zero-filled tensor data instead (a loadable file for small specs: the
   benchmark's tiny-weight model with a full Qwen tokenizer).
2. ``RawGGUF``: a byte-level builder with every count, length and type under the test's control, to make the
   truncated and hostile variants a writer library refuses to produce.

Ground truth: llama.cpp b11434 ``src/models/qwen35moe.cpp`` / ``qwen35.cpp`` (``load_arch_tensors``: names and
shapes), ``src/llama-arch.cpp`` (key and tensor names), ``src/llama-quant.cpp`` (Q4_K_M type choices),
``conversion/qwen.py`` (an MTP-capable convert writes ``block_count`` = layers + 1 and ``nextn_predict_layers`` 1;
llama.cpp's ``n_layer = block_count - nextn_predict_layers``). Facts on the models: docs/models.md.
Shapes are ggml order ``{ne0, ne1, ...}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFValueType, GGUFWriter, TokenType

from tests.support import testbed

HEADER_ONLY_KEY = "qwenkit.header_only"  # mirrors bootstrap.plan.gguf_header.HEADER_ONLY_KEY
QWEN_VOCAB = 248_320
QWEN_MERGES = 247_000  # "~247k merges" (docs/test-bed.md): the count that makes GGUFReader slow, not the exact one

# (block size, bytes per block): ggml-common.h; also in gguf.GGML_QUANT_SIZES
_SIZES = {
    "F32": (1, 4), "F16": (1, 2), "Q8_0": (32, 34), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
}

# Qwen chat template, shortened: what matters here is a multi-KB string key like the real one.
_CHAT_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}"
) * 20


def nbytes_of(ne: tuple[int, ...], type_name: str) -> int:
    block, size = _SIZES[type_name]
    n = 1
    for d in ne:
        n *= d
    return n // block * size


@dataclass(frozen=True)
class QwenSpec:
    """One Qwen3.5/3.6 model's header: hyperparameters, vocabulary size and the quant policy's name."""

    label: str
    arch: str  # "qwen35moe" or "qwen35"
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int = 0  # dense FFN (qwen35)
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0
    n_ff_shexp: int = 0
    full_attention_interval: int = 4
    ssm_conv_kernel: int = 4
    ssm_state_size: int = 128
    ssm_group_count: int = 16
    ssm_time_step_rank: int = 32
    n_vocab: int = QWEN_VOCAB
    n_merges: int = QWEN_MERGES
    n_ctx: int = 262_144
    rope_dim: int = 64
    nextn_predict_layers: int = 1  # newer converts: block_count = n_layer + 1, MTP tensors absent from base files
    mtp_tensors: bool = False  # an "-MTP-GGUF" file: the nextn blocks' tensors are present (load_block_mtp)
    quant: str = "UD-Q4_K_XL"  # a key of QUANT_POLICIES
    file_type: int = 15  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    extra: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def block_count(self) -> int:
        return self.n_layer + self.nextn_predict_layers

    def is_recurrent(self, il: int) -> bool:
        """Gated DeltaNet layer (qwen35*.cpp: ``(i + 1) % full_attention_interval != 0``)."""
        return (il + 1) % self.full_attention_interval != 0


QWEN36_35B_A3B = QwenSpec(
    "Qwen3.6-35B-A3B-UD-Q4_K_XL", "qwen35moe", n_layer=40, n_embd=2048, n_head=16, n_head_kv=2, head_dim=256,
    n_expert=256, n_expert_used=8, n_ff_exp=512, n_ff_shexp=512, ssm_time_step_rank=32, quant="UD-Q4_K_XL",
)
# The same model from an "-MTP-GGUF" repo: the nextn block's tensors are in the file.
QWEN36_35B_A3B_MTP = replace(QWEN36_35B_A3B, label="Qwen3.6-35B-A3B-MTP-UD-Q4_K_XL", mtp_tensors=True)
QWEN36_27B = QwenSpec(
    "Qwen3.6-27B-Q4_K_M", "qwen35", n_layer=64, n_embd=5120, n_head=24, n_head_kv=4, head_dim=256, n_ff=17408,
    ssm_time_step_rank=48, quant="Q4_K_M",
)
# A tiny-weight qwen35moe with the full Qwen tokenizer (benchmark; loadable by gguf.GGUFReader with data).
TINY_QWEN_VOCAB = QwenSpec(
    "tiny-qwen35moe-full-vocab", "qwen35moe", n_layer=4, n_embd=64, n_head=4, n_head_kv=2, head_dim=16,
    n_expert=4, n_expert_used=2, n_ff_exp=64, n_ff_shexp=64, ssm_state_size=32, ssm_group_count=2,
    ssm_time_step_rank=4, quant="F16", rope_dim=16, file_type=1,
)


# --------------------------------------------------------------------------------------------------------------
# quant policies: (role, layer, spec) -> type name


def _more_bits(i: int, n: int) -> bool:
    """llama-quant.cpp ``use_more_bits``: first and last eighth, and every third layer in between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


_NORMS = {"attn_norm", "post_attention_norm", "attn_q_norm", "attn_k_norm", "ssm_dt", "ssm_a", "ssm_norm",
          "ffn_gate_inp_shexp", "output_norm", "ssm_conv1d", "ssm_alpha", "ssm_beta", "ffn_gate_inp",
          "nextn_enorm", "nextn_hnorm", "nextn_shared_head_norm"}


def _ud_q4_k_xl(role: str, il: int, spec: QwenSpec) -> str:
    """Near Unsloth's UD-Q4_K_XL split (docs/models.md): routed experts Q4_K (down Q5_K, Q6_K in 6 layers),
    attention, DeltaNet, shared expert, token_embd and output Q8_0; routers, norms and alpha/beta F32."""
    if role in _NORMS:
        return "F32"
    if role in ("ffn_gate_exps", "ffn_up_exps"):
        return "Q4_K"
    if role == "ffn_down_exps":
        return "Q6_K" if il < 3 or il >= spec.n_layer - 3 else "Q5_K"
    return "Q8_0"


def _q4_k_m(role: str, il: int, spec: QwenSpec) -> str:
    """llama-quant.cpp for LLAMA_FTYPE_MOSTLY_Q4_K_M: Q4_K base; attn_v and ffn_down Q6_K on ``use_more_bits``
    layers (counted among the tensors of that kind), attn_qkv/attn_gate Q5_K, output Q6_K; 1-D tensors F32."""
    if role in _NORMS:
        return "F32"
    if role == "output":
        return "Q6_K"
    if role in ("attn_qkv", "attn_gate"):  # attn_gate as part of the QKV category: lands on the published total
        return "Q5_K"
    if role == "attn_v":
        kv_layers = [i for i in range(spec.n_layer) if not spec.is_recurrent(i)]
        return "Q6_K" if _more_bits(kv_layers.index(il), len(kv_layers)) else "Q4_K"
    if role == "ffn_down":
        return "Q6_K" if _more_bits(il, spec.n_layer) else "Q4_K"
    return "Q4_K"


def _f16(role: str, il: int, spec: QwenSpec) -> str:
    return "F32" if role in _NORMS else "F16"


QUANT_POLICIES: dict[str, Callable[[str, int, QwenSpec], str]] = {
    "UD-Q4_K_XL": _ud_q4_k_xl, "Q4_K_M": _q4_k_m, "F16": _f16,
}


# --------------------------------------------------------------------------------------------------------------
# tensors and metadata


def tensor_list(spec: QwenSpec) -> list[tuple[str, tuple[int, ...], str, str]]:
    """(name, ne, type name, role) for every tensor of ``spec``, in llama.cpp's load order."""
    quant = QUANT_POLICIES[spec.quant]
    out: list[tuple[str, tuple[int, ...], str, str]] = []

    def add(role: str, il: int, name: str, *ne: int) -> None:
        out.append((name, tuple(ne), quant(role, il, spec), role))

    e, v = spec.n_embd, spec.n_vocab
    add("token_embd", -1, "token_embd.weight", e, v)
    add("output_norm", -1, "output_norm.weight", e)
    add("output", -1, "output.weight", e, v)
    key_dim = spec.ssm_state_size * spec.ssm_group_count
    value_dim = spec.ssm_state_size * spec.ssm_time_step_rank
    conv_dim = 2 * key_dim + value_dim
    q_dim, kv_dim = spec.head_dim * spec.n_head, spec.head_dim * spec.n_head_kv
    for il in range(spec.n_layer):
        p = f"blk.{il}."
        add("attn_norm", il, p + "attn_norm.weight", e)
        add("post_attention_norm", il, p + "post_attention_norm.weight", e)
        if not spec.is_recurrent(il):
            add("attn_q", il, p + "attn_q.weight", e, 2 * q_dim)  # Q and its output gate together
            add("attn_k", il, p + "attn_k.weight", e, kv_dim)
            add("attn_v", il, p + "attn_v.weight", e, kv_dim)
            add("attn_output", il, p + "attn_output.weight", q_dim, e)
            add("attn_q_norm", il, p + "attn_q_norm.weight", spec.head_dim)
            add("attn_k_norm", il, p + "attn_k_norm.weight", spec.head_dim)
        else:
            add("attn_qkv", il, p + "attn_qkv.weight", e, conv_dim)
            add("attn_gate", il, p + "attn_gate.weight", e, value_dim)
            add("ssm_conv1d", il, p + "ssm_conv1d.weight", spec.ssm_conv_kernel, conv_dim)
            add("ssm_dt", il, p + "ssm_dt.bias", spec.ssm_time_step_rank)
            add("ssm_a", il, p + "ssm_a", spec.ssm_time_step_rank)
            add("ssm_beta", il, p + "ssm_beta.weight", e, spec.ssm_time_step_rank)
            add("ssm_alpha", il, p + "ssm_alpha.weight", e, spec.ssm_time_step_rank)
            add("ssm_norm", il, p + "ssm_norm.weight", spec.ssm_state_size)
            add("ssm_out", il, p + "ssm_out.weight", value_dim, e)
        if spec.arch == "qwen35moe":
            _moe_ffn(spec, add, il)
        else:
            add("ffn_gate", il, p + "ffn_gate.weight", e, spec.n_ff)
            add("ffn_up", il, p + "ffn_up.weight", e, spec.n_ff)
            add("ffn_down", il, p + "ffn_down.weight", spec.n_ff, e)
    if spec.mtp_tensors:
        _mtp_tensors(spec, add)
    return out


def _moe_ffn(spec: QwenSpec, add: Callable[..., None], il: int) -> None:
    """A qwen35moe block's FFN: the router, the routed experts and the shared expert (also the MTP block's)."""
    e, p = spec.n_embd, f"blk.{il}."
    add("ffn_gate_inp", il, p + "ffn_gate_inp.weight", e, spec.n_expert)
    add("ffn_gate_exps", il, p + "ffn_gate_exps.weight", e, spec.n_ff_exp, spec.n_expert)
    add("ffn_up_exps", il, p + "ffn_up_exps.weight", e, spec.n_ff_exp, spec.n_expert)
    add("ffn_down_exps", il, p + "ffn_down_exps.weight", spec.n_ff_exp, e, spec.n_expert)
    add("ffn_gate_inp_shexp", il, p + "ffn_gate_inp_shexp.weight", e)
    add("ffn_gate_shexp", il, p + "ffn_gate_shexp.weight", e, spec.n_ff_shexp)
    add("ffn_up_shexp", il, p + "ffn_up_shexp.weight", e, spec.n_ff_shexp)
    add("ffn_down_shexp", il, p + "ffn_down_shexp.weight", spec.n_ff_shexp, e)


def _mtp_tensors(spec: QwenSpec, add: Callable[..., None]) -> None:
    """models/qwen35moe.cpp ``load_block_mtp``: a gated full-attention MoE block plus the nextn tensors
    (``eh_proj {2·n_embd, n_embd}``, ``enorm``, ``hnorm``, ``shared_head_norm``; embed_tokens and
    shared_head_head are optional and absent, the model's own serve)."""
    e = spec.n_embd
    q_dim, kv_dim = spec.head_dim * spec.n_head, spec.head_dim * spec.n_head_kv
    for il in range(spec.n_layer, spec.block_count):
        p = f"blk.{il}."
        add("attn_norm", il, p + "attn_norm.weight", e)
        add("post_attention_norm", il, p + "post_attention_norm.weight", e)
        add("attn_q", il, p + "attn_q.weight", e, 2 * q_dim)
        add("attn_k", il, p + "attn_k.weight", e, kv_dim)
        add("attn_v", il, p + "attn_v.weight", e, kv_dim)
        add("attn_output", il, p + "attn_output.weight", q_dim, e)
        add("attn_q_norm", il, p + "attn_q_norm.weight", spec.head_dim)
        add("attn_k_norm", il, p + "attn_k_norm.weight", spec.head_dim)
        _moe_ffn(spec, add, il)
        add("nextn_eh_proj", il, p + "nextn.eh_proj.weight", 2 * e, e)
        add("nextn_enorm", il, p + "nextn.enorm.weight", e)
        add("nextn_hnorm", il, p + "nextn.hnorm.weight", e)
        add("nextn_shared_head_norm", il, p + "nextn.shared_head_norm.weight", e)


def qwen_vocab(n_vocab: int, n_merges: int) -> tuple[list[str], list[int], list[str]]:
    """A byte-level BPE vocabulary shaped like Qwen's: 256 byte symbols, merged pieces, then the special tokens
    at Qwen's ids (``<|endoftext|>`` 248044, ``<|im_start|>`` 248045, ``<|im_end|>`` 248046; docs/models.md)."""
    symbols = [chr(c) for c in range(0x21, 0x7F)] + [chr(c) for c in range(0xA1, 0x100) if c != 0xAD]
    symbols += [chr(0x100 + i) for i in range(256 - len(symbols))]  # GPT-2 bytes_to_unicode shape
    tokens = list(symbols)
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while len(tokens) < n_vocab:
        word, k = [], i
        while True:
            word.append(alphabet[k % 26])
            k //= 26
            if k == 0:
                break
        suffix = ("ings", "ers", "ations", "edly", "nesses", "ments", "ic")[i % 7]  # header ~10 MB, as the real one
        tokens.append(("\u0120" if i % 3 == 0 else "") + "".join(word) + suffix)
        i += 1
    types = [int(TokenType.NORMAL)] * n_vocab
    specials = {248044: "<|endoftext|>", 248045: "<|im_start|>", 248046: "<|im_end|>", 248068: "<think>",
                248069: "</think>"}
    for tid, text in specials.items():
        if tid < n_vocab:
            tokens[tid] = text
            types[tid] = int(TokenType.CONTROL)
    merges = [f"{tokens[256 + j][:2]} {tokens[256 + j][2:] or 'x'}" for j in range(min(n_merges, n_vocab - 256))]
    return tokens, types, merges


def _metadata(writer: GGUFWriter, spec: QwenSpec, header_only: bool) -> None:
    a = spec.arch
    w = writer
    w.add_string("general.type", "model")
    w.add_string("general.name", spec.label)
    w.add_uint32("general.file_type", spec.file_type)
    w.add_uint32("general.quantization_version", 2)
    if header_only:
        w.add_bool(HEADER_ONLY_KEY, True)
    w.add_uint32(f"{a}.block_count", spec.block_count)
    w.add_uint32(f"{a}.nextn_predict_layers", spec.nextn_predict_layers)
    w.add_uint32(f"{a}.context_length", spec.n_ctx)
    w.add_uint32(f"{a}.embedding_length", spec.n_embd)
    if spec.n_ff:
        w.add_uint32(f"{a}.feed_forward_length", spec.n_ff)
    w.add_uint32(f"{a}.attention.head_count", spec.n_head)
    w.add_uint32(f"{a}.attention.head_count_kv", spec.n_head_kv)
    w.add_uint32(f"{a}.attention.key_length", spec.head_dim)
    w.add_uint32(f"{a}.attention.value_length", spec.head_dim)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_uint32(f"{a}.rope.dimension_count", spec.rope_dim)
    w.add_float32(f"{a}.rope.freq_base", 10_000_000.0)
    w.add_array(f"{a}.rope.dimension_sections", [11, 11, 10, 0])
    if spec.n_expert:
        w.add_uint32(f"{a}.expert_count", spec.n_expert)
        w.add_uint32(f"{a}.expert_used_count", spec.n_expert_used)
        w.add_uint32(f"{a}.expert_feed_forward_length", spec.n_ff_exp)
        w.add_uint32(f"{a}.expert_shared_feed_forward_length", spec.n_ff_shexp)
    w.add_uint32(f"{a}.full_attention_interval", spec.full_attention_interval)
    w.add_uint32(f"{a}.ssm.conv_kernel", spec.ssm_conv_kernel)
    w.add_uint32(f"{a}.ssm.state_size", spec.ssm_state_size)
    w.add_uint32(f"{a}.ssm.group_count", spec.ssm_group_count)
    w.add_uint32(f"{a}.ssm.time_step_rank", spec.ssm_time_step_rank)
    w.add_uint32(f"{a}.ssm.inner_size", spec.ssm_state_size * spec.ssm_time_step_rank)
    for key, value in spec.extra:
        w.add_key_value(key, value, GGUFValueType.get_type(value))
    tokens, types, merges = qwen_vocab(spec.n_vocab, spec.n_merges)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "qwen35")
    w.add_key_value("tokenizer.ggml.tokens", tokens, GGUFValueType.ARRAY, GGUFValueType.STRING)
    w.add_key_value("tokenizer.ggml.token_type", types, GGUFValueType.ARRAY, GGUFValueType.INT32)
    w.add_key_value("tokenizer.ggml.merges", merges, GGUFValueType.ARRAY, GGUFValueType.STRING)
    w.add_uint32("tokenizer.ggml.eos_token_id", min(248046, spec.n_vocab - 1))
    w.add_uint32("tokenizer.ggml.padding_token_id", min(248044, spec.n_vocab - 1))
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_string("tokenizer.chat_template", _CHAT_TEMPLATE)


# Tensor data for ``write_header_only``: (name, type name, role, bytes) -> the tensor's bytes, in chunks.
Fill = Callable[[str, str, str, int], Iterable[bytes]]


def write_header_only(path: Path, spec: QwenSpec, *, with_data: bool = False, fill: Fill | None = None) -> Path:
    """Write ``spec``'s GGUF to ``path`` atomically: header only (default), or with tensor data: zeros, or what
    ``fill`` yields for each tensor (``scripts/gpu_proof.py``: random blocks, repeated)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tensors = tensor_list(spec)
    writer = GGUFWriter(tmp, spec.arch)
    try:
        _metadata(writer, spec, header_only=not (with_data or fill is not None))
        for name, ne, type_name, _ in tensors:
            qtype = GGMLQuantizationType[type_name]
            # numpy order (ne reversed): the writer reverses it back; a non-uint8 dtype keeps the shape as given
            writer.add_tensor_info(name, tuple(reversed(ne)), np.dtype(np.float32), nbytes_of(ne, type_name),
                                   raw_dtype=qtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        assert writer.fout is not None
        fout = writer.fout[0]
        writer.write_padding(fout, fout.tell())
        if with_data or fill is not None:
            for i, (name, ne, type_name, role) in enumerate(tensors):
                n = nbytes_of(ne, type_name)
                if fill is None:
                    fout.write(bytes(n))
                else:
                    written = 0
                    for chunk in fill(name, type_name, role, n):
                        fout.write(chunk)
                        written += len(chunk)
                    if written != n:
                        raise ValueError(f"{name}: {written} bytes of data for a {n}-byte tensor")
                if i + 1 < len(tensors):
                    writer.write_padding(fout, n)
        fout.flush()
        os.fsync(fout.fileno())
    finally:
        writer.close()
    os.replace(tmp, path)
    return path


def _cache_root() -> Path:
    return testbed.cache_dir() / "headers"


def cached_header(spec: QwenSpec, *, with_data: bool = False) -> Path:
    """``spec``'s file in the test-bed cache, keyed by its content (spec + this module's source); written once."""
    key = hashlib.sha256(Path(__file__).read_bytes())
    key.update(json.dumps([asdict(spec), with_data], default=str).encode())
    path = _cache_root() / f"{spec.label}-{key.hexdigest()[:12]}.gguf"
    if not path.is_file():
        write_header_only(path, spec, with_data=with_data)
        for stale in path.parent.glob(f"{spec.label}-*.gguf"):  # files of earlier generator versions
            if stale != path:
                stale.unlink(missing_ok=True)
    return path


def _place(src: Path, path: Path, default_name: str) -> Path:
    """Hard-link (else copy) a cached file to ``path`` (a directory gets ``default_name`` inside)."""
    path = Path(path)
    target = path / default_name if path.is_dir() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        target.unlink()
    try:
        os.link(src, target)
    except OSError:
        shutil.copyfile(src, target)
    return target


def qwen36_35b_a3b_header(path: Path) -> Path:
    """Qwen3.6-35B-A3B UD-Q4_K_XL header-only file at ``path`` (or inside it, when a directory)."""
    return _place(cached_header(QWEN36_35B_A3B), path, "Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf")


def qwen36_35b_a3b_mtp_header(path: Path) -> Path:
    """Qwen3.6-35B-A3B UD-Q4_K_XL with its MTP head (header only) at ``path`` (or inside it, when a directory)."""
    return _place(cached_header(QWEN36_35B_A3B_MTP), path, "Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf")


def qwen36_27b_header(path: Path) -> Path:
    """Qwen3.6-27B Q4_K_M header-only file at ``path`` (or inside it, when a directory)."""
    return _place(cached_header(QWEN36_27B), path, "Qwen3.6-27B-Q4_K_M.gguf")


def tiny_full_vocab_model(path: Path) -> Path:
    """A tiny-weight qwen35moe with the full Qwen tokenizer and real (zero) tensor data: GGUFReader loads it."""
    return _place(cached_header(TINY_QWEN_VOCAB, with_data=True), path, "tiny-qwen35moe-full-vocab.gguf")


def size_split(spec: QwenSpec) -> dict[str, int]:
    """Tensor bytes by group (routed experts, attention, DeltaNet, shared expert, token_embd, output, norms)."""
    groups = {"experts": ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"),
              "attention": ("attn_q", "attn_k", "attn_v", "attn_output"),
              "deltanet": ("attn_qkv", "attn_gate", "ssm_out", "ssm_alpha", "ssm_beta", "ssm_conv1d", "ssm_dt",
                           "ssm_a", "ssm_norm"),
              "shared_expert": ("ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp"),
              "dense_ffn": ("ffn_gate", "ffn_up", "ffn_down"),
              "token_embd": ("token_embd",), "output": ("output",)}
    out = dict.fromkeys([*groups, "norms"], 0)
    for _, ne, type_name, role in tensor_list(spec):
        group = next((g for g, roles in groups.items() if role in roles), "norms")
        out[group] += nbytes_of(ne, type_name)
    return out


# --------------------------------------------------------------------------------------------------------------
# raw builder for hostile headers


def enc_str(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


_FMT = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def enc_value(vtype: int, value: Any) -> bytes:
    """A typed value as it follows a key: type id, then the payload (arrays: item type, count, items)."""
    if vtype == 8:
        return struct.pack("<I", 8) + enc_str(value)
    if vtype == 9:
        itype, items = value
        body = b"".join(enc_str(x) if itype == 8 else struct.pack("<" + _FMT[itype], x) for x in items)
        return struct.pack("<IIQ", 9, itype, len(items)) + body
    return struct.pack("<I" + _FMT[vtype], vtype, value)


@dataclass
class RawGGUF:
    """A GGUF built byte by byte: ``kvs`` are (key, encoded typed value), ``tensors`` (name, ne, ggml type, offset).

    ``n_kv``/``n_tensors`` override the counts written; ``data`` is the tensor data section (None: zeros sized
    from the tensors, packed as llama.cpp expects).
    """

    kvs: list[tuple[str | bytes, bytes]]
    tensors: list[tuple[str | bytes, tuple[int, ...], int, int | None]] = field(default_factory=list)
    magic: bytes = b"GGUF"
    version: int = 3
    n_kv: int | None = None
    n_tensors: int | None = None
    alignment: int = 32
    data: bytes | None = None

    def header(self) -> bytes:
        out = bytearray(self.magic + struct.pack("<I", self.version))
        out += struct.pack("<QQ", self.n_tensors if self.n_tensors is not None else len(self.tensors),
                           self.n_kv if self.n_kv is not None else len(self.kvs))
        for key, value in self.kvs:
            out += enc_str(key) + value
        offset = 0
        for name, ne, ggml_type, off in self.tensors:
            out += enc_str(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
            out += struct.pack("<IQ", ggml_type, (offset if off is None else off) % 2**64)
            offset += _pad(_tensor_bytes(ne, ggml_type), self.alignment)
        return bytes(out)

    def build(self) -> bytes:
        head = self.header()
        if not self.tensors:
            return head
        head += bytes(_pad(len(head), self.alignment) - len(head))
        if self.data is not None:
            return head + self.data
        total = 0
        for _, ne, ggml_type, _ in self.tensors:
            total = _pad(total, self.alignment) + _tensor_bytes(ne, ggml_type)
        return head + bytes(total)


def _pad(n: int, a: int) -> int:
    return n + (-n % a)


def _tensor_bytes(ne: Iterable[int], ggml_type: int) -> int:
    block, size = {0: (1, 4), 1: (1, 2), 8: (32, 34), 12: (256, 144)}.get(ggml_type, (1, 1))
    n = 1
    for d in ne:
        n *= d
    return n // block * size


def small_valid() -> RawGGUF:
    """A small, valid file with every value type, small and tokenizer arrays, and three tensors."""
    kvs: list[tuple[str | bytes, bytes]] = [
        ("general.architecture", enc_value(8, "llama")),
        ("general.name", enc_value(8, "hostile-base \u4e2d\u6587")),
        ("t.u8", enc_value(0, 200)), ("t.i8", enc_value(1, -5)), ("t.u16", enc_value(2, 60000)),
        ("t.i16", enc_value(3, -300)), ("t.u32", enc_value(4, 4_000_000_000)), ("t.i32", enc_value(5, -70000)),
        ("t.f32", enc_value(6, 0.5)), ("t.bool", enc_value(7, True)), ("t.u64", enc_value(10, 2**40)),
        ("t.i64", enc_value(11, -(2**40))), ("t.f64", enc_value(12, 0.25)),
        ("t.arr_i32", enc_value(9, (5, [1, -2, 3]))), ("t.arr_str", enc_value(9, (8, ["a", "bc", ""]))),
        ("t.arr_bool", enc_value(9, (7, [True, False]))), ("t.arr_f64", enc_value(9, (12, [1.5, -2.0]))),
        ("tokenizer.ggml.tokens", enc_value(9, (8, ["<s>", "</s>", "hello", "\u4e16\u754c"]))),
        ("tokenizer.ggml.scores", enc_value(9, (6, [0.0, -1.0, -2.0, -3.0]))),
        ("llama.block_count", enc_value(4, 1)),
    ]
    tensors: list[tuple[str | bytes, tuple[int, ...], int, int | None]] = [
        ("token_embd.weight", (32, 4), 8, None), ("output_norm.weight", (32,), 0, None),
        ("blk.0.ffn_up.weight", (256, 2), 12, None),
    ]
    return RawGGUF(kvs, tensors)
