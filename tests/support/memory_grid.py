"""Run the real llama-server at one point of a settings grid and read back the memory it reports.

Shared by ``tests/test_memory.py`` (a small grid) and ``scripts/bench_memory.py`` (a larger one): both compare
``bootstrap.memory.estimate`` with what llama-server itself allocates. The server runs CPU-only here, so only
host buffers are seen; GPU placement is modelled in ``bootstrap.memory``, never validated by this harness.

Buffer lines (``reference/llama-server.md`` "Memory log lines", printed at ``-lv 4``):
``load_tensors: <buft> model buffer size``, ``llama_kv_cache: size = …``, ``llama_memory_recurrent: size = …``,
``sched_reserve: <buft> compute buffer size``, ``llama_context: <buft> output buffer size``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from bootstrap.memory import LaunchSettings
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


@dataclass(frozen=True)
class GridPoint:
    """One llama-server launch: the settings the estimator also receives (CPU only: ``-ngl 0``)."""

    ctx: int
    ubatch: int = 512
    batch: int = 2048
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    n_parallel: int = 1
    kv_unified: bool = True
    flash_attn: bool = True
    repack: bool = False

    def args(self) -> list[str]:
        """Explicit flags for every setting, so no default, ``--fit`` or ``LLAMA_ARG_*`` can change them."""
        return [
            "-lv", "4", "-c", str(self.ctx), "-ub", str(self.ubatch), "-b", str(self.batch),
            "-ctk", self.cache_type_k, "-ctv", self.cache_type_v, "-np", str(self.n_parallel),
            "-kvu" if self.kv_unified else "-no-kvu", "-fa", "on" if self.flash_attn else "off",
            "--fit", "off", "-ngl", "0", "--repack" if self.repack else "--no-repack", "--no-warmup",
        ]

    def settings(self) -> LaunchSettings:
        """The estimator's view of this point (CPU only, as the test bed runs it)."""
        return LaunchSettings(ctx=self.ctx, ubatch=self.ubatch, batch=self.batch, cache_type_k=self.cache_type_k,
                              cache_type_v=self.cache_type_v, n_parallel=self.n_parallel,
                              kv_unified=self.kv_unified, flash_attn=self.flash_attn, n_gpu_layers=0,
                              cpu_repack=self.repack)

    def label(self) -> str:
        kv = self.cache_type_k if self.cache_type_k == self.cache_type_v else f"{self.cache_type_k}/{self.cache_type_v}"
        return (f"c{self.ctx}-ub{self.ubatch}-{kv}-np{self.n_parallel}{'' if self.kv_unified else '-split'}"
                f"{'' if self.flash_attn else '-nofa'}{'-repack' if self.repack else ''}")


@dataclass(frozen=True)
class Reported:
    """What llama-server printed, in bytes (from ``%.2f MiB``, so ±5 KiB per line)."""

    weights: dict[str, int] = field(default_factory=dict)  # buffer type -> bytes (CPU_Mapped is a byte range)
    kv: tuple[tuple[int, int, int], ...] = ()  # (bytes, cells, layers) per KV cache (two for SWA models)
    recurrent: int = 0
    compute: dict[str, int] = field(default_factory=dict)
    output: dict[str, int] = field(default_factory=dict)
    n_ctx_slot: int = 0

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
    return Reported(weights, kv, recurrent, compute, output, int(slot.group(2)) if slot else 0)


def run_point(binary: Path, model: Path, point: GridPoint, *, ready_timeout: float = 120.0) -> Reported:
    """Start llama-server on ``model`` with ``point``'s flags, wait until healthy, stop it, parse its log."""
    with LlamaServer(binary, model, point.args(), ready_timeout=ready_timeout) as server:
        log = server.log()
    return parse_memory(log)
