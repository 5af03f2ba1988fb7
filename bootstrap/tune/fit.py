"""The tune stage: check the plan's placement against llama.cpp's own fit on this machine, and adopt fit's GPU
placement when ours would not fit.

Our planner estimates memory from the GGUF header; ``llama-fit-params`` (shipped in llama.cpp release archives)
asks the real backends. Two dry runs, no weights read:

1. the plan's context/batch/cache settings WITHOUT our placement flags, so fit places layers itself; stdout is one
   line (``tools/fit-params/fit-params.cpp``): ``-c N -ngl K[ -ts A,B…][ -ot "PATTERN=BUFT,…"]``.
2. the plan's settings WITH our placement and ``-fitp on``: stdout is one row per device then ``Host``, each
   ``NAME MODEL_MIB CONTEXT_MIB COMPUTE_MIB `` (``common/fit.cpp``, ``common_fit_print``; older builds wrote
   ``host`` in lower case, llama.cpp PR #22171).

A device fits when its projected use leaves the margin fit itself keeps (``-fitt``, default 1024 MiB) of its free
memory. With GPUs fit never checks system RAM ("assumes system memory is unlimited", ``common/fit.h``), so neither do
we here; CPU-only, fit compares the host total with the machine's total RAM (``common_params_fit_impl``), and so do
we. A failing tool never fails the install: the plan stays and the reason says why.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from bootstrap.core import settings
from bootstrap.core.console import join_sentences, t
from bootstrap.core.input_checks import decimal_int
from bootstrap.core.processes import NOT_FOUND, NOT_STARTED, TIMED_OUT, run_captured, run_command
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.place.engine_failure import MODEL_CORRUPT, MODEL_UNSUPPORTED, EngineFailure, ExitInfo, classify
from bootstrap.plan.gguf_header import GGUFHeaderError, read_header

MIB = 1024 * 1024
MODEL_CAUSES = (MODEL_CORRUPT, MODEL_UNSUPPORTED)  # the model's fault, not the tool's
FIT_MARGIN_MIB = 1024  # llama.cpp's default -fitt (llama.cpp common/arg.cpp, PR #18679; docs/engine.md)

# Flags that describe context and batches: fit must see them to project the same memory as the server.
_SIZE_FLAGS = ("-c", "-np", "-ctk", "-ctv", "-fa", "-b", "-ub")
_SIZE_BARE = ("-kvu", "--no-repack")
# Flags that place tensors: any of them makes fit abort its own placement ("n_gpu_layers already set by user"),
# so the fitting run goes without them and the projection run with them. (``--fit off`` reaches neither run.)
_PLACE_FLAGS = ("-ngl", "--n-cpu-moe", "-ot", "-ts")
_PLACE_BARE = ("--cpu-moe",)
# Speculative decoding with the model's MTP head (planner.launch_args): dropped when fit's placement is adopted.
_SPEC_FLAGS = ("--spec-type", "--spec-draft-n-max")

# The fitted line exactly as fit-params.cpp prints it.
_FITTED_LINE = re.compile(r'^-c (\d+) -ngl (-?\d+)(?: -ts ([\d,]+))?(?: -ot "([^"]*)")?\s*$')
_PROJECTION_ROW = re.compile(r"^(\S+) (\d+) (\d+) (\d+)\s*$")
# A log line's prefix: optional "[pid] ", a timestamp "m.ss.mmm.uuu ", a level letter.
_LOG_PREFIX = re.compile(r"^(?:\[\d+\]\s*)?(?:\d+\.\d+\.\d+\.\d+\s+)?(?:[IWEDT]\s+)?")


@dataclass(frozen=True)
class FitAdvice:
    """llama.cpp's fitted arguments: context, GPU layers, tensor split, tensor buffer overrides."""

    ctx: int
    ngl: int  # -1: "auto" (fit left it alone: nothing to offload, or everything fits)
    tensor_split: tuple[int, ...]
    overrides: tuple[tuple[str, str], ...]  # (regex, buffer type), first match wins

    def args(self) -> tuple[str, ...]:
        """The placement flags as llama-server takes them (without -c)."""
        out = ["-ngl", str(self.ngl)]
        if self.tensor_split:
            out += ["-ts", ",".join(str(n) for n in self.tensor_split)]
        if self.overrides:
            out += ["-ot", ",".join(f"{pattern}={buft}" for pattern, buft in self.overrides)]
        return tuple(out)


