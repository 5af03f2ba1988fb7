"""``qwenkit install [MODEL] …``: the product as a user meets it (the frozen setup runs this on a double-click).

Interactive from a console: the doctor summary and the plan (model, quant, download size, predicted memory,
expected speed), one question (default yes), then the pipeline with progress and the verify report. Unattended with
``--yes`` or ``--answers FILE`` (a TOML file with the same options). A rerun upgrades in place, or with nothing
changed only makes sure the server answers. Exit codes per DESIGN.md §2.

Streams: the confirmation screen and its question are a question (stderr), as are progress and warnings; the report
at the end (endpoint, key, snippets) is the command's output (stdout). ``--verbose`` adds the technical lines.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bootstrap.app.check_table import render_table
from bootstrap.catalog.source_names import is_url
from bootstrap.core import console, settings
from bootstrap.core.console import join_names, t
from bootstrap.core.errors import UsageError
from bootstrap.core.file_formats import load_toml
from bootstrap.core.home import Home, resolve_home
from bootstrap.core.input_checks import check_text
from bootstrap.core.private_address import check_rpc_endpoints
from bootstrap.core.prompts import ask_yes_no, stdin_is_terminal
from bootstrap.core.sizes import gib_text, human_size
from bootstrap.detect.privileges import is_admin
from bootstrap.install.installer import CTX_AUTO, InstallOutcome, InstallRequest, install
from bootstrap.install.proposal import Proposal
from bootstrap.plan.context import AUTO, parse_ctx
from bootstrap.plan.keep_alive import effective, keep_alive_text, parse_keep_alive
from bootstrap.plan.launch_spec import DEFAULT_HOST, WILDCARD_HOSTS, is_loopback, parse_host
from bootstrap.plan.planner import Plan
from bootstrap.plan.presets import Preset
from bootstrap.plan.speed import describe as describe_speed
from bootstrap.record.state import InstallState

# answers-file key → (type, InstallRequest field or a CLI-only key); ``ctx`` also takes "auto" (``_answer_ok``)
_ANSWERS: dict[str, type] = {"model": str, "source": str, "bundle": str, "home": str, "host": str, "port": int,
                             "service": bool, "venv": bool, "verify": bool, "thinking": bool, "ctx": int,
                             "rpc": str, "preset": dict}


_KIND_NAMES = {str: "string", int: "integer", bool: "true/false", dict: "a table"}


MAX_ANSWERS_BYTES = 1 << 20  # a handful of options; anything larger is not an answers file
_RELATIVE_TO_FILE = ("home", "bundle")  # folders named in the file are where the file says, wherever it is run


def read_answers(path: str) -> dict[str, Any]:
    """An answers file: TOML with the install options (``model = "qwen3.6-35b-a3b"``, ``port = 8080`` …, a
    ``[preset]`` table as ``--preset FILE`` holds: docs/presets.md).

    A relative ``home`` or ``bundle`` folder is taken relative to the file's own folder (a rollout script runs
    from anywhere), as a relative path inside any configuration file is read.
    """
    def bad(detail: str) -> UsageError:
        return UsageError(t("install.err_answers_read", path=path, detail=detail))

    doc = load_toml(Path(path), MAX_ANSWERS_BYTES, bad)
    for key, value in doc.items():
        kind = _ANSWERS.get(key)
        if kind is None:
            raise UsageError(t("install.err_answers_key", path=path, option=key, known=join_names(_ANSWERS)))
        if not _answer_ok(key, value, kind):
            raise UsageError(t("install.err_answers_type", path=path, option=key, expected=_KIND_NAMES[kind]))
    if "preset" in doc:  # a [preset] table: the preset file's keys (plan/presets.py), checked now
        from bootstrap.plan.presets import preset_from

        doc["preset"] = preset_from(doc["preset"], f"{path}: preset")
    for key in _RELATIVE_TO_FILE:
        value = doc.get(key)
        if value and not is_url(value) and not Path(value).expanduser().is_absolute():
            doc[key] = str(Path(path).absolute().parent / value)
    return doc


def _answer_ok(key: str, value: Any, kind: type) -> bool:
    if key == "ctx" and isinstance(value, str) and value.strip().lower() == AUTO:
        return True
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _ctx(given: str | None, answered: int | str | None) -> int | None:
    """``--ctx N|auto`` wins over the answers file's ``ctx``; None: as recorded (a rerun keeps the choice), else the
    plan's; ``CTX_AUTO``: the plan's again. Checked here (range, a number), before anything starts."""
    value = answered if given is None else given
    if value is None:
        return None
    ctx = parse_ctx(value)
    return CTX_AUTO if ctx is None else ctx


def _request(args: argparse.Namespace, answers: dict[str, Any]) -> tuple[InstallRequest, str | None]:
    """Command-line values win over the answers file; the file fills in what was not given. Every value is
    checked here, before a lock is taken or a byte downloaded (the home by ``resolve_home``)."""
    def pick(name: str, default: Any) -> Any:
        value = getattr(args, name, None)
        return value if value not in (None, default) else answers.get(name, default)

    def text(name: str, option: str) -> str | None:
        value = pick(name, None)
        return None if value is None else check_text(option, value)

    bundle = text("bundle", "--bundle")
    source = text("source", "--source")  # None: this home's recorded source (a bundle stays the source), else auto
    if bundle and source is not None:
        raise UsageError(t("install.err_bundle_and_source"))
    port = pick("port", None)
    if port is not None and not 1 <= port <= 65535:
        raise UsageError(t("install.err_port", port=port))
    host = parse_host(pick("host", DEFAULT_HOST))
    if not is_loopback(host):
        where = t("input.every_interface") if host in WILDCARD_HOSTS else t("input.that_address")
        console.warn(t("input.exposed", host=host, where=where))
    wheels = settings.wheels_dir()
    request = InstallRequest(
        model=text("model", "MODEL"), source=bundle or source, host=host, port=port,
        service=not args.no_service and answers.get("service", True),
        venv=not getattr(args, "no_venv", False) and answers.get("venv", True),
        verify_files=bool(getattr(args, "verify", False) or answers.get("verify", False)),
        wheels_dir=Path(wheels) if wheels else None, pip_index_url=settings.pip_index_url(), admin=is_admin(),
        hardware_file=Path(args.hardware) if getattr(args, "hardware", None) else None,
        thinking=_thinking(getattr(args, "thinking", None), answers.get("thinking")),
        ctx=_ctx(getattr(args, "ctx", None), answers.get("ctx")),
        make_default=bool(getattr(args, "default", False)),
        rpc=None if pick("rpc", None) is None else check_rpc_endpoints(check_text("--rpc", pick("rpc", None))),
        keep_alive=None if getattr(args, "keep_alive", None) is None else parse_keep_alive(args.keep_alive),
        preset=_preset(args, answers.get("preset")), clear_preset=bool(getattr(args, "clear_preset", False)),
    )
    return request, pick("home", None)


def _preset(args: argparse.Namespace, answered: Preset | None = None) -> Preset | None:
    """The options given over ``--preset FILE`` over the answers file's ``[preset]`` table (``plan/presets.py``);
    None: none given (a rerun keeps the recorded one). ``--system ""`` sets an empty system text: none."""
    from bootstrap.plan.presets import PRESET_KEYS, preset_from, read_preset_file

    given = {key: getattr(args, key, None) for key in PRESET_KEYS}
    preset = preset_from({k: v for k, v in given.items() if v is not None})
    path = getattr(args, "preset", None)
    below = read_preset_file(Path(check_text("--preset", path))).over(answered) if path else answered
    preset = preset.over(below)
    return None if preset.empty else preset


def _thinking(given: str | None, answered: bool | None) -> bool | None:
    """``--thinking on|off`` wins over the answers file's ``thinking = true|false``; None: as recorded/catalog."""
    return answered if given is None else given == "on"


