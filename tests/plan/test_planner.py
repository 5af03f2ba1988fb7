"""The plan stage on recorded machines, with Qwen3.6's real shapes (a header-only GGUF), and the ``plan`` command.

Scenario checks follow the issue: attention and KV stay on the GPU, predicted VRAM ≤ free − margin, predicted
RAM ≤ available − reserve, more memory never gives a smaller context or more experts on the CPU, 8 GB + 32 GB runs
the default model, 16 GB with no GPU gets a smaller model with the reason. The plan's flags are then given to the
real llama-server to prove the engine accepts them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.catalog.models import load_catalog
from bootstrap.core.errors import ExitCode, UnsupportedMachine
from bootstrap.core.messages.swa_full import MESSAGES
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.plan import engine_flags, planner
from bootstrap.plan.memory import checkpoint_bytes
from bootstrap.plan.model_facts import catalog_candidates, file_candidate
from bootstrap.plan.planner import Candidate, Plan, choose
from tests.app.test_zh_output import leaks
from tests.support.header_only import qwen36_35b_a3b_header
from tests.support.llama import LlamaServer
from tests.support.paths import TEST_DATA

HARDWARE = TEST_DATA / "hardware"
GIB = 1 << 30
REPO = "unsloth/Qwen3.6-35B-A3B-GGUF"
GPU_MACHINES = ["rtx3070_8gb_32gb", "rtx4060_8gb_16gb", "rtx3060_12gb", "t4_16gb", "rtx4090_24gb"]
ALL_MACHINES = [*GPU_MACHINES, "no_gpu_16gb", "apple_m2_16gb"]


pytestmark = pytest.mark.usefixtures("english")


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home's models folder holding the real-shape header of the default quant (no tensor data)."""
    root = tmp_path_factory.mktemp("models")
    target = root / REPO / load_catalog().model(None).quant(None).file.path
    target.parent.mkdir(parents=True)
    qwen36_35b_a3b_header(target)
    return root


def machine(name: str) -> HardwareProfile:
    return load_profile(HARDWARE / f"{name}.json")


def default_plan(hardware: HardwareProfile, models_dir: Path, *, quant: str | None = None,
                 ctx: int | None = None) -> Plan:
    catalog = load_catalog()
    model = catalog.model(None)
    fallbacks = [] if quant else [c for fid in model.fallbacks
                                  for c in catalog_candidates(catalog.model(fid), None, models_dir)]
    return choose(catalog_candidates(model, quant, models_dir), hardware, requested_ctx=ctx, fallbacks=fallbacks)


def with_memory(hardware: HardwareProfile, *, vram_free: int | None = None, ram_available: int | None = None,
                ram_total: int | None = None) -> HardwareProfile:
    memory = hardware.memory
    memory = dataclasses.replace(memory, total_bytes=ram_total or memory.total_bytes,
                                 available_bytes=ram_available or memory.available_bytes)
    gpus = hardware.gpus
    if vram_free is not None:
        gpus = tuple(dataclasses.replace(g, vram_free_bytes=vram_free, vram_total_bytes=max(vram_free,
                                                                                              g.vram_total_bytes))
                     for g in gpus)
    return dataclasses.replace(hardware, memory=memory, gpus=gpus)


def test_header_profile_matches_the_published_split(models_dir: Path) -> None:
    """The header-only file carries Qwen3.6-35B-A3B's real layout (docs/models.md): 40 layers, 10 with KV."""
    [candidate, *_] = catalog_candidates(load_catalog().model(None), None, models_dir)
    profile = candidate.profile
    assert profile.architecture == "qwen35moe" and profile.n_layer == 40 and profile.is_moe
    assert profile.kv_layers == tuple(range(3, 40, 4))
    experts = sum(lw.expert_bytes for lw in profile.layers)
    assert 18.0 * GIB < experts < 18.6 * GIB  # "routed experts ≈ 18.3 GiB"


