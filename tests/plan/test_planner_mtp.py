"""The MTP head in the plan: ``--spec-type draft-mtp --spec-draft-n-max 2`` only where it can help.

Recorded machines (tests/data/hardware) with Qwen3.6-35B-A3B's real shapes: a header-only UD-Q4_K_XL file with
its nextn block (tests/support/header_only.py), and the same file without it. The flags are then given to the
test bed's real llama-server with a tiny qwen35moe that carries a real head.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from bootstrap.core.errors import UnsupportedMachine
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.plan import engine_flags
from bootstrap.plan.memory import estimate, mtp_head_on_gpu
from bootstrap.plan.model_facts import file_candidate
from bootstrap.plan.planner import MTP_DRAFT_MAX, Candidate, Plan, choose
from tests.support.header_only import qwen36_35b_a3b_header, qwen36_35b_a3b_mtp_header
from tests.support.llama import LlamaServer
from tests.support.paths import TEST_DATA

MTP_FLAGS = ["--spec-type", "draft-mtp", "--spec-draft-n-max", str(MTP_DRAFT_MAX)]
GIB = 1 << 30

pytestmark = pytest.mark.usefixtures("english")


def machine(name: str) -> HardwareProfile:
    return load_profile(TEST_DATA / "hardware" / f"{name}.json")


@pytest.fixture(scope="module")
def mtp_file(tmp_path_factory: pytest.TempPathFactory) -> Candidate:
    return file_candidate(qwen36_35b_a3b_mtp_header(tmp_path_factory.mktemp("mtp")))


@pytest.fixture(scope="module")
def base_file(tmp_path_factory: pytest.TempPathFactory) -> Candidate:
    return file_candidate(qwen36_35b_a3b_header(tmp_path_factory.mktemp("base")))


def _has_mtp_flags(plan: Plan) -> bool:
    args = list(plan.args)
    return any(args[i:i + 4] == MTP_FLAGS for i in range(len(args)))


def _reason(plan: Plan, topic: str) -> str:
    return next(r.value for r in plan.reasons if r.topic == topic)


def test_8gb_nvidia_with_an_mtp_file_gets_the_flags(mtp_file: Candidate) -> None:
    """The reported +30 % set-up: 8 GB card, experts partly in RAM, the head on the GPU."""
    plan = choose([mtp_file], machine("rtx3070_8gb_32gb"))
    assert _has_mtp_flags(plan) and plan.settings.mtp_draft == MTP_DRAFT_MAX
    assert _reason(plan, "mtp") == f"draft-mtp {MTP_DRAFT_MAX}"
    assert mtp_head_on_gpu(mtp_file.profile, plan.settings)
    assert plan.settings.n_cpu_moe > 0  # a hybrid plan: experts of the first layers in RAM
    assert plan.settings.n_parallel == 1
    assert plan.estimate.mtp_gpu > 0.4 * GIB and plan.estimate.mtp_cpu == 0  # the head and its KV, on the GPU
    assert plan.estimate.gpu_total <= plan.budget.gpu_bytes


def test_the_head_costs_experts_on_the_gpu(mtp_file: Candidate, base_file: Candidate) -> None:
    """The head's ~0.5 GB moves the best point: at least as many expert layers in RAM as without it."""
    hardware = machine("rtx3070_8gb_32gb")
    with_head = choose([mtp_file], hardware)
    without = choose([base_file], hardware)
    assert with_head.settings.ctx == without.settings.ctx
    assert with_head.settings.n_cpu_moe > without.settings.n_cpu_moe
    assert not _has_mtp_flags(without) and "mtp" not in {r.topic for r in without.reasons}


def test_cpu_only_never_drafts_with_the_head(mtp_file: Candidate) -> None:
    hardware = dataclasses.replace(machine("no_gpu_16gb"), memory=dataclasses.replace(
        machine("no_gpu_16gb").memory, total_bytes=64 * GIB, available_bytes=60 * GIB))
    plan = choose([mtp_file], hardware)
    assert plan.settings.n_gpu_layers == 0 and plan.settings.mtp_draft == 0
    assert not _has_mtp_flags(plan) and "--spec-type" not in plan.args
    assert _reason(plan, "mtp") == "off"
    assert "CPU" in next(r.text for r in plan.reasons if r.topic == "mtp")
    assert plan.estimate.mtp_cpu == plan.estimate.mtp_gpu == 0  # the head is not loaded, not counted


def test_a_file_offered_for_its_head_is_skipped_where_the_head_cannot_draft(mtp_file: Candidate,
                                                                            base_file: Candidate) -> None:
    """A catalog MTP variant first, the plain file second: GPU plans take the MTP one, CPU-only plans the plain."""
    offered = dataclasses.replace(mtp_file, requires_mtp=True, model_id="mtp-variant")
    gpu = choose([offered, base_file], machine("rtx3070_8gb_32gb"))
    assert gpu.model_id == "mtp-variant" and _has_mtp_flags(gpu)
    big_ram = dataclasses.replace(machine("no_gpu_16gb"), memory=dataclasses.replace(
        machine("no_gpu_16gb").memory, total_bytes=64 * GIB, available_bytes=60 * GIB))
    cpu = choose([offered, base_file], big_ram)
    assert cpu.model_id == base_file.model_id and not _has_mtp_flags(cpu)


