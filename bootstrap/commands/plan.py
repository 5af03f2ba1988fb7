"""``qwenkit plan [MODEL] [--hardware FILE.json] [--ctx N] [--json]``: what would run here, and how.

Glue only: the hardware profile (``--hardware`` or detected), the candidates (catalog quants, a local file, or a
hub file whose header is read with a few ranged requests), then the plan stage. Exit 3 when nothing fits.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import console
from ..catalog import load_catalog
from ..console import t
from ..errors import UsageError
from ..gguf_remote import read_remote_header
from ..hardware import HardwareProfile, detect, load_profile
from ..home import resolve_home
from ..model_facts import catalog_candidates, file_candidate
from ..model_profile import model_profile
from ..model_ref import CatalogRef, HubFileRef, LocalFileRef, parse_model_ref
from ..planner import Candidate, Plan, choose, plan_to_json
from ..sources import resolve_files, sources_for

MIN_CTX, MAX_CTX = 512, 1 << 20
GIB = 1 << 30


def _hardware(path: str | None) -> HardwareProfile:
    if path:
        return load_profile(Path(path))
    return detect(resolve_home().root)


def _hub_candidate(ref: HubFileRef) -> Candidate:
    """Read only the header of a hub file (a few MB of ranged reads) to plan before downloading it."""
    from ..catalog import RepoRef

    resolution = resolve_files([ref.path], sources_for("auto", [RepoRef(ref.hub, ref.repo, ref.revision)]),
                               probe=False)
    first = resolution.files[0][0]
    header = read_remote_header(first.url, headers=dict(first.headers))
    name = ref.path.rpartition("/")[2]
    return Candidate(name, name, "file", ref.path, first.size, model_profile(header), facts="remote-header")


def candidates_for(model: str | None) -> tuple[list[Candidate], list[Candidate]]:
    """(candidates in preference order, fallbacks) for MODEL."""
    ref = parse_model_ref(model) if model else CatalogRef(load_catalog().default_model)
    if isinstance(ref, LocalFileRef):
        if not ref.path.is_file():
            raise UsageError(t("plan.err_no_file", path=str(ref.path)))
        return [file_candidate(ref.path)], []
    if isinstance(ref, HubFileRef):
        return [_hub_candidate(ref)], []
    catalog = load_catalog()
    entry = catalog.model(ref.model_id)
    models_dir = resolve_home().models_dir
    candidates = catalog_candidates(entry, ref.quant, models_dir)
    if ref.quant:  # an explicit quant is what the user wants: no silent substitution
        return candidates, []
    fallbacks = [c for fid in entry.fallbacks for c in catalog_candidates(catalog.model(fid), None, models_dir)]
    return candidates, fallbacks


def _gib(n: int) -> str:
    return f"{n / GIB:.1f}"


def print_plan(plan: Plan) -> None:
    """The human plan on stderr: what, why, predicted memory, and the command line."""
    where = plan.budget.gpu_name or t("plan.label_cpu")
    console.info(t("plan.title", title=plan.title, quant=plan.quant, size=_gib(plan.file_size), where=where))
    width = max(len(r.topic) for r in plan.reasons)
    for reason in plan.reasons:
        console.info(f"  {reason.topic.ljust(width)}  {reason.text}")
    est = plan.estimate
    console.info(t("plan.memory", gpu=_gib(est.gpu_total), gpu_budget=_gib(plan.budget.gpu_bytes),
                   ram=_gib(est.host_total), ram_budget=_gib(plan.budget.ram_bytes)))
    console.info(t(f"plan.speed_{plan.speed_class}"))
    for warning in plan.warnings:
        console.warn(warning)
    console.info("llama-server -m " + plan.file + " " + " ".join(plan.args))


def run(args: argparse.Namespace) -> int:
    if args.ctx is not None and not MIN_CTX <= args.ctx <= MAX_CTX:
        raise UsageError(t("plan.err_ctx", ctx=args.ctx, low=MIN_CTX, high=MAX_CTX))
    hardware = _hardware(args.hardware)
    candidates, fallbacks = candidates_for(args.model)
    plan = choose(candidates, hardware, requested_ctx=args.ctx, fallbacks=fallbacks)
    if args.json:
        console.emit_json(plan_to_json(plan))
    else:
        print_plan(plan)
    return 0
