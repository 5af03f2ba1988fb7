"""``qwenkit plan [MODEL] [--hardware FILE.json] [--ctx N] [--rpc IP:PORT,...] [--json]``: what would run here.

Glue only: the hardware profile (``--hardware`` or detected; with ``--rpc``, the RPC workers' devices as this
home's installed engine lists them, as ``install --rpc`` counts them), the candidates (catalog quants, a local
file, or a hub file whose header is read with a few ranged requests), then the plan stage. Exit 3 when nothing
fits.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bootstrap.app.check_table import display_width
from bootstrap.catalog.model_ref import CatalogRef, parse_model_ref
from bootstrap.catalog.models import load_catalog
from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.home import resolve_home
from bootstrap.core.private_address import check_rpc_endpoints
from bootstrap.core.sizes import gib_text
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.detect.profile import detect
from bootstrap.install import candidates
from bootstrap.install.library import is_embedding, plan_embedding
from bootstrap.install.measure import recorded_rates
from bootstrap.plan.context import check_range
from bootstrap.plan.engine_variant import check_engine
from bootstrap.plan.planner import Candidate, Plan, choose, plan_to_json
from bootstrap.plan.speed import describe as describe_speed


def hardware_for(path: str | None) -> HardwareProfile:
    """The profile in ``--hardware FILE.json``, else this machine's (with the engine check, and the speed its last
    install measured here: ``install/measure.py``)."""
    if path:
        return load_profile(Path(path))
    home = resolve_home()
    return recorded_rates(home, detect(home.root, engine=check_engine))


def with_workers(hardware: HardwareProfile, text: str | None) -> HardwareProfile:
    """``hardware`` with the devices of the RPC workers ``--rpc`` names (none: as it is). Asked through this home's
    installed engine, so a home with no install is exit 2, as for ``install --rpc``."""
    endpoints = check_rpc_endpoints(text) if text else ()
    if not endpoints:
        return hardware
    from bootstrap.install.rpc_head import with_workers as lend  # the probe's modules, only when asked
    from bootstrap.record.state import load_state

    home = resolve_home()
    return lend(home, hardware, endpoints, load_state(home))


def candidates_for(model: str | None) -> tuple[list[Candidate], list[Candidate]]:
    """(candidates in preference order, fallbacks) for MODEL (the catalog's default when None)."""
    ref = parse_model_ref(model) if model else CatalogRef(load_catalog().default_model)
    return candidates.candidates_for(ref, resolve_home().models_dir)


def _catalog_args(model: str | None) -> tuple[str, ...]:
    """The catalog entry's own llama-server flags (an embedding model's ``--embeddings --pooling``)."""
    ref = parse_model_ref(model) if model else CatalogRef(load_catalog().default_model)
    return load_catalog().model(ref.model_id).server_args if isinstance(ref, CatalogRef) else ()


def print_plan(plan: Plan) -> None:
    """The human plan on stdout (its warnings on stderr): what, why, predicted memory, and the command line."""
    key = "plan.title" if plan.budget.gpu_name else "plan.title_cpu"  # no space before 处理器 in Chinese
    on_workers = bool(plan.budget.rpc_endpoints) and plan.settings.n_gpu_layers > 0
    if on_workers:
        key = "rpc.plan_title"
    console.out(t(key, title=plan.title, quant=plan.quant, size=gib_text(plan.file_size), where=plan.budget.gpu_name))
    labels = [t(f"plan.topic_{r.topic}") for r in plan.reasons]
    width = max(display_width(label) for label in labels)
    for label, reason in zip(labels, plan.reasons, strict=True):
        console.out(f"  {label}{' ' * (width - display_width(label))}  {reason.text}")
    est = plan.estimate
    if est.gpu_total == 0 and not plan.budget.unified:  # no "GPU 0.0 of 0.0" on a machine that uses none
        console.out(t("plan.memory_cpu", ram=gib_text(est.host_total), ram_budget=gib_text(plan.budget.ram_bytes)))
    elif on_workers and not plan.budget.gpu_bytes:
        console.out(t("rpc.plan_memory", workers=gib_text(est.gpu_total), budget=gib_text(plan.budget.rpc_bytes),
                      ram=gib_text(est.host_total), ram_budget=gib_text(plan.budget.ram_bytes)))
    else:
        console.out(t("plan.memory", gpu=gib_text(est.gpu_total), gpu_budget=gib_text(plan.budget.gpu_bytes),
                       ram=gib_text(est.host_total), ram_budget=gib_text(plan.budget.ram_bytes)))
    console.out("\n".join(describe_speed(plan.speed, embedding=plan.role == "embedding",
                                         last_measured=_last_measured(plan))))
    for warning in plan.warnings:
        console.warn(warning)
    console.out("llama-server -m " + plan.file + " " + " ".join(plan.args))


def _last_measured(plan: Plan) -> tuple[float, str] | None:
    """What this home's server measured at its last verify, when it runs the planned model and quant."""
    from bootstrap.app.commands.install import last_measured
    from bootstrap.core.errors import QwenKitError
    from bootstrap.record.state import load_state

    try:
        return last_measured(load_state(resolve_home()), plan)
    except QwenKitError:
        return None


def run(args: argparse.Namespace) -> int:
    if args.ctx is not None:
        check_range(args.ctx)
    hardware = with_workers(hardware_for(args.hardware), args.rpc)
    candidates, fallbacks = candidates_for(args.model)
    extra = _catalog_args(args.model)
    if is_embedding(candidates[0].profile, extra):  # served beside a chat model, as ``install MODEL`` adds it
        plan = plan_embedding(candidates, hardware, extra, requested_ctx=args.ctx)
    else:  # no MODEL: what install would take, a model that answers in time before one that only fits
        plan = choose(candidates, hardware, requested_ctx=args.ctx, fallbacks=fallbacks,
                      usable_first=args.model is None)
    if args.json:
        console.emit_json(plan_to_json(plan))
    else:
        print_plan(plan)
    return 0