@dataclass(frozen=True)
class Projection:
    """llama.cpp's projected use of one device (or ``Host``) in MiB for our placement."""

    device: str
    model_mib: int
    context_mib: int
    compute_mib: int

    @property
    def total_mib(self) -> int:
        return self.model_mib + self.context_mib + self.compute_mib

    @property
    def is_host(self) -> bool:
        return self.device.lower() == "host"


@dataclass(frozen=True)
class TuneResult:
    """What tune decided, with both candidates kept for ``state.json``."""

    plan_args: tuple[str, ...]
    fit_args: tuple[str, ...] | None  # llama.cpp's fitted line, as tokens; None when the tool did not answer
    final_args: tuple[str, ...]
    adopted: Literal["plan", "fit"]
    reason: str
    projections: tuple[Projection, ...]
    duration_s: float
    notes: tuple[str, ...] = ()  # further one-line decisions (``--no-repack``)
    model_failure: EngineFailure | None = None  # fit could not load the model at all (see ``FitToolError``)

    def to_json(self) -> dict[str, Any]:
        return {
            "plan_args": list(self.plan_args),
            "fit_args": list(self.fit_args) if self.fit_args is not None else None,
            "final_args": list(self.final_args),
            "adopted": self.adopted,
            "reason": self.reason,
            "projections": [
                {"device": p.device, "model_mib": p.model_mib, "context_mib": p.context_mib,
                 "compute_mib": p.compute_mib} for p in self.projections
            ],
            "duration_s": round(self.duration_s, 3),
            "notes": list(self.notes),
        }


class FitToolError(Exception):
    """llama-fit-params failed, timed out or printed something we cannot read (``str`` is one line).

    ``failure``: the cause its own words name when they say the model cannot be loaded at all (damaged, incomplete,
    an unknown architecture): not a tool failure but the model's, which an upgrade refuses before it stops anything.
    """

    def __init__(self, message: str, failure: EngineFailure | None = None) -> None:
        super().__init__(message)
        self.failure = failure


# --- pure parsers ------------------------------------------------------------------------------------------------

def parse_fitted_args(stdout: str) -> FitAdvice:
    """The fitted line of ``llama-fit-params`` stdout; raises ``FitToolError`` when none is there."""
    for line in reversed(stdout.splitlines()):
        m = _FITTED_LINE.match(line.strip())
        if not m:
            continue
        split = tuple(int(n) for n in m.group(3).split(",")) if m.group(3) else ()
        overrides: list[tuple[str, str]] = []
        if m.group(4):
            # llama.cpp's own -ot parser splits on "," and each item at its last "="; fit's regexes hold neither.
            for item in m.group(4).split(","):
                pattern, sep, buft = item.rpartition("=")
                if not sep or not pattern or not buft:
                    raise FitToolError(f"unreadable tensor override {item!r}")
                overrides.append((pattern, buft))
        return FitAdvice(ctx=int(m.group(1)), ngl=int(m.group(2)), tensor_split=split, overrides=tuple(overrides))
    raise FitToolError(f"no fitted arguments in the output: {_first_line(stdout) or '(empty)'}")


def parse_projections(stdout: str) -> tuple[Projection, ...]:
    """The ``-fitp on`` table: one row per device, then the host; raises ``FitToolError`` without a host row."""
    rows = []
    for line in stdout.splitlines():
        m = _PROJECTION_ROW.match(line.strip())
        if m:
            rows.append(Projection(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))))
    if not any(p.is_host for p in rows):
        raise FitToolError(f"no memory table in the output: {_first_line(stdout) or '(empty)'}")
    return tuple(rows)


