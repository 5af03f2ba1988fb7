"""``qwenkit status [--json] [--open]``: what is installed in this home and whether the server answers with its key.

Exit 0 when healthy, 6 when something is installed but not serving — a stranger holding the port included, named
by its PID, which gets no request (so scripts can ``qwenkit status || …``) — 2 when nothing is installed. The report
itself is ``bootstrap/install/status.py``; this command prints it.

``--open`` hands the chat page to the browser only when the server is healthy and the page loads. Where no browser
can be opened (SSH, WSL without a browser bridge, a server with no display: ``webbrowser.open`` returns False) the
URL is printed on stdout with a warning on stderr, and the exit code stays the status's own: the page is there and
the user has its address, which is what they asked for; scripts that pipe the output get the URL.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from bootstrap.app.check_table import display_width
from bootstrap.core import console
from bootstrap.core.console import out, t, warn
from bootstrap.core.errors import ExitCode
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.sizes import MIB, human_size
from bootstrap.install.status import ModelStatus, ServerFigures, StatusReport, collect
from bootstrap.record.failure_record import load_failure
from bootstrap.record.state import InstallState, load_state, require_state
from bootstrap.register.server_identity import foreign_hint
from bootstrap.verify.chat import thinking_lines
from bootstrap.verify.speed_check import measured_when, speed_lines
from bootstrap.verify.web_page import check_web_page, open_web_ui, web_page_lines


def cache_line(cache: dict[str, Any]) -> str:
    """One line for the prompt cache on disk (docs/prompt-cache.md)."""
    budget = cache["budget_bytes"] // MIB
    if not cache["files"]:
        return t("prompt_cache.status_empty", budget=budget)
    return t("prompt_cache.status_line", files=cache["files"], tokens=cache["tokens"],
             mib=f"{cache['bytes'] / MIB:.1f}", budget=budget, age=duration_text(cache["newest_age_s"]))


def model_cache_lines(cache: dict[str, Any]) -> list[str]:
    """Router mode: one line per model under ``cache_line`` (each model keeps its own prefix)."""
    lines = []
    for model, each in (cache.get("models") or {}).items():
        if not each or not each["files"]:
            lines.append(t("prompt_cache.status_model_empty", model=model))
            continue
        lines.append(t("prompt_cache.status_model", model=model, files=each["files"], tokens=each["tokens"],
                       mib=f"{each['bytes'] / MIB:.1f}", age=duration_text(each["newest_age_s"])))
    return lines


def run(args: argparse.Namespace) -> int:
    home = resolve_home(getattr(args, "home", None))
    if load_state(home) is None:
        _not_installed(home, bool(args.json))
    report = collect(home)
    if args.json:
        console.emit_json(report.to_json())
    else:
        _print(report)
    if getattr(args, "open", False) and report.healthy:
        _open(report)
    return int(ExitCode.OK if report.healthy else ExitCode.SERVER)


def _open(report: StatusReport) -> None:
    """The chat page in the browser, only when it loads; where no browser opens, its address on stdout too (the
    warning that says so is on stderr: ``open_web_ui``)."""
    page = report.web_page or check_web_page(report.spec)
    if not open_web_ui(report.spec, page) and page.loads:
        out(f"{report.spec.base_url}/")


def _print(report: StatusReport) -> None:
    spec, state = report.spec, report.state
    out(t("status.title", home=report.home.root))
    out(t("status.line_model", model=state.model_id, quant=state.quant))
    if report.preset is not None:  # plan/presets.py
        out(t("status.preset", items=console.join_items(f"{k} {v}" for k, v in report.preset.shown())))
    if len(report.models) > 1:  # several models behind the endpoint: each, what it is for, and loaded or not
        out(t("status.line_models", count=len(report.models), loaded=report.spec.models_max, default=spec.alias))
        for line in model_table(report.models):
            out("    " + line)
        for model in report.models[1:]:  # each other model's preset (plan/presets.py), under the table
            if model.preset is not None:
                out(t("status.preset_of", name=model.name,
                      items=console.join_items(f"{k} {v}" for k, v in model.preset.shown())))
    out(t("status.line_engine", build=state.engine.build, variant=state.engine.variant))
    out(t("status.line_endpoint", endpoint=spec.client_openai_url))
    out(t("status.line_key", path=spec.api_key_file))
    if report.service is not None:  # in the words ``service status`` uses
        out(t("status.line_service", detail=service_words(report.service)))
    out(t("status.line_scripts", script=report.start_script))
    for worker in report.workers:
        out(t("rpc.status_worker_up" if worker.answers else "rpc.status_worker_down", endpoint=worker.endpoint))
    if report.server is not None:  # several models: each one's context is in the table above
        for line in figure_lines(report.server, context=len(report.models) <= 1):
            out(line)
    out(t("status.line_logs", path=report.home.logs_dir))
    if report.prompt_cache is not None:
        out(cache_line(report.prompt_cache))
        for line in model_cache_lines(report.prompt_cache):
            out(line)
    if report.web_page is not None:
        for line in web_page_lines(report.web_page, str(spec.api_key_file)):
            out(line)
    for line in thinking_lines(spec.thinking):
        out(line)
    # A measurement is about a server that answers: above a stopped one's error it would be stale news.
    speed, slow = speed_lines(state.speed) if state.speed is not None and report.healthy else ([], [])
    if speed and state.speed is not None:  # figures of the install's moment, said as such (issue 41): a slow one
        out(t("status.speed_then", when=measured_when(state.speed)))  # is part of them, not a warning of now
    for line in [*speed, *("  " + warning for warning in slow)]:
        out(line)
    for warning in report.warnings:  # a slow measurement was the install's warning: not repeated as news
        warn(warning)
    for note in _fallback_notes(state):
        warn(note)
    if report.last_failure is not None:
        warn(t("failure.status_last", when=report.last_failure.when, message=report.last_failure.message))
    if report.healthy:
        console.out_ok(t("status.healthy", model=spec.alias, endpoint=spec.client_openai_url))
    elif report.health.state == "stranger":
        console.error(t("status.unhealthy", problems="; ".join(report.problems)),
                      foreign_hint(spec))
    elif any(not w.answers for w in report.workers):
        console.error(t("status.unhealthy", problems="; ".join(report.problems)), t("rpc.status_worker_hint"))
    else:
        console.error(t("status.unhealthy", problems="; ".join(report.problems)),
                      t("status.hint_unhealthy", script=report.start_script, logs=report.home.logs_dir))


def service_words(service: dict[str, Any]) -> str:
    """The manager's view as ``service status`` says it: runs under which manager (or not running), and whether it
    starts by itself at boot (the server's own PID is on the "running" line)."""
    from bootstrap.register.base import manager_label

    boot = t("status.boot_on" if service.get("enabled") else "status.boot_off")
    key = "status.service_runs" if service.get("active") else "status.service_stopped"
    return t(key, manager=manager_label(str(service.get("manager", "?"))), boot=boot)


def model_table(models: Sequence[ModelStatus]) -> list[str]:
    """The installed models as aligned columns under a heading (name, what it is for, quant, tokens per request,
    loaded or not), the default marked; widths by display columns, so Chinese words line up too."""
    rows = [[t("status.col_name"), t("status.col_kind"), t("status.col_quant"), t("status.col_ctx"),
             t("status.col_state")]]
    for m in models:
        state_word = t(f"status.model_{m.loaded}") if m.loaded in ("loaded", "loading", "unloaded", "sleeping") \
            else "-"
        rows.append([m.name, t(f"status.kind_{m.kind}"), m.quant, "-" if m.ctx is None else f"{m.ctx:,}",
                     state_word + (t("status.model_default") if m.default else "")])
    widths = [max(display_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell + " " * (widths[i] - display_width(cell)) for i, cell in enumerate(row)).rstrip()
            for row in rows]


def figure_lines(figures: ServerFigures, *, context: bool = True) -> list[str]:
    """Context and slots (``context``: one model's), memory in use against the plan, and uptime: the lines of a
    healthy server."""
    lines = []
    if context and figures.ctx is not None and figures.slots is not None:
        lines.append(t("status.line_context", ctx=f"{figures.ctx:,}", slots=figures.slots))
    if figures.rss_bytes is not None:
        swap = t("status.memory_swap", swap=human_size(figures.swap_bytes)) if figures.swap_bytes else ""
        planned = (t("status.memory_planned", planned=human_size(figures.planned_ram_bytes))
                   if figures.planned_ram_bytes else "")
        lines.append(t("status.line_memory", used=human_size(figures.rss_bytes), swap=swap, planned=planned))
    if figures.uptime_s is not None:
        lines.append(t("status.line_uptime", uptime=duration_text(figures.uptime_s), pid=figures.pid))
    return lines


def duration_text(seconds: float) -> str:
    """``2 h 5 min``, ``3 min 12 s``, ``45 s`` (in the UI language)."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return t("status.duration_h", h=hours, m=minutes)
    if minutes:
        return t("status.duration_m", m=minutes, s=secs)
    return t("status.duration_s", s=secs)


def _fallback_notes(state: InstallState) -> list[str]:
    """What the install gave up to run here: engine builds that could not start, a plan made smaller."""
    notes = [t("failure.status_fallback", note=t("failure.fallback", used=state.engine.variant, failed=g.variant,
                                                  reason=f"{g.cause}: {g.detail}"))
             for g in state.engine.given_up]
    if state.server.retried:
        notes.append(state.server.retried)
    return notes


def _not_installed(home: Home, as_json: bool) -> None:
    """Nothing installed: say why the last attempt failed, when one did, then the usual exit 2."""
    failure = load_failure(home)
    if as_json:
        console.emit_json({"home": str(home.root), "installed": False, "healthy": False,
                           "last_failure": None if failure is None else asdict(failure)})
    elif failure is not None:
        warn(t("failure.status_last", when=failure.when, message=failure.message))
    require_state(home)  # raises the "nothing installed" error (exit 2)
