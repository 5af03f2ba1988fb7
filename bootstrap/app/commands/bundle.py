"""``qwenkit bundle create --out DIR [MODEL…] [--platform P…] …`` and ``qwenkit bundle verify DIR|URL [--json]``.

``create`` writes an offline bundle folder (``bootstrap/bundle/create.py``); ``verify`` rehashes one against its
manifest (``bootstrap/bundle/verify.py``): each problem on its own line, exit 5 naming missing/extra/altered files.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from bootstrap.core.console import emit_json, error, out, out_ok, t
from bootstrap.core.input_checks import check_text
from bootstrap.core.sizes import human_size


def _create(args: argparse.Namespace) -> int:
    from bootstrap.bundle.create import CreateRequest, create

    check_text("--out", args.out)
    check_text("--source", args.source or "auto")
    request = CreateRequest(
        out=Path(args.out), models=tuple(args.models or ()), quants=tuple(args.quant or ()),
        platforms=tuple(args.platform or ()), setups=tuple(Path(p) for p in args.setup or ()),
        pythons=tuple(args.python or ()), reuse=tuple(Path(p) for p in args.reuse or ()),
        source=args.source or "auto", home=Path(args.home) if args.home else None)
    result = create(request)
    files = result.manifest.files
    out_ok(t("bundle_create.summary", path=str(request.out), files=len(files), size=human_size(result.total_bytes, 2)))
    by_kind: dict[str, list[int]] = defaultdict(list)
    for f in files:
        by_kind[f.kind].append(f.size)
    for kind, sizes in by_kind.items():
        out(t("bundle_create.summary_kind", kind=kind, count=len(sizes), size=human_size(sum(sizes), 2)))
    out(t("bundle_create.summary_bytes", downloaded=human_size(result.downloaded_bytes, 2),
           reused=human_size(result.reused_bytes, 2), free=human_size(result.free_bytes, 2)))
    out(t("bundle_create.summary_next", path=str(request.out)))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from bootstrap.bundle.verify import raise_for, verify_bundle

    report = verify_bundle(check_text("DIR|URL", args.dir), quiet=bool(args.json))
    for problem in report.problems:
        error(problem.message)
    if args.json:
        emit_json(report.to_json())
    raise_for(report)
    if not args.json:  # --json: the document is the whole of stdout
        out_ok(t("bundle_create.verify_ok", where=report.where, files=report.checked_files,
                 size=human_size(report.checked_bytes, 2)))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.bundle_action == "verify":
        return _verify(args)
    return _create(args)
