"""The GPUs as the placed engine lists them (``tune.devices.engine_view``) and what the plan makes of AMD and Intel
GPUs: recorded ``--list-devices`` outputs (``tests/data/gpus/list_devices``, sources in its README) against the
recorded machines (``tests/data/hardware``), planned with the real-shape header of the default model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bootstrap.catalog.models import load_catalog
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.place.engine_probe import EngineDevice, parse_devices
from bootstrap.plan.engine_variant import choose_variant
from bootstrap.plan.model_facts import catalog_candidates
from bootstrap.plan.planner import Plan, budget_for, choose, plan_to_json
from bootstrap.tune.devices import engine_view, model_words, vendor_of_description
from tests.support.header_only import qwen36_35b_a3b_header
from tests.support.paths import TEST_DATA

LISTS = TEST_DATA / "gpus" / "list_devices"
MIB = 1 << 20
GIB = 1 << 30
REPO = "unsloth/Qwen3.6-35B-A3B-GGUF"

pytestmark = pytest.mark.usefixtures("english")


def machine(name: str) -> HardwareProfile:
    return load_profile(TEST_DATA / "hardware" / f"{name}.json")


def listed(name: str) -> tuple[EngineDevice, ...]:
    return parse_devices((LISTS / f"{name}.txt").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    target = root / REPO / load_catalog().model(None).quant(None).file.path
    target.parent.mkdir(parents=True)
    qwen36_35b_a3b_header(target)
    return root


def plan_for(hardware: HardwareProfile, models_dir: Path) -> Plan:
    model = load_catalog().model(None)
    return choose(catalog_candidates(model, None, models_dir), hardware)


def test_the_recorded_lists_parse() -> None:
    assert [(d.name, d.total_mib, d.free_mib) for d in listed("vulkan_rx7900xtx_linux")] == [
        ("Vulkan0", 24560, 23977), ("Vulkan1", 15995, 15437)]
    assert listed("vulkan_arc_a750_linux")[0].description == "Intel(R) Arc(tm) A750 Graphics (DG2)"
    assert [d.name for d in listed("cuda_two_gpus_linux")] == ["CUDA0", "CUDA1"]
    assert listed("cpu_build") == ()


@pytest.mark.parametrize(("description", "vendor"), [
    ("AMD Radeon RX 7900 XTX (RADV NAVI31)", "amd"), ("AMD Radeon(TM) Graphics", "amd"),
    ("Radeon RX 7900 XTX", "amd"), ("Intel(R) Arc(tm) A750 Graphics (DG2)", "intel"),
    ("NVIDIA GeForce RTX 2060", "nvidia"), ("Apple M2", "apple"), ("llvmpipe", "unknown"),
    ("llvmpipe (LLVM 15.0.6, 256 bits)", "unknown"), ("Microsoft Basic Render Driver", "unknown"),
])
def test_vendor_of_a_device_description(description: str, vendor: str) -> None:
    assert vendor_of_description(description) == vendor


def test_model_words_drop_the_maker_marks_and_driver_suffix() -> None:
    assert model_words("Intel(R) Arc(tm) A750 Graphics (DG2)") == {"arc", "a750"}
    assert model_words("AMD Radeon RX 7900 XTX (RADV NAVI31)") == {"radeon", "rx", "7900", "xtx"}


def test_the_amd_machine_as_vulkan_lists_it(models_dir: Path) -> None:
    """The discrete card is paired with Vulkan0 and takes the engine's figures; the integrated GPU (Vulkan1) keeps
    its 512 MiB carve-out although llama.cpp reports every heap of it, the shared RAM included (15995 MiB): that
    RAM is the plan's already. Same budget: no replan, and the device used is named."""
    hardware = machine("rx7900xtx_24gb_linux")
    view = engine_view(hardware, listed("vulkan_rx7900xtx_linux"), choose_variant(hardware))
    igpu, xtx = view.hardware.gpus
    assert (xtx.engine_device, xtx.name, xtx.vram_total_bytes, xtx.vram_free_bytes) == (
        "Vulkan0", "AMD Radeon RX 7900 XTX (RADV NAVI31)", 24560 * MIB, 23977 * MIB)
    assert (igpu.engine_device, igpu.vram_total_bytes, igpu.integrated) == ("Vulkan1", 512 * MIB, True)
    assert not view.changed and view.used == xtx
    assert view.notes == ("llama-server uses Vulkan0: AMD Radeon RX 7900 XTX (RADV NAVI31), 24.0 GiB (23.4 GiB "
                          "free).",)
    plan = plan_for(view.hardware, models_dir)
    memory = plan_to_json(plan)["memory"]
    assert (memory["gpu_device"], memory["gpu_name"]) == ("Vulkan0", "AMD Radeon RX 7900 XTX (RADV NAVI31)")
    assert any(r.topic == "placement" and "Vulkan0: AMD Radeon RX 7900 XTX" in r.text for r in plan.reasons)


