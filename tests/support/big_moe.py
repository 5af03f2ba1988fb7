"""A Qwen3-MoE GGUF of a given size, written at disk speed: the test bed's model larger than its 2 GiB software GPU.

``tiny_gguf`` draws every weight with numpy and quantizes it, which is right for a few MB and far too slow for
gigabytes. This writer takes the speed measurement's block writer (``verify/speed_models.random_blocks``: random
quantized blocks with bounded fp16 scales, so activations stay finite) and lays the blocks out as llama.cpp's
``qwen3moe`` architecture expects them (``src/models/qwen3moe.cpp`` ``load_arch_tensors``: Q/K norms, a router
``ffn_gate_inp {n_embd, n_expert}`` in F32, stacked experts ``{n_embd, n_ff_exp, n_expert}``, down transposed).
The answers are meaningless words; the test reads where llama-server puts the bytes and that it answers.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from bootstrap.place.selftest_model import gguf_array, gguf_kv, gguf_pad, gguf_str, spm_vocab
from bootstrap.plan.gguf_header import GGML_TYPE_IDS, GGML_TYPES, GGUF_MAGIC
from bootstrap.verify.speed_models import random_blocks

_U32, _I32, _F32, _BOOL, _STRING = 4, 5, 6, 7, 8  # gguf.h enum gguf_type


@dataclass(frozen=True)
class MoeShape:
    n_layer: int = 11
    n_embd: int = 1024
    n_head: int = 8
    n_head_kv: int = 2
    head_dim: int = 128
    n_expert: int = 128
    n_expert_used: int = 8
    n_ff_exp: int = 512
    type_name: str = "Q8_0"  # every matrix; 11 layers of these experts: 2.35 GB (2.19 GiB)


def _nbytes(kind: str, shape: tuple[int, ...]) -> int:
    if kind == "F32":
        return 4 * math.prod(shape)
    _tid, per_block, size = GGML_TYPES[GGML_TYPE_IDS[kind]]
    return math.prod(shape) // per_block * size


def write_big_moe(path: Path, shape: MoeShape = MoeShape()) -> Path:
    """Write the model to ``path`` (skipped when a file of the expected size is already there) and return it."""
    s = shape
    tokens, types = spm_vocab()
    n_q, n_kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    q = s.type_name
    tensors: list[tuple[str, tuple[int, ...], str]] = [
        ("token_embd.weight", (s.n_embd, len(tokens)), "Q8_0"), ("output_norm.weight", (s.n_embd,), "F32"),
        ("output.weight", (s.n_embd, len(tokens)), "Q8_0")]
    for il in range(s.n_layer):
        p = f"blk.{il}."
        tensors += [(p + "attn_norm.weight", (s.n_embd,), "F32"), (p + "attn_q.weight", (s.n_embd, n_q), q),
                    (p + "attn_k.weight", (s.n_embd, n_kv), q), (p + "attn_v.weight", (s.n_embd, n_kv), q),
                    (p + "attn_output.weight", (n_q, s.n_embd), q),
                    (p + "attn_q_norm.weight", (s.head_dim,), "F32"), (p + "attn_k_norm.weight", (s.head_dim,), "F32"),
                    (p + "ffn_norm.weight", (s.n_embd,), "F32"),
                    (p + "ffn_gate_inp.weight", (s.n_embd, s.n_expert), "F32"),
                    (p + "ffn_gate_exps.weight", (s.n_embd, s.n_ff_exp, s.n_expert), q),
                    (p + "ffn_up_exps.weight", (s.n_embd, s.n_ff_exp, s.n_expert), q),
                    (p + "ffn_down_exps.weight", (s.n_ff_exp, s.n_embd, s.n_expert), q)]
    a = "qwen3moe"
    kvs = [gguf_kv("general.architecture", _STRING, a), gguf_kv("general.name", _STRING, "qwenkit-big-moe"),
           gguf_kv(f"{a}.context_length", _U32, 4096), gguf_kv(f"{a}.embedding_length", _U32, s.n_embd),
           gguf_kv(f"{a}.block_count", _U32, s.n_layer), gguf_kv(f"{a}.feed_forward_length", _U32, 4 * s.n_embd),
           gguf_kv(f"{a}.attention.head_count", _U32, s.n_head),
           gguf_kv(f"{a}.attention.head_count_kv", _U32, s.n_head_kv),
           gguf_kv(f"{a}.attention.key_length", _U32, s.head_dim),
           gguf_kv(f"{a}.attention.value_length", _U32, s.head_dim),
           gguf_kv(f"{a}.attention.layer_norm_rms_epsilon", _F32, 1e-6),
           gguf_kv(f"{a}.rope.freq_base", _F32, 1_000_000.0),
           gguf_kv(f"{a}.expert_count", _U32, s.n_expert), gguf_kv(f"{a}.expert_used_count", _U32, s.n_expert_used),
           gguf_kv(f"{a}.expert_feed_forward_length", _U32, s.n_ff_exp),
           gguf_kv("tokenizer.ggml.model", _STRING, "llama"),
           gguf_array("tokenizer.ggml.tokens", _STRING, list(tokens)),
           gguf_array("tokenizer.ggml.scores", _F32, [0.0] * len(tokens)),
           gguf_array("tokenizer.ggml.token_type", _I32, list(types)),
           gguf_kv("tokenizer.ggml.bos_token_id", _U32, 1), gguf_kv("tokenizer.ggml.eos_token_id", _U32, 2),
           gguf_kv("tokenizer.ggml.unknown_token_id", _U32, 0),
           gguf_kv("tokenizer.ggml.add_bos_token", _BOOL, True)]
    infos = bytearray()
    offset = 0
    for name, dims, kind in tensors:
        nbytes = _nbytes(kind, dims)
        infos += gguf_str(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        infos += struct.pack("<IQ", GGML_TYPE_IDS[kind], offset)
        offset += nbytes + gguf_pad(nbytes)
    header = GGUF_MAGIC + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + bytes(infos)
    head = header + bytes(gguf_pad(len(header)))
    path = Path(path)
    if path.is_file() and path.stat().st_size == len(head) + offset:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as out:
        out.write(head)
        for name, dims, kind in tensors:
            nbytes = _nbytes(kind, dims)
            if kind == "F32":
                # norms 1.0; the router a small constant: every expert alike, llama.cpp's top-k picks some
                value = 1.0 if name.endswith("norm.weight") else 0.01
                data = struct.pack("<f", value) * (nbytes // 4)
            else:
                data = random_blocks(kind, math.prod(dims), name)
            out.write(data + bytes(gguf_pad(nbytes)))
    os.replace(partial, path)
    return path
