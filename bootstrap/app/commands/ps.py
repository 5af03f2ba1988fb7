"""``qwenkit ps [--json]``: the installed models and what each holds now (``ollama ps``, ``lms ps``).

Exit 0 when the server answers (a model asleep or unloaded is a normal state), 6 when it does not (the table still
shows every model, state unknown), 2 when nothing is installed. The record is ``install/loaded_models.py``.
"""

from __future__ import annotations

import argparse

from bootstrap.app.check_table import display_width
from bootstrap.app.commands.status import duration_text
from bootstrap.core import console
from bootstrap.core.console import out, t
from bootstrap.core.errors import ExitCode
from bootstrap.core.home import resolve_home
from bootstrap.core.sizes import human_size
from bootstrap.install.loaded_models import LoadedModel, LoadedReport, collect
from bootstrap.plan.keep_alive import keep_alive_text


def run(args: argparse.Namespace) -> int:
    report = collect(resolve_home(getattr(args, "home", None)))
    if args.json:
        console.emit_json(report.to_json())
    else:
        for line in table(report):
            out(line)
        if not report.serving:
            console.error(t("ps.server_down", detail=report.health.detail or report.health.state),
                          t("ps.hint_down"))
    return int(ExitCode.OK if report.serving else ExitCode.SERVER)


def table(report: LoadedReport) -> list[str]:
    """Aligned columns (display width: Chinese lines up too) under a heading, then the keep-alive in force."""
    rows = [[t("ps.col_name"), t("ps.col_state"), t("ps.col_memory"), t("ps.col_slots"), t("ps.col_idle"),
             t("ps.col_unloads")]]
    for m in report.models:
        rows.append([m.name + (t("ps.default") if m.default else ""), _state(m), _memory(m), _slots(m),
                     "-" if m.idle_s is None else duration_text(m.idle_s), _unloads(m)])
    widths = [max(display_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell + " " * (widths[i] - display_width(cell)) for i, cell in enumerate(row)).rstrip()
             for row in rows]
    keep = report.models[0].keep_alive_s if report.models else -1
    lines.append(t("ps.keep_never") if keep < 0 else t("ps.keep_after", keep=keep_alive_text(keep)))
    return lines


def _state(m: LoadedModel) -> str:
    return t(f"ps.state_{m.state}") if m.state else "-"


def _memory(m: LoadedModel) -> str:
    used = "-" if m.rss_bytes is None else human_size(m.rss_bytes)
    planned = "-" if m.planned_ram_bytes is None else human_size(m.planned_ram_bytes)
    return f"{used} / {planned}"  # figures only: the heading says which is which


def _slots(m: LoadedModel) -> str:
    return f"{'-' if m.busy is None else m.busy} / {'-' if m.slots is None else m.slots}"


def _unloads(m: LoadedModel) -> str:
    if m.state == "loaded" and m.keep_alive_s < 0:
        return t("ps.unloads_never")
    if m.state == "loaded" and m.busy:
        return t("ps.unloads_busy")
    return "-" if m.unloads_in_s is None else duration_text(m.unloads_in_s)
