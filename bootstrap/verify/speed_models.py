"""The models the speed measurement runs: llama GGUF files of known bytes, one quantization type in their matrices.

Why generated: the prediction needs how fast this machine's llama.cpp kernels turn weight bytes into tokens
(decode) and how many FLOPs a prompt batch gets (prompt), per quantization type, on files of the same kind as the
models it installs — but no model byte is downloaded yet. The self-test model (``place/selftest_model.py``, 370 KB)
is all per-token overhead; these files are sized so the weights dominate a token's time (tens of MB: a few ms per
token for one thread) while writing one takes a fraction of a second.

The weights are random bytes with fixed block scales (every byte pattern of these quant types is a valid weight;
the scales keep activations finite), the vocabulary is the self-test's SPM byte vocabulary. The token produced is
meaningless; only the time it takes matters. Layout facts: llama.cpp ``ggml/src/ggml-common.h`` (where each block
type keeps its fp16 scale), ``src/models/llama.cpp`` (tensor names and shapes).
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from bootstrap.place.selftest_model import gguf_array, gguf_kv, gguf_pad, gguf_str, spm_vocab
from bootstrap.plan.gguf_header import GGML_TYPE_IDS, GGML_TYPES, GGUF_MAGIC

# GGUF value types (gguf.h enum gguf_type)
_U32, _I32, _F32, _BOOL, _STRING = 4, 5, 6, 7, 8

# Per block type: (offset of each fp16 scale in the block, the high byte its values start at). Every block gets
# its own scale, spread over 16 × 256 fp16 values from there: ggml's kernels convert each block's scale (on x86
# through a 256 KiB fp16 → fp32 table), and one constant scale for every block made the Q8_0 kernel 1.5× faster per
# byte than a real file's varied ones on the test bed. The ranges keep weights small (about 1/sqrt(fan-in)).
_SCALES: dict[str, tuple[tuple[int, int], ...]] = {
    "Q4_0": ((0, 0x1C),),
    "Q8_0": ((0, 0x0A),),
    "Q4_K": ((0, 0x08), (2, 0x14)),
    "Q5_K": ((0, 0x08), (2, 0x14)),
    "Q6_K": ((208, 0x00),),
}
MEASURED_TYPES = tuple(_SCALES)


@dataclass(frozen=True)
class RateModel:
    """A measurement model on disk and what one token reads of it."""

    path: Path
    type_name: str
    weight_bytes: int  # bytes of every matrix a token reads (all layers and the output layer)
    params: int  # parameters a token multiplies (2 FLOPs each per prompt token)
    n_layer: int


_UNIT_BYTES = 32 << 20  # pseudo-random bytes per repeated unit: larger than any core's cache share


def random_blocks(type_name: str, n_elements: int, label: str) -> bytes:
    """Pseudo-random quantized blocks (SHAKE-128 of ``label``: the same file every time), each with its own fp16
    scale(s) in the type's range (strided writes: no Python loop over blocks). A unit of ``_UNIT_BYTES`` is repeated,
    so hundreds of MB are written at memory speed; every byte still lands on its own page, read from RAM."""
    _tid, per_block, size = GGML_TYPES[GGML_TYPE_IDS[type_name]]
    n_blocks = n_elements // per_block
    unit_blocks = max(1, min(n_blocks, _UNIT_BYTES // size))
    unit = bytearray(hashlib.shake_128(label.encode()).digest(unit_blocks * size))
    for offset, high in _SCALES[type_name]:  # the low byte stays random; the high one: high … high + 15
        table = bytes(high + (i & 0x0F) for i in range(256))
        unit[offset + 1::size] = bytes(unit[offset + 1::size]).translate(table)
    whole, rest = divmod(n_blocks, unit_blocks)
    return bytes(unit) * whole + bytes(unit[:rest * size])


def write_rate_model(folder: Path, type_name: str, *, n_layer: int = 2, n_embd: int = 2048, n_ff: int = 8192,
                     n_head: int = 16, n_head_kv: int = 4, seed: int = 0) -> RateModel:
    """``folder/qwenkit-rate-<type>.gguf``: ``n_layer`` llama blocks whose matrices are all ``type_name``
    (``MEASURED_TYPES``), written straight to disk. The defaults read 68 MB per token in Q4_K (2 × 61M
    parameters) and 129 MB in Q8_0."""
    if type_name not in _SCALES:
        raise ValueError(f"no measurement model for {type_name}")
    tokens, types = spm_vocab()
    head_dim = n_embd // n_head
    n_kv = head_dim * n_head_kv
    matrices = [("token_embd.weight", n_embd, len(tokens), "Q8_0"), ("output.weight", n_embd, len(tokens), "Q8_0")]
    for il in range(n_layer):
        p = f"blk.{il}."
        matrices += [(p + "attn_q.weight", n_embd, n_embd, type_name), (p + "attn_k.weight", n_embd, n_kv, type_name),
                     (p + "attn_v.weight", n_embd, n_kv, type_name),
                     (p + "attn_output.weight", n_embd, n_embd, type_name),
                     (p + "ffn_gate.weight", n_embd, n_ff, type_name), (p + "ffn_up.weight", n_embd, n_ff, type_name),
                     (p + "ffn_down.weight", n_ff, n_embd, type_name)]
    norms = ["output_norm.weight"] + [f"blk.{il}.{n}.weight" for il in range(n_layer)
                                      for n in ("attn_norm", "ffn_norm")]
    a = "llama"
    kvs = [gguf_kv("general.architecture", _STRING, a), gguf_kv("general.name", _STRING, f"qwenkit-rate-{type_name}"),
           gguf_kv(f"{a}.context_length", _U32, 4096), gguf_kv(f"{a}.embedding_length", _U32, n_embd),
           gguf_kv(f"{a}.block_count", _U32, n_layer), gguf_kv(f"{a}.feed_forward_length", _U32, n_ff),
           gguf_kv(f"{a}.attention.head_count", _U32, n_head),
           gguf_kv(f"{a}.attention.head_count_kv", _U32, n_head_kv),
           gguf_kv(f"{a}.attention.layer_norm_rms_epsilon", _F32, 1e-5),
           gguf_kv(f"{a}.rope.dimension_count", _U32, head_dim), gguf_kv("tokenizer.ggml.model", _STRING, "llama"),
           gguf_array("tokenizer.ggml.tokens", _STRING, list(tokens)),
           gguf_array("tokenizer.ggml.scores", _F32, [0.0] * len(tokens)),
           gguf_array("tokenizer.ggml.token_type", _I32, list(types)),
           gguf_kv("tokenizer.ggml.bos_token_id", _U32, 1), gguf_kv("tokenizer.ggml.eos_token_id", _U32, 2),
           gguf_kv("tokenizer.ggml.unknown_token_id", _U32, 0), gguf_kv("tokenizer.ggml.add_bos_token", _BOOL, True)]
    sizes = [(name, (ne0, ne1), kind, _nbytes(kind, ne0 * ne1)) for name, ne0, ne1, kind in matrices]
    sizes += [(name, (n_embd,), "F32", 4 * n_embd) for name in norms]
    infos = bytearray()
    offset = 0
    for name, shape, kind, nbytes in sizes:
        infos += gguf_str(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)
        infos += struct.pack("<IQ", GGML_TYPE_IDS[kind], offset)
        offset += nbytes + gguf_pad(nbytes)
    header = GGUF_MAGIC + struct.pack("<IQQ", 3, len(sizes), len(kvs)) + b"".join(kvs) + bytes(infos)
    path = Path(folder) / f"qwenkit-rate-{type_name.lower()}.gguf"
    os.makedirs(folder, exist_ok=True)
    with open(path, "wb") as out:
        out.write(header + bytes(gguf_pad(len(header))))
        for name, shape, kind, nbytes in sizes:
            data = struct.pack(f"<{n_embd}f", *([1.0] * n_embd)) if kind == "F32" else \
                random_blocks(kind, shape[0] * shape[1], f"{seed}:{name}")
            out.write(data + bytes(gguf_pad(nbytes)))
    layer_params = 2 * n_embd * n_embd + 2 * n_embd * n_kv + 3 * n_embd * n_ff
    layer_bytes = sum(nbytes for name, _s, _k, nbytes in sizes if name.startswith("blk.") and _k != "F32")
    output_bytes = _nbytes("Q8_0", n_embd * len(tokens))
    return RateModel(path, type_name, layer_bytes + output_bytes, n_layer * layer_params + n_embd * len(tokens),
                     n_layer)


def _nbytes(type_name: str, n_elements: int) -> int:
    _tid, per_block, size = GGML_TYPES[GGML_TYPE_IDS[type_name]]
    return n_elements // per_block * size
