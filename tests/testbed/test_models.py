"""The tiny random GGUF models load in the real llama-server, chat, and show llama.cpp the intended structure.

These models stand in for real checkpoints in later tests (memory estimator, launch scripts), so it is not
enough that a file parses: llama-server must see the layer layout we meant (expert count, SWA/global split,
recurrent vs. KV layers), and the KV/recurrent sizes it logs must follow from the spec.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gguf
import pytest

from tests.support.llama import LlamaServer
from tests.support.llama_log import KV_LINE, MIB, RS_LINE, logged_as, print_info
from tests.support.tiny_gguf import ARCHES, IM_END_ID, build_vocab, spec_for, text_token_ids, write_model

CTX = 512
SERVER_ARGS = ["-c", str(CTX), "-np", "1", "-t", "2", "-lv", "4"]
def _serve_once(binary: Path, model: Path) -> tuple[dict, str]:
    """Start llama-server on ``model``, send one greedy chat turn, return (response body, server log)."""
    with LlamaServer(binary, model, SERVER_ARGS, ready_timeout=30) as srv:
        body = srv.chat("Hello, who are you?", max_tokens=8, timeout=30)
        return body, srv.log()


@pytest.fixture(scope="module")
def served(llama_server: Path, tiny_models: dict[str, Path]) -> Callable[[str], tuple[dict, str]]:
    """``served(arch) -> (chat body, log)``; each default model is served once per module, then cached."""
    cache: dict[str, tuple[dict, str]] = {}

    def get(arch: str) -> tuple[dict, str]:
        if arch not in cache:
            cache[arch] = _serve_once(llama_server, tiny_models[arch])
        return cache[arch]

    return get


def _assert_answer(body: dict) -> str:
    content = body["choices"][0]["message"]["content"]
    assert content.strip(), body
    assert body["usage"]["completion_tokens"] > 0, body
    return content


# ---------------------------------------------------------------------------------------------------------
# generator only (no server)


def test_generator_is_deterministic_and_seeded(tmp_path: Path) -> None:
    a = write_model("qwen35moe", tmp_path / "a.gguf", seed=1)
    b = write_model("qwen35moe", tmp_path / "b.gguf", seed=1)
    c = write_model("qwen35moe", tmp_path / "c.gguf", seed=2)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    assert a.stat().st_size == c.stat().st_size


def test_overrides_reach_the_file(tmp_path: Path) -> None:
    path = write_model("gemma3", tmp_path / "g.gguf", n_layer=7, swa=64, swa_pattern=3, n_vocab=600)
    fields = gguf.GGUFReader(path).fields

    def scalar(key: str) -> int:
        f = fields[key]
        return int(f.parts[f.data[0]][0])

    assert scalar("gemma3.block_count") == 7
    assert scalar("gemma3.attention.sliding_window") == 64
    assert scalar("gemma3.attention.sliding_window_pattern") == 3
    assert len(fields["tokenizer.ggml.tokens"].data) == 600
    default = gguf.GGUFReader(write_model("gemma3", tmp_path / "d.gguf")).fields
    assert "gemma3.attention.sliding_window_pattern" not in default  # llama.cpp falls back to 6


def test_every_model_is_small_and_has_readable_output_rows(tiny_models: dict[str, Path]) -> None:
    tokens, _, types = build_vocab(spec_for("llama").n_vocab)
    words = text_token_ids(tokens, types)
    assert len(words) > 100 and IM_END_ID not in words
    for arch, path in tiny_models.items():
        assert path.stat().st_size < 4 * MIB, arch
        reader = gguf.GGUFReader(path)
        out = next(t for t in reader.tensors if t.name == "output.weight")
        nonzero = sorted({int(i) for i in out.data.any(axis=1).nonzero()[0]})
        assert nonzero == words, arch  # only whole-word tokens can win a greedy pick


# ---------------------------------------------------------------------------------------------------------
# real llama-server


@pytest.mark.parametrize("arch", ARCHES)
def test_model_loads_and_chats(served: Callable[[str], tuple[dict, str]], arch: str) -> None:
    body, log = served(arch)
    _assert_answer(body)
    info = print_info(log)
    spec = spec_for(arch)
    assert info["arch"] == arch
    assert int(info["n_layer"]) == spec.n_layer
    assert int(info["n_embd"]) == spec.n_embd
    assert int(info["n_embd_head_k"]) == spec.head_dim
    assert int(info["n_expert"]) == spec.n_expert
    assert int(info["n_expert_used"]) == spec.n_expert_used


def _kv_lines(log: str) -> list[tuple[int, int, str, float, str, float]]:
    """(cells, layers, K type, K MiB, V type, V MiB) of every ``llama_kv_cache: size`` line."""
    return [(int(m[1]), int(m[2]), m[5], float(m[6]), m[7], float(m[8])) for m in
            (x.groups() for x in KV_LINE.finditer(log))]


# ggml block sizes: bytes per block of 32 values (f16: 2 bytes per value).
_BYTES_PER_32 = {"f16": 64, "q8_0": 34, "q4_0": 18}


def _kv_bytes(cells: int, layers: int, head_dim: int, n_head_kv: int, type_: str = "f16") -> int:
    """K (or V) bytes of a cache: cells × layers × head_dim × n_head_kv elements of ``type_``."""
    return cells * layers * head_dim * n_head_kv * _BYTES_PER_32[type_] // 32


def test_llama_structure(served: Callable[[str], tuple[dict, str]]) -> None:
    spec = spec_for("llama")
    _, log = served("llama")
    assert print_info(log)["n_swa"] == "0"
    [(cells, layers, kt, k_mib, vt, v_mib)] = _kv_lines(log)
    assert (cells, layers, kt, vt) == (CTX, spec.n_layer, "f16", "f16")
    assert k_mib == v_mib
    assert logged_as(k_mib, _kv_bytes(cells, layers, spec.head_dim, spec.n_head_kv))
    assert "llama_memory_recurrent" not in log


def test_qwen3moe_structure(served: Callable[[str], tuple[dict, str]]) -> None:
    spec = spec_for("qwen3moe")
    _, log = served("qwen3moe")
    info = print_info(log)
    assert (info["n_expert"], info["n_expert_used"]) == ("8", "2")
    assert info["n_swa"] == "0"
    [(cells, layers, *_)] = _kv_lines(log)
    assert (cells, layers) == (CTX, spec.n_layer)


def test_gemma3_structure(served: Callable[[str], tuple[dict, str]]) -> None:
    spec = spec_for("gemma3")
    swa_layers = [il for il in range(spec.n_layer) if spec.is_swa(il)]
    assert len(swa_layers) == 10  # pattern 6, dense last: layers 5 and 11 global
    _, log = served("gemma3")
    info = print_info(log)
    assert int(info["n_swa"]) == spec.swa
    assert info["is_swa_any"] == "1"
    assert "creating non-SWA KV cache" in log and "creating     SWA KV cache" in log
    lines = _kv_lines(log)
    assert sorted(layers for _, layers, *_ in lines) == [spec.n_layer - len(swa_layers), len(swa_layers)]
    for cells, layers, _, k_mib, _, v_mib in lines:
        assert k_mib == v_mib
        assert logged_as(k_mib, _kv_bytes(cells, layers, spec.head_dim, spec.n_head_kv))


def test_qwen35moe_structure(served: Callable[[str], tuple[dict, str]]) -> None:
    spec = spec_for("qwen35moe")
    _, log = served("qwen35moe")
    info = print_info(log)
    assert info["ssm_d_state"] == str(spec.ssm_state_size)
    assert info["ssm_n_group"] == str(spec.ssm_group_count)
    assert info["ssm_dt_rank"] == str(spec.ssm_time_step_rank)
    # Only the full-attention layers (3 and 7) own KV cells.
    [(cells, layers, _, k_mib, _, v_mib)] = _kv_lines(log)
    assert (cells, layers) == (CTX, len(spec.kv_layers())) == (CTX, 2)
    assert k_mib == v_mib
    assert logged_as(k_mib, _kv_bytes(cells, layers, spec.head_dim, spec.n_head_kv))
    # The DeltaNet layers carry a fixed per-sequence state: conv window R and the S matrices.
    m = RS_LINE.search(log)
    assert m, log
    n_recr = spec.n_layer - len(spec.kv_layers())
    conv_dim = 2 * spec.ssm_state_size * spec.ssm_group_count + spec.ssm_inner_size
    r_bytes = n_recr * (spec.ssm_conv_kernel - 1) * conv_dim * 4
    s_bytes = n_recr * spec.ssm_state_size * spec.ssm_state_size * spec.ssm_time_step_rank * 4
    assert (int(m[2]), int(m[3]), int(m[4])) == (1, spec.n_layer, 1)  # 1 cell per sequence; all layers listed
    assert logged_as(float(m[7]), r_bytes), m[0]
    assert logged_as(float(m[9]), s_bytes), m[0]


@pytest.mark.parametrize(
    ("arch", "overrides", "message"),
    [
        ("llama", {"omit_tensors": ("blk.0.ffn_norm.weight",)}, "tensor 'blk.0.ffn_norm.weight' not found"),
        ("qwen35moe", {"omit_tensors": ("blk.1.ssm_a",)}, "tensor 'blk.1.ssm_a' not found"),
        ("qwen35moe", {"omit_keys": ("qwen35moe.ssm.conv_kernel",)},
         "key not found in model: qwen35moe.ssm.conv_kernel"),
    ],
)
def test_missing_item_fails_the_load(llama_server: Path, make_tiny_model: Callable[..., Path], arch: str,
                                     overrides: dict, message: str) -> None:
    srv = LlamaServer(llama_server, make_tiny_model(arch, **overrides), SERVER_ARGS, ready_timeout=30)
    with pytest.raises(RuntimeError, match="llama-server exited with"):
        srv.start()
    assert srv.proc is not None and srv.proc.returncode not in (0, None)
    assert message in srv.log()


@pytest.mark.parametrize(
    ("arch", "overrides", "args"),
    [
        ("gemma3", {"n_layer": 7, "swa": 64, "swa_pattern": 3}, []),
        ("qwen35moe", {"n_layer": 6, "full_attention_interval": 3, "n_head_kv": 1, "dtype": "f16",
                       "tied_output": True}, []),
        ("qwen3moe", {"n_expert": 16, "n_expert_used": 4, "head_dim": 64}, ["-ctk", "q8_0", "-ctv", "q8_0"]),
    ],
    ids=["gemma3-pattern3", "qwen35moe-interval3-f16-tied", "qwen3moe-16x4-q8kv"],
)
def test_overridden_shapes_reach_llama_server(llama_server: Path, make_tiny_model: Callable[..., Path], arch: str,
                                              overrides: dict, args: list[str]) -> None:
    """Overrides are what a memory estimator will be validated with, so llama-server must see them as given."""
    spec = spec_for(arch, **overrides)
    with LlamaServer(llama_server, make_tiny_model(arch, **overrides), [*SERVER_ARGS, *args],
                     ready_timeout=30) as srv:
        _assert_answer(srv.chat("Hello, who are you?", max_tokens=8, timeout=30))
        log = srv.log()
    info = print_info(log)
    assert (int(info["n_layer"]), int(info["n_head_kv"]), int(info["n_embd_head_k"])) == (
        spec.n_layer, spec.n_head_kv, spec.head_dim)
    assert (int(info["n_expert"]), int(info["n_expert_used"])) == (spec.n_expert, spec.n_expert_used)
    n_swa = sum(spec.is_swa(il) for il in range(spec.n_layer))
    expected_layers = sorted([len(spec.kv_layers()) - n_swa, n_swa] if n_swa else [len(spec.kv_layers())])
    lines = _kv_lines(log)
    assert sorted(layers for _, layers, *_ in lines) == expected_layers
    kv_type = args[args.index("-ctk") + 1] if "-ctk" in args else "f16"
    for cells, layers, kt, k_mib, vt, v_mib in lines:
        assert kt == vt == kv_type
        assert logged_as(k_mib, _kv_bytes(cells, layers, spec.head_dim, spec.n_head_kv, kv_type))
        assert logged_as(v_mib, _kv_bytes(cells, layers, spec.head_dim, spec.n_head_kv, kv_type))
