"""The engine self-test's model: a tiny quantized llama GGUF (about 360 KB) the kit writes itself, byte for byte.

Why it exists: a llama.cpp build can print its version and still die at the first quantized matrix multiplication
(a binary built for AVX-512/AMX gets SIGILL on other CPUs; a GPU backend can fail to start). Loading this file and
generating one token runs the kernels real models use — Q4_0, Q8_0, Q4_K and Q6_K weights — in a second or two,
before any 20 GB download and before a working server is stopped.

Why it is generated and not shipped as a file: no binary model in the repository, nothing to lose when the kit is
frozen or vendored. The bytes are fixed: every weight block comes from a SHA-256 counter stream and every scale is a
constant, so there is no floating-point arithmetic at all, and ``SELFTEST_SHA256`` pins the result (a test and
every write check it).

The weights are random, so the token it produces is meaningless; only that it is produced matters.

Format facts: llama.cpp ``ggml/include/gguf.h`` (layout, GGUF v3), ``ggml/src/ggml-common.h`` (block layouts:
``block_q8_0`` = fp16 d + 32 int8; ``block_q4_0`` = fp16 d + 16 bytes of nibbles; ``block_q4_K`` = fp16 d, fp16 dmin,
12 bytes of 6-bit scales, 128 bytes of nibbles; ``block_q6_K`` = 128 + 64 bytes of quants, 16 int8 scales, fp16 d),
``src/models/llama.cpp`` (tensor names and shapes) and ``src/llama-vocab.cpp`` (SPM vocabulary: the 256 byte tokens
must all exist).
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from bootstrap.core.atomic_file import write_atomic
from bootstrap.plan.gguf_header import DEFAULT_ALIGNMENT, GGML_TYPE_IDS, GGML_TYPES, GGUF_MAGIC

SELFTEST_SHA256 = "fa43dc4c0a00721d620957d65fb6d45fa4545ed856e176e0e2816cabbe11e4a0"
SELFTEST_SIZE = 378_720
SELFTEST_FILE = "qwenkit-selftest.gguf"

N_EMBD = 256  # a multiple of 256: K-quant rows need it
N_FF = 256
N_HEAD = 4
N_HEAD_KV = 1
HEAD_DIM = N_EMBD // N_HEAD
N_CTX = 512
_WORDS = ("hello", "world", "ok", "yes", "no", "the", "a", "test", "one", "two", "and", "is", "it", "to", "of")

# GGUF value types (gguf.h enum gguf_type)
_U32, _F32, _BOOL, _STRING, _ARRAY, _I32 = 4, 6, 7, 8, 9, 5

# fp16 scales, chosen so a random block's weights have a spread near 1/sqrt(fan-in) (activations stay small and
# finite). As raw IEEE half bits so no float formatting is involved: 0x1300 ≈ 0.00085, 0x22F0 ≈ 0.0136,
# 0x0E90 ≈ 0.00041, 0x0300 ≈ 4.6e-5.
_D_Q8_0 = 0x1300
_D_Q4_0 = 0x22F0
_D_Q4_K = 0x0E90
_DMIN_Q4_K = 0x1A00
_D_Q6_K = 0x0300


@dataclass(frozen=True)
class _Tensor:
    name: str
    shape: tuple[int, ...]  # ggml order: ne0 (the row length) first
    type_name: str
    data: bytes


class _Stream:
    """Deterministic bytes: SHA-256 of a label and a counter, concatenated."""

    def __init__(self, label: str) -> None:
        self._label = label.encode()
        self._counter = 0
        self._buffer = b""

    def take(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._buffer += hashlib.sha256(self._label + self._counter.to_bytes(8, "little")).digest()
            self._counter += 1
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out


def _half(bits: int) -> bytes:
    return bits.to_bytes(2, "little")


def _blocks(type_name: str, n_elements: int, stream: _Stream) -> bytes:
    """Random quantized blocks with fixed scales (every byte pattern of the quants is a valid weight)."""
    _tid, per_block, _size = GGML_TYPES[GGML_TYPE_IDS[type_name]]
    out = bytearray()
    for _ in range(n_elements // per_block):
        if type_name == "Q8_0":
            out += _half(_D_Q8_0) + stream.take(32)
        elif type_name == "Q4_0":
            out += _half(_D_Q4_0) + stream.take(16)
        elif type_name == "Q4_K":
            out += _half(_D_Q4_K) + _half(_DMIN_Q4_K) + stream.take(12 + 128)
        elif type_name == "Q6_K":
            out += stream.take(128 + 64 + 16) + _half(_D_Q6_K)
        else:  # pragma: no cover - the table below names only these
            raise ValueError(type_name)
    return bytes(out)


def _f32_ones(n: int) -> bytes:
    return struct.pack(f"<{n}f", *([1.0] * n))


def spm_vocab() -> tuple[list[str], list[int]]:
    """SPM vocabulary: unk/bos/eos, the 256 byte tokens, then a few words (token types per llama-vocab.cpp)."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581" + w for w in _WORDS]
    types = [2, 3, 3] + [6] * 256 + [1] * len(_WORDS)  # UNKNOWN, CONTROL, BYTE, NORMAL
    return tokens, types