def error_line(stderr: str) -> str:
    """The first complete line the tool logged at error level (``E`` or ``error:``), without its timestamp; "" if
    none (a line cut short by the exit race below does not count)."""
    complete = stderr.splitlines()[:-1] if not stderr.endswith("\n") else stderr.splitlines()
    for line in (ln.strip() for ln in complete):
        if re.match(r"^(?:\[\d+\]\s*)?\d+\.\d+\.\d+\.\d+\s+E\s", line) or line.lower().startswith("error"):
            return _LOG_PREFIX.sub("", line, count=1)
    return ""


def first_error_line(stderr: str) -> str:
    """``error_line``, else the tool's last line: always something to show when it failed."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return error_line(stderr) or (_LOG_PREFIX.sub("", lines[-1], count=1) if lines else "")


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


# --- argument handling -------------------------------------------------------------------------------------------

def split_args(args: Sequence[str], with_value: Sequence[str],
               bare: Sequence[str]) -> tuple[list[str], list[str], int]:
    """(the named flags with their values, the rest, where the first named flag stood in the rest).

    ``with_value`` flags take the next token; ``bare`` flags stand alone. One walk serves both picking the
    sizing/placement flags for llama-fit-params and replacing our placement with fit's.
    """
    picked: list[str] = []
    rest: list[str] = []
    at = -1
    i = 0
    while i < len(args):
        token = args[i]
        width = 2 if token in with_value else 1 if token in bare else 0
        if width:
            at = len(rest) if at < 0 else at
            if i + width <= len(args):  # a value-taking flag cut off at the end is dropped, not picked
                picked += args[i:i + width]
            i += width
            continue
        rest.append(token)
        i += 1
    return picked, rest, (at if at >= 0 else len(rest))


def pick_args(args: Sequence[str], with_value: Sequence[str], bare: Sequence[str]) -> list[str]:
    """The flags of ``args`` named in ``with_value`` (each with the token after it) and in ``bare``, in order."""
    return split_args(args, with_value, bare)[0]


def drop_args(args: Sequence[str], with_value: Sequence[str], bare: Sequence[str]) -> tuple[list[str], int]:
    """``args`` without those flags, and the index where the first dropped one stood (``len`` if none)."""
    _, rest, at = split_args(args, with_value, bare)
    return rest, at


def _value(args: Sequence[str], flag: str) -> str | None:
    for i, token in enumerate(args[:-1]):
        if token == flag:
            return args[i + 1]
    return None


def adopt_fit(plan_args: Sequence[str], advice: FitAdvice) -> list[str]:
    """The plan with its placement replaced by fit's (at the same position), ``--fit off`` kept, ``-c`` shrunk only
    when fit shrank it."""
    kept, at = drop_args(plan_args, _PLACE_FLAGS, _PLACE_BARE)
    out = kept[:at] + list(advice.args()) + kept[at:]
    ctx = _value(out, "-c")
    asked = decimal_int(ctx)
    if asked is not None and 0 < advice.ctx < asked:
        out[out.index("-c") + 1] = str(advice.ctx)
    return out


def with_no_repack(args: Sequence[str], hardware: HardwareProfile) -> tuple[list[str], str | None]:
    """Add ``--no-repack`` on AMX CPUs: the AMX repack path can die with SIGILL at warm-up (llama.cpp PR #26954)
    and its buffer is host memory fit does not project (docs/engine.md, "Compute, output, repack")."""
    out = list(args)
    if not hardware.cpu.flags.amx:
        return out, None
    if "--no-repack" not in out and "-nr" not in out:
        out.append("--no-repack")
    return out, t("tune.no_repack_amx")


# --- running the tool --------------------------------------------------------------------------------------------

def _child_env() -> dict[str, str]:
    """This process's environment without the variables that silently override llama.cpp flags."""
    return settings.engine_child_env()


# llama.cpp logs from a worker thread and its error path calls exit(1) without flushing it (``common_log_main``
# leaks the logger on purpose, ``common/log.cpp``): often the process ends before the error line is written. Measured
# on a missing model (2-core EPYC): 5 of 100 runs silent when idle, 94 of 100 with four busy processes beside it
# (llama.cpp #18085 is the same race on stdout). A failure without a message is run again, at most this many times.
_SILENT_FAILURE_TRIES = 3


def _run(argv: list[str], timeout: float) -> str:
    """The tool's stdout; ``FitToolError`` (one line) on a failure, a timeout or a missing binary."""
    for _ in range(_SILENT_FAILURE_TRIES):
        try:
            proc = run_captured(argv, timeout=timeout, env=_child_env())
        except subprocess.TimeoutExpired as exc:
            raise FitToolError(t("tune.tool_timeout", seconds=f"{timeout:g}")) from exc
        except OSError as exc:
            raise FitToolError(f"{Path(argv[0]).name}: {exc.strerror or exc}") from exc
        if proc.returncode == 0:
            return proc.stdout
        if error_line(proc.stderr):
            break
    failure = classify(ExitInfo.from_returncode(proc.returncode), proc.stderr)
    raise FitToolError(f"exit status {proc.returncode}: "
                       f"{first_error_line(proc.stderr) or t('tune.tool_silent', tries=_SILENT_FAILURE_TRIES)}",
                       failure if failure.cause in MODEL_CAUSES else None)


def _accepted_flags(fit_params: Path, timeout: float) -> set[str]:
    """Flags the tool's ``--help`` lists (builds differ: b11434's fit-params rejects ``--mmproj`` and ``-kvu``)."""
    proc = run_command([fit_params, "--help"], timeout=timeout, env=_child_env())
    if proc.returncode in (NOT_FOUND, NOT_STARTED, TIMED_OUT):
        return set()
    flags: set[str] = set()
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith("-"):  # a flag line; continuation lines are indented
            flags.update(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line))
    return flags


