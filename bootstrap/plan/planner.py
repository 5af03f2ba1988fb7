"""The plan stage: from a hardware profile and model profiles, the quant, engine variant and launch parameters.

Knows nothing about the network. Every choice carries a one-line reason (``Reason``), and the plan predicts RAM and
VRAM with the memory model, so a user learns before downloading 20 GB whether and how the model will run.

Placement follows what works for mixture-of-experts models on small GPUs (docs/models.md, "Placement on
small GPUs"): every layer on the GPU and only the routed-expert tensors that do not fit kept in RAM (``--n-cpu-moe N``,
experts of the first N layers); dense models get the most layers that fit (``-ngl``). The search is monotone: for a
given quant, more memory never gives a smaller context or more experts on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from bootstrap.catalog.bundle_platforms import host_platform, usable_variant
from bootstrap.core.console import join_sentences, t
from bootstrap.core.errors import UnsupportedMachine
from bootstrap.core.sizes import GIB, gib_text, rate_text
from bootstrap.detect.hardware import GpuInfo, HardwareProfile
from bootstrap.detect.probes.cpu import plan_threads
from bootstrap.plan import context, engine_flags, prompt_cache
from bootstrap.plan.engine_variant import VariantChoice, choose_variant
from bootstrap.plan.memory import (
    LaunchSettings,
    MemoryEstimate,
    ModelProfile,
    checkpoint_bytes,
    estimate,
    mtp_head_on_gpu,
    prompt_state_bytes,
)
from bootstrap.plan.speed import SpeedPrediction, predict

MIB = 1 << 20
# llama.cpp's --fit keeps 1024 MiB free per GPU by default (-fitt, common/arg.cpp; docs/engine.md); so do we.
GPU_MARGIN = 1024 * MIB
# Host RAM kept for the OS and other apps on top of what is in use now: the larger of 2 GiB and 1/8 of RAM.
RAM_RESERVE_MIN = 2 * GIB
RAM_RESERVE_SHARE = 0.125
# macOS lets the GPU wire about 2/3 of unified memory on machines up to 36 GB (recommendedMaxWorkingSetSize).
APPLE_GPU_SHARE = 0.66
DEFAULT_CTX = 32768  # long enough for agent tool prompts; llama.cpp pads contexts to 256
MIN_CTX = 4096  # the smallest context llama.cpp's own fit will pick (-fitc)
GOOD_CTX = 16384  # below this an agent conversation runs out quickly: try smaller quants first
CTX_LADDER = (262144, 131072, 65536, 32768, 16384, 8192, 4096)
DEFAULT_UBATCH = 512
DEFAULT_BATCH = 2048
MAX_SLOTS = 4  # llama-server's auto -np
# --spec-draft-n-max with the MTP head: 2 beat 3 (llama-server's default) on an 8 GB card with experts in RAM, and
# each extra draft token costs one more recurrent-state copy per slot (llama.cpp PR #22673 thread; docs/models.md).
MTP_DRAFT_MAX = 2
# llama-server's prompt cache (--cache-ram) keeps every distinct prompt's state until its limit, 8192 MiB by default,
# and never gives it back while the model is loaded (b11434 common/common.h; llama.cpp issue #25740). The plan
# gives it a limit it counts: room for CACHE_PROMPTS prompts that fill the context, at most CACHE_RAM_SHARE of the
# RAM the model leaves and at most CACHE_RAM_MAX_MIB; off (0) when not even one such prompt fits.
CACHE_PROMPTS = 8
CACHE_RAM_SHARE = 0.5
CACHE_RAM_MAX_MIB = 4096
# Context checkpoints per slot (--ctx-checkpoints; llama-server's default is 32): a request makes up to three (at
# its last user message, n_ubatch + 4 and 4 tokens before its prompt ends: server-context.cpp, llama.cpp PR
# #20288), so 8 keep the rollback points of the last two or three turns. Fewer when they would take more than
# CHECKPOINT_RAM_SHARE of the RAM the model leaves.
CHECKPOINT_LADDER = (8, 4, 2, 1)
CHECKPOINT_RAM_SHARE = 0.25
# With several slots, a stream gets its next token only between two micro-batches of another client's prompt, so
# one micro-batch's reading time is the stall every stream sees (scripts/bench_batch.py, docs/long-running.md:
# Gemma 3 270M on 2 cores, P95 gap 1.5-1.8 s at -ub 512 where a micro-batch took 1.7 s). The plan takes the
# largest (batch, micro-batch) whose micro-batch is read within STREAM_GAP_S at the predicted prompt speed: the
# seed's bar is a P95 inter-token gap of 350 ms. One slot keeps llama.cpp's defaults (nothing else streams).
STREAM_GAP_S = 0.3
# A "usable" answer: a 2,000-token prompt (a chat with some history, an agent's tool list) read and a 200-token
# answer written within a minute. The catalog's default is a large model: where it fits but answers far slower than
# that (a CPU-only PC: ~4 tokens/s, prompts ~10 tokens/s), a smaller model that answers in time (or at least twice
# as fast) is planned instead, and both are said (issue 41). Only for the default an install chose itself: a model
# named is a model wanted.
TYPICAL_PROMPT, TYPICAL_ANSWER = 2000, 200
USABLE_ANSWER_S = 60.0
BATCH_LADDER = ((DEFAULT_BATCH, DEFAULT_UBATCH), (512, 512), (256, 256), (128, 128), (64, 64))


@dataclass(frozen=True)
class Candidate:
    """One model file the planner may choose: a quant of a catalog model, or a single given file."""

    model_id: str
    title: str
    quant: str
    file: str
    size: int
    profile: ModelProfile
    mmproj_bytes: int = 0
    thinking_default: bool = False
    # The model has a thinking mode (catalog, chat template, or the user named one): only then is ``--reasoning``
    # passed and thinking spoken of in the plan, the report and ``status``.
    thinks: bool = False
    sampling: tuple[tuple[str, float], ...] = ()
    facts: str = "header"  # where the profile came from: "header", "remote-header" or "catalog"
    # A file offered for its MTP head (a catalog "-MTP" repo): chosen only when the plan turns the head on, else
    # the same quant without the head is the better download.
    requires_mtp: bool = False


@dataclass(frozen=True)
class Reason:
    """Why one parameter has its value; ``topic`` is stable for scripts, ``text`` is in the UI language."""

    topic: str
    value: str
    text: str


@dataclass(frozen=True)
class Budget:
    """How much memory the plan may use on this machine."""

    gpu_bytes: int
    ram_bytes: int
    unified: bool
    gpu_name: str | None
    gpu_device: str | None = None  # the engine's name for it ("Vulkan0"), once the installed engine listed it
    # RPC workers' devices (``install --rpc``): what they lend in all, less llama.cpp's margin on each, and the
    # endpoints in the order the server names them. llama.cpp spreads offloaded layers over every device in
    # proportion to its free memory (tools/rpc/README.md), so their memory and the GPU's add up.
    rpc_bytes: int = 0
    rpc_endpoints: tuple[str, ...] = ()
    rpc_devices: tuple[GpuInfo, ...] = ()  # vendor "rpc": name = the worker's endpoint, engine_device = "RPC0"…

    @property
    def offload_bytes(self) -> int:
        """Memory for offloaded layers: this PC's GPU and the RPC workers together."""
        return self.gpu_bytes + self.rpc_bytes


