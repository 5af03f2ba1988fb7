"""The engine probe: parsers on real llama-server output, the real binary, and binaries that do not start."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bootstrap.core.console import t
from bootstrap.core.errors import ExitCode, ServerError
from bootstrap.place.engine_failure import EngineFailed
from bootstrap.place.engine_probe import (
    EngineDevice,
    child_env,
    parse_devices,
    parse_help_flags,
    parse_version,
    probe_engine,
)
from bootstrap.plan import engine_flags
from bootstrap.plan.engine_flags import filter_by_help

# --list-devices on a CUDA build, in the format of docs/engine.md ("Flags"): the name, the
# description, then total and free MiB. (Not captured on this CPU-only machine: no NVIDIA GPU here.)
CUDA_DEVICES = """\
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
Available devices:
  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23606 MiB free)
  Vulkan0: NVIDIA GeForce RTX 4090 (NVIDIA) (24564 MiB, 23100 MiB free)
"""


pytestmark = pytest.mark.usefixtures("english")


def _run(binary: Path, arg: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), arg], capture_output=True, text=True, timeout=60, check=False)


# ---- pure parsers -----------------------------------------------------------------------------------------
def test_parse_version_formats() -> None:
    assert parse_version("version: 0.1.1 (build 10434, commit 7e4c0a9)\nbuilt with GNU 13") == \
        ("version: 0.1.1 (build 10434, commit 7e4c0a9)", 10434, "7e4c0a9")
    assert parse_version("version: 6150 (1a2b3c4)\nbuilt with cc") == ("version: 6150 (1a2b3c4)", 6150, "1a2b3c4")
    assert parse_version("version: 0.1.0-dev (build 1, commit unknown)") == \
        ("version: 0.1.0-dev (build 1, commit unknown)", 1, None)
    assert parse_version("error: something else") == ("", None, None)


def test_parse_version_real_binary(llama_server: Path) -> None:
    proc = _run(llama_server, "--version")
    line, build, _commit = parse_version(proc.stderr)  # llama-server prints its version on stderr
    assert line.startswith("version: ") and proc.stdout == ""
    # whichever engine the test bed accepted, the number parsed is the one the line states
    assert build is not None and f"(build {build}, commit " in line


def test_parse_help_flags_real_binary(llama_server: Path) -> None:
    flags = parse_help_flags(_run(llama_server, "--help").stdout)
    for flag in ("--n-cpu-moe", "-ncmoe", "--api-key-file", "--api-key", "-fa", "--flash-attn", "--no-repack",
                 "-nr", "--repack", "-kvo", "-nkvo", "--no-kv-offload", "-fit", "--fit", "-hfr", "--log-colors",
                 "--spec-draft-type-k", "-ctkd", "-c", "--ctx-size", "--port", "--host", "--jinja", "--no-jinja"):
        assert flag in flags, flag
    # Placeholders and description words are never taken for flags.
    assert not {f for f in flags if f.upper() == f and len(f) > 3 and f.startswith("--")}
    assert "--cache-capacity" not in flags and "-1" not in flags
    assert len(flags) > 250


def test_parse_help_flags_recorded_lines() -> None:
    text = (
        "-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')\n"
        "                                        (env: LLAMA_ARG_FLASH_ATTN) --not-a-flag\n"
        "--repack, -nr, --no-repack              whether to enable weight repacking (default: enabled)\n"
        "-kvo,  --kv-offload, -nkvo, --no-kv-offload\n"
        "                                        whether to enable KV cache offloading (default: enabled)\n"
        "----- sampling params -----\n"
    )
    assert parse_help_flags(text) == {"-fa", "--flash-attn", "--repack", "-nr", "--no-repack", "-kvo",
                                      "--kv-offload", "-nkvo", "--no-kv-offload"}


def test_parse_devices_cuda_sample_and_real_cpu(llama_server: Path) -> None:
    assert parse_devices(CUDA_DEVICES) == (
        EngineDevice("CUDA0", "NVIDIA GeForce RTX 4090", 24080, 23606),
        EngineDevice("Vulkan0", "NVIDIA GeForce RTX 4090 (NVIDIA)", 24564, 23100),
    )
    real = _run(llama_server, "--list-devices")
    assert real.returncode == 0 and "Available devices:" in real.stdout
    assert parse_devices(real.stdout + real.stderr) == ()  # CPU-only build: "  (none)"


# ---- the real binary --------------------------------------------------------------------------------------
def test_probe_engine_real_binary(llama_server: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMA_ARG_CTX_SIZE", "not-a-number")  # would break a run that inherited it
    info = probe_engine(llama_server)
    assert info.version_line.startswith("version:") and f"(build {info.build}, commit " in info.version_line
    assert {"--n-cpu-moe", "--api-key-file", "--no-repack"} <= info.flags
    assert info.devices == ()
    assert "LLAMA_ARG_CTX_SIZE" not in child_env()


def test_filter_by_help_drops_unknown_flags_with_values(llama_server: Path) -> None:
    flags = probe_engine(llama_server).flags
    args = ["-c", "4096", "--cache-capacity", "512", "--n-cpu-moe", "3", "--no-such-flag", "16", "-ngl", "-1",
            "--no-repack", "--bogus=1", "--jinja"]
    result = filter_by_help(args, flags)
    assert result.kept == ("-c", "4096", "--n-cpu-moe", "3", "-ngl", "-1", "--no-repack", "--jinja")
    assert result.dropped == ("--cache-capacity", "--no-such-flag", "--bogus=1")


# ---- binaries that do not start ---------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to build a binary with a missing library")
def test_missing_library_is_one_line_server_error(tmp_path: Path) -> None:
    """A real ELF linked against a library that is then removed: the loader's message reaches the user."""
    (tmp_path / "lib.c").write_text("int qk_answer(void) { return 42; }\n")
    (tmp_path / "main.c").write_text("int qk_answer(void);\nint main(void) { return qk_answer() == 42 ? 0 : 1; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libqkmissing.so"), str(tmp_path / "lib.c")],
                   check=True)
    binary = tmp_path / "llama-server"
    subprocess.run(["cc", "-o", str(binary), str(tmp_path / "main.c"), f"-L{tmp_path}", "-lqkmissing"], check=True)
    (tmp_path / "libqkmissing.so").unlink()
    with pytest.raises(EngineFailed) as err:
        probe_engine(binary)
    # a build that cannot start here for its own reason: exit 3, and the installer may try another build
    assert err.value.exit_code == ExitCode.UNSUPPORTED and err.value.failure.engine_cause
    assert (err.value.failure.cause, err.value.failure.detail) == ("missing_library", "libqkmissing.so")
    assert err.value.failure.exit_code == 127  # what the dynamic loader exits with
    assert err.value.message == t("failure.missing_library", who=str(binary), detail="libqkmissing.so")
    assert err.value.hint == t("failure.hint_missing_library",
                               library=t("failure.lib_other", library="libqkmissing.so"))


