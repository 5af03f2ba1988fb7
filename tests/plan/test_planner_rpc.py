"""The plan of an RPC head (``install --rpc``): the workers' memory counts, and only what this PC cannot hold goes
to them. Real-shape Qwen3.6-35B-A3B header (no tensor data); the workers' devices as llama-server lists them with
``--rpc`` (``RPC0: IP:PORT (total MiB, free MiB free)``, llama.cpp common/arg.cpp)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from bootstrap.app.commands.plan import print_plan
from bootstrap.core import console
from bootstrap.core.errors import UnsupportedMachine
from bootstrap.core.sizes import GIB
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.place.engine_probe import EngineDevice, parse_devices
from bootstrap.plan.memory import estimate
from bootstrap.plan.model_facts import file_candidate
from bootstrap.plan.planner import Candidate, Plan, choose
from bootstrap.tune.devices import engine_view, with_rpc_workers
from tests.support.header_only import qwen36_35b_a3b_header
from tests.support.paths import TEST_DATA

pytestmark = pytest.mark.usefixtures("english")

# One worker lending a 24 GB card, one lending a CPU's RAM (a worker without a GPU exposes one CPU device).
LISTED = """Available devices:
  RPC0: 192.168.1.20:50052 (24564 MiB, 23900 MiB free)
  RPC1: 192.168.1.21:50052 (31842 MiB, 28000 MiB free)
"""


def machine(name: str) -> HardwareProfile:
    return load_profile(TEST_DATA / "hardware" / f"{name}.json")


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> Candidate:
    return file_candidate(qwen36_35b_a3b_header(tmp_path_factory.mktemp("rpc")))


def _args(plan: Plan) -> list[str]:
    return list(plan.args)


def test_the_listed_rpc_devices_are_parsed() -> None:
    assert parse_devices(LISTED) == (EngineDevice("RPC0", "192.168.1.20:50052", 24564, 23900),
                                     EngineDevice("RPC1", "192.168.1.21:50052", 31842, 28000))


def test_a_pc_too_small_for_the_model_serves_it_with_workers(qwen: Candidate) -> None:
    small = machine("no_gpu_16gb")
    with pytest.raises(UnsupportedMachine):
        choose([qwen], small)  # alone: the 35B does not fit 16 GB
    plan = choose([qwen], with_rpc_workers(small, parse_devices(LISTED)))
    args = _args(plan)
    assert args[args.index("--rpc") + 1] == "192.168.1.20:50052,192.168.1.21:50052"
    layers = plan.settings.n_gpu_layers
    assert 0 < layers < qwen.profile.n_layer_all + 1  # some layers stay here: only what does not fit goes out
    assert plan.estimate.host_total <= plan.budget.ram_bytes
    assert plan.estimate.gpu_total <= plan.budget.rpc_bytes
    # one layer fewer on the workers would not fit this PC's RAM: the fewest layers go over the network
    fewer = estimate(qwen.profile, replace(plan.settings, n_gpu_layers=layers - 1))
    assert fewer.host_total > plan.budget.ram_bytes
    assert args[args.index("--cache-ram") + 1] == "0"  # a prompt saved to the cache aborts with RPC (#26529)
    assert "--n-cpu-moe" not in args  # whole layers, experts with them
    reason = next(r for r in plan.reasons if r.topic == "placement")
    assert reason.value == f"rpc {layers}" and "RPC workers" in reason.text


def test_a_model_that_fits_alone_leaves_the_workers_unused(qwen: Candidate) -> None:
    pc = machine("no_gpu_16gb")
    big = replace(pc, memory=replace(pc.memory, total_bytes=64 * GIB, available_bytes=60 * GIB))
    plan = choose([qwen], with_rpc_workers(big, parse_devices(LISTED)))
    assert "--rpc" not in _args(plan) and plan.settings.n_gpu_layers == 0
    assert any(r.topic == "rpc" and r.value == "unused" for r in plan.reasons)


def test_workers_add_to_a_local_gpu_and_are_kept_by_the_engine_view(qwen: Candidate) -> None:
    gpu_pc = machine("rtx3070_8gb_32gb")
    alone = choose([qwen], gpu_pc)
    with_workers = with_rpc_workers(gpu_pc, parse_devices(LISTED)[:1])
    view = engine_view(with_workers, (EngineDevice("CUDA0", "NVIDIA GeForce RTX 3070", 8192, 7800),),
                       alone.variant)
    assert [g.engine_device for g in view.hardware.gpus if g.vendor == "rpc"] == ["RPC0"]
    plan = choose([qwen], view.hardware)
    assert plan.budget.gpu_name is not None and plan.budget.rpc_bytes > 20 * GIB
    assert "--rpc" in _args(plan)
    # more memory for layers: fewer experts kept in this PC's RAM than with the 8 GB card alone
    assert plan.settings.n_cpu_moe < alone.settings.n_cpu_moe


@pytest.mark.parametrize("language", ["en", "zh"])
def test_qwenkit_plan_prints_a_plan_with_workers_and_one_that_leaves_them_unused(
        qwen: Candidate, capsys: pytest.CaptureFixture[str], language: str) -> None:
    """``qwenkit plan --rpc``'s screen: every reason has its printed topic (a plan with workers once failed with
    an internal error on ``plan.topic_cache_ram``), and the title and memory line name the workers."""
    small = machine("no_gpu_16gb")
    big = replace(small, memory=replace(small.memory, total_bytes=64 * GIB, available_bytes=60 * GIB))
    console.set_language(language)
    try:
        print_plan(choose([qwen], with_rpc_workers(small, parse_devices(LISTED))))
        with_workers = capsys.readouterr().out
        print_plan(choose([qwen], with_rpc_workers(big, parse_devices(LISTED))))
        unused = capsys.readouterr().out
    finally:
        console.set_language("en")
    workers = "RPC workers" if language == "en" else "RPC 工作节点"
    title, *_ = with_workers.splitlines()
    assert workers in title
    assert re.search(rf"{workers} [\d.]+ / 可用 [\d.]+ GiB" if language == "zh"
                     else r"RPC workers [\d.]+ of [\d.]+ GiB usable", with_workers)
    assert "--rpc 192.168.1.20:50052,192.168.1.21:50052" in with_workers.splitlines()[-1]
    assert "--cache-ram 0" in with_workers.splitlines()[-1]
    assert workers not in unused.splitlines()[0] and "--rpc" not in unused
    topic = "rpc " if language == "en" else "RPC 工作节点 "
    assert any(line.lstrip().startswith(topic) for line in unused.splitlines())  # the "unused" reason's row
