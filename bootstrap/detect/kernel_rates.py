"""The rates this machine's llama.cpp kernels measured: the speed model's inputs when they can be measured.

Measured by ``verify/speed_rates.py`` with the placed engine, before any model byte is downloaded (the install calls
it right after the engine self-test), and passed down to ``plan/speed.py`` as data inside the hardware profile —
so ``doctor --json`` can carry them and a ``--hardware`` file made on a machine that measured keeps them. Without
them the speed model falls back to its constants fitted on published runs (docs/speed.md).

One ``TypeRate`` per quantization type the measurement ran (``plan.speed.RATE_TYPES``): how many weight bytes per
second one generated token's matrices were read and multiplied at (all threads together), and the FLOP/s of a prompt
batch. Rates, not tokens/s, so one measurement predicts any model from its bytes and parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bootstrap.core.json_fields import FieldReader

DEVICES = ("cpu", "gpu")


@dataclass(frozen=True)
class TypeRate:
    """One quantization type's measured rates on one device."""

    type: str  # ggml type name of the measured model's matrices ("Q4_K")
    decode_bytes_per_s: int  # weight bytes per second while generating, every thread together
    prompt_flops_per_s: int  # FLOP/s while reading a prompt (one batch)


@dataclass(frozen=True)
class DeviceRates:
    """What one device measured: the CPU with ``threads`` threads, or a GPU (every layer offloaded)."""

    device: str  # "cpu" | "gpu"
    threads: int  # llama-server -t of the measurement
    rates: tuple[TypeRate, ...]
    name: str = ""  # the GPU as the engine listed it ("Vulkan0: …"); "" for the CPU

    def rate(self, type_name: str) -> TypeRate | None:
        return next((r for r in self.rates if r.type == type_name), None)


@dataclass(frozen=True)
class KernelRates:
    """One measurement: which engine ran it, on which CPU, when, how long it took, and each device's rates."""

    engine: str  # "b11434 ubuntu-x64": the build and variant that measured
    cpu_brand: str
    measured: str  # ISO 8601 UTC
    millis: int  # wall time of the whole measurement
    devices: tuple[DeviceRates, ...]

    def device(self, name: str) -> DeviceRates | None:
        return next((d for d in self.devices if d.device == name and d.rates), None)

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "cpu_brand": self.cpu_brand, "measured": self.measured, "millis": self.millis,
                "devices": [{"device": d.device, "name": d.name, "threads": d.threads,
                             "rates": [{"type": r.type, "decode_bytes_per_s": r.decode_bytes_per_s,
                                        "prompt_flops_per_s": r.prompt_flops_per_s} for r in d.rates]}
                            for d in self.devices]}


def read_kernel_rates(r: FieldReader | None) -> KernelRates | None:
    """The strict reader (a ``--hardware`` file, ``doctor --json``): a bad field is one line naming it; absent
    (``None``, a profile recorded without a measurement) reads as None."""
    if r is None:
        return None
    devices = []
    for d in r.items("devices"):
        rates = tuple(TypeRate(x.text("type"), x.integer("decode_bytes_per_s", minimum=1),
                               x.integer("prompt_flops_per_s", minimum=1)) for x in d.items("rates"))
        devices.append(DeviceRates(d.choice("device", DEVICES), d.integer("threads", minimum=1), rates,
                                   d.text("name")))
    return KernelRates(r.text("engine"), r.text("cpu_brand"), r.text("measured"), r.integer("millis"),
                       tuple(devices))