def test_not_executable_is_server_error(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_bytes(b"\x7fELF not really")
    binary.chmod(0o644)
    with pytest.raises(ServerError) as err:
        probe_engine(binary)
    assert "Permission denied" in err.value.message and "\n" not in err.value.message
    with pytest.raises(ServerError):
        probe_engine(tmp_path / "absent")


@pytest.mark.parametrize(("plan", "overrides", "expected"), [
    # a catalog entry's context and threads replace the plan's (short or long spelling), the rest stays in order
    (["-c", "4096", "-np", "4", "-t", "8", "--jinja"], ["--ctx-size", "512", "-t", "2"],
     ["-np", "4", "--jinja", "--ctx-size", "512", "-t", "2"]),
    # a boolean's negation replaces it; a flag the plan lacks is simply added
    (["--jinja", "-fa", "on"], ["--no-jinja", "--chat-template", "gemma"],
     ["-fa", "on", "--no-jinja", "--chat-template", "gemma"]),
    # negative numbers are values, not flags
    (["-ngl", "-1", "-c", "512"], ["-ngl", "0"], ["-c", "512", "-ngl", "0"]),
    ([], [], []),
])
def test_overrides_replace_the_plans_setting(plan: list[str], overrides: list[str], expected: list[str]) -> None:
    assert engine_flags.with_overrides(plan, overrides) == expected