def test_a_gpu_too_small_for_the_head_leaves_it_off(mtp_file: Candidate) -> None:
    """Where the head would have to sit in RAM, the plan serves the file without drafting."""
    profile = mtp_file.profile
    hardware = machine("rtx3070_8gb_32gb")
    plan = choose([mtp_file], hardware)
    # Shrink the GPU until the MTP placement no longer fits but the plain one still does.
    for free in range(7 * GIB, 1 * GIB, -GIB // 8):
        small = dataclasses.replace(hardware, gpus=tuple(dataclasses.replace(g, vram_free_bytes=free)
                                                         for g in hardware.gpus))
        plan = choose([mtp_file], small)
        if plan.settings.mtp_draft == 0:
            break
    assert plan.settings.mtp_draft == 0 and plan.budget.gpu_bytes > 0
    assert _reason(plan, "mtp") == "off" and not _has_mtp_flags(plan)
    assert "do not fit" in next(r.text for r in plan.reasons if r.topic == "mtp")
    assert plan.estimate.mtp_gpu == 0
    assert estimate(profile, dataclasses.replace(plan.settings, mtp_draft=MTP_DRAFT_MAX)).gpu_total > \
        plan.budget.gpu_bytes  # this very placement with the head drafting would not fit


def test_slots_and_mmproj_with_the_head_follow_the_build(make_tiny_model: Callable[..., Path]) -> None:
    """A model that fits whole on the GPU: more slots on a build that drafts for several (b11434 keeps per-sequence
    draft state), one slot on builds before ``MTP_MULTI_SLOT_BUILD``; a projector does not turn MTP off (b11434's
    server loads the draft context and the projector side by side, tools/server/server-context.cpp)."""
    tiny = file_candidate(make_tiny_model("qwen35moe", mtp_layers=1))
    hardware = machine("rtx3070_8gb_32gb")
    many = choose([dataclasses.replace(tiny, mmproj_bytes=50 << 20)], hardware)
    assert _has_mtp_flags(many) and many.settings.n_parallel == 4 and many.settings.mmproj_on_gpu
    old = choose([tiny], hardware, engine_build=engine_flags.MTP_MULTI_SLOT_BUILD - 1)
    assert old.settings.n_parallel == 1 and old.settings.mtp_draft == MTP_DRAFT_MAX
    assert "--spec-type" in old.dropped_flags  # such a build is older than the flag too: left out, with a warning


def test_the_flags_drive_the_real_server(llama_server: Path, make_tiny_model: Callable[..., Path]) -> None:
    """A GPU plan for the tiny model with a head: its flags, minus the GPU placement (the test bed has none),
    are accepted by the real llama-server, which drafts with the head."""
    model = make_tiny_model("qwen35moe", mtp_layers=1)
    plan = choose([file_candidate(model)], machine("rtx3070_8gb_32gb"))
    assert _has_mtp_flags(plan)
    args = [a for a in plan.args]
    args[args.index("-ngl") + 1] = "0"
    with LlamaServer(llama_server, model, args) as server:
        reply = server.chat("Hello there", max_tokens=8)
    log = server.log()  # after the stop: the slot's timing lines are written just after the reply
    assert reply["usage"]["completion_tokens"] >= 1
    assert plan.settings.n_parallel == 4  # several slots drafting on the pinned build's sources
    assert "draft acceptance" in log and reply["timings"]["draft_n"] > 0


def test_an_engine_whose_help_lacks_the_flags_gets_neither_nor_their_values(mtp_file: Candidate) -> None:
    """The installed binary decides (``engine_flags.filter_by_help``, as deploy applies it): no ``--spec-type``
    in its ``--help`` drops both flags with their values, and nothing else."""
    plan = choose([mtp_file], machine("rtx3070_8gb_32gb"))
    accepted = frozenset(a for a in plan.args if a.startswith("-") and not a.startswith("--spec"))
    kept = engine_flags.filter_by_help(list(plan.args), accepted)
    assert kept.dropped == ("--spec-type", "--spec-draft-n-max")
    at = list(plan.args).index("--spec-type")
    assert list(kept.kept) == list(plan.args[:at]) + list(plan.args[at + len(MTP_FLAGS):])




def test_the_head_never_costs_context(mtp_file: Candidate, base_file: Candidate) -> None:
    """Where the head's bytes would push the context below the top of the ladder, the same quant without it wins:
    over a sweep of RAM sizes the MTP file is only ever taken at the full context, and somewhere in the sweep the
    plain file is taken where the MTP one could only have drafted at a shorter context."""
    offered = dataclasses.replace(mtp_file, requires_mtp=True, model_id="mtp-variant")
    hardware = machine("rtx3070_8gb_32gb")
    head_would_cost_context = 0
    for tenth in range(300, 150, -5):  # 30.0 … 15.5 GiB of RAM
        ram = tenth * GIB // 10
        machine_ram = dataclasses.replace(hardware, memory=dataclasses.replace(
            hardware.memory, total_bytes=ram, available_bytes=ram - GIB))
        try:
            plan = choose([offered, base_file], machine_ram)
        except UnsupportedMachine:
            break
        if plan.model_id == "mtp-variant":
            assert plan.settings.mtp_draft and plan.settings.ctx == 32768
            continue
        assert plan.settings.ctx == 32768
        shorter = choose([mtp_file], machine_ram, requested_ctx=16384)
        head_would_cost_context += bool(shorter.settings.mtp_draft)
    assert head_would_cost_context > 0