def test_the_arc_whose_usable_memory_is_less_than_xe_reports_is_replanned(models_dir: Path) -> None:
    """xe publishes the tile's physical size (8 GiB); the engine can use 8128 MiB, 7865 free: the budget moves by
    more than the tolerance, so the plan follows the engine."""
    hardware = machine("arc_a750_8gb_linux")
    variant = choose_variant(hardware)
    view = engine_view(hardware, listed("vulkan_arc_a750_linux"), variant)
    uhd, arc = view.hardware.gpus
    assert view.changed and view.notes[-1] == "The GPU as llama-server reports it differs from what was detected; " \
                                              "the plan follows llama-server."
    assert (arc.engine_device, arc.vram_free_bytes, arc.vram_free_reported) == ("Vulkan0", 7865 * MIB, True)
    assert arc.memory_bandwidth_bytes_per_s == 512_000_000_000
    assert (uhd.engine_device, uhd.vram_total_bytes) == ("Vulkan1", 0)
    before, after = budget_for(hardware, variant), budget_for(view.hardware, variant)
    assert before.gpu_bytes == 7 * GIB and after.gpu_bytes == 6841 * MIB
    assert plan_for(view.hardware, models_dir).estimate.gpu_total <= after.gpu_bytes


def test_a_gpu_the_engine_does_not_see_leaves_the_plan() -> None:
    """A registry key of a Radeon no longer plugged in, on a machine whose engine lists an NVIDIA card: the Radeon
    leaves the plan, the listed card enters it."""
    hardware = machine("rx6700xt_12gb_windows")
    view = engine_view(hardware, listed("vulkan_rtx4060_laptop_windows"), choose_variant(hardware))
    [gpu] = view.hardware.gpus
    assert (gpu.vendor, gpu.name, gpu.source, gpu.engine_device) == ("nvidia", "NVIDIA GeForce RTX 4060 Laptop GPU",
                                                                     "engine", "Vulkan0")
    assert view.changed and view.notes[0] == "llama-server does not see AMD Radeon RX 6700 XT: the plan no longer " \
                                             "counts on it."


def test_the_windows_radeon_free_memory_becomes_known() -> None:
    hardware = machine("rx6700xt_12gb_windows")
    view = engine_view(hardware, listed("vulkan_rx6700xt_windows"), choose_variant(hardware))
    [gpu] = view.hardware.gpus
    assert gpu.vram_free_reported and gpu.engine_device == "Vulkan0" and not view.changed


def test_a_software_renderer_is_never_planned_on() -> None:
    hardware = replace(machine("no_gpu_16gb"), gpus=())
    view = engine_view(hardware, listed("vulkan_lavapipe"), choose_variant(machine("rx6700xt_12gb_windows")))
    [gpu] = view.hardware.gpus
    assert gpu.vendor == "unknown" and gpu.engine_device == "Vulkan0" and not view.changed
    assert budget_for(view.hardware, choose_variant(machine("rx6700xt_12gb_windows"))).gpu_name is None


def test_a_cpu_build_says_nothing_about_gpus() -> None:
    hardware = machine("rx7900xtx_24gb_linux")
    view = engine_view(hardware, listed("cpu_build"), choose_variant(hardware))
    assert view.hardware is hardware and not view.changed and view.notes == ()


def test_on_an_upgrade_only_totals_count() -> None:
    """The running server holds its own VRAM: the engine's free figure would plan the model out of its own place."""
    hardware = machine("rx7900xtx_24gb_linux")
    busy = [EngineDevice("Vulkan0", "AMD Radeon RX 7900 XTX (RADV NAVI31)", 24560, 2100)]
    view = engine_view(hardware, busy, choose_variant(hardware), trust_free=False)
    assert view.hardware.gpus[1].vram_free_bytes == hardware.gpus[1].vram_free_bytes and not view.changed
    trusted = engine_view(hardware, busy, choose_variant(hardware))
    assert trusted.changed and trusted.hardware.gpus[1].vram_free_bytes == 2100 * MIB