@dataclass(frozen=True)
class Plan:
    """The result of the plan stage."""

    model_id: str
    title: str
    quant: str
    file: str
    file_size: int
    variant: VariantChoice
    settings: LaunchSettings
    estimate: MemoryEstimate
    budget: Budget
    args: tuple[str, ...]
    dropped_flags: tuple[str, ...]
    reasons: tuple[Reason, ...]
    warnings: tuple[str, ...]
    speed_class: str
    speed: SpeedPrediction  # tokens/s predicted for this placement (plan/speed.py)
    fallback_from: str | None = None
    role: str = "chat"  # "embedding": served with --embeddings beside a chat model (install/library.as_embedding)
    slower: str | None = None  # the catalog's first choice, which fits but answers too slowly here (``choose``)
    prompt_cache_disk_mib: int = 0  # saved slots on disk, all together (plan/prompt_cache.py; 0: none saved)


CPU_VARIANTS = frozenset({"win-cpu", "ubuntu-x64", "macos-x64"})


def uses_gpu(variant: VariantChoice) -> bool:
    """Whether the chosen engine build offloads to a GPU at all."""
    return variant.name not in CPU_VARIANTS


def budget_for(hardware: HardwareProfile, variant: VariantChoice) -> Budget:
    """Usable VRAM (free minus llama.cpp's margin) and RAM (available minus a reserve for the OS and apps)."""
    memory = hardware.memory
    reserve = max(RAM_RESERVE_MIN, int(memory.total_bytes * RAM_RESERVE_SHARE))
    ram = max(0, min(memory.available_bytes, memory.total_bytes - reserve) - GIB // 2)
    lent = [g for g in hardware.gpus if g.vendor == "rpc"]
    rpc = {"rpc_bytes": sum(max(0, g.vram_free_bytes - GPU_MARGIN) for g in lent),
           "rpc_endpoints": tuple(dict.fromkeys(g.name for g in lent)), "rpc_devices": tuple(lent)}
    gpu = _main_gpu(hardware) if uses_gpu(variant) else None
    if gpu is None:
        return Budget(0, ram, False, None, **rpc)
    if gpu.unified_memory:
        # One pool: the GPU share is capped by what macOS lets Metal wire, and counts against RAM too.
        return Budget(min(int(memory.total_bytes * APPLE_GPU_SHARE), ram), ram, True, gpu.name, **rpc)
    free = gpu.vram_free_bytes if gpu.vram_free_bytes else gpu.vram_total_bytes
    return Budget(max(0, free - GPU_MARGIN), ram, False, gpu.name, gpu.engine_device, **rpc)


def _main_gpu(hardware: HardwareProfile) -> GpuInfo | None:
    """The GPU with the most memory the engine can use (llama.cpp puts everything on one device by default).

    An integrated GPU is never it: its memory is the RAM the plan already counts (docs/gpus.md), and llama.cpp
    itself leaves integrated GPUs out when a discrete one is there (``llama_model_load_from_file_impl``). A
    discrete GPU whose driver does not report its memory (i915) is still the one: the engine is expected to use it,
    and its ``--list-devices`` gives the memory (a budget of 0 until then)."""
    usable = [g for g in hardware.gpus if g.vendor not in ("unknown", "rpc")
              and not (g.integrated and not g.unified_memory)
              and (g.vram_total_bytes > 0 or g.vendor in ("amd", "intel", "nvidia"))]
    return max(usable, key=lambda g: g.vram_total_bytes, default=None)


def gpu_label(budget: Budget) -> str:
    """The planned GPU as the plan names it: the engine's device name first once it is known."""
    name = budget.gpu_name or "GPU"
    return f"{budget.gpu_device}: {name}" if budget.gpu_device else name


def _fits(est: MemoryEstimate, budget: Budget) -> bool:
    if budget.unified:
        return est.gpu_total <= budget.offload_bytes and est.gpu_total + est.host_total <= budget.ram_bytes
    return est.gpu_total <= budget.offload_bytes and est.host_total <= budget.ram_bytes


def _smallest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Smallest n in [lo, hi] with ok(n), for ok monotone (False…False True…True); None if none."""
    if not ok(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Largest n in [lo, hi] with ok(n), for ok monotone (True…True False…False); None if none."""
    if not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _place(profile: ModelProfile, base: LaunchSettings, budget: Budget) -> LaunchSettings | None:
    """The placement with the most work on the GPU that fits the budget, or None."""
    n_layer = profile.n_layer
    all_layers = profile.n_layer_all + 1  # -ngl counts every block (nextn ones too) and the output layer
    if budget.offload_bytes <= 0:
        cpu = replace(base, n_gpu_layers=0, n_cpu_moe=0, mmproj_on_gpu=False)
        return cpu if _fits(estimate(profile, cpu), budget) else None
    if budget.gpu_bytes <= 0:
        return _place_on_workers(profile, base, budget)

    def gpu_fits(settings: LaunchSettings) -> bool:
        return estimate(profile, settings).gpu_total <= budget.offload_bytes

    if profile.is_moe:
        full = replace(base, n_gpu_layers=all_layers, mmproj_on_gpu=False)
        n = _smallest(0, n_layer, lambda k: gpu_fits(replace(full, n_cpu_moe=k)))
        if n is not None:
            chosen = replace(full, n_cpu_moe=n)
            return chosen if _fits(estimate(profile, chosen), budget) else None
        # Not even the dense part fits on the GPU: offload whole layers with every expert in RAM.
        base = replace(base, n_cpu_moe=n_layer)
    gpu_layers = _largest(0, all_layers, lambda j: gpu_fits(replace(base, n_gpu_layers=j, mmproj_on_gpu=False)))
    gpu_layers = gpu_layers or 0
    chosen = replace(base, n_gpu_layers=gpu_layers, mmproj_on_gpu=False)
    return chosen if _fits(estimate(profile, chosen), budget) else None


def _place_on_workers(profile: ModelProfile, base: LaunchSettings, budget: Budget) -> LaunchSettings | None:
    """No GPU here, RPC workers there: the fewest layers that make the model fit go to the workers (whole layers,
    experts with them). Each token crosses the network at every hop, so RPC adds capacity, not speed (llama.cpp
    tools/rpc/README.md); what this PC can hold stays here. ``-ngl K`` sends the last K layers."""
    base = replace(base, n_cpu_moe=0, mmproj_on_gpu=False)
    host_fits = _smallest(0, profile.n_layer_all + 1,
                          lambda j: estimate(profile, replace(base, n_gpu_layers=j)).host_total <= budget.ram_bytes)
    if host_fits is None:
        return None
    chosen = replace(base, n_gpu_layers=host_fits)
    return chosen if _fits(estimate(profile, chosen), budget) else None


def _offload_score(profile: ModelProfile, settings: LaunchSettings) -> tuple[int, int]:
    """Higher is more work on the GPU: (layers on GPU, layers whose experts are on the GPU)."""
    return settings.n_gpu_layers, profile.n_layer - settings.n_cpu_moe if profile.is_moe else 0


def _fully_on_gpu(profile: ModelProfile, settings: LaunchSettings) -> bool:
    return settings.n_gpu_layers == profile.n_layer_all + 1 and settings.n_cpu_moe == 0


def _fit_at_ctx(candidate: Candidate, ctx: int, budget: Budget, engine_build: int,
                swa_full: bool = False) -> LaunchSettings | None:
    """Best placement at this context, with the MTP head on when it can help (``_mtp_settings``)."""
    with_mtp = _mtp_settings(candidate, ctx, budget, engine_build, swa_full)
    if with_mtp is not None or candidate.requires_mtp:
        return with_mtp
    return _placed(candidate, ctx, budget, 0, engine_build, swa_full)


def _mtp_settings(candidate: Candidate, ctx: int, budget: Budget, engine_build: int,
                  swa_full: bool = False) -> LaunchSettings | None:
    """The placement with the MTP head drafting, when the file has a head and the head, its KV and its rollback
    state fit on the GPU with the head kept there. Never on a CPU-only plan: the head on the CPU measured 37 %
    slower than no MTP (unsloth PR #8875; docs/models.md)."""
    if not candidate.profile.has_mtp or budget.gpu_bytes <= 0:
        return None
    settings = _placed(candidate, ctx, budget, MTP_DRAFT_MAX, engine_build, swa_full)
    if settings is None or not mtp_head_on_gpu(candidate.profile, settings):
        return None
    return settings


def _placed(candidate: Candidate, ctx: int, budget: Budget, mtp_draft: int,
            engine_build: int, swa_full: bool = False) -> LaunchSettings | None:
    """Best placement: f16 KV unless q8_0 KV moves more onto the GPU or makes it fit."""
    profile = candidate.profile
    base = LaunchSettings(ctx=ctx, ubatch=DEFAULT_UBATCH, batch=DEFAULT_BATCH, n_parallel=1, kv_unified=True,
                          flash_attn=True, mmproj_bytes=candidate.mmproj_bytes, mmproj_on_gpu=False,
                          mtp_draft=mtp_draft, swa_full=swa_full)
    best = _place(profile, base, budget)
    if best is None or not _fully_on_gpu(profile, best):
        q8 = _place(profile, replace(base, cache_type_k="q8_0", cache_type_v="q8_0"), budget)
        if q8 is not None and (best is None or _offload_score(profile, q8) > _offload_score(profile, best)):
            best = q8
    return None if best is None else _with_extras(profile, best, budget, engine_build)


def _with_extras(profile: ModelProfile, settings: LaunchSettings, budget: Budget,
                 engine_build: int = engine_flags.PINNED_BUILD) -> LaunchSettings:
    """Spend leftover memory on comfort: the projector on the GPU, then more parallel slots (with MTP drafting
    only on builds that serve several slots with it), then the server's own caches (``_with_caches``)."""
    if settings.mmproj_bytes and budget.gpu_bytes > 0:
        on_gpu = replace(settings, mmproj_on_gpu=True)
        if _fits(estimate(profile, on_gpu), budget):
            settings = on_gpu
    many_slots = not settings.mtp_draft or engine_build >= engine_flags.MTP_MULTI_SLOT_BUILD
    if many_slots and (_fully_on_gpu(profile, settings) or budget.gpu_bytes <= 0):
        slots = replace(settings, n_parallel=MAX_SLOTS)
        if _fits(estimate(profile, slots), budget):
            settings = slots
    return _with_caches(profile, settings, budget)


def _ram_left(est: MemoryEstimate, budget: Budget) -> int:
    """The plan's RAM budget minus what the model already takes from it (the GPU's share too on unified memory)."""
    return max(0, budget.ram_bytes - est.host_total - (est.gpu_total if budget.unified else 0))


def _with_caches(profile: ModelProfile, settings: LaunchSettings, budget: Budget) -> LaunchSettings:
    """Limits for the host memory llama-server grows into while it serves, counted in the plan: context
    checkpoints (SWA and recurrent models) and the prompt cache, both from the RAM the model leaves."""
    left = _ram_left(estimate(profile, settings), budget)
    per_checkpoint = checkpoint_bytes(profile, settings)
    checkpoints = 0
    if per_checkpoint:
        checkpoints = next((n for n in CHECKPOINT_LADDER
                            if settings.n_parallel * n * per_checkpoint <= left * CHECKPOINT_RAM_SHARE), 0)
        left -= settings.n_parallel * checkpoints * per_checkpoint
    one_prompt = prompt_state_bytes(profile, settings)
    cache = min(CACHE_RAM_MAX_MIB * MIB, CACHE_PROMPTS * one_prompt, int(left * CACHE_RAM_SHARE))
    mib = -(-cache // MIB) if cache >= one_prompt else 0  # whole MiB, rounded up: one prompt always fits
    if budget.rpc_endpoints and settings.n_gpu_layers > 0:  # saving a prompt aborts with RPC (llama.cpp #26529)
        mib = 0
    return replace(settings, ctx_checkpoints=checkpoints, cache_ram_mib=mib)


def _ctx_ladder(profile: ModelProfile, requested: int | None) -> list[int]:
    if requested is not None:
        return [requested]
    top = min(DEFAULT_CTX, profile.n_ctx_train or DEFAULT_CTX)
    return [c for c in CTX_LADDER if c <= top and c >= MIN_CTX] or [max(256, top)]


def _first_fit(candidates: Sequence[Candidate], budget: Budget, requested_ctx: int | None,
               min_ctx: int, engine_build: int) -> tuple[Candidate, LaunchSettings] | None:
    for candidate in candidates:
        ladder = _ctx_ladder(candidate.profile, requested_ctx)
        for ctx in ladder:
            if requested_ctx is None and ctx < min_ctx:
                break
            if candidate.requires_mtp and ctx < ladder[0]:
                break  # the head is not worth a shorter context: the same quant without it comes next
            settings = _fit_at_ctx(candidate, ctx, budget, engine_build)
            if settings is not None:
                return candidate, settings
    return None


def _available(variant: VariantChoice, variants: Collection[str], hardware: HardwareProfile) -> VariantChoice:
    """The chosen variant, or the next one down that still runs here when it is not at hand (bundle_platforms)."""
    used = usable_variant(variant.name, frozenset(variants))
    if used == variant.name:
        return variant
    if used is None:  # this machine cannot run what the bundle carries (exit 3: docs/bundles.md, rollout codes)
        platform = host_platform(hardware.os.system, hardware.os.machine) or hardware.os.system
        available = ", ".join(sorted(variants)) or "-"
        raise UnsupportedMachine(t("bundle.err_no_variant", wanted=variant.name, available=available),
                                 t("bundle.hint_no_variant", platform=platform))
    return VariantChoice(used, t("bundle.variant_fallback", reason=variant.reason, wanted=variant.name, used=used),
                         variant.warnings)


def answer_seconds(speed: SpeedPrediction) -> float:
    """Seconds to read a ``TYPICAL_PROMPT`` and write a ``TYPICAL_ANSWER`` at the predicted speeds."""
    return TYPICAL_PROMPT / max(speed.prompt_tps, 1e-6) + TYPICAL_ANSWER / max(speed.decode_tps, 1e-6)


def choose(candidates: Sequence[Candidate], hardware: HardwareProfile, *, requested_ctx: int | None = None,
           fallbacks: Sequence[Candidate] = (), engine_build: int = engine_flags.PINNED_BUILD,
           variants: Collection[str] | None = None, variant: VariantChoice | None = None,
           usable_first: bool = False) -> Plan:
    """The plan for the first candidate (in preference order) that fits; fallbacks only when none does.

    A context of at least ``GOOD_CTX`` with a smaller quant beats a bigger quant squeezed to 4k; a user-given
    ``--ctx`` is never reduced. ``variants``: the engine variants at hand (an offline bundle's), when not all are.
    ``variant``: the build to plan for, when the preferred one was found not to run here (its memory budget
    follows: a CPU build plans for RAM only). ``usable_first`` (the catalog's default, not a model the user
    named): a fallback that answers within ``USABLE_ANSWER_S`` is taken over a first choice that fits but does not,
    and the plan's first reason says both, with their speeds.
    """
    if variant is None:
        variant = choose_variant(hardware)
        if variants is not None:
            variant = _available(variant, variants, hardware)
    budget = budget_for(hardware, variant)
    threads = plan_threads(hardware.cpu)
    if requested_ctx is not None and candidates:
        context.check_trained(requested_ctx, candidates[0].title, candidates[0].profile.n_ctx_train)
        fallbacks = [f for f in fallbacks if not 0 < f.profile.n_ctx_train < requested_ctx]
    found = None
    fallback_from = None
    for pool, is_fallback in ((candidates, False), (fallbacks, True)):
        for min_ctx in (GOOD_CTX, MIN_CTX):
            found = _first_fit(pool, budget, requested_ctx, min_ctx, engine_build)
            if found:
                break
        if found:
            if is_fallback:
                fallback_from = candidates[0].title if candidates else None
            break
        if requested_ctx is not None:  # it fits at a smaller context: say which (no other model for a context)
            _refuse_asked_ctx(pool, (candidates or fallbacks)[0].title, budget, requested_ctx, engine_build)
    if found is None:
        raise _does_not_fit(candidates or fallbacks, hardware, budget, requested_ctx)
    candidate, settings = found
    plan = _build_plan(candidate, settings, hardware, variant, budget, threads, engine_build, fallback_from,
                       candidates, asked_ctx=requested_ctx is not None)
    if usable_first and fallback_from is None and answer_seconds(plan.speed) > USABLE_ANSWER_S:
        quicker = _usable_fallback(fallbacks, hardware, variant, budget, threads, engine_build, requested_ctx,
                                   answer_seconds(plan.speed))
        if quicker is not None:
            return _instead_of(quicker, plan)
    return plan


def _usable_fallback(fallbacks: Sequence[Candidate], hardware: HardwareProfile, variant: VariantChoice,
                     budget: Budget, threads: int, engine_build: int, requested_ctx: int | None,
                     slow_s: float) -> Plan | None:
    """The first fallback model (catalog order) that fits and answers within ``USABLE_ANSWER_S``, planned; else
    the quickest one when it answers at least twice as fast as the first choice (``slow_s``), else None."""
    quickest: Plan | None = None
    by_model: dict[str, list[Candidate]] = {}
    for fallback in fallbacks:
        by_model.setdefault(fallback.model_id, []).append(fallback)
    for pool in by_model.values():
        found = None
        for min_ctx in (GOOD_CTX, MIN_CTX):
            found = _first_fit(pool, budget, requested_ctx, min_ctx, engine_build)
            if found:
                break
        if found is None:
            continue
        plan = _build_plan(found[0], found[1], hardware, variant, budget, threads, engine_build, None, pool,
                           asked_ctx=requested_ctx is not None)
        if answer_seconds(plan.speed) <= USABLE_ANSWER_S:
            return plan
        if quickest is None or answer_seconds(plan.speed) < answer_seconds(quickest.speed):
            quickest = plan
    return quickest if quickest is not None and 2 * answer_seconds(quickest.speed) <= slow_s else None


def _instead_of(quicker: Plan, slow: Plan) -> Plan:
    """``quicker`` with a first reason that says why it was taken over ``slow`` (both speeds) and how to have the
    other; ``slower`` keeps the other's figures for the install screen."""
    why = t("plan.why_usable", preferred=slow.title, preferred_id=slow.model_id, chosen=quicker.title,
            slow_tps=rate_text(slow.speed.decode_tps), slow_prompt=rate_text(slow.speed.prompt_tps),
            slow_time=duration_words(answer_seconds(slow.speed)), tps=rate_text(quicker.speed.decode_tps),
            prompt=rate_text(quicker.speed.prompt_tps), time=duration_words(answer_seconds(quicker.speed)),
            tokens=f"{TYPICAL_PROMPT:,}", answer=TYPICAL_ANSWER)
    return replace(quicker, reasons=(Reason("model", quicker.model_id, why), *quicker.reasons),
                   fallback_from=slow.title, slower=slow.model_id)


def duration_words(seconds: float) -> str:
    """``45 s``, ``2 min 9 s`` (in the UI language)."""
    whole = round(seconds)
    minutes, secs = divmod(whole, 60)
    return t("plan.duration_m", m=minutes, s=secs) if minutes else t("plan.duration_s", s=secs)


def _refuse_asked_ctx(pool: Sequence[Candidate], asked_title: str, budget: Budget, requested_ctx: int,
                      engine_build: int) -> None:
    """Nothing in ``pool`` fits at the context the user asked for: exit 3 naming the largest context that does
    fit, and with which file (``plan.context``). When nothing in the pool fits at any context, return: the
    fallbacks come next (as without ``--ctx``), then the plain "does not fit"."""
    largest = context.best_of([
        (c, context.largest_fitting(lambda ctx, c=c: _fit_at_ctx(c, ctx, budget, engine_build) is not None,
                                    below=requested_ctx))
        for c in pool])
    if largest is None:
        return
    fitting, ctx = largest
    raise UnsupportedMachine(
        t("options.err_ctx_no_fit", ctx=requested_ctx, title=asked_title, largest=ctx, model=fitting.title,
          quant=fitting.quant, ram=gib_text(budget.ram_bytes), vram=gib_text(budget.offload_bytes)),
        t("options.hint_ctx_no_fit", largest=ctx))


def _does_not_fit(candidates: Sequence[Candidate], hardware: HardwareProfile, budget: Budget,
                  requested_ctx: int | None) -> UnsupportedMachine:
    """Exit 3 naming the smallest candidate's need against what this machine has."""
    smallest = min(candidates, key=lambda c: c.size)
    ctx = requested_ctx or MIN_CTX
    need = estimate(smallest.profile, LaunchSettings(ctx=ctx, cache_type_k="q8_0", cache_type_v="q8_0"))
    return UnsupportedMachine(
        t("plan.err_no_fit", title=smallest.title, quant=smallest.quant, ctx=ctx,
          need=gib_text(need.host_total), ram=gib_text(budget.ram_bytes), vram=gib_text(budget.offload_bytes)),
        t("plan.hint_no_fit"),
    )


def _speed_class(profile: ModelProfile, settings: LaunchSettings) -> str:
    if settings.n_gpu_layers == 0:
        return "cpu"
    if _fully_on_gpu(profile, settings):
        return "gpu"
    return "hybrid"


ALL_LAYERS = "999"  # every build clamps -ngl to the model's layers; robust to files counting an MTP block or not


def _ngl_value(profile: ModelProfile, settings: LaunchSettings) -> str:
    """``-ngl``: a count for a partial offload, else "all of them" in a form every build accepts."""
    return ALL_LAYERS if settings.n_gpu_layers >= profile.n_layer_all + 1 else str(settings.n_gpu_layers)


def launch_args(profile: ModelProfile, settings: LaunchSettings, candidate: Candidate, hardware: HardwareProfile,
                threads: int, rpc_endpoints: Sequence[str] = ()) -> list[str]:
    """llama-server flags of the plan, without model paths, host, port and key (the render stage adds those).
    ``rpc_endpoints``: the RPC workers the offloaded layers go to, with this PC's GPU if it has one."""
    args = ["-c", str(settings.ctx), "-np", str(settings.n_parallel)]
    if rpc_endpoints and settings.n_gpu_layers > 0:
        args += ["--rpc", ",".join(rpc_endpoints)]
    if settings.n_parallel > 1 and settings.kv_unified:
        args.append("-kvu")
    args += ["-fa", "on" if settings.flash_attn else "off",
             "-ctk", settings.cache_type_k, "-ctv", settings.cache_type_v,
             "-b", str(settings.batch), "-ub", str(settings.ubatch), "-t", str(threads),
             "-ngl", _ngl_value(profile, settings)]
    if profile.is_moe and settings.n_cpu_moe:
        args += ["--n-cpu-moe", str(settings.n_cpu_moe)]
    if settings.mmproj_bytes and not settings.mmproj_on_gpu:
        args.append("--no-mmproj-offload")
    args += ["--cache-ram", str(settings.cache_ram_mib)]
    if checkpoint_bytes(profile, settings):
        args += ["--ctx-checkpoints", str(settings.ctx_checkpoints)]
    if settings.swa_full and profile.swa_layers:
        args.append("--swa-full")
    # We placed everything ourselves; llama.cpp's fit would otherwise log an abort for our explicit -ngl.
    args += ["--fit", "off", "--jinja"]
    if candidate.thinks:
        args += ["--reasoning", "on" if candidate.thinking_default else "off"]
    if settings.mtp_draft and profile.has_mtp:
        args += ["--spec-type", "draft-mtp", "--spec-draft-n-max", str(settings.mtp_draft)]
    if hardware.cpu.flags.amx:
        args.append("--no-repack")  # AMX repack crashes with SIGILL on some builds (llama.cpp PR #26954)
    for name, value in candidate.sampling:
        args += [f"--{name}", f"{value:g}"]
    return args


def _reasons(candidate: Candidate, settings: LaunchSettings, est: MemoryEstimate, variant: VariantChoice,
             budget: Budget, threads: int, preferred: Candidate | None, asked_ctx: bool = False,
             speed: SpeedPrediction | None = None) -> list[Reason]:
    profile = candidate.profile
    out = [Reason("variant", variant.name, variant.reason)]
    if preferred is not None and preferred.quant != candidate.quant and preferred.model_id == candidate.model_id:
        smaller = "options.why_quant_for_ctx" if asked_ctx else "plan.why_quant_smaller"
        out.append(Reason("quant", candidate.quant, t(smaller, quant=candidate.quant, preferred=preferred.quant,
                                                     ctx=settings.ctx)))
    else:
        out.append(Reason("quant", candidate.quant, t("plan.why_quant", quant=candidate.quant,
                                                     size=gib_text(candidate.size))))
    out.append(Reason("facts", candidate.facts, t(f"plan.why_facts_{candidate.facts.replace('-', '_')}")))
    out.append(Reason("ctx", str(settings.ctx), t("options.why_ctx_asked" if asked_ctx else "plan.why_ctx",
                                                  ctx=settings.ctx, kv=f"{(est.kv_gpu + est.kv_cpu) / MIB:.0f}")))
    kv_text = "plan.why_kv_q8" if settings.cache_type_k == "q8_0" else "plan.why_kv_f16"
    out.append(Reason("cache_type", settings.cache_type_k, t(kv_text)))
    out.append(Reason("flash_attn", "on", t("plan.why_fa")))
    out.append(Reason("parallel", str(settings.n_parallel),
                      t("plan.why_np_many" if settings.n_parallel > 1 else "plan.why_np_one", n=settings.n_parallel)))
    out.append(Reason("threads", str(threads), t("plan.why_threads", n=threads)))
    out.append(_batch_reason(settings, speed))
    on_workers = bool(budget.rpc_endpoints) and settings.n_gpu_layers > 0
    out.append(_cache_reason(profile, settings, est, on_workers=on_workers))
    if on_workers:
        out.append(Reason("placement", f"rpc {settings.n_gpu_layers}",
                          t("rpc.why_offload", layers=settings.n_gpu_layers, all=profile.n_layer_all + 1,
                            free=gib_text(budget.offload_bytes))))
    elif budget.gpu_bytes <= 0:
        out.append(Reason("placement", "cpu", t("plan.why_cpu_only")))
        if budget.rpc_bytes > 0:
            out.append(Reason("rpc", "unused", t("rpc.why_unused")))
    elif _fully_on_gpu(profile, settings):
        out.append(Reason("placement", "gpu", t("plan.why_all_gpu", gpu=gpu_label(budget))))
    elif profile.is_moe and settings.n_gpu_layers == profile.n_layer_all + 1:
        out.append(Reason("placement", f"n-cpu-moe {settings.n_cpu_moe}",
                          t("plan.why_moe_split", n=settings.n_cpu_moe, total=profile.n_layer,
                            vram=gib_text(budget.gpu_bytes))))
    else:
        out.append(Reason("placement", f"ngl {settings.n_gpu_layers}",
                          t("plan.why_layers", n=settings.n_gpu_layers, total=profile.n_layer_all + 1,
                            vram=gib_text(budget.gpu_bytes))))
    if settings.mmproj_bytes:  # where it goes; "the GPU memory is worth more" only where there is a GPU
        mmproj = "plan.why_mmproj_gpu" if settings.mmproj_on_gpu else (
            "plan.why_mmproj_cpu" if budget.gpu_bytes > 0 else "plan.why_mmproj_no_gpu")
        out.append(Reason("mmproj", "gpu" if settings.mmproj_on_gpu else "cpu", t(mmproj)))
    if profile.has_mtp:
        out.append(_mtp_reason(settings, est, budget))
    if candidate.thinks:
        out.append(Reason("thinking", "on" if candidate.thinking_default else "off",
                          t("plan.why_thinking_on" if candidate.thinking_default else "plan.why_thinking_off")))
    return out


def _batch_reason(settings: LaunchSettings, speed: SpeedPrediction | None) -> Reason:
    """Why these batch sizes: llama.cpp's defaults for one slot; for several, how long a stream may wait."""
    value = f"{settings.batch}/{settings.ubatch}"
    if settings.n_parallel <= 1 or speed is None:
        return Reason("batch", value, t("plan.why_batch"))
    wait = settings.ubatch / speed.prompt_tps
    key = "plan.why_batch_streams" if wait <= STREAM_GAP_S else "plan.why_batch_streams_slow"
    return Reason("batch", value, t(key, batch=settings.batch, ubatch=settings.ubatch, wait=f"{wait:.1f}",
                                    tps=f"{speed.prompt_tps:.0f}"))


def _cache_reason(profile: ModelProfile, settings: LaunchSettings, est: MemoryEstimate, *,
                  on_workers: bool = False) -> Reason:
    """The prompt cache's limit (and the checkpoints', for models that make them), counted in the plan's RAM.
    ``on_workers``: layers run on RPC workers, so the cache is off whatever RAM is left (``_with_caches``)."""
    value = f"{settings.cache_ram_mib} MiB"
    if on_workers:
        text = t("rpc.why_cache_ram")
    elif settings.cache_ram_mib:
        text = t("plan.why_cache_ram", mib=settings.cache_ram_mib)
    else:
        text = t("plan.why_cache_ram_off")
    if settings.ctx_checkpoints and checkpoint_bytes(profile, settings):  # none kept: nothing to say of them
        value += f", {settings.ctx_checkpoints} checkpoints"
        text = join_sentences(text, t("plan.why_checkpoints", n=settings.ctx_checkpoints,
                                      size=f"{est.checkpoints / MIB:.0f}"))
    return Reason("prompt_cache", value, text)


def _mtp_reason(settings: LaunchSettings, est: MemoryEstimate, budget: Budget) -> Reason:
    """Why the file's MTP head drafts or stays unloaded."""
    if settings.mtp_draft:
        n = settings.mtp_draft
        rollback = est.recurrent_gpu * n // (1 + n)  # the extra recurrent-state rows kept for rollback
        return Reason("mtp", f"draft-mtp {n}", t("plan.why_mtp_on", n=n, size=gib_text(est.mtp_gpu + rollback)))
    return Reason("mtp", "off", t("plan.why_mtp_cpu_only" if budget.gpu_bytes <= 0 else "plan.why_mtp_no_room"))


def _interleaved(candidate: Candidate, settings: LaunchSettings, hardware: HardwareProfile,
                 variant: VariantChoice, budget: Budget, threads: int) -> tuple[LaunchSettings, SpeedPrediction]:
    """The batch sizes for several slots (``STREAM_GAP_S``) and the speed predicted with them. Smaller batches
    only shrink the compute buffer, so the placement still fits; the caches are sized again for what it frees."""
    speed = _predict_speed(candidate, settings, hardware, variant, budget, threads)
    if settings.n_parallel <= 1:
        return settings, speed
    for batch, ubatch in BATCH_LADDER:
        trial = replace(settings, batch=batch, ubatch=ubatch)
        speed = _predict_speed(candidate, trial, hardware, variant, budget, threads)
        if ubatch / speed.prompt_tps <= STREAM_GAP_S:
            break
    return _with_caches(candidate.profile, trial, budget), speed


def _swa_full(candidate: Candidate, settings: LaunchSettings, budget: Budget, engine_build: int,
              disk_mib: int) -> tuple[LaunchSettings, str]:
    """``--swa-full`` for a sliding-window model whose prompt cache is kept on disk: without it the SWA layers
    keep only the last ``n_swa`` tokens, a restored slot can never be cut back to a shared prefix and the whole
    prompt is read again after every restart (docs/prompt-cache.md). It costs full-context KV on those layers,
    so it is taken only where everything else the plan gives stays: the same context, KV type, placement on the
    GPU, slots and MTP drafting (only the caches' RAM may shrink). Else it stays off: a longer context is worth
    more than a prompt kept across restarts. Returns the settings and the verdict ("" for a model without SWA,
    "on", "off_no_disk", "off_no_room": the ``swa_full.why_*`` message)."""
    profile = candidate.profile
    if not profile.swa_layers:
        return settings, ""
    if not disk_mib:
        return settings, "off_no_disk"
    full = _fit_at_ctx(candidate, settings.ctx, budget, engine_build, swa_full=True)
    if full is None or not (
            full.cache_type_k == settings.cache_type_k and full.n_parallel >= settings.n_parallel
            and full.mtp_draft >= settings.mtp_draft
            and _offload_score(profile, full) >= _offload_score(profile, settings)):
        return settings, "off_no_room"
    return full, "on"


def _swa_full_reason(profile: ModelProfile, settings: LaunchSettings, verdict: str) -> Reason:
    """The plan's word on ``--swa-full``, with the KV it costs (or would cost) at the final settings."""
    plain = estimate(profile, replace(settings, swa_full=False))
    full = estimate(profile, replace(settings, swa_full=True))
    extra = f"{(full.kv_gpu + full.kv_cpu - plain.kv_gpu - plain.kv_cpu) / MIB:.0f}"
    return Reason("swa_full", "on" if verdict == "on" else "off",
                  t(f"swa_full.why_{verdict}", mib=extra, ctx=settings.ctx, window=profile.n_swa))


def _build_plan(candidate: Candidate, settings: LaunchSettings, hardware: HardwareProfile, variant: VariantChoice,
                budget: Budget, threads: int, engine_build: int, fallback_from: str | None,
                preferred: Sequence[Candidate], *, asked_ctx: bool = False) -> Plan:
    disk_mib = prompt_cache.disk_budget_mib(hardware.disk.free_bytes, candidate.size)
    settings, swa_verdict = _swa_full(candidate, settings, budget, engine_build, disk_mib)
    settings, speed = _interleaved(candidate, settings, hardware, variant, budget, threads)
    est = estimate(candidate.profile, settings)
    flags = engine_flags.filter_args(launch_args(candidate.profile, settings, candidate, hardware, threads,
                                                 budget.rpc_endpoints), engine_build)
    reasons = _reasons(candidate, settings, est, variant, budget, threads, preferred[0] if preferred else None,
                       asked_ctx, speed)
    reasons.append(Reason("prompt_cache_disk", f"{disk_mib} MiB",
                          t("prompt_cache.why_disk", mib=disk_mib) if disk_mib else t("prompt_cache.why_disk_off")))
    if swa_verdict:
        reasons.append(_swa_full_reason(candidate.profile, settings, swa_verdict))
    warnings = list(variant.warnings)
    if fallback_from:
        reasons.insert(0, Reason("model", candidate.model_id,
                                 t("plan.why_fallback", preferred=fallback_from, chosen=candidate.title,
                                   ram=gib_text(budget.ram_bytes), vram=gib_text(budget.gpu_bytes))))
    warnings += [t("plan.warn_dropped_flag", flag=f, build=engine_build) for f in flags.dropped]
    return Plan(
        model_id=candidate.model_id, title=candidate.title, quant=candidate.quant, file=candidate.file,
        file_size=candidate.size, variant=variant, settings=settings, estimate=est, budget=budget,
        args=flags.kept, dropped_flags=flags.dropped, reasons=tuple(reasons), warnings=tuple(warnings),
        speed_class=_speed_class(candidate.profile, settings), prompt_cache_disk_mib=disk_mib,
        speed=speed, fallback_from=fallback_from,
    )


def _predict_speed(candidate: Candidate, settings: LaunchSettings, hardware: HardwareProfile,
                   variant: VariantChoice, budget: Budget, threads: int) -> SpeedPrediction:
    """The speed model on the GPU the budget was made for (none for a CPU build or a CPU-only placement)."""
    gpu = _main_gpu(hardware) if uses_gpu(variant) and budget.gpu_bytes > 0 else None
    if gpu is None and settings.n_gpu_layers > 0:
        # Layers on RPC workers only: predicted as if they ran here. The network's round trips per token make it
        # slower, by how much the plan cannot know (llama.cpp tools/rpc/README.md: RPC adds capacity, not speed).
        settings = replace(settings, n_gpu_layers=0, n_cpu_moe=0)
    return predict(candidate.profile, settings, hardware, threads, gpu_vendor=gpu.vendor if gpu else None,
                   gpu_bandwidth=gpu.memory_bandwidth_bytes_per_s if gpu else None,
                   thinking=candidate.thinking_default if candidate.thinks else None, quant=candidate.quant)


def plan_to_json(plan: Plan) -> dict[str, object]:
    """The ``plan --json`` document (also what install records in state.json)."""
    est = plan.estimate
    return {
        "model": {"id": plan.model_id, "title": plan.title, "quant": plan.quant, "file": plan.file,
                  "size_bytes": plan.file_size, "fallback_from": plan.fallback_from, "slower": plan.slower},
        "engine": {"variant": plan.variant.name, "reason": plan.variant.reason,
                   "min_driver": plan.variant.min_driver},
        "settings": {name: getattr(plan.settings, name) for name in plan.settings.__dataclass_fields__},
        "args": list(plan.args),
        "dropped_flags": list(plan.dropped_flags),
        "memory": {
            "gpu_bytes": est.gpu_total, "host_bytes": est.host_total,
            "gpu_budget_bytes": plan.budget.gpu_bytes, "ram_budget_bytes": plan.budget.ram_bytes,
            "unified": plan.budget.unified, "gpu_name": plan.budget.gpu_name, "gpu_device": plan.budget.gpu_device,
            "rpc_budget_bytes": plan.budget.rpc_bytes, "rpc_endpoints": list(plan.budget.rpc_endpoints),
            "breakdown": {name: getattr(est, name) for name in est.__dataclass_fields__},
        },
        "reasons": [{"topic": r.topic, "value": r.value, "text": r.text} for r in plan.reasons],
        "warnings": list(plan.warnings),
        "speed_class": plan.speed_class,
        "prompt_cache_disk_mib": plan.prompt_cache_disk_mib,
        "speed": plan.speed.to_json(),
        "role": plan.role,
    }
