"""Before the download: measure this machine's kernel rates with the engine just placed and self-tested, and let the
plan predict tokens/s from them (DESIGN.md §1: measuring in ``verify/``, called by ``install/``, its numbers passed
down to ``plan/`` as data inside the hardware profile).

Order in ``installer._install``: detect → plan → confirm → engine (fetch, place, self-test) → **measure → re-predict**
→ model download. Nothing is measured for ``install --hardware FILE`` (the plan is for that file's CPU, not this
one's: its own measurement, if ``doctor --json`` recorded one there, or the published-run constants apply). A
measurement that fails or runs out of its time is a warning, never a reason to stop: the constants stay.

What the last install measured is kept in ``state.json`` inside the recorded prediction (``speed.predicted
.kernel_rates``), so a rerun's confirmation screen, ``plan`` and ``doctor --json`` on this machine predict from it
too (``recorded_rates``) — only when it was measured on this same CPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace

from bootstrap.core.console import info, t, warn
from bootstrap.core.errors import QwenKitError, UsageError
from bootstrap.core.home import Home
from bootstrap.core.json_fields import FieldReader
from bootstrap.core.sizes import rate_text
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.detect.kernel_rates import KernelRates, read_kernel_rates
from bootstrap.detect.probes.contention import CPU_BUSY_PERCENT
from bootstrap.place.working_engine import WorkingEngine
from bootstrap.plan.planner import CPU_VARIANTS, Plan
from bootstrap.record.state import InstallState, load_state
from bootstrap.verify.speed_rates import DEFAULT_SHAPE, MEASURE_BUDGET_S, RateRequest, measure_rates, model_bytes

RATES_LOG = "speed-rates.log"
MIN_TYPE_SHARE = 0.10  # a type under a tenth of a token's bytes moves the prediction by less than the noise
MAX_TYPES = 3


def _threads(plan: Plan) -> int:
    args = list(plan.args)
    with contextlib.suppress(ValueError, IndexError):
        return max(1, int(args[args.index("-t") + 1]))
    return 1


def main_types(by_type: dict[str, int], limit: int = MAX_TYPES) -> tuple[str, ...]:
    """The rate types holding at least ``MIN_TYPE_SHARE`` of a device's bytes per token, most bytes first (at most
    ``limit``): the ones worth the measurement's seconds. The others take the measured ones' mean."""
    total = sum(by_type.values())
    ranked = sorted((n, kind) for kind, n in by_type.items() if total and n / total >= MIN_TYPE_SHARE)
    return tuple(kind for _n, kind in reversed(ranked))[:limit]


def measure_here(home: Home, plan: Plan, hardware: HardwareProfile, working: WorkingEngine) -> KernelRates | None:
    """The placed engine's rates here, with the plan's threads and repack setting, for the types the planned model
    reads on each device, and the GPU it offloads to."""
    by_type = plan.speed.inputs.get("weights_by_type", {})
    per_token = plan.speed.inputs.get("weights_bytes_per_token", {})
    on_gpu = plan.variant.name not in CPU_VARIANTS and plan.settings.n_gpu_layers > 0 and working.probed.devices
    device = working.probed.devices[0] if on_gpu else None
    gpu_types = main_types(by_type.get("gpu", {}), 1) or ("Q4_K",)
    request = RateRequest(threads=_threads(plan), repack="--no-repack" not in plan.args,
                          types=main_types(by_type.get("cpu", {})), cpu_bytes=model_bytes(per_token.get("cpu", 0)),
                          shape=_shape(plan.speed.inputs.get("shape")),
                          gpu_type=gpu_types[0], gpu_bytes=model_bytes(per_token.get("gpu", 0)),
                          gpu_name=None if device is None else f"{device.name}: {device.description}")
    info(t("speed_source.measuring", seconds=int(MEASURE_BUDGET_S)))
    rates = measure_rates(working.installed.server, request, engine=f"b{working.installed.build} {working.variant}",
                          cpu_brand=hardware.cpu.brand, log=home.logs_dir / RATES_LOG)
    if rates is None:
        warn(t("speed_source.not_measured", log=home.logs_dir / RATES_LOG))
    return rates


def measure_and_predict(home: Home, plan: Plan, hardware: HardwareProfile, working: WorkingEngine,
                        replan: Callable[[HardwareProfile], Plan], *, elsewhere: bool
                        ) -> tuple[Plan, HardwareProfile]:
    """(the plan predicted from this machine's measured rates, the profile carrying them); unchanged when the plan
    is for another machine (``elsewhere``: ``--hardware``) or nothing could be measured. ``replan`` is the planner
    run again on the new profile: the rates change the prediction and what is derived from it (``same_placement``),
    never the file or the placement (a plan that moved them keeps the plan as it was)."""
    if elsewhere:
        return plan, hardware
    busy = others_cpu_percent()
    rates = measure_here(home, plan, hardware, working)
    if rates is None:
        return plan, hardware
    measured = replace(hardware, kernel_rates=rates)
    again = replan(measured)
    if not same_placement(plan, again):
        return plan, hardware
    info(t("speed_source.measured", seconds=f"{rates.millis / 1000:.1f}", tps=rate_text(again.speed.decode_tps),
           low=rate_text(again.speed.decode_low), high=rate_text(again.speed.decode_high),
           before=rate_text(plan.speed.decode_tps)))
    if busy is not None and busy >= CPU_BUSY_PERCENT:  # the rates were measured on a busy machine: say so
        warn(t("speed_source.busy", percent=f"{busy:.0f}"))
    return again, measured


def others_cpu_percent(window_s: float = 0.5) -> float | None:
    """How busy the CPU is with other programs right before the measurement (nothing of ours runs then), in
    percent of all cores; None where the OS does not say."""
    import psutil

    try:
        return float(psutil.cpu_percent(interval=window_s))
    except (OSError, RuntimeError):
        return None


def same_placement(plan: Plan, again: Plan) -> bool:
    """The same model file, context, slots and devices. Speed decides only the batch sizes of a server with several
    slots and the prompt cache those leave room for (``planner._interleaved``): a measured prompt speed may move
    them, and the measured plan is then the better one (comparing every argument threw the measurement away on a
    machine whose speed moved them: the rates were then missing from the record)."""
    derived = {"batch": 0, "ubatch": 0, "cache_ram_mib": 0, "ctx_checkpoints": 0}
    return ((plan.model_id, plan.quant, plan.file, plan.variant.name) ==
            (again.model_id, again.quant, again.file, again.variant.name)
            and replace(plan.settings, **derived) == replace(again.settings, **derived))


def _shape(found: object) -> tuple[int, int]:
    """The planned model's (embedding, FFN) widths from the prediction's inputs, else the measurement's default."""
    if isinstance(found, (list, tuple)) and len(found) == 2 and all(isinstance(n, int) and n > 0 for n in found):
        return int(found[0]), int(found[1])
    return DEFAULT_SHAPE


def rates_in_state(state: InstallState | None, cpu_brand: str) -> KernelRates | None:
    """The rates the install recorded (inside its prediction), when measured on a CPU of this brand; a record
    without them, or with a damaged copy, gives None (they are a report, never a reason to reject the record)."""
    predicted = state.speed.predicted if state is not None and state.speed is not None else None
    doc = predicted.get("kernel_rates") if predicted else None
    if not isinstance(doc, dict):
        return None
    try:
        rates = read_kernel_rates(FieldReader(doc, "kernel_rates", _bad))
    except UsageError:
        return None
    return rates if rates is not None and rates.cpu_brand == cpu_brand else None


def recorded_rates(home: Home, hardware: HardwareProfile) -> HardwareProfile:
    """This machine's profile with the rates its last install measured here (``plan`` and ``doctor`` on this
    machine); unchanged when there are none or the record cannot be read."""
    if hardware.kernel_rates is not None:
        return hardware
    try:
        state = load_state(home)
    except (QwenKitError, OSError):
        return hardware
    rates = rates_in_state(state, hardware.cpu.brand)
    return hardware if rates is None else replace(hardware, kernel_rates=rates)


def _bad(field: str, detail: str) -> UsageError:
    return UsageError(f"{field}: {detail}")
