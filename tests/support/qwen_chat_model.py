"""A tiny test model that speaks like a Qwen3.5/3.6 chat model: the family's real chat template and tokenizer.

Agent clients, tool calls, JSON schemas and thinking switches can only be tested with a model whose template is the
Qwen family's and whose vocabulary lets llama-server's grammars spell their output: the generated tiny models
(``tiny_gguf.py``) carry a toy ChatML template and a toy SPM vocabulary on which every grammar request fails
("Failed to initialize samplers"). This model is built at test time, cached in the test bed cache, from two files of
the pinned llama.cpp sources (never copied into the repository):

- ``models/templates/Qwen3.5-4B.jinja``: upstream's copy of the Qwen3.5 family's template (Qwen3.6's family),
  embedded as ``tokenizer.chat_template``;
- ``models/ggml-vocab-qwen35.gguf``: a vocab-only GGUF with Qwen's byte-level BPE (151,936 tokens, merges, the
  ``qwen35`` pre-tokenizer). Its ids 151646-151935 are padding there; the ones Qwen2.5/Qwen3 assign to their added
  tokens (``added_tokens_decoder`` in Qwen's ``tokenizer_config.json``, e.g. Qwen/Qwen3-8B: ``<tool_call>``
  151657, ``<think>`` 151667) are filled in with those tokens, typed as llama.cpp's converter types them
  (``conversion/base.py`` ``does_token_look_special``: ``<|…|>`` CONTROL, the rest USER_DEFINED), so ``<think>``,
  ``<tool_call>`` and ``<tool_response>`` are single tokens as in the real model.

The architecture is Qwen3.6's (``qwen35moe``: Gated DeltaNet + gated attention layers, MoE), tiny (64 wide). Its
weights are random except for a designed path through the embedding and the output matrix, so that it answers
like a small chat model instead of emitting noise until ``max_tokens`` (docs/test-bed.md "The Qwen chat model"):

- thinking off (the prompt ends ``</think>\\n\\n``): ``Hello from the tiny model.`` then ``<|im_end|>``;
- thinking on (the prompt ends ``<think>\\n``): reasoning ``Let me think``, ``</think>``, then the same answer;
- where a grammar forbids ending the turn without a tool call (``tool_choice: "required"``), its second choice
  after the answer is ``<tool_call>``: the answer becomes the preamble and the grammar spells the call (a string
  argument's value is ``ok.``); with ``tool_choice: "auto"`` it answers in text, as a model with nothing to do;
- inside a JSON string a grammar keeps open, it closes the string.

Each token of that path is one residual direction (a one-hot embedding), its successors read that direction in the
output matrix, and every layer's output projection is scaled down so the residual stays the embedding's: the
server's whole pipeline (template, tokenizer, hybrid layers, grammar, parser, streaming) still runs for real.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
from gguf import GGUFReader, TokenType

from tests.support import testbed
from tests.support.tiny_gguf import TinySpec, Vocab, write_model

TEMPLATE_RELPATH = "models/templates/Qwen3.5-4B.jinja"
VOCAB_RELPATH = "models/ggml-vocab-qwen35.gguf"
# Bump when the model's design changes: the cached file's name carries it (with the sources' hashes).
DESIGN_VERSION = "1"
ARCH = "qwen35moe"
# One full-attention layer of two 32-wide heads and three DeltaNet layers: reading an agent client's first request
# (12k tokens) is dominated by attention, which grows with the square of the prompt.
SHAPE = {"n_layer": 4, "full_attention_interval": 4, "n_head": 2, "n_head_kv": 1, "head_dim": 32}
N_CTX = 262_144  # Qwen3.6's native context (docs: models.md), so a planner sees the real model's window

# Qwen2.5/Qwen3's added tokens from id 151643 (Qwen's tokenizer_config.json ``added_tokens_decoder``); the first
# three are already in the vocab file, the rest replace its padding entries.
ADDED_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)
FIRST_ADDED_ID = 151_643

# The designed path: token -> its successors, best first (byte-level BPE spelling: "Ġ" a space, "Ċ" a newline).
SUCCESSORS: dict[str, tuple[str, ...]] = {
    "Ċ": ("Let",),  # the prompt ends "<think>\n": think
    "Let": ("Ġme",), "Ġme": ("Ġthink",), "Ġthink": ("</think>",),
    "</think>": ("ĊĊ",),
    "ĊĊ": ("Hello",),  # the prompt ends "</think>\n\n" (or the thinking just ended): answer
    "Hello": ("Ġfrom",), "Ġfrom": ("Ġthe",), "Ġthe": ("Ġtiny",), "Ġtiny": ("Ġmodel",), "Ġmodel": (".",),
    ".": ("<|im_end|>", "<tool_call>"),  # end the turn; where a grammar requires a tool call, call it
    # "<parameter=NAME>\n": a string argument's value, then "\n</parameter>\n" (the grammar's closing delimiter)
    ">Ċ": ("ok",), "ok": (".Ċ",), ".Ċ": ("</",), "</": ("parameter",), "parameter": (">Ċ",),
    # "<tool_call>" written as text inside a string argument (the answer's second choice): close the argument
    "<tool_call>": (".Ċ",),
    "</tool_call>": ("<|im_end|>",),
}
# A small constant preference where nothing above applies (after any other token, or where a grammar allows none of
# the successors), so that every path a grammar leaves open ends: end the turn; end a "<parameter=NAME>" opener in
# one token (whose value then closes); close a JSON string; start a closing tag; open a JSON object; close a JSON
# array or object rather than add an item (greedy decoding would otherwise take "," for ever: the lowest id of tied
# tokens wins).
MILD: dict[str, float] = {"<|im_end|>": 1.0, ">Ċ": 0.8, '"': 0.6, "</": 0.5, "{": 0.4, "]": 0.3, "}": 0.3}
RANK_WEIGHTS = (1.0, 0.5)  # the second choice far below the first: sampling at temperature 1 never takes it
SUCCESSOR_SCALE = 3.0  # logit of a first successor ≈ 3 × 8 (the one-hot's height after the RMS norm)
MILD_SCALE = 2.0
BIAS = 2.0  # the constant residual component (dimension 0) that carries MILD
LAYER_OUTPUT_SCALE = 0.02  # every layer's output projection, so the residual stays the embedding's


def upstream_qwen_template() -> Path:
    """Upstream's Qwen3.5-family chat template in the pinned llama.cpp sources (``Qwen3.5-4B.jinja``)."""
    return testbed.engine_sources() / TEMPLATE_RELPATH