@pytest.mark.parametrize("name", ALL_MACHINES)
def test_plan_respects_the_budgets(name: str, models_dir: Path) -> None:
    hardware = machine(name)
    plan = default_plan(hardware, models_dir)
    est = plan.estimate
    assert est.gpu_total <= plan.budget.gpu_bytes
    reserve = max(planner.RAM_RESERVE_MIN, int(hardware.memory.total_bytes * planner.RAM_RESERVE_SHARE))
    host = est.host_total + (est.gpu_total if plan.budget.unified else 0)
    assert host <= hardware.memory.available_bytes and host <= hardware.memory.total_bytes - reserve
    gpu = max(hardware.gpus, key=lambda g: g.vram_total_bytes, default=None)
    if gpu is not None and not gpu.unified_memory:
        assert est.gpu_total <= gpu.vram_free_bytes - planner.GPU_MARGIN
    assert all(r.text and "\n" not in r.text for r in plan.reasons)
    topics = {r.topic: r.value for r in plan.reasons}
    assert {"variant", "quant", "facts", "ctx", "cache_type", "placement", "threads", "thinking"} <= set(topics)
    # The default model's profile comes from the real-shape header in the home; fallbacks from the catalog.
    assert topics["facts"] == ("header" if plan.model_id == "qwen3.6-35b-a3b" else "catalog")
    assert "-c" in plan.args and "--reasoning" in plan.args


@pytest.mark.parametrize("name", GPU_MACHINES)
def test_attention_and_kv_stay_on_the_gpu(name: str, models_dir: Path) -> None:
    plan = default_plan(machine(name), models_dir)
    assert plan.model_id == "qwen3.6-35b-a3b", plan.reasons[0].text
    # -ngl counts every block of the file (block_count 41: the MTP block too, docs/models.md) and the output layer.
    assert plan.settings.n_gpu_layers == 42
    assert plan.estimate.kv_cpu == 0 and plan.estimate.recurrent_cpu == 0
    assert plan.settings.ctx >= planner.GOOD_CTX


def test_8gb_gpu_with_32gb_ram_runs_the_default_model(models_dir: Path) -> None:
    plan = default_plan(machine("rtx3070_8gb_32gb"), models_dir)
    assert (plan.model_id, plan.quant) == ("qwen3.6-35b-a3b", "UD-Q4_K_XL")
    assert plan.fallback_from is None and plan.speed_class == "hybrid"
    assert 0 < plan.settings.n_cpu_moe < 40 and "--n-cpu-moe" in plan.args
    assert plan.variant.name == "ubuntu-vulkan-x64"


def test_16gb_without_gpu_falls_back_and_says_why(models_dir: Path) -> None:
    plan = default_plan(machine("no_gpu_16gb"), models_dir)
    assert plan.model_id != "qwen3.6-35b-a3b" and plan.fallback_from == "Qwen3.6-35B-A3B"
    assert plan.reasons[0].topic == "model" and "no quant of Qwen3.6-35B-A3B fits" in plan.reasons[0].text
    assert plan.settings.n_gpu_layers == 0 and plan.speed_class == "cpu"


def test_an_explicit_quant_that_cannot_fit_is_exit_3(models_dir: Path) -> None:
    with pytest.raises(UnsupportedMachine) as exc:
        default_plan(machine("no_gpu_16gb"), models_dir, quant="UD-Q4_K_XL")
    assert exc.value.exit_code == ExitCode.UNSUPPORTED
    assert "does not fit" in exc.value.message and "GiB" in exc.value.message


def test_an_explicit_ctx_is_never_reduced(models_dir: Path) -> None:
    hardware = machine("rtx3070_8gb_32gb")
    assert default_plan(hardware, models_dir, ctx=131072).settings.ctx == 131072
    with pytest.raises(UnsupportedMachine):
        default_plan(machine("no_gpu_16gb"), models_dir, ctx=262144, quant="UD-Q2_K_XL")


