"""A tiny random-weight vision model pair (text GGUF + mmproj GGUF) that the real llama-server serves with images.

The test bed needs a multimodal model to check what llama-server does with ``--mmproj`` and an OpenAI-style
``image_url`` message (loading, the projector's memory lines in the log, API-key checks on image requests). Real
vision checkpoints are GBs; this pair is about 1 MB, written in a fraction of a second with PyPI ``gguf``.

The text half is the llama model of ``tests/support/tiny_gguf.py`` (n_embd 128, SPM vocab, ChatML template). The
projector half is a LLaVA-1.5 style ``mmproj``: ``clip.projector_type = "mlp"``, a CLIP ViT (patch embedding
convolution, learned position embeddings, pre-norm transformer blocks) and the two-layer GELU MLP ``mm.0`` /
``mm.2`` that maps a vision feature to one text embedding. Of the projector types llama.cpp's ``mtmd`` knows, it has
the fewest tensors and no image special tokens in the text vocabulary, so it pairs with any text architecture.

Ground truth for every key, tensor name and shape is llama.cpp (b11434) itself:
``tools/mtmd/clip-impl.h`` (``KEY_*`` key names, ``TN_*`` tensor names, ``"mlp"`` in the projector name table),
``tools/mtmd/clip.cpp`` (``clip_model_loader::load_hparams``: required vs optional keys; ``load_tensors``: which
tensors are required; ``clip_graph::build_inp``: the patch-embedding convolution; ``clip_n_mmproj_embd``: the
output width is ``mm.2.weight``'s ``ne[1]``, checked against the text model's n_embd in ``tools/mtmd/mtmd.cpp``),
``tools/mtmd/models/llava.cpp`` (``clip_graph_llava::build``: the graph that runs these tensors) and
``tools/mtmd/mtmd.cpp`` (``init_vision``: fixed-size preprocessing for ``mlp`` without grid pinpoints). Shapes are
written in ggml order ``{ne0, ne1, ...}`` in comments; numpy arrays carry them reversed.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGUFWriter

from tests.support.tiny_gguf import spec_for, write_model

MODEL_NAME = "tiny-vision-Q8_0.gguf"
MMPROJ_NAME = "mmproj-tiny-vision-F16.gguf"  # llama-server / hubs recognise projectors by the "mmproj" prefix
TEXT_ARCH = "llama"
PROJECTOR_TYPE = "mlp"  # clip-impl.h PROJECTOR_TYPE_MLP: LLaVA-1.5's mm.0 -> GELU -> mm.2


@dataclass(frozen=True)
class VisionSpec:
    """Shape of the tiny CLIP tower. ``image_size`` must be a multiple of ``patch_size`` (square patches only).

    ``n_layer`` blocks are written, but the llava graph stops before the last one (it takes the second-to-last
    layer's output, like LLaVA-1.5), so with 2 blocks only block 0 is computed.
    """

    image_size: int = 32
    patch_size: int = 8
    n_embd: int = 32
    n_head: int = 2
    n_ff: int = 64
    n_layer: int = 2
    eps: float = 1e-5
    # CLIP's preprocessing constants (OpenAI CLIP), as the LLaVA converter writes them
    image_mean: tuple[float, float, float] = (0.48145466, 0.4578275, 0.40821073)
    image_std: tuple[float, float, float] = (0.26862954, 0.26130258, 0.27577711)

    @property
    def n_patches(self) -> int:
        """Image tokens per image: one per patch (no class token, so nothing is dropped by the ``patches`` rows)."""
        return (self.image_size // self.patch_size) ** 2


def _mmproj_tensors(spec: VisionSpec, n_embd_text: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every tensor of the mmproj, in ggml names; matrices F16 (as a real ``-F16`` mmproj), norms/biases F32.

    Required by ``load_tensors``: ``blk.N.attn_out.weight``, ``blk.N.ffn_up.weight``, ``blk.N.ffn_down.weight``;
    required by the llava graph although loaded as optional: ``v.patch_embd.weight``, ``v.position_embd.weight``,
    Q/K/V, and ``mm.0.{weight,bias}`` (its bias is added unconditionally). ``mm.2`` is optional to the loader but
    ``clip_n_mmproj_embd`` reads the output width from it.
    """
    d, p = spec.n_embd, spec.patch_size

    def mat(*ne: int) -> np.ndarray:  # {ne0 (fan-in), ne1, ...}, N(0, 1/fan_in)
        return (rng.standard_normal(tuple(reversed(ne))) / np.sqrt(ne[0])).astype(np.float16)

    def vec(n: int, fill: float) -> np.ndarray:
        return np.full((n,), fill, dtype=np.float32)

    t: dict[str, np.ndarray] = {
        # conv2d kernel {patch, patch, 3 channels, n_embd}: fan-in is 3·p·p, so scale by hand
        "v.patch_embd.weight": (rng.standard_normal((d, 3, p, p)) / np.sqrt(3 * p * p)).astype(np.float16),
        "v.patch_embd.bias": vec(d, 0.0),
        "v.position_embd.weight": (rng.standard_normal((spec.n_patches, d)) * 0.02).astype(np.float32),
        "v.pre_ln.weight": vec(d, 1.0),
        "v.pre_ln.bias": vec(d, 0.0),
    }
    for il in range(spec.n_layer):
        b = f"v.blk.{il}."
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t[b + name + ".weight"] = mat(d, d)
            t[b + name + ".bias"] = vec(d, 0.0)
        # ffn_up {n_embd, n_ff}, ffn_down {n_ff, n_embd}: written the right way round, so clip.cpp's legacy
        # "ffn up/down are swapped" fix-up (ffn_down ne[0] == n_embd) does not fire
        t[b + "ffn_up.weight"] = mat(d, spec.n_ff)
        t[b + "ffn_up.bias"] = vec(spec.n_ff, 0.0)
        t[b + "ffn_down.weight"] = mat(spec.n_ff, d)
        t[b + "ffn_down.bias"] = vec(d, 0.0)
        for ln in ("ln1", "ln2"):
            t[b + ln + ".weight"] = vec(d, 1.0)
            t[b + ln + ".bias"] = vec(d, 0.0)
    # LLaVA-1.5 projector: mm.0 {n_embd_v, n_embd_text} -> GELU -> mm.2 {n_embd_text, n_embd_text}
    t["mm.0.weight"] = mat(d, n_embd_text)
    t["mm.0.bias"] = vec(n_embd_text, 0.0)
    t["mm.2.weight"] = mat(n_embd_text, n_embd_text)
    t["mm.2.bias"] = vec(n_embd_text, 0.0)
    return t


def write_mmproj(path: Path, *, n_embd_text: int, seed: int = 0, spec: VisionSpec | None = None) -> Path:
    """Write the tiny ``mlp`` projector to ``path``; its output width is ``n_embd_text`` (the text model's n_embd)."""
    spec = spec or VisionSpec()
    if spec.image_size % spec.patch_size or spec.n_embd % spec.n_head:
        raise ValueError("image_size must be a multiple of patch_size and n_embd a multiple of n_head")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = _mmproj_tensors(spec, n_embd_text, np.random.default_rng(seed))
    writer = GGUFWriter(path, "clip")  # general.architecture = "clip", as every mmproj file has
    try:
        writer.add_uint32("general.file_type", 1)  # LLAMA_FTYPE_MOSTLY_F16
        writer.add_string("general.name", "tiny-vision")
        writer.add_string("clip.projector_type", PROJECTOR_TYPE)
        writer.add_bool("clip.has_vision_encoder", True)  # load_hparams asserts it for the vision modality
        # load_hparams' required keys (get_u32/get_f32 without "false"), "clip.vision." prefix
        writer.add_uint32("clip.vision.embedding_length", spec.n_embd)
        writer.add_uint32("clip.vision.attention.head_count", spec.n_head)
        writer.add_uint32("clip.vision.feed_forward_length", spec.n_ff)
        writer.add_uint32("clip.vision.block_count", spec.n_layer)
        writer.add_uint32("clip.vision.projection_dim", n_embd_text)
        writer.add_float32("clip.vision.attention.layer_norm_epsilon", spec.eps)
        writer.add_uint32("clip.vision.image_size", spec.image_size)
        writer.add_uint32("clip.vision.patch_size", spec.patch_size)
        # optional to get_arr_f32, but load_hparams throws unless both have >= 3 elements
        writer.add_array("clip.vision.image_mean", list(spec.image_mean))
        writer.add_array("clip.vision.image_std", list(spec.image_std))
        for name, arr in tensors.items():
            writer.add_tensor(name, arr)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    return path


def write_vision_pair(directory: Path, *, seed: int = 0) -> tuple[Path, Path]:
    """Write ``(tiny-vision-Q8_0.gguf, mmproj-tiny-vision-F16.gguf)`` under ``directory`` and return their paths.

    The text model is ``tiny_gguf``'s default llama in Q8_0; the projector's output width follows its n_embd.
    """
    directory = Path(directory)
    model = write_model(TEXT_ARCH, directory / MODEL_NAME, seed=seed, dtype="q8_0")
    mmproj = write_mmproj(directory / MMPROJ_NAME, n_embd_text=spec_for(TEXT_ARCH).n_embd, seed=seed)
    return model, mmproj


def mmproj_tensor_bytes(path: Path) -> int:
    """Sum of the mmproj's tensor data sizes: what clip.cpp logs as ``model size`` and allocates as weights."""
    return sum(int(t.n_bytes) for t in GGUFReader(path).tensors)


def tiny_png(width: int = 16, height: int = 16) -> bytes:
    """A valid 8-bit RGB PNG (a colour gradient) built with zlib + struct, so no imaging library is needed."""
    if width <= 0 or height <= 0:
        raise ValueError("width and height must be positive")
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter type 0 (None) for each scanline
        for x in range(width):
            rows += bytes((x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), 128))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit depth, colour type 2 (RGB)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(rows)))
            + chunk(b"IEND", b""))
