"""Run the real llama-server at one point of a settings grid and read back the memory it reports.

Shared by ``tests/plan/test_memory.py`` (a small grid) and ``scripts/bench_memory.py`` (a larger one): both compare
``bootstrap.plan.memory.estimate`` with what llama-server itself allocates. The server runs CPU-only here, so only
host buffers are seen; GPU placement is modelled in ``bootstrap.plan.memory``, never validated by this harness.

Buffer lines (``docs/engine.md`` "Memory log lines", printed at ``-lv 4``):
``load_tensors: <buft> model buffer size``, ``llama_kv_cache: size = …``, ``llama_memory_recurrent: size = …``,
``sched_reserve: <buft> compute buffer size``, ``llama_context: <buft> output buffer size``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from bootstrap.plan.memory import LaunchSettings
from tests.support.llama import LlamaServer
from tests.support.llama_log import KV_LINE, MIB

_PFX = r"^(?:\[\d+\] )?(?:[\d.]+ [A-Z] )?"
_MODEL_BUF = re.compile(_PFX + r"load_tensors: +(\S+) model buffer size = +([\d.]+) MiB", re.M)
_COMPUTE_BUF = re.compile(_PFX + r"sched_reserve: +(\S+) compute buffer size = +([\d.]+) MiB", re.M)
_OUTPUT_BUF = re.compile(_PFX + r"llama_context: +(\S+) +output buffer size = +([\d.]+) MiB", re.M)
# The recurrent line gained a "P (f32)" part (per-layer-embedding conv state) after the reference was written;
# only the total is needed, so the tail is left unparsed.
_RS_SIZE = re.compile(_PFX + r"llama_memory_recurrent: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers", re.M)
_SLOT = re.compile(r"load_model: initializing, n_slots = (\d+), n_ctx_slot = (\d+)")

# Buffers that hold extra copies of weights (CPU weight repacking), not the model file's mapping.
REPACK_BUFTS = ("CPU_REPACK", "AMX")


def server_args(point: LaunchSettings) -> list[str]:
    """Explicit llama-server flags for every setting of a grid point (CPU only: ``-ngl 0``), so no default,
    ``--fit`` or ``LLAMA_ARG_*`` can change them."""
    mtp = ["--spec-type", "draft-mtp", "--spec-draft-n-max", str(point.mtp_draft)] if point.mtp_draft else []
    return [
        "-lv", "4", "-c", str(point.ctx), "-ub", str(point.ubatch), "-b", str(point.batch),
        "-ctk", point.cache_type_k, "-ctv", point.cache_type_v, "-np", str(point.n_parallel),
        "-kvu" if point.kv_unified else "-no-kvu", "-fa", "on" if point.flash_attn else "off",
        "--fit", "off", "-ngl", "0", "--repack" if point.cpu_repack else "--no-repack", "--no-warmup", *mtp,
        *(["--swa-full"] if point.swa_full else []),
    ]


def label(point: LaunchSettings) -> str:
    """A short name for a grid point in reports (``c8192-ub512-q8_0-np3-split``)."""
    k, v = point.cache_type_k, point.cache_type_v
    kv = k if k == v else f"{k}/{v}"
    return (f"c{point.ctx}-ub{point.ubatch}-{kv}-np{point.n_parallel}{'' if point.kv_unified else '-split'}"
            f"{'' if point.flash_attn else '-nofa'}{'-repack' if point.cpu_repack else ''}"
            f"{f'-mtp{point.mtp_draft}' if point.mtp_draft else ''}{'-swafull' if point.swa_full else ''}")


@dataclass(frozen=True)
class Reported:
    """What llama-server printed, in bytes (from ``%.2f MiB``, so ±5 KiB per line)."""

    weights: dict[str, int] = field(default_factory=dict)  # buffer type -> bytes (CPU_Mapped is a byte range)
    kv: tuple[tuple[int, int, int], ...] = ()  # (bytes, cells, layers) per KV cache (two for SWA models)
    recurrent: int = 0
    compute: dict[str, int] = field(default_factory=dict)
    output: dict[str, int] = field(default_factory=dict)
    n_ctx_slot: int = 0
    compute_all: tuple[int, ...] = ()  # every compute line in order (an MTP draft context adds its own)

    @property
    def weights_mapped(self) -> int:
        return sum(v for k, v in self.weights.items() if k not in REPACK_BUFTS)

    @property
    def repack(self) -> int:
        return sum(v for k, v in self.weights.items() if k in REPACK_BUFTS)

    @property
    def kv_total(self) -> int:
        return sum(b for b, _, _ in self.kv)


def _mib(text: str) -> int:
    return round(float(text) * MIB)


def parse_memory(log: str) -> Reported:
    """The memory lines of one llama-server log (the last value of each buffer type wins: a re-reserve)."""
    weights = {buft: _mib(size) for buft, size in _MODEL_BUF.findall(log)}
    compute = {buft: _mib(size) for buft, size in _COMPUTE_BUF.findall(log)}
    output = {buft: _mib(size) for buft, size in _OUTPUT_BUF.findall(log)}
    kv = tuple((_mib(m.group(1)), int(m.group(2)), int(m.group(3))) for m in KV_LINE.finditer(log))
    recurrent = sum(_mib(m.group(1)) for m in _RS_SIZE.finditer(log))
    slot = _SLOT.search(log)
    if not weights or not compute:
        raise ValueError("no memory lines in the log: was the server run with -lv 4?")
    compute_all = tuple(_mib(size) for _, size in _COMPUTE_BUF.findall(log))
    return Reported(weights, kv, recurrent, compute, output, int(slot.group(2)) if slot else 0, compute_all)


_KV_BUF = re.compile(_PFX + r"llama_kv_cache: +(\S+) KV buffer size = +([\d.]+) MiB", re.M)
_RS_BUF = re.compile(_PFX + r"llama_memory_recurrent: +(\S+) RS buffer size = +([\d.]+) MiB", re.M)


def device_buffers(log: str) -> dict[str, dict[str, int]]:
    """Bytes per buffer kind (``model``, ``kv``, ``recurrent``, ``compute``, ``output``) per buffer type
    (``CUDA0``, ``CPU_Mapped``, ``CUDA_Host``…), as a GPU run prints them: ``load_tensors: <buft> model buffer
    size``, ``llama_kv_cache: <buft> KV buffer size``, ``llama_memory_recurrent: <buft> RS buffer size``,
    ``sched_reserve: <buft> compute buffer size``, ``llama_context: <buft> output buffer size``. Lines of one kind
    and type add up (a second context, the MTP draft's, prints its own)."""
    out: dict[str, dict[str, int]] = {}
    for kind, pattern in (("model", _MODEL_BUF), ("kv", _KV_BUF), ("recurrent", _RS_BUF),
                          ("compute", _COMPUTE_BUF), ("output", _OUTPUT_BUF)):
        for buft, size in pattern.findall(log):
            per = out.setdefault(buft, {})
            per[kind] = per.get(kind, 0) + _mib(size)
    return out


def run_point(binary: Path, model: Path, point: LaunchSettings, *, ready_timeout: float = 120.0) -> Reported:
    """Start llama-server on ``model`` with ``point``'s flags, wait until healthy, stop it, parse its log."""
    with LlamaServer(binary, model, server_args(point), ready_timeout=ready_timeout) as server:
        log = server.log()
    return parse_memory(log)