@pytest.mark.parametrize("quant", ["UD-Q4_K_XL", "UD-IQ4_XS"])
def test_more_vram_never_means_less_context_or_more_cpu_experts(quant: str, models_dir: Path) -> None:
    base = machine("rtx3070_8gb_32gb")
    previous = None
    for vram in [4, 6, 8, 10, 12, 16, 20, 24, 32]:
        plan = default_plan(with_memory(base, vram_free=vram * GIB), models_dir, quant=quant)
        current = (plan.settings.ctx, plan.settings.n_cpu_moe, plan.settings.n_gpu_layers)
        if previous is not None:
            assert current[0] >= previous[0], (vram, current, previous)
            assert current[1] <= previous[1], (vram, current, previous)
            assert current[2] >= previous[2], (vram, current, previous)
        previous = current
    assert previous is not None and previous[1] == 0  # 32 GiB holds every expert


def test_more_ram_never_means_a_smaller_quant_or_context(models_dir: Path) -> None:
    base = machine("no_gpu_16gb")
    previous: tuple[int, int, int] | None = None
    order = {c.quant: i for i, c in enumerate(catalog_candidates(load_catalog().model(None), None, models_dir))}
    for ram in [12, 16, 24, 32, 48, 64]:
        hardware = with_memory(base, ram_total=ram * GIB, ram_available=int(ram * GIB * 0.8))
        plan = default_plan(hardware, models_dir)
        # (is the default model, higher quant, context)
        current = (int(plan.model_id == "qwen3.6-35b-a3b"), -order.get(plan.quant, 99), plan.settings.ctx)
        if previous is not None:
            assert current[:2] >= previous[:2], (ram, plan.quant, plan.model_id)
            if current[:2] == previous[:2]:
                assert current[2] >= previous[2]
        previous = current
    assert previous is not None and previous[0] == 1


def test_flags_unknown_to_an_old_engine_are_dropped_with_a_warning(models_dir: Path) -> None:
    catalog = load_catalog()
    candidates = catalog_candidates(catalog.model(None), None, models_dir)
    plan = choose(candidates, machine("rtx3070_8gb_32gb"), engine_build=8000)
    assert "--reasoning" not in plan.args and "--reasoning" in plan.dropped_flags
    assert any("b8000" in w and "--reasoning" in w for w in plan.warnings)
    assert "--fit" in plan.args  # b7407 already had it
    kept = engine_flags.filter_args(["-c", "4096", "--reasoning-budget", "-1", "-ngl", "0"], 8000).kept
    assert kept == ("-c", "4096", "-ngl", "0")


def test_plan_for_a_local_file_drives_the_real_server(llama_server: Path, make_tiny_model) -> None:
    """The flags a plan emits are accepted by the test bed's llama-server, which then answers."""
    model = make_tiny_model("qwen35moe")
    hardware = machine("no_gpu_16gb")
    plan = choose([file_candidate(model)], hardware)
    assert plan.settings.n_gpu_layers == 0
    args = [a for a in plan.args]
    with LlamaServer(llama_server, model, args) as server:
        reply = server.chat("Hello", max_tokens=4)
    assert reply["choices"][0]["message"] is not None
    assert reply["usage"]["completion_tokens"] >= 1


# The part of Qwen3's chat template that switches thinking (its GGUFs carry it as tokenizer.chat_template).
THINKING_TEMPLATE = (
    "{%- for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{%- endif %}"
    "{%- endif %}"
)


def test_thinking_is_planned_only_for_a_model_that_thinks(models_dir: Path, make_tiny_model) -> None:
    """--reasoning and the thinking reason for a model with a thinking mode (the catalog says so, or the GGUF's chat
    template has the switch); nothing for one without (a plain template, a base model)."""
    hardware = machine("no_gpu_16gb")
    plain = choose([file_candidate(make_tiny_model("llama"))], hardware)
    assert "--reasoning" not in plain.args and "thinking" not in {r.topic for r in plain.reasons}
    assert plain.speed.thinking is None
    thinks = choose([file_candidate(make_tiny_model("llama", chat_template=THINKING_TEMPLATE))], hardware)
    assert thinks.args[thinks.args.index("--reasoning") + 1] == "off" and thinks.speed.thinking is False
    assert {r.topic: r.value for r in thinks.reasons}["thinking"] == "off"
    catalog = load_catalog()
    for model in catalog.models:  # every shipped chat entry is a Qwen3.5/3.6 with a thinking mode
        if model.embedding:  # an embedding model answers no chat: no thinking to plan
            assert not model.thinks, model.id
            continue
        assert model.thinks, model.id
        plan = choose(catalog_candidates(model, None, models_dir), machine("rtx4090_24gb"))
        assert "--reasoning" in plan.args, model.id
    named = dataclasses.replace(file_candidate(make_tiny_model("llama")), thinks=True, thinking_default=True)
    assert "--reasoning" in choose([named], hardware).args  # install --thinking on names a mode the user knows of