def qwen_vocab_file() -> Path:
    """The pinned sources' vocab-only GGUF with Qwen's tokenizer (``ggml-vocab-qwen35.gguf``)."""
    return testbed.engine_sources() / VOCAB_RELPATH


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def qwen_chat_model() -> Path:
    """The test model's GGUF in the test bed cache, built once (about 10 s) under a lock shared by every checkout.

    The file name carries the design version and the hashes of the template and vocabulary it was built from, so
    a changed source or design builds a new file rather than reusing a stale one."""
    template, vocab = upstream_qwen_template(), qwen_vocab_file()
    key = hashlib.sha256(f"{DESIGN_VERSION}:{_sha256(template)}:{_sha256(vocab)}".encode()).hexdigest()[:12]
    final = testbed.cache_dir() / "models" / f"tiny-qwen-chat-{key}.gguf"
    if final.is_file():
        return final
    with testbed.cache_lock("qwen-chat"):
        if final.is_file():
            return final
        tmp = final.with_name(f".{final.name}.tmp")
        write_qwen_chat_model(tmp, template.read_text(encoding="utf-8"), read_qwen_vocab(vocab))
        os.replace(tmp, final)
    return final


def read_qwen_vocab(path: Path) -> Vocab:
    """The vocab file's tokenizer with Qwen's added tokens in place of its padding entries."""
    reader = GGUFReader(path)
    fields = reader.fields
    tokens = list(fields["tokenizer.ggml.tokens"].contents())
    types = [int(t) for t in fields["tokenizer.ggml.token_type"].contents()]
    for offset, text in enumerate(ADDED_TOKENS):
        i = FIRST_ADDED_ID + offset
        if offset >= 3:  # the vocab file's own entries for the first three must already be these
            assert tokens[i].startswith("[PAD"), f"{path}: id {i} is {tokens[i]!r}, not a padding entry"
            tokens[i] = text
            types[i] = int(TokenType.CONTROL if text.startswith("<|") and text.endswith("|>")
                           else TokenType.USER_DEFINED)
        assert tokens[i] == text, f"{path}: id {i} is {tokens[i]!r}, expected {text!r}"
    im_end = tokens.index("<|im_end|>")
    return Vocab(model=str(fields["tokenizer.ggml.model"].contents()),
                 pre=str(fields["tokenizer.ggml.pre"].contents()), tokens=tokens, types=types,
                 merges=list(fields["tokenizer.ggml.merges"].contents()), eos_id=im_end,
                 bos_id=tokens.index("<|endoftext|>"), pad_id=tokens.index("<|endoftext|>"))


def write_qwen_chat_model(path: Path, template: str, vocab: Vocab) -> Path:
    """Write the model to ``path``: qwen35moe, Q8_0, the given template and vocabulary, the designed path."""
    index = {t: i for i, t in enumerate(vocab.tokens)}
    path_tokens = list(dict.fromkeys([*SUCCESSORS, *(s for v in SUCCESSORS.values() for s in v), *MILD]))
    missing = [t for t in path_tokens if t not in index]
    assert not missing, f"tokens not in the vocabulary: {missing}"

    def design(items: dict[str, np.ndarray], spec: TinySpec) -> None:
        n_embd = spec.n_embd
        assert len(path_tokens) < n_embd, "one residual direction per path token, plus the bias"
        rng = np.random.default_rng(1)
        embd = items["token_embd.weight"]  # (n_vocab, n_embd)
        # Every other token: the bias plus a random vector in the directions no path token uses.
        free = n_embd - 1 - len(path_tokens)
        embd[:] = 0
        embd[:, 1 + len(path_tokens):] = rng.standard_normal((embd.shape[0], free)) * np.sqrt(n_embd / free)
        embd[:, 0] = BIAS
        height = np.sqrt(n_embd)
        direction = {tok: 1 + k for k, tok in enumerate(path_tokens)}
        for tok, d in direction.items():
            embd[index[tok], 1:] = 0
            embd[index[tok], d] = height
        out = items["output.weight"]  # (n_vocab, n_embd)
        out[:] = 0
        for tok, successors in SUCCESSORS.items():
            for rank, nxt in enumerate(successors):
                out[index[nxt], direction[tok]] += SUCCESSOR_SCALE * RANK_WEIGHTS[rank]
        for tok, weight in MILD.items():
            out[index[tok], 0] += MILD_SCALE * weight
        for name, arr in items.items():
            if name.endswith(("attn_output.weight", "ssm_out.weight", "ffn_down_exps.weight",
                              "ffn_down_shexp.weight")):
                arr *= LAYER_OUTPUT_SCALE

    return write_model(ARCH, path, vocab=vocab, weights=design, dtype="q8_0", n_ctx=N_CTX, **SHAPE,
                       chat_template=template)
