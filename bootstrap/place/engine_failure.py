"""Why llama-server (or the engine self-test) died, named from its exit status and its log, in one line.

A user who sees "the server stopped before it was ready" cannot tell a build that does not run on their processor
from a model that does not fit. Each cause here has its own message, hint and exit code, and the install acts on the
engine causes (another build of the engine) and on running out of memory (a smaller plan) instead of giving up.

Evidence, strongest first:
- the exit status: killed by SIGILL (Windows: ``STATUS_ILLEGAL_INSTRUCTION`` 0xC000001D) is a build that uses CPU
  instructions this processor lacks; SIGSEGV/SIGBUS/SIGABRT/SIGFPE (0xC0000005, 0xC0000409) a crash; SIGKILL that
  we did not send is, on Linux, almost always the kernel's out-of-memory killer; 0xC0000135 a missing DLL;
- the log, matched on llama.cpp's own messages (b11434 sources): the dynamic loader's
  ``error while loading shared libraries: X`` (glibc) / ``Library not loaded: X`` (dyld); ``ggml_backend_load_best``'s
  ``failed to load <backend>: <dlerror>``; allocation failures (``ggml_backend_*_buffer_type_alloc_buffer: failed to
  allocate <buft> buffer of size N``, ``ggml_aligned_malloc: insufficient memory (attempted to allocate X MB)``,
  ``cudaMalloc failed: out of memory``, Vulkan's ``ErrorOutOfDeviceMemory``); model load errors
  (``llama_model_load: error loading model: …``, ``unknown model architecture``, ``… data is not within the file
  bounds``); ``couldn't bind HTTP server socket``; GPU backends that fail to start (``ggml_cuda_init: failed to
  initialize CUDA``, ``vk::createInstance: ErrorIncompatibleDriver``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bootstrap.core.console import t
from bootstrap.core.errors import ExitCode, QwenKitError

# Causes. The first three are the engine's own: another build of the engine may run where this one cannot.
ILLEGAL_INSTRUCTION = "illegal_instruction"
MISSING_LIBRARY = "missing_library"
GPU_INIT = "gpu_init"
OUT_OF_MEMORY = "out_of_memory"
MODEL_CORRUPT = "model_corrupt"
MODEL_UNSUPPORTED = "model_unsupported"
MODEL_LOAD = "model_load"
PORT_IN_USE = "port_in_use"
CRASH = "crash"
# The self-test's two outcomes of a server that did not end (engine_selftest): it answered the one-token request
# with an error (the status and its words), or it never answered. Neither is a "stop".
HTTP_ERROR = "http_error"
NO_ANSWER = "no_answer"
# A service manager that reports the server not running, with no exit status and nothing in its log: it never ran
# it (WinSW registered under Wine, which starts no service). Not the engine's fault: the start script runs it.
NOT_STARTED = "not_started"
# How the kit's supervisor starts its own lines in the server's log (register/supervisor.py): not the server's words.
SUPERVISOR_PREFIX = "qwenkit:"
UNKNOWN = "unknown"
CAUSES = (ILLEGAL_INSTRUCTION, MISSING_LIBRARY, GPU_INIT, OUT_OF_MEMORY, MODEL_CORRUPT, MODEL_UNSUPPORTED,
          MODEL_LOAD, PORT_IN_USE, CRASH, HTTP_ERROR, NO_ANSWER, NOT_STARTED, UNKNOWN)
# The engine's own causes: another build may run where this one cannot. An error answer to the self-test is one:
# the test model is pinned and every working build answers it, so a build that refuses it misbehaves here (a Vulkan
# device computing garbage answered HTTP 500 on lavapipe, issue #29) and the next build deserves its chance.
ENGINE_CAUSES = frozenset({ILLEGAL_INSTRUCTION, MISSING_LIBRARY, GPU_INIT, HTTP_ERROR})

EXIT_CODES: dict[str, ExitCode] = {
    ILLEGAL_INSTRUCTION: ExitCode.UNSUPPORTED, MISSING_LIBRARY: ExitCode.UNSUPPORTED, GPU_INIT: ExitCode.UNSUPPORTED,
    OUT_OF_MEMORY: ExitCode.UNSUPPORTED, MODEL_UNSUPPORTED: ExitCode.UNSUPPORTED, MODEL_CORRUPT: ExitCode.INTEGRITY,
    MODEL_LOAD: ExitCode.SERVER, PORT_IN_USE: ExitCode.SERVER, CRASH: ExitCode.SERVER, HTTP_ERROR: ExitCode.SERVER,
    NO_ANSWER: ExitCode.SERVER, NOT_STARTED: ExitCode.SERVER, UNKNOWN: ExitCode.SERVER,
}

# POSIX signal numbers that are the same on Linux and macOS (SIGBUS differs: 7 on Linux, 10 on macOS).
_SIGNALS = {4: "SIGILL", 6: "SIGABRT", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
_CRASH_SIGNALS = {"SIGSEGV", "SIGBUS", "SIGABRT", "SIGFPE"}
# Windows NTSTATUS exit codes (ntstatus.h) a crashed process reports.
_NTSTATUS = {
    0xC000001D: ("SIGILL", "STATUS_ILLEGAL_INSTRUCTION"),
    0xC0000005: ("SIGSEGV", "STATUS_ACCESS_VIOLATION"),
    0xC0000409: ("SIGABRT", "STATUS_STACK_BUFFER_OVERRUN"),
    0xC00000FD: ("SIGSEGV", "STATUS_STACK_OVERFLOW"),
    0xC0000135: (None, "STATUS_DLL_NOT_FOUND"),
    0xC0000139: (None, "STATUS_ENTRYPOINT_NOT_FOUND"),
    0xC0000017: (None, "STATUS_NO_MEMORY"),
}

_MISSING_LIB = (
    re.compile(r"error while loading shared libraries: ([^:\s]+)"),  # glibc ld.so
    re.compile(r"Library not loaded: ?'?([^'\s]+)"),  # macOS dyld
    re.compile(r"failed to load \S+: ([^:\s]+\.so[.\d]*): cannot open shared object file"),  # ggml backend dlopen
    re.compile(r"([\w.+-]+\.dll) was not found", re.IGNORECASE),
)
_ALLOC_BUFFER = re.compile(r"failed to allocate (\S+) buffer of size (\d+)")
_ALLOC_MB = re.compile(r"attempted to allocate\s+([\d.]+) MB")
_CUDA_ALLOC = re.compile(r"allocating ([\d.]+) MiB on device (\d+): cudaMalloc failed")
_OOM_WORDS = re.compile(r"out of memory|OutOfDeviceMemory|OutOfHostMemory|std::bad_alloc|"
                        r"failed to allocate buffer for (?:kv|rs) cache|insufficient memory", re.IGNORECASE)
_UNKNOWN_ARCH = re.compile(r"unknown model architecture: '([^']*)'")
_CORRUPT = re.compile(r"not within the file bounds|corrupted or incomplete|failed to read magic|"
                      r"tensor '[^']*' data is not|invalid magic|file is truncated", re.IGNORECASE)
_LOAD_ERROR = re.compile(r"gguf_init_from_file\w*: (?!.*\bsuccess)|error loading model: |failed to load model",
                         re.IGNORECASE)
_PORT = re.compile(r"couldn't bind HTTP server socket|Address already in use", re.IGNORECASE)
_GPU_INIT = re.compile(r"failed to initialize (?:CUDA|ROCm|MUSA)[^\n]*|no CUDA-capable device[^\n]*|"
                       r"CUDA driver version is insufficient[^\n]*|vk::\w+: Error\w+|"
                       r"ggml_metal_init: error[^\n]*|failed to initialize backend from [^\n]*", re.IGNORECASE)
_ASSERT = re.compile(r"GGML_ASSERT\([^\n]*|GGML_ABORT[^\n]*|terminate called[^\n]*|what\(\):[^\n]*")
_AMX = re.compile(r"AMX is not ready")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
LOG_TAIL_BYTES = 64 * 1024  # enough of a log for the cause of a failed start (llama.cpp prints it last)


def read_log_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a log file as text ("" when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


# llama.cpp's log prefix: elapsed time and level ("0.00.004.568 E "), then sometimes a 3-letter module ("srv  ");
# before it the supervisor's time of day ("2026-01-05 10:02:03.456 ", register/supervisor.wall_clock) and a
# router child's port ("[40123] ") when they are there.
_PREFIX = re.compile(r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} )?(?:(?:\[\d+\] )?"
                     r"\d+\.\d+\.\d+\.\d+ [A-Z] (?:[a-z]{3}\s{2,})?)?")


def clean_lines(log: str) -> list[str]:
    """Non-empty log lines without ANSI colours and without llama.cpp's time/level prefix."""
    lines = (_PREFIX.sub("", _ANSI.sub("", ln).strip()) for ln in log.splitlines())
    return [ln.strip() for ln in lines if ln.strip()]


