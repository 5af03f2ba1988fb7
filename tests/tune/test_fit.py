"""The tune stage against llama.cpp's real ``llama-fit-params``: parsers on recorded output, real runs on the tiny
model and on Gemma (CPU only here: the plan is kept), GPU decisions on recorded machines, failures, ``--no-repack``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bootstrap.core.console import t
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.detect.profile import detect
from bootstrap.tune.fit import (
    FIT_MARGIN_MIB,
    MIB,
    FitAdvice,
    FitToolError,
    Projection,
    adopt_fit,
    decide,
    error_line,
    first_error_line,
    parse_fitted_args,
    parse_projections,
    tune,
)
from tests.support.paths import TEST_DATA
from tests.support.tiny_gguf import write_model

DATA = TEST_DATA / "fit_params"
HARDWARE = TEST_DATA / "hardware"
EXPERTS = r"ffn_(up|down|gate_up|gate)_(ch|)exps"

# What planner.launch_args writes for a MoE model on an 8 GB card (placement: -ngl 999 --n-cpu-moe 30).
PLAN_MOE = ("-c", "32768", "-np", "1", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0", "-b", "2048", "-ub", "512",
            "-t", "12", "-ngl", "999", "--n-cpu-moe", "30", "--fit", "off", "--jinja", "--reasoning", "on",
            "--temp", "0.6")
# The same flags for the small files the test bed runs on its CPU.
PLAN_CPU = ("-c", "4096", "-np", "1", "-fa", "on", "-ctk", "f16", "-ctv", "f16", "-b", "2048", "-ub", "512",
            "-t", "2", "-ngl", "999", "--fit", "off", "--jinja", "--reasoning", "off")


pytestmark = pytest.mark.usefixtures("english")


@pytest.fixture(scope="module")
def fit_params(engine_bin_dir: Path) -> Path:
    return engine_bin_dir / "llama-fit-params"


@pytest.fixture(scope="module")
def this_machine(tmp_path_factory: pytest.TempPathFactory) -> HardwareProfile:
    return detect(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model("llama", tmp_path_factory.mktemp("tiny") / "tiny.gguf")


def _read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# --- parsers on recorded output --------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "ctx"), [("tiny_fitted.stdout", 256), ("gemma_fitted.stdout", 4096)])
def test_fitted_line_recorded_on_this_cpu(name: str, ctx: int) -> None:
    assert parse_fitted_args(_read(name)) == FitAdvice(ctx=ctx, ngl=-1, tensor_split=(), overrides=())


def test_fitted_line_with_overrides_and_split() -> None:
    moe = parse_fitted_args(_read("composed_cuda_moe_fitted.stdout"))
    assert (moe.ctx, moe.ngl, moe.tensor_split) == (32768, 41, ())
    assert moe.overrides == tuple((rf"blk\.{i}\.{EXPERTS}", "CPU") for i in range(3))
    assert moe.args() == ("-ngl", "41", "-ot", ",".join(f"{p}={b}" for p, b in moe.overrides))
    two = parse_fitted_args(_read("composed_two_gpu_fitted.stdout"))
    assert two == FitAdvice(ctx=16384, ngl=29, tensor_split=(15, 14), overrides=())
    assert two.args() == ("-ngl", "29", "-ts", "15,14")


@pytest.mark.parametrize("stdout", ["", "Host 2 0 1 \n", "-c abc -ngl 1\n", '-c 1 -ngl 2 -ot "noequals"\n'])
def test_unreadable_fitted_output_is_a_tool_error(stdout: str) -> None:
    with pytest.raises(FitToolError):
        parse_fitted_args(stdout)


def test_projection_tables() -> None:
    assert parse_projections(_read("tiny_fitp.stdout")) == (Projection("Host", 2, 0, 1),)
    assert parse_projections(_read("gemma_fitp.stdout")) == (Projection("Host", 222, 27, 524),)
    gemma = parse_projections(_read("gemma_fitp.stdout"))[0]
    assert (gemma.total_mib, gemma.is_host) == (773, True)
    published = parse_projections(_read("published_pr22171_fitp.stdout"))
    assert published == (Projection("MTL0", 7401, 814, 517), Projection("host", 1280, 0, 154))
    assert [p.is_host for p in published] == [False, True]
    with pytest.raises(FitToolError):
        parse_projections(_read("gemma_fitted.stdout"))


def test_first_error_line_of_the_recorded_failure() -> None:
    assert first_error_line(_read("missing_model.stderr")) == (
        "gguf_init_from_file: failed to open GGUF file '/nonexistent/model.gguf' (No such file or directory)")
    assert first_error_line("error: invalid argument: --mmproj\n") == "error: invalid argument: --mmproj"
    assert first_error_line("") == ""


def test_error_line_cut_short_by_the_exit_race_does_not_count() -> None:
    # llama.cpp logs from a thread and exits on error: stderr may end mid-line (seen on the recorded tool).
    recorded = _read("missing_model.stderr")
    cut = recorded[: recorded.index("(No such")]
    assert error_line(recorded).startswith("gguf_init_from_file: failed to open GGUF file")
    assert error_line(cut) == "" and error_line("") == ""
    assert first_error_line(cut).startswith("gguf_init_from_file")  # still shown when nothing better comes


# --- decisions on recorded machines ------------------------------------------------------------------------------

def test_gpu_over_its_free_memory_adopts_fits_placement() -> None:
    rtx3070 = load_profile(HARDWARE / "rtx3070_8gb_32gb.json")
    advice = parse_fitted_args(_read("composed_cuda_moe_fitted.stdout"))
    projections = parse_projections(_read("composed_cuda_moe_fitp.stdout"))
    adopted, final, reason = decide(PLAN_MOE, advice, projections, rtx3070)
    assert adopted == "fit"
    free = rtx3070.gpus[0].vram_free_bytes // MIB
    assert reason == t("tune.adopt_fit", device="CUDA0", used=10958, free=free, margin=FIT_MARGIN_MIB,
                       fit=" ".join(advice.args()))
    # Our -ngl/--n-cpu-moe replaced in place by fit's -ngl/-ot; context, cache, --fit off and sampling untouched.
    i = PLAN_MOE.index("-ngl")
    assert final == [*PLAN_MOE[:i], *advice.args(), *PLAN_MOE[i + 4:]]
    assert "--n-cpu-moe" not in final and final[final.index("-c") + 1] == "32768"


def test_adopting_fits_placement_leaves_mtp_drafting_off() -> None:
    """llama-fit-params takes no --spec-type: its placement has no room for the head, so the flags go with ours."""
    rtx3070 = load_profile(HARDWARE / "rtx3070_8gb_32gb.json")
    advice = parse_fitted_args(_read("composed_cuda_moe_fitted.stdout"))
    projections = parse_projections(_read("composed_cuda_moe_fitp.stdout"))
    spec = ["--spec-type", "draft-mtp", "--spec-draft-n-max", "2"]
    with_mtp = [*PLAN_MOE, *spec]
    adopted, final, reason = decide(with_mtp, advice, projections, rtx3070)
    assert adopted == "fit" and "--spec-type" not in final and "draft-mtp" not in final
    assert final == decide(PLAN_MOE, advice, projections, rtx3070)[1]
    assert reason.endswith(t("tune.fit_drops_mtp"))
    rtx4090 = load_profile(HARDWARE / "rtx4090_24gb.json")  # our placement fits: drafting stays
    assert decide(with_mtp, advice, projections, rtx4090)[:2] == ("plan", with_mtp)


def test_fit_that_shrank_the_context_is_said() -> None:
    rtx3070 = load_profile(HARDWARE / "rtx3070_8gb_32gb.json")
    advice = dataclasses.replace(parse_fitted_args(_read("composed_cuda_moe_fitted.stdout")), ctx=16384)
    adopted, final, reason = decide(PLAN_MOE, advice, parse_projections(_read("composed_cuda_moe_fitp.stdout")),
                                    rtx3070)
    assert adopted == "fit" and final[final.index("-c") + 1] == "16384"
    assert "16384" in reason and "32768" in reason
    # A larger fitted context never grows ours (fit only shrinks an unset -c).
    assert adopt_fit(PLAN_MOE, dataclasses.replace(advice, ctx=65536))[1] == "32768"


def test_gpu_within_its_free_memory_keeps_the_plan() -> None:
    rtx4090 = load_profile(HARDWARE / "rtx4090_24gb.json")
    advice = parse_fitted_args(_read("composed_cuda_moe_fitted.stdout"))
    adopted, final, reason = decide(PLAN_MOE, advice, parse_projections(_read("composed_cuda_moe_fitp.stdout")),
                                    rtx4090)
    assert (adopted, final) == ("plan", list(PLAN_MOE))
    assert reason == t("tune.keep_fits", device="CUDA0", used=10958, free=rtx4090.gpus[0].vram_free_bytes // MIB,
                       margin=FIT_MARGIN_MIB)


def test_cpu_only_over_its_ram_keeps_the_plan_and_says_why() -> None:
    small = load_profile(HARDWARE / "no_gpu_16gb.json")
    small = dataclasses.replace(small, memory=dataclasses.replace(small.memory, total_bytes=1536 * MIB))
    advice = parse_fitted_args(_read("gemma_fitted.stdout"))
    adopted, final, reason = decide(PLAN_CPU, advice, parse_projections(_read("gemma_fitp.stdout")), small)
    assert (adopted, final) == ("plan", list(PLAN_CPU))
    assert reason == t("tune.keep_cpu_only", used=773, free=1536, margin=FIT_MARGIN_MIB)


# --- real runs of the test bed's llama-fit-params ----------------------------------------------------------------

def test_tiny_model_on_this_machine(fit_params: Path, tiny: Path, this_machine: HardwareProfile) -> None:
    plan = ("-c", "256", *PLAN_CPU[2:])
    result = tune(fit_params, tiny, plan, this_machine)
    assert result.fit_args == ("-c", "256", "-ngl", "-1")
    assert len(result.projections) == 1 and result.projections[0].is_host
    host = result.projections[0]
    assert result.adopted == "plan" and result.final_args == plan and result.plan_args == plan
    assert result.reason == t("tune.keep_fits_host", device="Host", used=host.total_mib,
                              free=this_machine.memory.total_bytes // MIB, margin=FIT_MARGIN_MIB)
    assert result.to_json()["adopted"] == "plan" and result.duration_s > 0


def test_gemma_on_this_machine(fit_params: Path, gemma_gguf: Path, this_machine: HardwareProfile,
                               tmp_path: Path) -> None:
    # The mmproj is accepted by the stage but b11434's fit-params rejects --mmproj: it must be left out, not fail.
    mmproj = tmp_path / "mmproj.gguf"
    mmproj.write_bytes(b"")
    result = tune(fit_params, gemma_gguf, PLAN_CPU, this_machine, mmproj=mmproj)
    assert result.fit_args == ("-c", "4096", "-ngl", "-1")
    assert result.adopted == "plan" and result.final_args == PLAN_CPU
    (host,) = result.projections
    # The same numbers as the recorded run: the table is a dry run of the file's tensors and our settings.
    assert (host.device, host.model_mib, host.context_mib, host.compute_mib) == ("Host", 222, 27, 524)
    assert result.reason.startswith("kept the plan: llama.cpp projects 773 MiB of host memory")


def test_missing_model_keeps_the_plan_and_names_the_file(fit_params: Path, this_machine: HardwareProfile,
                                                          tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model.gguf"
    result = tune(fit_params, missing, PLAN_CPU, this_machine)
    assert (result.adopted, result.final_args, result.fit_args, result.projections) == ("plan", PLAN_CPU, None, ())
    assert result.reason == t("tune.model_unreadable",
                              error=t("gguf.cannot_read", source=str(missing), error="No such file or directory"))


def test_cut_short_model_keeps_the_plan_and_names_the_tensor(fit_params: Path, gemma_gguf: Path,
                                                             this_machine: HardwareProfile, tmp_path: Path) -> None:
    # A half-uploaded release: the header parses, the tensor data runs past the end (llama.cpp: "data is not within
    # the file bounds"). The header reader says so every time; the tool's own words are often lost at its exit.
    cut = tmp_path / "cut.gguf"
    with gemma_gguf.open("rb") as src:
        cut.write_bytes(src.read(8 * MIB))
    result = tune(fit_params, cut, PLAN_CPU, this_machine)
    assert (result.adopted, result.final_args, result.fit_args) == ("plan", PLAN_CPU, None)
    assert result.reason.startswith(t("tune.model_unreadable", error=""))
    assert str(cut) in result.reason and str(8 * MIB) in result.reason


def _standin_tool(folder: Path, stderr: str) -> Path:
    """A fit tool that fails the way the real one does: exit status 1, with or without its error line."""
    tool = folder / "llama-fit-params"
    tool.write_text("#!/bin/sh\n" + (f"printf '%s\\n' '{stderr}' >&2\n" if stderr else "") + "exit 1\n")
    tool.chmod(0o755)
    return tool


def test_tool_error_keeps_the_plan_with_the_tools_words(tiny: Path, this_machine: HardwareProfile,
                                                        tmp_path: Path) -> None:
    tool = _standin_tool(tmp_path, "0.00.006.257 E llama_model_load: error loading model: unknown architecture")
    result = tune(tool, tiny, PLAN_CPU, this_machine)
    assert (result.adopted, result.final_args, result.fit_args) == ("plan", PLAN_CPU, None)
    assert result.reason == t("tune.tool_failed",
                              error="exit status 1: llama_model_load: error loading model: unknown architecture")


def test_tool_that_fails_silently_keeps_the_plan_and_says_so(tiny: Path, this_machine: HardwareProfile,
                                                             tmp_path: Path) -> None:
    result = tune(_standin_tool(tmp_path, ""), tiny, PLAN_CPU, this_machine)
    assert (result.adopted, result.final_args, result.fit_args) == ("plan", PLAN_CPU, None)
    assert result.reason == t("tune.tool_failed", error="exit status 1: " + t("tune.tool_silent", tries=3))


def test_tool_that_does_not_answer_in_time_keeps_the_plan(fit_params: Path, gemma_gguf: Path,
                                                          this_machine: HardwareProfile) -> None:
    result = tune(fit_params, gemma_gguf, PLAN_CPU, this_machine, timeout=0.001)
    assert (result.adopted, result.final_args) == ("plan", PLAN_CPU)
    assert result.reason == t("tune.tool_failed", error=t("tune.tool_timeout", seconds="0.001"))


def test_missing_tool_binary_keeps_the_plan(tmp_path: Path, tiny: Path, this_machine: HardwareProfile) -> None:
    result = tune(tmp_path / "llama-fit-params", tiny, PLAN_CPU, this_machine)
    assert result.adopted == "plan" and "No such file or directory" in result.reason


def test_engine_without_fit_params(tiny: Path, this_machine: HardwareProfile) -> None:
    result = tune(None, tiny, PLAN_CPU, this_machine)
    assert (result.adopted, result.final_args, result.fit_args) == ("plan", PLAN_CPU, None)
    assert result.reason == t("tune.no_tool")


# --- --no-repack -------------------------------------------------------------------------------------------------

def _with_amx(profile: HardwareProfile, amx: bool) -> HardwareProfile:
    return dataclasses.replace(profile, cpu=dataclasses.replace(
        profile.cpu, flags=dataclasses.replace(profile.cpu.flags, amx=amx)))


def test_amx_cpu_gets_no_repack_once(tiny: Path) -> None:
    recorded = load_profile(HARDWARE / "rtx4090_24gb.json")
    amx = _with_amx(recorded, True)
    result = tune(None, tiny, PLAN_CPU, amx)
    assert result.final_args == (*PLAN_CPU, "--no-repack")
    assert result.notes == (t("tune.no_repack_amx"),)
    again = tune(None, tiny, result.final_args, amx)
    assert again.final_args.count("--no-repack") == 1
    plain = tune(None, tiny, PLAN_CPU, _with_amx(recorded, False))
    assert "--no-repack" not in plain.final_args and plain.notes == ()


def test_amx_no_repack_reaches_the_real_tool(fit_params: Path, tiny: Path, this_machine: HardwareProfile) -> None:
    result = tune(fit_params, tiny, ("-c", "256", *PLAN_CPU[2:]), _with_amx(this_machine, True))
    assert result.final_args[-1] == "--no-repack" and result.fit_args == ("-c", "256", "-ngl", "-1")