def show_proposal(p: Proposal, home: Path) -> None:
    """The doctor's findings and the whole install in a few lines, before anything happens (no network needed).

    Only the checks that did not pass are shown as rows (``--verbose``: all of them; ``qwenkit doctor`` always);
    thinking only for a model that has a thinking mode, said once."""
    _show_checks(p)
    plan = p.plan
    key = "install.proposal_title" if plan.budget.gpu_name else "install.proposal_title_cpu"
    if plan.budget.rpc_endpoints and plan.settings.n_gpu_layers > 0:
        key = "rpc.proposal_title"
    console.info("")
    console.info(t(key, title=plan.title, quant=plan.quant, where=plan.budget.gpu_name))
    model_reason = next((r for r in plan.reasons if r.topic == "model"), None)
    if model_reason is not None:  # another model than the one asked for (memory, or speed): say why, first
        console.info("  " + model_reason.text)
    if p.previous is not None:
        console.info(t("install.proposal_previous", model=p.previous.model_id, quant=p.previous.quant))
    _show_download(p)
    console.info(_memory_line(plan))
    grows = plan.estimate.prompt_cache + plan.estimate.checkpoints
    if grows:
        console.info(t("install.proposal_cache", mib=grows // (1 << 20)))
    console.info("  " + "\n  ".join(describe_speed(plan.speed, thinking=False,  # the thinking row says it
                                                   will_measure=p.measures_speed,
                                                   last_measured=last_measured(p.previous, plan))))
    console.info(t("install.proposal_context", ctx=p.ctx))
    if p.port != p.port_asked:
        console.info(t("install.proposal_port_moved", port=p.port, asked=p.port_asked))
    else:
        console.info(t("install.proposal_port", port=p.port))
    script = "run_qwen.bat" if p.hardware.os.system == "Windows" else "run_qwen.sh"
    console.info(t("install.proposal_runs", how=t(f"install.runs_{p.manager}", script=script)))
    keep = effective(p.keep_alive)  # when the memory is given back (docs/loaded-models.md)
    console.info(t("ps.proposal_keep_never") if keep < 0 else t("ps.proposal_keep", keep=keep_alive_text(keep)))
    if p.thinking is not None:  # None: no --reasoning, a model without a thinking mode
        console.info(t(f"install.proposal_thinking_{'on' if p.thinking else 'off'}"))
    console.info(t("install.proposal_home", home=home))
    for warning in plan.warnings:
        console.warn(warning)


def last_measured(state: InstallState | None, plan: Plan) -> tuple[float, str] | None:
    """(tokens/s, when) the installed server generated at its last verify, when it runs what ``plan`` plans (the
    same model and quant): a figure this machine really gave, shown beside the estimate."""
    if state is None or state.speed is None or (state.model_id, state.quant) != (plan.model_id, plan.quant):
        return None
    from bootstrap.verify.speed_check import measured_when

    return state.speed.measured.decode_tps, measured_when(state.speed)


def _show_checks(p: Proposal) -> None:
    """The checks that warn or fail as the doctor's rows, then how many passed (all rows with ``--verbose``)."""
    checks = p.hardware.checks
    shown = checks if console.verbose() else tuple(c for c in checks if c.verdict != "ok")
    if shown:
        for line in render_table(shown):
            console.info(line)
    passed = sum(1 for c in checks if c.verdict == "ok")
    if len(shown) < len(checks):
        console.info(t("install.checks_passed" if shown else "install.checks_all_passed", count=passed))


def _show_download(p: Proposal) -> None:
    """The total, then each part: its size (or estimate), already here, or not part of this install."""
    if not any(part.state == "download" for part in p.parts):
        console.info(t("install.proposal_download_none"))
    else:
        key = "install.proposal_download_least" if p.size_unknown else "install.proposal_download"
        console.info(t(key, size=human_size(p.download_bytes)))
    for part in p.parts:
        if part.state != "download":
            what = t(f"install.part_{part.state}")
        elif part.size is None:
            what = t("install.part_unknown")
        elif part.estimated:  # the venv: a recorded size; a model file: the catalog's rounded size
            key = "install.part_estimate" if part.name == "venv" else "install.part_about"
            what = t(key, size=human_size(part.size))
        else:
            what = human_size(part.size)
        console.info("    " + console.label(f"install.part_{part.name}") + what)


def _memory_line(plan: Plan) -> str:
    """What the model will take, in terms that fit the machine: no GPU figures where no GPU is used."""
    est, budget = plan.estimate, plan.budget
    if budget.unified:
        return t("install.proposal_memory_unified", total=gib_text(est.gpu_total + est.host_total),
                 budget=gib_text(budget.ram_bytes))
    if est.gpu_total == 0:
        return t("install.proposal_memory_cpu", ram=gib_text(est.host_total), ram_budget=gib_text(budget.ram_bytes))
    if budget.rpc_bytes and not budget.gpu_bytes:
        return t("rpc.proposal_memory", workers=gib_text(est.gpu_total), budget=gib_text(budget.rpc_bytes),
                 ram=gib_text(est.host_total), ram_budget=gib_text(budget.ram_bytes))
    return t("install.proposal_memory", gpu=gib_text(est.gpu_total), gpu_budget=gib_text(budget.gpu_bytes),
             ram=gib_text(est.host_total), ram_budget=gib_text(budget.ram_bytes))


def run(args: argparse.Namespace) -> int:
    answers = read_answers(args.answers) if getattr(args, "answers", None) else {}
    request, home_arg = _request(args, answers)
    home = resolve_home(home_arg)
    console.set_verbose(bool(getattr(args, "verbose", False)))
    unattended = bool(args.yes or getattr(args, "answers", None))
    interactive = not unattended and stdin_is_terminal()  # a closed stdin (<&-) is no terminal either

    def confirm(proposal: Proposal) -> bool:
        if not unattended and not interactive:
            raise UsageError(t("install.err_no_tty"), t("install.hint_no_tty"))
        show_proposal(proposal, home.root)  # with --yes / --answers too: a log says what was installed, and why
        return unattended or ask_yes_no(t("install.question"), default=True)

    if request.model is not None and not getattr(args, "default", False) and request.hardware_file is None:
        added = _add_beside(home, request, unattended, interactive)
        if added is not None:
            return added
    outcome = install(home, request, confirm)
    if request.model is None and outcome.kind != "cancelled" and outcome.state is not None \
            and outcome.state.library:  # a rerun upgrades every installed model, each checked as the default is
        from bootstrap.install.library import refresh_library

        refresh_library(home, verify_timeout=request.verify_timeout)
    if outcome.kind == "cancelled":
        console.info(t("install.cancelled"))
    elif outcome.kind in ("installed", "upgraded", "verified", "switched", "relaunched"):
        console.out_ok(closing_line(outcome, home))
    return 0


def closing_line(outcome: InstallOutcome, home: Home) -> str:
    """The last line, saying what this run really did: installed, upgraded (and whether old files went), another
    default (the old one kept), the same files restarted with new settings, or everything checked again."""
    command = outcome.on_path.command if outcome.on_path is not None else "qwenkit"
    kind = outcome.kind
    if kind == "switched" and outcome.state is not None and outcome.previous is not None:
        return t("install.done_switched", home=home.root, model=outcome.state.server.alias,
                 old=outcome.previous.server.alias)
    if kind == "upgraded" and outcome.result is not None and not any(
            home.models_dir in p.parents or home.engines_dir in p.parents for p in outcome.result.removed):
        kind = "upgraded_nothing_removed"
    return t(f"install.done_{kind}", home=home.root, command=command)


def _add_beside(home: Home, request: InstallRequest, unattended: bool, interactive: bool) -> int | None:
    """MODEL is not this home's default model: it joins the others behind the same endpoint (``install/library``),
    the default keeps its place. None when MODEL is the default (then the pipeline upgrades it) or nothing is
    installed yet (then MODEL becomes the default)."""
    from bootstrap.install.library import add_model, names_default
    from bootstrap.record.state import load_state

    state = load_state(home)
    if state is None or names_default(state, request.model or ""):
        return None
    if request.host != DEFAULT_HOST or request.port is not None or request.ctx is not None:
        raise UsageError(t("library.err_server_options"), t("library.hint_server_options"))
    if request.keep_alive is not None:  # one keep-alive for the install's models (docs/loaded-models.md)
        raise UsageError(t("ps.err_keep_alive_beside"), t("ps.hint_keep_alive_beside"))

    def confirm(_summary: str) -> bool:
        if not unattended and not interactive:
            raise UsageError(t("install.err_no_tty"), t("install.hint_no_tty"))
        return unattended or ask_yes_no(t("install.question"), default=True)

    outcome = add_model(home, request.model or "", source=request.source, verify_timeout=request.verify_timeout,
                        confirm=confirm, preset=request.preset, clear_preset=request.clear_preset)
    if outcome.kind == "cancelled":
        console.info(t("install.cancelled"))
    return 0
