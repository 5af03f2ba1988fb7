"""The memory model: exact formulas against published numbers, and predictions against the real llama-server.

Unit tests read real GGUF headers: files written with PyPI ``gguf`` carrying Qwen3.6-35B-A3B's published hparams
(``docs/models.md``; no tensors needed for KV and state), the tiny test-bed models, and the real Gemma 3
270M file. The validation tests start the test bed's llama-server (CPU only) at a small grid of settings and
compare each buffer it reports at ``-lv 4`` with ``estimate``: weights, KV, recurrent state and repack within
3 %, compute within 20 %, output to the printed 0.01 MiB. GPU-side numbers are modelled only (no GPU here).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gguf import GGUFWriter

from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.plan.gguf_header import read_header
from bootstrap.plan.memory import (
    LaunchSettings,
    ModelProfile,
    checkpoint_bytes,
    estimate,
    kv_bytes_per_token,
    model_profile,
    prompt_state_bytes,
)
from tests.support.llama_log import MIB
from tests.support.memory_grid import label, parse_memory, run_point

# ----------------------------------------------------------------------------------------------------------
# headers with real hparams


QWEN36 = {  # qwen35moe.* keys of Qwen3.6-35B-A3B (docs/models.md, "Qwen3.6-35B-A3B architecture")
    "block_count": 40, "context_length": 262_144, "embedding_length": 2048, "attention.head_count": 16,
    "attention.head_count_kv": 2, "attention.key_length": 256, "attention.value_length": 256,
    "expert_count": 256, "expert_used_count": 8, "full_attention_interval": 4, "ssm.conv_kernel": 4,
    "ssm.state_size": 128, "ssm.group_count": 16, "ssm.time_step_rank": 32, "ssm.inner_size": 4096,
}


def write_header(path: Path, arch: str, keys: dict[str, int], tensors: dict[str, Any] | None = None) -> Path:
    """A real GGUF file with ``arch.<key>`` metadata and optional tensors (numpy arrays)."""
    writer = GGUFWriter(path, arch)
    for key, value in keys.items():
        writer.add_uint32(f"{arch}.{key}", value)
    writer.add_array("tokenizer.ggml.tokens", ["a", "b", "c", "d"])
    for name, array in (tensors or {}).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def qwen36(tmp_path_factory: pytest.TempPathFactory) -> ModelProfile:
    path = tmp_path_factory.mktemp("qwen36") / "qwen36-header.gguf"
    return model_profile(read_header(write_header(path, "qwen35moe", QWEN36)))


def test_qwen36_layout(qwen36: ModelProfile) -> None:
    assert qwen36.n_layer == 40
    assert qwen36.kv_layers == tuple(range(3, 40, 4))  # 3, 7, …, 39: 10 full-attention layers
    assert len(qwen36.recurrent_layers) == 30
    assert qwen36.swa_layers == ()


@pytest.mark.parametrize(("k", "v", "per_token"), [
    ("f16", "f16", 20_480), ("bf16", "bf16", 20_480), ("q8_0", "q8_0", 10_880), ("q4_0", "q4_0", 5_760),
    ("q4_1", "q4_1", 6_400), ("q5_0", "q5_0", 7_040), ("q5_1", "q5_1", 7_680), ("iq4_nl", "iq4_nl", 5_760),
    ("f32", "f32", 40_960), ("q8_0", "f16", 15_680),
])
def test_qwen36_kv_bytes_per_token(qwen36: ModelProfile, k: str, v: str, per_token: int) -> None:
    """docs/models.md, "Memory of Qwen3.6-35B-A3B": 2 (K,V) × 10 layers × 2 heads × 256 × bytes/element."""
    assert kv_bytes_per_token(qwen36, k, v) == per_token


@pytest.mark.parametrize(("ctx", "k", "mib"), [(4096, "f16", 80), (32_768, "f16", 640), (131_072, "f16", 2560),
                                               (4096, "q8_0", 42.5), (32_768, "q4_0", 180)])
def test_qwen36_kv_size_matches_published_logs(qwen36: ModelProfile, ctx: int, k: str, mib: float) -> None:
    est = estimate(qwen36, LaunchSettings(ctx=ctx, cache_type_k=k, cache_type_v=k))
    assert est.kv_cpu == mib * MIB and est.kv_gpu == 0 and est.kv_cells == ctx


def test_qwen36_recurrent_state_is_62_81_mib_per_sequence(qwen36: ModelProfile) -> None:
    """``llama_memory_recurrent: size = 62.81 MiB (… 1 seqs), R (f32): 2.81 MiB, S (f32): 60.00 MiB``."""
    r = 30 * 3 * (4096 + 2 * 16 * 128) * 4
    s = 30 * 128 * 4096 * 4
    assert (r / MIB, s / MIB) == (2.8125, 60.0)
    assert qwen36.recurrent_bytes_per_seq == r + s
    assert f"{qwen36.recurrent_bytes_per_seq / MIB:.2f}" == "62.81"
    for slots in (1, 4):
        est = estimate(qwen36, LaunchSettings(ctx=4096, n_parallel=slots))
        assert est.recurrent_cpu == slots * (r + s)  # ctx-independent, one state per slot


def test_mtp_block_is_not_a_trunk_layer(tmp_path: Path) -> None:
    """block_count 41 with nextn_predict_layers 1: n_layer 40; -ngl still counts the MTP block (41 + 1)."""
    path = write_header(tmp_path / "mtp.gguf", "qwen35moe", {**QWEN36, "block_count": 41, "nextn_predict_layers": 1})
    profile = model_profile(read_header(path))
    assert profile.n_layer == 40 and profile.n_layer_all == 41
    assert profile.kv_layers == tuple(range(3, 40, 4))
    assert kv_bytes_per_token(profile) == 20_480  # MTP off: no extra KV layer


def test_unsupported_architecture_is_a_usage_error(tmp_path: Path) -> None:
    path = write_header(tmp_path / "bert.gguf", "bert", {"block_count": 2, "embedding_length": 8})
    with pytest.raises(UsageError) as err:
        model_profile(read_header(path))
    assert err.value.exit_code == ExitCode.USAGE and "bert" in err.value.message


@pytest.mark.parametrize("keys", [
    {**QWEN36, "block_count": 4_000_000_000},  # would be a huge per-layer table
    {**QWEN36, "block_count": 8, "nextn_predict_layers": 9},
    {**QWEN36, "attention.head_count": 0},
    {k: v for k, v in QWEN36.items() if k != "ssm.state_size"},
])
def test_hostile_or_incomplete_header_is_a_usage_error(tmp_path: Path, keys: dict[str, int]) -> None:
    path = write_header(tmp_path / "bad.gguf", "qwen35moe", keys)
    with pytest.raises(UsageError) as err:
        model_profile(read_header(path))
    assert err.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize("settings", [
    LaunchSettings(ctx=4096, cache_type_k="q3_k"),
    LaunchSettings(ctx=4096, cache_type_v="q8_0", flash_attn=False),  # llama.cpp refuses quantized V without FA
    LaunchSettings(ctx=0),
    LaunchSettings(ctx=4096, n_parallel=0),
])
def test_impossible_settings_are_usage_errors(qwen36: ModelProfile, settings: LaunchSettings) -> None:
    with pytest.raises(UsageError):
        estimate(qwen36, settings)


# ----------------------------------------------------------------------------------------------------------
# Gemma 3 270M: SWA with the pattern llama.cpp hard-codes


@pytest.fixture(scope="module")
def gemma(gemma_gguf: Path) -> ModelProfile:
    return model_profile(read_header(gemma_gguf))


def test_gemma_layout(gemma: ModelProfile) -> None:
    """No sliding_window_pattern key: llama.cpp uses 6, so layers 5, 11, 17 are global, 15 are SWA."""
    assert gemma.n_layer == 18 and gemma.n_swa == 512 and gemma.n_vocab == 262_144
    assert [il for il in gemma.kv_layers if il not in gemma.swa_layers] == [5, 11, 17]
    assert len(gemma.swa_layers) == 15
    assert gemma.tied_output  # token_embd is the output matrix


@pytest.mark.parametrize(("settings", "full_mib", "swa_mib", "swa_cells"), [
    (LaunchSettings(ctx=4096), 12, 15, 1024),  # measured: docs/test-bed.md
    (LaunchSettings(ctx=32_768, ubatch=2048), 96, 37.5, 2560),  # docs/test-bed.md: 96 + 37.5 MiB
    (LaunchSettings(ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0"), 12.75, 7.96875, 1024),  # 12.75 + 7.97
])
def test_gemma_kv_matches_measured(gemma: ModelProfile, settings: LaunchSettings, full_mib: float,
                                   swa_mib: float, swa_cells: int) -> None:
    est = estimate(gemma, settings)
    assert est.swa_cells == swa_cells
    assert est.kv_cpu == (full_mib + swa_mib) * MIB


# --swa-full (llama-kv-cache-iswa.cpp: size_swa = size_base). Gemma 3 270M: 1 KV head of 256 → f16 K + V = 1 KiB a
# cell and layer; q8_0 rows of 256 elements = 8 blocks × 34 B, K + V = 544 B.
@pytest.mark.parametrize(("settings", "swa_cells", "kv_bytes"), [
    (LaunchSettings(ctx=4096, swa_full=True), 4096, 18 * 4096 * 1024),  # 72 MiB: 12 full + 60 SWA
    (LaunchSettings(ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0", swa_full=True), 8192, 18 * 8192 * 544),
    (LaunchSettings(ctx=8192, n_parallel=2, kv_unified=False, swa_full=True), 4096, 18 * 4096 * 2 * 1024),
    (LaunchSettings(ctx=5000, swa_full=True), 5120, 18 * 5120 * 1024),  # the context padded to 256, both caches
])
def test_gemma_swa_full_gives_swa_layers_the_whole_context(gemma: ModelProfile, settings: LaunchSettings,
                                                           swa_cells: int, kv_bytes: int) -> None:
    est = estimate(gemma, settings)
    assert est.swa_cells == est.kv_cells == swa_cells
    assert est.kv_cpu == kv_bytes


def test_gemma_swa_full_costs_what_the_window_saved(gemma: ModelProfile) -> None:
    """At 32k: without it 96 + 37.5 MiB (docs/test-bed.md), with it 18 layers × 32,768 cells × 1 KiB = 576 MiB;
    no context checkpoint (the server's n_swa is 0); a cached prompt holds every layer's KV."""
    plain, full = LaunchSettings(ctx=32_768, ubatch=2048), LaunchSettings(ctx=32_768, ubatch=2048, swa_full=True)
    assert estimate(gemma, plain).kv_cpu == round(133.5 * MIB)
    assert estimate(gemma, full).kv_cpu == 576 * MIB
    assert checkpoint_bytes(gemma, plain) == 15 * 512 * 1024 and checkpoint_bytes(gemma, full) == 0
    assert prompt_state_bytes(gemma, plain) == 3 * 1024 * 32_768 + 15 * 512 * 1024
    assert prompt_state_bytes(gemma, full) == 18 * 1024 * 32_768
    # the SWA layers' mask grows with their cache: a bigger compute buffer
    assert estimate(gemma, full).compute_cpu > estimate(gemma, plain).compute_cpu


def test_swa_full_changes_nothing_for_a_model_without_swa(qwen36: ModelProfile) -> None:
    plain = LaunchSettings(ctx=32_768)
    assert estimate(qwen36, plain) == estimate(qwen36, LaunchSettings(ctx=32_768, swa_full=True))


# ----------------------------------------------------------------------------------------------------------
# placement: -ngl, --n-cpu-moe, tied output (modelled; CPU-only test bed)


@pytest.fixture(scope="module")
def tiny_moe(tiny_models: dict[str, Path]) -> ModelProfile:
    return model_profile(read_header(tiny_models["qwen35moe"]))


def test_layers_split_dense_and_experts(tiny_moe: ModelProfile) -> None:
    assert tiny_moe.is_moe and tiny_moe.n_layer == 8
    assert all(lw.expert_bytes > 0 and lw.dense_bytes > 0 for lw in tiny_moe.layers)
    parts = tiny_moe.token_embd_bytes + tiny_moe.output_bytes + tiny_moe.other_bytes
    assert parts + sum(lw.dense_bytes + lw.expert_bytes for lw in tiny_moe.layers) == tiny_moe.total_weight_bytes


def test_gpu_layer_counting_follows_llama_cpp(tiny_moe: ModelProfile) -> None:
    p = tiny_moe
    cpu = estimate(p, LaunchSettings(ctx=4096))
    assert cpu.gpu_total == 0 and cpu.weights_cpu == p.total_weight_bytes
    everything = estimate(p, LaunchSettings(ctx=4096, n_gpu_layers=p.n_layer + 1))
    assert everything.weights_cpu == p.token_embd_bytes  # the input layer always stays on the CPU
    assert everything.kv_cpu == 0 and everything.recurrent_cpu == 0 and everything.kv_gpu == cpu.kv_cpu
    # -ngl 3: output layer + blocks 6 and 7; block 7 is the only full-attention layer among them
    three = estimate(p, LaunchSettings(ctx=4096, n_gpu_layers=3))
    blocks = p.layers[6].dense_bytes + p.layers[6].expert_bytes + p.layers[7].dense_bytes + p.layers[7].expert_bytes
    assert three.weights_gpu == blocks + p.output_bytes + p.other_bytes
    assert three.kv_gpu == cpu.kv_cpu // 2 and three.recurrent_gpu == cpu.recurrent_cpu // 6


def test_n_cpu_moe_keeps_the_first_layers_experts_in_ram(tiny_moe: ModelProfile) -> None:
    p = tiny_moe
    full = estimate(p, LaunchSettings(ctx=4096, n_gpu_layers=p.n_layer + 1))
    moe = estimate(p, LaunchSettings(ctx=4096, n_gpu_layers=p.n_layer + 1, n_cpu_moe=3))
    moved = sum(lw.expert_bytes for lw in p.layers[:3])
    assert moe.weights_gpu == full.weights_gpu - moved and moe.weights_cpu == full.weights_cpu + moved


def test_tied_output_gets_its_own_gpu_copy(gemma: ModelProfile) -> None:
    est = estimate(gemma, LaunchSettings(ctx=4096, n_gpu_layers=1))
    assert est.weights_gpu == gemma.token_embd_bytes + gemma.other_bytes
    assert est.weights_cpu == gemma.total_weight_bytes - gemma.other_bytes


def test_mmproj_follows_the_flag(tiny_moe: ModelProfile) -> None:
    on = estimate(tiny_moe, LaunchSettings(ctx=4096, n_gpu_layers=9, mmproj_bytes=900, mmproj_on_gpu=True))
    off = estimate(tiny_moe, LaunchSettings(ctx=4096, n_gpu_layers=9, mmproj_bytes=900, mmproj_on_gpu=False))
    assert (on.mmproj_gpu, on.mmproj_cpu, off.mmproj_gpu, off.mmproj_cpu) == (900, 0, 0, 900)
    assert on.gpu_total - off.gpu_total == 900 == off.host_total - on.host_total


# ----------------------------------------------------------------------------------------------------------
# the log parser, on lines recorded from a real run (docs/test-bed.md)

RECORDED = """\
0.01.135.293 I load_tensors:          AMX model buffer size =   213.91 MiB
0.01.135.295 I load_tensors:   CPU_Mapped model buffer size =   235.16 MiB
0.01.219.416 I llama_kv_cache: size =   12.00 MiB (  4096 cells,   3 layers,  1/1 seqs), K (f16):    6.00 MiB, V (f16):    6.00 MiB
0.01.228.416 I llama_kv_cache: size =   15.00 MiB (  1024 cells,  15 layers,  1/1 seqs), K (f16):    7.50 MiB, V (f16):    7.50 MiB
0.00.013.741 I llama_context:        CPU  output buffer size =     1.00 MiB
0.00.017.691 I llama_memory_recurrent: size =    0.11 MiB (     1 cells,   8 layers,  1 seqs  0 rs_seq), R (f32):    0.02 MiB, S (f32):    0.09 MiB, P (f32):    0.00 MiB
0.01.231.662 I sched_reserve:        CPU compute buffer size =    22.77 MiB
"""  # noqa: E501


def test_parse_memory_reads_every_buffer() -> None:
    got = parse_memory(RECORDED)
    assert got.weights_mapped == round(235.16 * MIB) and got.repack == round(213.91 * MIB)
    assert got.kv == ((12 * MIB, 4096, 3), (15 * MIB, 1024, 15))
    assert got.recurrent == round(0.11 * MIB) and got.compute == {"CPU": round(22.77 * MIB)}
    assert got.output == {"CPU": MIB}


# ----------------------------------------------------------------------------------------------------------
# validation against the real llama-server (≤ 12 starts: 8 tiny, 2 Gemma)

TINY_POINTS = [
    ("llama", LaunchSettings(ctx=4096)),
    ("llama", LaunchSettings(ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0", n_parallel=3, kv_unified=False)),
    ("qwen3moe", LaunchSettings(ctx=4096)),
    ("qwen3moe", LaunchSettings(ctx=2048, ubatch=1024, batch=1024, flash_attn=False)),
    ("gemma3", LaunchSettings(ctx=4096)),
    ("gemma3", LaunchSettings(ctx=8192, cache_type_k="q4_0", cache_type_v="q4_0", n_parallel=4)),
    ("qwen35moe", LaunchSettings(ctx=4096)),
    ("qwen35moe", LaunchSettings(ctx=6000, ubatch=256, n_parallel=2, kv_unified=False)),
]
GEMMA_POINTS = [
    LaunchSettings(ctx=4096, cpu_repack=True),
    # --swa-full, logged: "size =  9.00 MiB (3072 cells, 3 layers" and "size = 45.00 MiB (3072 cells, 15 layers"
    LaunchSettings(ctx=3000, swa_full=True),
    LaunchSettings(ctx=8192, ubatch=256, cache_type_k="q8_0", cache_type_v="q8_0", n_parallel=2, kv_unified=False),
]


def _assert_matches(profile: ModelProfile, model: Path, point: LaunchSettings, binary: Path) -> None:
    real = run_point(binary, model, point)
    est = estimate(profile, point)
    assert est.gpu_total == 0
    close = {"weights": (est.weights_cpu, real.weights_mapped), "kv": (est.kv_cpu, real.kv_total),
             "recurrent": (est.recurrent_cpu, real.recurrent), "repack": (est.repack, real.repack)}
    for name, (pred, got) in close.items():
        assert abs(pred - got) <= max(0.03 * got, 0.006 * MIB), f"{name}: predicted {pred}, reported {got}"
    compute = sum(real.compute.values())
    assert abs(est.compute_cpu - compute) <= 0.20 * compute, f"compute {est.compute_cpu} vs {compute}"
    assert abs(est.output - sum(real.output.values())) <= 0.006 * MIB
    assert real.kv[0][1] == est.kv_cells  # cells per stream, exactly
    if len(real.kv) > 1:
        assert real.kv[1][1] == est.swa_cells


@pytest.mark.parametrize(("arch", "point"), TINY_POINTS, ids=[f"{a}-{label(p)}" for a, p in TINY_POINTS])
def test_tiny_model_matches_llama_server(llama_server: Path, tiny_models: dict[str, Path], arch: str,
                                         point: LaunchSettings) -> None:
    model = tiny_models[arch]
    _assert_matches(model_profile(read_header(model)), model, point, llama_server)


@pytest.mark.parametrize("point", GEMMA_POINTS, ids=[label(p) for p in GEMMA_POINTS])
def test_gemma_matches_llama_server(llama_server: Path, gemma_gguf: Path, gemma: ModelProfile,
                                    point: LaunchSettings) -> None:
    _assert_matches(gemma, gemma_gguf, point, llama_server)


def test_server_runs_with_the_requested_context(llama_server: Path, make_tiny_model: Callable[..., Path]) -> None:
    """``--fit off`` and explicit flags: llama-server allocates the context it is given, not a fitted one."""
    model = make_tiny_model("llama", n_ctx=16_384)
    real = run_point(llama_server, model, LaunchSettings(ctx=8192))
    assert real.kv[0][1] == 8192 and real.n_ctx_slot == 8192


# ----------------------------------------------------------------------------------------------------------
# the MTP head (--spec-type draft-mtp)


def test_mtp_head_is_recognised_by_its_tensors(make_tiny_model: Callable[..., Path]) -> None:
    """A head counts only when its nextn tensors are there: ``nextn_predict_layers`` alone does not make one."""
    with_head = model_profile(read_header(make_tiny_model("qwen35moe", mtp_layers=1)))
    assert with_head.has_mtp and with_head.n_layer == 8 and with_head.n_layer_all == 9
    assert [lw.index for lw in with_head.mtp_layers] == [8]
    assert with_head.mtp_bytes > 0 and with_head.layers[8].dense_bytes == 0  # trunk sums leave the head out
    missing = model_profile(read_header(make_tiny_model(
        "qwen35moe", mtp_layers=1, omit_tensors=("blk.8.nextn.eh_proj.weight",))))
    assert not missing.has_mtp and missing.n_layer == 8 and missing.mtp_bytes == 0
    assert not model_profile(read_header(make_tiny_model("qwen35moe"))).has_mtp


def test_block_count_41_without_head_tensors_is_not_mtp(tmp_path: Path) -> None:
    """Newer Qwen3.6 converts: block_count 41, nextn_predict_layers 1, but no blk.40.nextn.* tensors."""
    path = write_header(tmp_path / "base41.gguf", "qwen35moe", {**QWEN36, "block_count": 41,
                                                              "nextn_predict_layers": 1})
    profile = model_profile(read_header(path))
    assert profile.n_layer == 40 and not profile.has_mtp
    on = estimate(profile, LaunchSettings(ctx=4096, mtp_draft=2))
    assert on == estimate(profile, LaunchSettings(ctx=4096))  # nothing to load, nothing counted


def test_mtp_counts_head_kv_and_rollback_state(make_tiny_model: Callable[..., Path]) -> None:
    profile = model_profile(read_header(make_tiny_model("qwen35moe", mtp_layers=1)))
    off = estimate(profile, LaunchSettings(ctx=4096, n_parallel=2))
    on = estimate(profile, LaunchSettings(ctx=4096, n_parallel=2, mtp_draft=2))
    assert on.recurrent_cpu == 3 * off.recurrent_cpu  # 1 + n_rs_seq rows per sequence, n_rs_seq = n-max
    head_kv = 4096 * 2 * (2 * 64) * 2  # cells × (K+V) × n_head_kv·head_dim × f16
    assert on.mtp_cpu > profile.mtp_bytes + head_kv and on.mtp_gpu == 0
    assert on.weights_cpu == off.weights_cpu and on.kv_cpu == off.kv_cpu
    # -ngl 2 = output + the last block (the head): the head, its KV and draft compute go to the GPU.
    gpu = estimate(profile, LaunchSettings(ctx=4096, n_gpu_layers=2, mtp_draft=2))
    assert gpu.mtp_cpu == 0 and gpu.mtp_gpu == on.mtp_cpu


def test_mtp_head_matches_llama_server(llama_server: Path, make_tiny_model: Callable[..., Path]) -> None:
    """The real server with ``--spec-type draft-mtp --spec-draft-n-max 2``: the head's weights, the draft
    context's KV cache (a second ``llama_kv_cache`` line, one layer) and the tripled recurrent state."""
    model = make_tiny_model("qwen35moe", mtp_layers=1)
    profile = model_profile(read_header(model))
    point = LaunchSettings(ctx=2048, mtp_draft=2)
    real = run_point(llama_server, model, point)
    est = estimate(profile, point)
    assert abs(est.weights_cpu + profile.mtp_bytes - real.weights_mapped) <= 0.006 * MIB
    assert abs(est.recurrent_cpu - real.recurrent) <= 0.006 * MIB
    (target_kv, _, target_layers), (draft_kv, draft_cells, draft_layers) = real.kv
    assert (target_layers, draft_layers, draft_cells) == (2, 1, 2048)
    assert abs(est.kv_cpu - target_kv) <= 0.006 * MIB
    draft_compute = real.compute_all[-1]
    head = est.mtp_cpu - profile.mtp_bytes - draft_kv
    assert abs(head - draft_compute) <= 0.20 * draft_compute, f"draft compute {head} vs {draft_compute}"