def _device_free_mib(projections: Sequence[Projection], hardware: HardwareProfile) -> list[tuple[Projection, int]]:
    """Each projected row paired with the free MiB fit would compare it with: the i-th device with the i-th GPU's
    free VRAM; CPU-only, the host with total RAM. Rows we cannot pair are left out (never guessed)."""
    devices = [p for p in projections if not p.is_host]
    if not devices:
        host = next(p for p in projections if p.is_host)
        return [(host, hardware.memory.total_bytes // MIB)]
    gpus = sorted(hardware.gpus, key=lambda g: g.index)
    return [(p, gpus[i].vram_free_bytes // MIB) for i, p in enumerate(devices) if i < len(gpus)]


def tune(fit_params: Path | None, model: Path, plan_args: Sequence[str], hardware: HardwareProfile, *,
         mmproj: Path | None = None, timeout: float = 120) -> TuneResult:
    """Compare the plan with llama.cpp's fit on this machine and return the arguments to launch with."""
    start = time.perf_counter()
    plan = tuple(plan_args)
    base, repack_note = with_no_repack(plan, hardware)
    notes = (repack_note,) if repack_note else ()

    def result(adopted: Literal["plan", "fit"], final: Sequence[str], reason: str,
               fit_args: tuple[str, ...] | None = None, projections: tuple[Projection, ...] = ()) -> TuneResult:
        return TuneResult(plan, fit_args, tuple(final), adopted, reason, projections,
                          time.perf_counter() - start, notes)

    if fit_params is None:
        return result("plan", base, t("tune.no_tool"))
    if "--rpc" in plan:  # fit would hold each worker's one connection, and misjudges RPC devices (llama.cpp #21801)
        return result("plan", base, t("rpc.tune_skipped"))
    try:
        # The tool's own words for a missing or cut-short file are often lost (the exit race at ``_run``); the
        # header reader says the same thing every time, naming the file.
        read_header(model)
    except GGUFHeaderError as exc:
        return result("plan", base, t("tune.model_unreadable", error=str(exc)))
    accepted = _accepted_flags(fit_params, timeout)
    sizes = pick_args(base, _SIZE_FLAGS, _SIZE_BARE)
    if accepted:
        sizes = _only_accepted(sizes, accepted)
    common = [str(fit_params), "-m", str(model)]
    if mmproj is not None and (not accepted or "--mmproj" in accepted):
        common += ["--mmproj", str(mmproj)]
    common += sizes
    fit_args: tuple[str, ...] | None = None
    try:
        advice = parse_fitted_args(_run([*common, "-fitt", str(FIT_MARGIN_MIB)], timeout))
        fit_args = ("-c", str(advice.ctx), *advice.args())
        ours = pick_args(base, _PLACE_FLAGS, _PLACE_BARE)
        projections = parse_projections(_run([*common, *ours, "-fitp", "on"], timeout))
    except FitToolError as exc:
        return replace(result("plan", base, t("tune.tool_failed", error=str(exc)), fit_args),
                       model_failure=exc.failure)

    adopted, final, reason = decide(base, advice, projections, hardware)
    return result(adopted, final, reason, fit_args, projections)


def decide(args: Sequence[str], advice: FitAdvice, projections: Sequence[Projection],
           hardware: HardwareProfile) -> tuple[Literal["plan", "fit"], list[str], str]:
    """Keep ``args`` when llama.cpp projects that they fit; else take fit's GPU placement (pure: tests feed it
    recorded tool output and recorded machines)."""
    checked = _device_free_mib(projections, hardware)
    over = [(p, free) for p, free in checked if p.total_mib > free - FIT_MARGIN_MIB]
    if not over:
        worst = max(checked, key=lambda pf: pf[0].total_mib - pf[1], default=None)
        if worst is None:
            return "plan", list(args), t("tune.keep_unknown_free")
        p, free = worst
        key = "tune.keep_fits_host" if p.is_host else "tune.keep_fits"
        return "plan", list(args), t(key, device=p.device, used=p.total_mib, free=free, margin=FIT_MARGIN_MIB)
    p, free = over[0]
    if p.is_host:
        return "plan", list(args), t("tune.keep_cpu_only", used=p.total_mib, free=free, margin=FIT_MARGIN_MIB)
    final = adopt_fit(args, advice)
    plan_ctx = _value(args, "-c")
    fields = {"device": p.device, "used": p.total_mib, "free": free, "margin": FIT_MARGIN_MIB,
              "fit": " ".join(advice.args())}
    # llama-fit-params (b11434) takes no --spec-type, so its placement leaves no room for an MTP head, its draft
    # KV and rollback state: drafting goes with our placement (docs/models.md, "MTP").
    final, _ = drop_args(final, _SPEC_FLAGS, ())
    mtp_note = (t("tune.fit_drops_mtp"),) if "--spec-type" in args else ()
    if plan_ctx is not None and _value(final, "-c") != plan_ctx:
        return "fit", final, join_sentences(t("tune.adopt_fit_ctx", ctx=advice.ctx, plan_ctx=plan_ctx, **fields),
                                            *mtp_note)
    return "fit", final, join_sentences(t("tune.adopt_fit", **fields), *mtp_note)


def _only_accepted(args: list[str], accepted: set[str]) -> list[str]:
    """Drop flags (and their values) the tool does not list, so an older/newer tool never rejects the run."""
    out: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        takes_value = token in _SIZE_FLAGS
        if token in accepted:
            out += args[i:i + 2] if takes_value else [token]
        i += 2 if takes_value else 1
    return out