def run_plan(*args: str, lang: str = "en_US.UTF-8", home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LANG": lang, "LC_ALL": lang, "QWENKIT_LANG": ""}
    if home is not None:
        env["QWENKIT_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "bootstrap", "plan", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_plan_command_json_and_human(tmp_path: Path) -> None:
    hw = str(HARDWARE / "rtx3070_8gb_32gb.json")
    proc = run_plan("--hardware", hw, "--json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # 8 GB NVIDIA: the MTP repo's file, its head drafting on the GPU (tests/plan/test_planner_mtp.py).
    assert doc["model"]["id"] == "qwen3.6-35b-a3b-mtp" and doc["engine"]["variant"] == "ubuntu-vulkan-x64"
    assert doc["settings"]["mtp_draft"] == 2 and "draft-mtp" in doc["args"]
    assert doc["memory"]["gpu_bytes"] <= doc["memory"]["gpu_budget_bytes"]
    assert doc["args"][:2] == ["-c", str(doc["settings"]["ctx"])]
    human = run_plan("--hardware", hw, lang="zh_CN.UTF-8", home=tmp_path)
    # the plan is the command's output (stdout, so '| less' and '> plan.txt' get it); stderr only its warnings
    assert human.returncode == 0 and "方案：Qwen3.6-35B-A3B" in human.stdout and "llama-server -m " in human.stdout
    assert "方案" not in human.stderr and "llama-server -m " not in human.stderr


@pytest.mark.parametrize(("args", "code", "text"), [
    (["--ctx", "100"], ExitCode.USAGE, "--ctx 100 is out of range"),
    (["nonexistent-model"], ExitCode.USAGE, "Unknown model 'nonexistent-model'"),
    (["qwen3.6-35b-a3b:Q9"], ExitCode.USAGE, "has no quant 'Q9'"),
    (["missing.gguf"], ExitCode.USAGE, "No such file"),
    (["qwen3.6-35b-a3b:UD-Q4_K_XL"], ExitCode.UNSUPPORTED, "does not fit"),
])
def test_plan_command_errors_are_one_line(tmp_path: Path, args: list[str], code: int, text: str) -> None:
    proc = run_plan("--hardware", str(HARDWARE / "no_gpu_16gb.json"), *args, home=tmp_path)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert text in lines[0] and len(lines) <= 2 and "Traceback" not in proc.stderr


def test_plan_command_suggests_the_model_meant(tmp_path: Path) -> None:
    hw = str(HARDWARE / "no_gpu_16gb.json")
    proc = run_plan("--hardware", hw, "qwen3.5-4c", home=tmp_path)
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr.splitlines()[1].startswith("hint: Did you mean 'qwen3.5-4b'")
    proc = run_plan("--hardware", hw, "qwen3.5-4b:Q4_K", lang="zh_CN.UTF-8", home=tmp_path)
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr.splitlines()[1].startswith("提示：您是不是想输入 'Q4_K_M'")


def test_plan_command_rejects_a_malformed_hardware_file(tmp_path: Path) -> None:
    bad = tmp_path / "hw.json"
    doc = json.loads((HARDWARE / "rtx3070_8gb_32gb.json").read_text())
    doc["memory"]["total_bytes"] = -1
    bad.write_text(json.dumps(doc))
    proc = run_plan("--hardware", str(bad), home=tmp_path)
    assert proc.returncode == ExitCode.USAGE and "memory.total_bytes" in proc.stderr


def test_plan_reads_only_the_header_of_a_hub_file(hub, tmp_path: Path, make_tiny_model) -> None:
    """hf:OWNER/REPO/FILE: the plan is made from a few ranged reads, before any download."""
    model = make_tiny_model("qwen3moe", n_vocab=32000)
    hub.create_repo("me/tiny-GGUF", {"tiny.gguf": model})
    env_home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-m", "bootstrap", "plan", "hf:me/tiny-GGUF/tiny.gguf", "--hardware",
         str(HARDWARE / "rtx4090_24gb.json"), "--json"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "QWENKIT_HOME": str(env_home), "QWENKIT_HF_ENDPOINT": hub.endpoint,
             "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint, "NO_PROXY": "127.0.0.1,localhost"})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["model"]["size_bytes"] == model.stat().st_size and doc["speed_class"] == "gpu"
    assert {r["topic"]: r["value"] for r in doc["reasons"]}["facts"] == "remote-header"
    assert hub.bytes_served("tiny.gguf") < model.stat().st_size
    assert not env_home.joinpath("models").exists()


def test_candidate_profiles_scale_with_the_quant(models_dir: Path) -> None:
    candidates: list[Candidate] = catalog_candidates(load_catalog().model(None), None, models_dir)
    by_quant = {c.quant: c for c in candidates}
    big, small = by_quant["UD-Q4_K_XL"].profile, by_quant["UD-IQ4_XS"].profile
    ratio = small.total_weight_bytes / big.total_weight_bytes
    assert ratio == pytest.approx(17_730_509_792 / 22_400_000_000, rel=0.01)
    assert small.kv_layers == big.kv_layers and small.recurrent_bytes_per_seq == big.recurrent_bytes_per_seq


def test_plan_of_a_hostile_gguf_is_one_line_exit_2(tmp_path: Path) -> None:
    """A truncated or forged header reaches the user as one line and exit 2, never a traceback."""
    forged = tmp_path / "forged.gguf"
    # magic, version 3, then a tensor count of 2^60 that no 40-byte file can hold
    forged.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (1 << 60).to_bytes(8, "little") + bytes(24))
    proc = run_plan(str(forged), "--hardware", str(HARDWARE / "no_gpu_16gb.json"), home=tmp_path)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and "forged.gguf" in lines[0] and "Traceback" not in proc.stderr


def test_catalog_shape_agrees_with_the_real_header(models_dir: Path, tmp_path: Path) -> None:
    """Offline plans (catalog shape facts) see the same layer count and close sizes as the real file's header."""
    model = load_catalog().model(None)
    [from_header, *_] = catalog_candidates(model, None, models_dir)
    [from_catalog, *_] = catalog_candidates(model, None, tmp_path / "empty")
    assert from_catalog.facts == "catalog" and from_header.facts == "header"
    a, b = from_header.profile, from_catalog.profile
    assert (a.n_layer, a.n_layer_all, a.kv_layers) == (b.n_layer, b.n_layer_all, b.kv_layers)
    assert b.recurrent_bytes_per_seq == a.recurrent_bytes_per_seq
    experts = [sum(lw.expert_bytes for lw in p.layers) for p in (a, b)]
    assert experts[1] == pytest.approx(experts[0], rel=0.05)
    plan = choose([from_catalog], machine("rtx3070_8gb_32gb"))
    assert plan.args[plan.args.index("-ngl") + 1] == "999"  # all layers, whether the file counts an MTP block


@pytest.mark.parametrize("name", ALL_MACHINES)
def test_the_prompt_cache_and_checkpoints_are_counted_and_bounded(name: str, models_dir: Path) -> None:
    """Issue 26: llama-server's prompt cache grows to 8192 MiB unless told (a soak measured 467 → 3,067 MiB in ten
    minutes against a plan of 425). Every plan passes a limit it counts in the RAM it predicts, and stays within the
    budget with it."""
    plan = default_plan(machine(name), models_dir)
    s, est = plan.settings, plan.estimate
    args = list(plan.args)
    assert args[args.index("--cache-ram") + 1] == str(s.cache_ram_mib)
    assert est.prompt_cache == s.cache_ram_mib << 20
    profile = next(c.profile for c in catalog_candidates(load_catalog().model(plan.model_id), plan.quant, models_dir)
                   if c.quant == plan.quant)
    assert s.cache_ram_mib == 0 or planner.prompt_state_bytes(profile, s) <= s.cache_ram_mib << 20
    assert s.cache_ram_mib <= planner.CACHE_RAM_MAX_MIB
    per = checkpoint_bytes(profile, s)
    assert per > 0  # Qwen3.6's DeltaNet layers: a checkpoint is one recurrent state
    assert args[args.index("--ctx-checkpoints") + 1] == str(s.ctx_checkpoints)
    assert est.checkpoints == s.n_parallel * s.ctx_checkpoints * per
    assert est.prompt_cache + est.checkpoints <= est.host_total
    unified = est.gpu_total if plan.budget.unified else 0
    assert est.host_total + unified <= plan.budget.ram_bytes
    reason = next(r for r in plan.reasons if r.topic == "prompt_cache")
    assert reason.value.startswith(f"{s.cache_ram_mib} MiB")


def test_less_ram_left_gives_a_smaller_cache_never_a_bigger_plan(models_dir: Path) -> None:
    """The cache takes half of what the model leaves (at most 4096 MiB); tight RAM turns it off and cuts the
    checkpoints, and the plan's RAM figure never passes the budget."""
    base = machine("rtx3070_8gb_32gb")
    sizes = []
    for available in (30 * GIB, 24 * GIB, 21 * GIB):
        plan = default_plan(with_memory(base, ram_available=available), models_dir)
        assert plan.estimate.host_total <= plan.budget.ram_bytes
        sizes.append((plan.settings.cache_ram_mib, plan.settings.ctx_checkpoints))
    assert sizes == sorted(sizes, reverse=True) and sizes[0] != sizes[-1], sizes


def test_a_full_attention_model_makes_no_checkpoints(tiny_models: dict[str, Path]) -> None:
    """llama-server checkpoints only SWA and recurrent models: no --ctx-checkpoints for a llama."""
    candidate = file_candidate(tiny_models["llama"])
    plan = choose([candidate], machine("no_gpu_16gb"))
    assert "--ctx-checkpoints" not in plan.args and plan.estimate.checkpoints == 0
    assert "--cache-ram" in plan.args and plan.estimate.prompt_cache > 0


# ----------------------------------------------------------------------------------------------------------
# --swa-full for a sliding-window model whose prompt cache is kept on disk (docs/prompt-cache.md)

def _reason(plan: Plan, topic: str) -> planner.Reason:
    return next(r for r in plan.reasons if r.topic == topic)


def test_a_swa_model_gets_swa_full_with_a_prompt_cache_on_disk(gemma_gguf: Path) -> None:
    """Gemma 3 (15 of 18 layers SWA) on 16 GB: --swa-full, its KV counted for the whole context, no checkpoints."""
    plan = choose([file_candidate(gemma_gguf)], machine("no_gpu_16gb"))
    assert plan.prompt_cache_disk_mib > 0 and plan.settings.swa_full
    assert "--swa-full" in plan.args and "--ctx-checkpoints" not in plan.args
    assert plan.estimate.swa_cells == plan.estimate.kv_cells == plan.settings.ctx
    assert plan.estimate.kv_cpu == 18 * 1024 * plan.settings.ctx and plan.estimate.checkpoints == 0
    reason = _reason(plan, "swa_full")
    # 15 SWA layers × (the whole context − the window's cells: 512 × 4 slots + the micro-batch, padded) × 1 KiB
    window = -(-(512 * plan.settings.n_parallel + plan.settings.ubatch) // 256) * 256
    assert reason.value == "on" and f"({15 * (plan.settings.ctx - window) / 1024:.0f} MiB more KV)" in reason.text


def test_no_swa_full_without_a_prompt_cache_on_disk(gemma_gguf: Path) -> None:
    hardware = machine("no_gpu_16gb")
    full_disk = dataclasses.replace(hardware, disk=dataclasses.replace(hardware.disk, free_bytes=GIB))
    plan = choose([file_candidate(gemma_gguf)], full_disk)
    assert plan.prompt_cache_disk_mib == 0 and not plan.settings.swa_full and "--swa-full" not in plan.args
    assert "--ctx-checkpoints" in plan.args and plan.estimate.swa_cells < plan.settings.ctx
    assert _reason(plan, "swa_full").value == "off" and "no prompt cache on disk" in _reason(plan, "swa_full").text


def test_swa_full_never_costs_context(gemma_gguf: Path) -> None:
    """RAM between the model's need at 32k without --swa-full and with it: the plan keeps the 32k context and
    leaves --swa-full off, saying what it would have cost."""
    candidate = file_candidate(gemma_gguf)
    base = planner.LaunchSettings(ctx=32_768, ubatch=planner.DEFAULT_UBATCH, batch=planner.DEFAULT_BATCH)
    plain = planner.estimate(candidate.profile, base).host_total
    full = planner.estimate(candidate.profile, dataclasses.replace(base, swa_full=True)).host_total
    assert full - plain > 400 * (1 << 20)
    budget = (plain + full) // 2
    hardware = with_memory(machine("no_gpu_16gb"), ram_available=budget + GIB // 2)
    assert planner.budget_for(hardware, planner.choose_variant(hardware)).ram_bytes == budget
    plan = choose([candidate], hardware)
    assert plan.settings.ctx == 32_768 and not plan.settings.swa_full and "--swa-full" not in plan.args
    reason = _reason(plan, "swa_full")
    assert reason.value == "off" and "does not fit at a 32768-token context" in reason.text
    roomy = choose([candidate], with_memory(machine("no_gpu_16gb"), ram_available=full + GIB))
    assert roomy.settings.ctx == 32_768 and roomy.settings.swa_full


def test_swa_full_is_said_in_both_languages(gemma_gguf: Path, tmp_path: Path) -> None:
    hw = str(HARDWARE / "no_gpu_16gb.json")
    doc = json.loads(run_plan(str(gemma_gguf), "--hardware", hw, "--json", home=tmp_path).stdout)
    assert doc["settings"]["swa_full"] is True and "--swa-full" in doc["args"]
    assert {r["topic"]: r["value"] for r in doc["reasons"]}["swa_full"] == "on"
    zh = run_plan(str(gemma_gguf), "--hardware", hw, lang="zh_CN.UTF-8", home=tmp_path)
    assert zh.returncode == 0 and "完整 SWA 缓存" in zh.stdout and "开启 --swa-full" in zh.stdout
    assert leaks("\n".join(line for line in zh.stdout.splitlines() if "SWA" in line)) == []
    for key in ("swa_full.why_off_no_disk", "swa_full.why_off_no_room"):
        assert leaks(MESSAGES[key]["zh"].format(mib=442, ctx=32768, window=512)) == []


def test_a_model_without_swa_gets_no_swa_full(tiny_models: dict[str, Path]) -> None:
    plan = choose([file_candidate(tiny_models["qwen35moe"])], machine("no_gpu_16gb"))
    assert not plan.settings.swa_full and "--swa-full" not in plan.args
    assert "swa_full" not in {r.topic for r in plan.reasons}


def test_the_catalogs_own_swa_full_is_given_once() -> None:
    """A catalog entry's server_args that already ask for --swa-full replace the plan's, not add a second."""
    args = engine_flags.with_overrides(["-c", "4096", "--swa-full", "--jinja"], ["--swa-full", "-c", "2048"])
    assert args.count("--swa-full") == 1 and args.count("-c") == 1 and args[args.index("-c") + 1] == "2048"