def _tensors() -> list[_Tensor]:
    tokens, _ = spm_vocab()
    n_vocab = len(tokens)
    n_kv = HEAD_DIM * N_HEAD_KV
    layout = [  # (name, ne0, ne1, type): every common weight kernel once
        ("token_embd.weight", N_EMBD, n_vocab, "Q8_0"),
        ("output.weight", N_EMBD, n_vocab, "Q6_K"),
        ("blk.0.attn_q.weight", N_EMBD, N_EMBD, "Q4_0"),
        ("blk.0.attn_k.weight", N_EMBD, n_kv, "Q8_0"),
        ("blk.0.attn_v.weight", N_EMBD, n_kv, "Q8_0"),
        ("blk.0.attn_output.weight", N_EMBD, N_EMBD, "Q4_K"),
        ("blk.0.ffn_gate.weight", N_EMBD, N_FF, "Q4_K"),
        ("blk.0.ffn_up.weight", N_EMBD, N_FF, "Q4_0"),
        ("blk.0.ffn_down.weight", N_FF, N_EMBD, "Q6_K"),
    ]
    out = [_Tensor(name, (ne0, ne1), kind, _blocks(kind, ne0 * ne1, _Stream(name)))
           for name, ne0, ne1, kind in layout]
    out += [_Tensor(name, (N_EMBD,), "F32", _f32_ones(N_EMBD))
            for name in ("output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight")]
    return out


# ---- GGUF encoding ------------------------------------------------------------------------------------------
def gguf_str(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def gguf_kv(key: str, kind: int, value: object) -> bytes:
    head = gguf_str(key) + struct.pack("<I", kind)
    if kind == _U32:
        return head + struct.pack("<I", value)
    if kind == _F32:
        return head + struct.pack("<f", value)
    if kind == _BOOL:
        return head + struct.pack("<B", 1 if value else 0)
    if kind == _STRING:
        return head + gguf_str(str(value))
    raise ValueError(kind)  # pragma: no cover


def gguf_array(key: str, item_kind: int, items: list[object]) -> bytes:
    head = gguf_str(key) + struct.pack("<IIQ", _ARRAY, item_kind, len(items))
    if item_kind == _STRING:
        return head + b"".join(gguf_str(str(i)) for i in items)
    fmt = {_F32: "f", _I32: "i"}[item_kind]
    return head + struct.pack(f"<{len(items)}{fmt}", *items)


def _metadata() -> list[bytes]:
    tokens, types = spm_vocab()
    a = "llama"
    return [
        gguf_kv("general.architecture", _STRING, a),
        gguf_kv("general.name", _STRING, "qwenkit-selftest"),
        gguf_kv(f"{a}.context_length", _U32, N_CTX),
        gguf_kv(f"{a}.embedding_length", _U32, N_EMBD),
        gguf_kv(f"{a}.block_count", _U32, 1),
        gguf_kv(f"{a}.feed_forward_length", _U32, N_FF),
        gguf_kv(f"{a}.attention.head_count", _U32, N_HEAD),
        gguf_kv(f"{a}.attention.head_count_kv", _U32, N_HEAD_KV),
        gguf_kv(f"{a}.attention.layer_norm_rms_epsilon", _F32, 1e-5),
        gguf_kv(f"{a}.rope.dimension_count", _U32, HEAD_DIM),
        gguf_kv("tokenizer.ggml.model", _STRING, "llama"),
        gguf_array("tokenizer.ggml.tokens", _STRING, list(tokens)),
        gguf_array("tokenizer.ggml.scores", _F32, [0.0] * len(tokens)),
        gguf_array("tokenizer.ggml.token_type", _I32, list(types)),
        gguf_kv("tokenizer.ggml.bos_token_id", _U32, 1),
        gguf_kv("tokenizer.ggml.eos_token_id", _U32, 2),
        gguf_kv("tokenizer.ggml.unknown_token_id", _U32, 0),
        gguf_kv("tokenizer.ggml.add_bos_token", _BOOL, True),
    ]


def gguf_pad(n: int) -> int:
    return (-n) % DEFAULT_ALIGNMENT


def selftest_bytes() -> bytes:
    """The whole file (GGUF v3), deterministic."""
    tensors = _tensors()
    kvs = _metadata()
    infos = bytearray()
    offset = 0
    for tensor in tensors:
        infos += gguf_str(tensor.name) + struct.pack("<I", len(tensor.shape))
        infos += struct.pack(f"<{len(tensor.shape)}Q", *tensor.shape)
        infos += struct.pack("<IQ", GGML_TYPE_IDS[tensor.type_name], offset)
        offset += len(tensor.data) + gguf_pad(len(tensor.data))
    header = GGUF_MAGIC + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + bytes(infos)
    body = bytearray(header + bytes(gguf_pad(len(header))))
    for tensor in tensors:
        body += tensor.data + bytes(gguf_pad(len(tensor.data)))
    return bytes(body)


def write_selftest_model(folder: Path) -> Path:
    """``folder/qwenkit-selftest.gguf``, written atomically and checked against the pin (a mismatch is a bug)."""
    data = selftest_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SELFTEST_SHA256 or len(data) != SELFTEST_SIZE:
        raise RuntimeError(f"self-test model drifted: {digest} ({len(data)} bytes), pinned {SELFTEST_SHA256}")
    path = Path(folder) / SELFTEST_FILE
    os.makedirs(folder, exist_ok=True)
    write_atomic(path, data, mode=0o644)
    return path