# --- what the plan makes of them -------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "variant", "gpu", "placement"), [
    ("rx7900xtx_24gb_linux", "ubuntu-vulkan-x64", "AMD Radeon RX 7900 XTX", "gpu"),
    ("rx6700xt_12gb_windows", "win-vulkan", "AMD Radeon RX 6700 XT", "hybrid"),
    ("arc_a750_8gb_linux", "ubuntu-vulkan-x64", "Intel Arc A750", "hybrid"),
    ("radeon780m_igpu_windows", "win-cpu", None, "cpu"),
])
def test_recorded_amd_and_intel_machines_are_planned(models_dir: Path, name: str, variant: str, gpu: str | None,
                                                     placement: str) -> None:
    """Discrete AMD/Intel GPUs: the Vulkan build with offload from the device's free memory, never the integrated
    GPU beside them; an integrated GPU alone: the CPU build, RAM counted once (the 8 GiB carve-out is not RAM the OS
    has, and is not planned as VRAM either)."""
    hardware = machine(name)
    plan = plan_for(hardware, models_dir)
    assert (plan.variant.name, plan.budget.gpu_name, plan.speed_class) == (variant, gpu, placement)
    if gpu is None:
        assert plan.budget.gpu_bytes == 0 and plan.estimate.gpu_total == 0
        assert plan.budget.ram_bytes < hardware.memory.total_bytes < 24 * GIB
        return
    main = next(g for g in hardware.gpus if g.name == gpu)
    assert not main.integrated and plan.budget.gpu_bytes == main.vram_free_bytes - GIB
    gpu_speed = plan.speed.inputs["devices"]["gpu"]
    assert (gpu_speed["source"], gpu_speed["bandwidth_bytes_per_s"]) == ("published",
                                                                         main.memory_bandwidth_bytes_per_s)


def test_a_discrete_gpu_without_a_bandwidth_figure_is_said_to_be_assumed(models_dir: Path) -> None:
    hardware = machine("rx6700xt_12gb_windows")
    unknown = replace(hardware, gpus=(replace(hardware.gpus[0], name="AMD Radeon RX 9999",
                                              memory_bandwidth_bytes_per_s=None),))
    assert plan_for(unknown, models_dir).speed.inputs["devices"]["gpu"]["source"] == "assumed"


def test_a_discrete_arc_whose_driver_reports_no_memory_waits_for_the_engine(models_dir: Path) -> None:
    """i915 publishes nothing for an Arc card: the Vulkan build is still chosen and expected to bring the GPU up
    (the self-test checks it lists a device), with nothing planned on it until ``--list-devices`` says how much
    memory it has."""
    hardware = machine("arc_a750_8gb_linux")
    i915 = replace(hardware, gpus=(hardware.gpus[0], replace(hardware.gpus[1], vram_total_bytes=0, vram_free_bytes=0)))
    variant = choose_variant(i915)
    budget = budget_for(i915, variant)
    assert (variant.name, budget.gpu_name, budget.gpu_bytes) == ("ubuntu-vulkan-x64", "Intel Arc A750", 0)
    view = engine_view(i915, listed("vulkan_arc_a750_linux"), variant)
    assert view.changed and budget_for(view.hardware, variant).gpu_bytes == 6841 * MIB


def test_a_software_renderer_detection_named_is_the_gpu_it_named() -> None:
    """The test bed's software GPU: a profile whose detected GPU is lavapipe by name (as the Vulkan tests write
    it) pairs with the engine's "llvmpipe" and is planned on; an AMD card of other words is not paired."""
    variant = choose_variant(machine("rx6700xt_12gb_windows"))
    lavapipe = replace(machine("rx6700xt_12gb_windows").gpus[0], name="llvmpipe (software Vulkan)",
                       vram_total_bytes=2 * GIB, vram_free_bytes=2 * GIB)
    view = engine_view(replace(machine("no_gpu_16gb"), gpus=(lavapipe,)), listed("vulkan_lavapipe"), variant)
    [gpu] = view.hardware.gpus
    assert (gpu.vendor, gpu.engine_device) == ("amd", "Vulkan0") and gpu.name == "llvmpipe"
    assert budget_for(view.hardware, variant).gpu_name == gpu.name
    radeon = replace(lavapipe, name="AMD Radeon RX 6700 XT")
    other = engine_view(replace(machine("no_gpu_16gb"), gpus=(radeon,)), listed("vulkan_lavapipe"), variant)
    assert [g.vendor for g in other.hardware.gpus] == ["unknown"]
    assert other.notes[0].startswith("llama-server does not see AMD Radeon RX 6700 XT")