def _after(line: str, marker: str) -> str:
    """The part of ``line`` after ``marker`` (llama.cpp's "error loading model: <why>"), else the line."""
    _head, sep, tail = line.partition(marker)
    return (tail if sep and tail.strip() else line).strip()[:300]


@dataclass(frozen=True)
class ExitInfo:
    """How a process ended: a POSIX signal, or an exit code (Windows crashes are exit codes: NTSTATUS)."""

    code: int | None = None
    signal: int | None = None

    @classmethod
    def from_returncode(cls, returncode: int | None) -> ExitInfo | None:
        """``subprocess`` convention: negative = killed by that signal."""
        if returncode is None:
            return None
        return cls(signal=-returncode) if returncode < 0 else cls(code=returncode)


@dataclass(frozen=True)
class EngineFailure:
    """One classified failure: what happened, the evidence, and (for memory) how much was asked for."""

    cause: str  # one of CAUSES
    detail: str  # the evidence in llama.cpp's or the OS's own words (a library, a signal, a log line)
    signal: str | None = None  # "SIGILL" …
    exit_code: int | None = None
    wanted_bytes: int | None = None  # out of memory: the allocation that failed
    device: str | None = None  # out of memory: "CPU", "CUDA0", "Vulkan0" … (None: unknown)
    log: str | None = None  # where the full log is
    http_status: int | None = None  # http_error: the status the running server answered with

    @property
    def engine_cause(self) -> bool:
        """Another build of the engine may run where this one cannot."""
        return self.cause in ENGINE_CAUSES

    @property
    def on_gpu(self) -> bool:
        """An out-of-memory failure on a GPU (not host RAM)."""
        return self.device is not None and self.device.upper() not in ("CPU", "HOST") \
            and not self.device.upper().startswith("CPU")

    def message(self, who: str) -> str:
        """One line: ``who`` (e.g. "llama-server", "the Vulkan build") and the cause in the user's language."""
        wanted = mib_text(self.wanted_bytes)
        if self.cause == UNKNOWN and self.status_text():
            # the process ended and its status is known: say "stopped" with it
            return t("failure.stopped_status", who=who, status=self.status_text(), detail=self.detail)
        return t(f"failure.{self.cause}", who=who, detail=self.detail, signal=self.signal or "",
                 wanted=wanted, device=self.device or "?", status=self.http_status or "?")

    def status_text(self) -> str:
        """How the process ended, in words ("exit status 1", "killed by SIGTERM"); "" when that is unknown."""
        if self.signal:
            return t("failure.exit_signal", signal=self.signal)
        if self.exit_code is not None:
            return t("failure.exit_code", code=self.exit_code)
        return ""

    def hint(self) -> str:
        where = self.log or "-"
        return t(f"failure.hint_{self.cause}", log=where, library=_provider(self.detail))

    def error(self, who: str) -> EngineFailed:
        """The error to raise when nothing more can be tried (exit code per ``EXIT_CODES``)."""
        return EngineFailed(self, self.message(who), self.hint())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class EngineFailed(QwenKitError):
    """llama-server could not run, for a named cause; the exit code follows the cause (``EXIT_CODES``)."""

    def __init__(self, failure: EngineFailure, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.failure = failure
        self.exit_code = EXIT_CODES[failure.cause]


def mib_text(n: int | None) -> str:
    """An allocation's size as messages show it ("1,024 MiB"), "?" when the log did not say."""
    return f"{n / (1 << 20):,.0f} MiB" if n else "?"


def _provider(library: str) -> str:
    """What provides a missing library, in the user's language (the hint says what to install)."""
    name = library.lower()
    if "vulkan" in name:
        return t("failure.lib_vulkan")
    if name.startswith(("libcuda.so", "nvcuda")):
        return t("failure.lib_driver")
    if any(k in name for k in ("cudart", "cublas", "cuda")):
        return t("failure.lib_cudart")
    if "gomp" in name or "omp" in name:
        return t("failure.lib_openmp")
    if "stdc++" in name or "msvcp" in name or "vcruntime" in name:
        return t("failure.lib_cxx")
    return t("failure.lib_other", library=library)


def _signal_of(exit_info: ExitInfo | None) -> tuple[str | None, str | None]:
    """(signal-like name, NTSTATUS name) from the exit status."""
    if exit_info is None:
        return None, None
    if exit_info.signal is not None:
        return _SIGNALS.get(exit_info.signal, f"signal {exit_info.signal}"), None
    if exit_info.code is not None:
        code = exit_info.code & 0xFFFFFFFF
        if code in _NTSTATUS:
            return _NTSTATUS[code]
        if 128 < exit_info.code < 160:  # a shell reporting its child's signal (128 + n)
            return _SIGNALS.get(exit_info.code - 128), None
    return None, None


def _last_line(lines: list[str]) -> str:
    """The log's last word on it; the supervisor's own notes (``qwenkit: …``, "ended before it served") say only
    that it ended, so the line before them says why (a start script's "file not found: …")."""
    said = next((ln for ln in reversed(lines) if not ln.startswith(SUPERVISOR_PREFIX)), None)
    return (said or (lines[-1] if lines else ""))[:300]


def _out_of_memory(lines: list[str], text: str) -> EngineFailure | None:
    for line in reversed(lines):
        m = _ALLOC_BUFFER.search(line)
        if m:
            return EngineFailure(OUT_OF_MEMORY, line[:300], wanted_bytes=int(m.group(2)), device=m.group(1))
        m = _CUDA_ALLOC.search(line)
        if m:
            return EngineFailure(OUT_OF_MEMORY, line[:300], wanted_bytes=int(float(m.group(1)) * (1 << 20)),
                                 device=f"CUDA{m.group(2)}")
    for line in reversed(lines):
        m = _ALLOC_MB.search(line)
        if m:
            return EngineFailure(OUT_OF_MEMORY, line[:300], wanted_bytes=int(float(m.group(1)) * (1 << 20)),
                                 device="CPU")
    m = _OOM_WORDS.search(text)
    if m:
        line = next((ln for ln in reversed(lines) if _OOM_WORDS.search(ln)), m.group(0))
        device = "Vulkan" if "DeviceMemory" in line else ("CUDA" if "cuda" in line.lower() else None)
        return EngineFailure(OUT_OF_MEMORY, line[:300], device=device)
    return None


def _model(lines: list[str], text: str) -> EngineFailure | None:
    m = _UNKNOWN_ARCH.search(text)
    if m:
        return EngineFailure(MODEL_UNSUPPORTED, m.group(1) or "?")
    line = next((ln for ln in lines if _CORRUPT.search(ln)), None)
    if line is not None:
        return EngineFailure(MODEL_CORRUPT, _after(line, "error loading model: "))
    line = next((ln for ln in lines if _LOAD_ERROR.search(ln)), None)
    if line is not None:
        return EngineFailure(MODEL_LOAD, _after(line, "error loading model: "))
    return None


def classify(exit_info: ExitInfo | None, log: str, *, log_path: str | None = None) -> EngineFailure:
    """The cause of a failed start or self-test. ``exit_info`` None: the process is gone and its status unknown
    (a service manager that does not report it), so the log alone decides."""
    lines = clean_lines(log)
    text = "\n".join(lines)
    sig, ntstatus = _signal_of(exit_info)
    code = None if exit_info is None else exit_info.code
    found: EngineFailure | None = None
    if sig == "SIGILL":
        evidence = next((ln for ln in lines if _AMX.search(ln)), ntstatus or "SIGILL")
        found = EngineFailure(ILLEGAL_INSTRUCTION, evidence[:300])
    if found is None:
        for pattern in _MISSING_LIB:
            m = pattern.search(text)
            if m:
                found = EngineFailure(MISSING_LIBRARY, m.group(1))
                break
    if found is None and ntstatus in ("STATUS_DLL_NOT_FOUND", "STATUS_ENTRYPOINT_NOT_FOUND"):
        found = EngineFailure(MISSING_LIBRARY, ntstatus)
    if found is None:
        found = _out_of_memory(lines, text)
    if found is None and (ntstatus == "STATUS_NO_MEMORY" or sig == "SIGKILL"):
        found = EngineFailure(OUT_OF_MEMORY, ntstatus or "SIGKILL")
    if found is None:
        found = _model(lines, text)
    if found is None and _PORT.search(text):
        found = EngineFailure(PORT_IN_USE, next(ln for ln in lines if _PORT.search(ln))[:300])
    if found is None:
        m = _GPU_INIT.search(text)
        if m:
            found = EngineFailure(GPU_INIT, m.group(0)[:300])
    if found is None and sig in _CRASH_SIGNALS:
        evidence = next((ln for ln in reversed(lines) if _ASSERT.search(ln)), None) or _last_line(lines)
        found = EngineFailure(CRASH, (evidence or ntstatus or sig or "")[:300])  # an assertion, else where it was
    if found is None:
        found = EngineFailure(UNKNOWN, _last_line(lines) or "-")  # the exit status goes in the message
    return EngineFailure(found.cause, found.detail, signal=sig, exit_code=code,
                         wanted_bytes=found.wanted_bytes, device=found.device, log=log_path)


def gpu_missing(log: str) -> EngineFailure:
    """A GPU build that came up with no GPU device: the backend did not load or start (its words, if it said any)."""
    lines = clean_lines(log)
    for pattern in _MISSING_LIB:
        m = pattern.search("\n".join(lines))
        if m:
            return EngineFailure(MISSING_LIBRARY, m.group(1))
    m = _GPU_INIT.search("\n".join(lines))
    return EngineFailure(GPU_INIT, m.group(0)[:300] if m else t("failure.no_gpu_device"))
