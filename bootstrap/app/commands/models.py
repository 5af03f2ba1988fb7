"""``qwenkit models [--hardware FILE.json] [--json]``: the catalog, and what of it fits this (or another) machine.

Glue only, and offline: the catalog's quants and sizes, the hardware profile (``--hardware`` or detected), and for
each model the plan stage's choice among its default quant and the smaller ones. Candidates come from the catalog's
shape facts (or the header of a quant already in the home), as ``install.candidates`` builds them; a model with
neither (an intranet admin's own entry) is shown without a verdict rather than read over the network.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from bootstrap.app.commands.plan import hardware_for
from bootstrap.catalog.models import Catalog, CatalogModel, load_catalog
from bootstrap.core import console
from bootstrap.core.console import t
from bootstrap.core.errors import UnsupportedMachine
from bootstrap.core.home import resolve_home
from bootstrap.core.sizes import human_size
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.plan.engine_variant import choose_variant
from bootstrap.plan.model_facts import catalog_candidates, local_file
from bootstrap.plan.planner import Budget, Plan, budget_for, choose


@dataclass(frozen=True)
class Verdict:
    """What the planner would run of one model here: a plan, "does not fit", or unknown (no offline facts)."""

    plan: Plan | None
    fits: bool | None


def verdict(model: CatalogModel, hardware: HardwareProfile) -> Verdict:
    """The planner's choice among the model's default quant and every smaller one (no fallback model)."""
    models_dir = resolve_home().models_dir
    if model.shape is None and not any(local_file(model, q.file.path, models_dir) for q in model.quants):
        return Verdict(None, None)
    candidates = catalog_candidates(model, None, models_dir)
    try:
        if model.embedding:  # planned as ``install MODEL`` serves it (``plan MODEL`` prints the same)
            from bootstrap.install.library import plan_embedding

            return Verdict(plan_embedding(candidates, hardware, model.server_args), True)
        return Verdict(choose(candidates, hardware), True)
    except UnsupportedMachine:
        return Verdict(None, False)


def installed_here() -> dict[str, str]:
    """Catalog ids installed in this home: "default" (what a request naming no model gets when it is the only one)
    or "beside" (another model behind the same endpoint). Empty when nothing is installed or the record is
    unreadable (``status`` says why)."""
    from bootstrap.core.errors import QwenKitError
    from bootstrap.record.state import load_state

    try:
        state = load_state(resolve_home())
    except QwenKitError:
        return {}
    if state is None:
        return {}
    found = {m.model_id: "beside" for m in state.library}
    found[state.model_id] = "default"
    return found


def _size(size: int | None, exact: bool) -> str:
    if size is None:
        return "?"
    return human_size(size) if exact else "~" + human_size(size)


def to_json(catalog: Catalog, budget: Budget, verdicts: dict[str, Verdict],
            installed: dict[str, str] | None = None) -> dict[str, object]:
    models = []
    installed = installed or {}
    for model in catalog.models:
        found = verdicts[model.id]
        plan = found.plan
        models.append({
            "id": model.id,
            "title": model.title,
            "default": model.id == catalog.default_model,
            "default_quant": model.default_quant,
            "thinking_default": model.thinking_default,
            "role": "embedding" if model.embedding else "chat",
            "installed": installed.get(model.id),  # "default", "beside" or null
            "quants": [{"name": q.name, "file": q.file.path, "size": q.file.size, "size_exact": q.file.size_exact,
                        "default": q.name == model.default_quant} for q in model.quants],
            # downloaded beside every quant of a model that sees images (the install's projector line)
            "mmproj": None if model.mmproj is None else {"file": model.mmproj.path, "size": model.mmproj.size,
                                                         "size_exact": model.mmproj.size_exact},
            "fits": found.fits,
            "here": None if plan is None else {"quant": plan.quant, "ctx": plan.settings.ctx,
                                               "variant": plan.variant.name,
                                               "speed_class": None if plan.role == "embedding" else plan.speed_class},
        })
    return {"default_model": catalog.default_model,
            "budget": {"gpu_bytes": budget.gpu_bytes, "ram_bytes": budget.ram_bytes, "gpu_name": budget.gpu_name},
            "models": models}


def print_models(catalog: Catalog, budget: Budget, verdicts: dict[str, Verdict],
                 installed: dict[str, str] | None = None) -> None:
    """The human listing on stdout: one block per model, its quants, and the verdict for this machine."""
    installed = installed or {}
    if budget.gpu_name:
        console.out(t("models.title", gpu=budget.gpu_name, vram=human_size(budget.gpu_bytes),
                       ram=human_size(budget.ram_bytes)))
    else:
        console.out(t("models.title_cpu", ram=human_size(budget.ram_bytes)))
    for model in catalog.models:
        marker = t("models.default_model") if model.id == catalog.default_model else ""
        if model.embedding:
            marker += t("models.role_embedding")
        if model.id in installed:
            marker += t(f"models.installed_{installed[model.id]}")
        console.out("")
        console.out(f"{model.id}  {model.title}{marker}")
        found = verdicts[model.id]
        chosen = found.plan.quant if found.plan is not None else None
        width = max(len(q.name) for q in model.quants)
        for quant in model.quants:
            notes = []
            if quant.name == model.default_quant:
                notes.append(t("models.default_quant"))
            if quant.name == chosen:
                notes.append(t("models.chosen"))
            size = _size(quant.file.size, quant.file.size_exact)
            console.out(f"  {quant.name.ljust(width)}  {size:>10}  {' · '.join(notes)}".rstrip())
        if model.mmproj is not None:
            console.out("  " + t("models.mmproj", size=_size(model.mmproj.size, model.mmproj.size_exact)))
        if found.plan is not None and found.plan.role == "embedding":  # no answer speed: it generates nothing
            console.out("  " + t("models.fits_embedding", quant=found.plan.quant, ctx=found.plan.settings.ctx))
        elif found.plan is not None:
            console.out("  " + t("models.fits", quant=found.plan.quant, ctx=found.plan.settings.ctx,
                                  speed=t(f"models.speed_{found.plan.speed_class}")))
        elif found.fits is False:
            console.out("  " + t("models.no_fit"))
        else:
            console.out("  " + t("models.unknown"))
    if any(q.file.size is not None and not q.file.size_exact for m in catalog.models for q in m.quants):
        console.out("")
        console.out(t("models.approximate"))


def run(args: argparse.Namespace) -> int:
    hardware = hardware_for(args.hardware)
    catalog = load_catalog()
    verdicts = {model.id: verdict(model, hardware) for model in catalog.models}
    budget = budget_for(hardware, choose_variant(hardware))
    installed = installed_here()
    if args.json:
        console.emit_json(to_json(catalog, budget, verdicts, installed))
    else:
        print_models(catalog, budget, verdicts, installed)
    return 0
