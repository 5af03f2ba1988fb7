"""The ``qwenkit`` command line (DESIGN.md §2): parsing, dispatch, and the one place errors become exit codes.

Each command is a thin layer over the pipeline stages and lives in ``bootstrap/app/commands/<name>.py`` with a
``run(args) -> int``; ``COMMANDS`` maps names to those modules, imported only when their command runs.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import traceback
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from bootstrap import __version__
from bootstrap.core import console, settings
from bootstrap.core.console import join_sentences, t
from bootstrap.core.errors import ExitCode, QwenKitError, UsageError, exit_code_for
from bootstrap.core.fs_errors import os_error
from bootstrap.core.suggest import did_you_mean

if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

# command name → module under bootstrap.app.commands implementing run(args).
COMMANDS: dict[str, str] = {
    "doctor": "doctor",
    "plan": "plan",
    "models": "models",
    "download": "download",
    "install": "install",
    "status": "status",
    "logs": "logs",
    "service": "service",
    "bundle": "bundle",
    "remove": "remove",
    "uninstall": "uninstall",
    "team": "team",
    "launch": "launch",
    "run": "run",
    "chat": "run",
    "selfcheck": "selfcheck",
    "supervise": "supervise",
    "front": "front",
    "cache-keeper": "cache_keeper",
    "ps": "ps",
    "stop": "stop",
}
HIDDEN = frozenset({"selfcheck", "supervise", "front", "cache-keeper"})

# argparse's own error sentences (CPython Lib/argparse.py, the same since 3.9 apart from how choices are quoted),
# matched so each can be said in the UI language; anything else passes through in English.
_ARGUMENT = re.compile(r"argument (?P<arg>[^:]+): (?P<detail>.*)", re.S)
_INVALID_CHOICE = re.compile(r"invalid choice: (?P<value>'.*?'|\S+) \(choose from (?P<choices>.*)\)", re.S)
_INVALID_VALUE = re.compile(r"invalid (?P<type>\w+) value: (?P<value>.*)", re.S)
_CJK_TITLE = re.compile(r"(?m)^(\s*\S*[\u4e00-\u9fff]):$")  # a section title of the help in Chinese
_AMBIGUOUS = re.compile(r"ambiguous option: (?P<option>\S+) could match (?P<matches>.*)", re.S)
_EXPLICIT = re.compile(r"ignored explicit argument (?P<value>.*)", re.S)
_REQUIRED = "the following arguments are required: "
_UNRECOGNIZED = "unrecognized arguments: "
_EXPECTED_ONE = "expected one argument"


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def usage_error(message: str) -> UsageError:
    """argparse's English ``message`` as a localized ``UsageError``; a mistyped command or choice suggests the
    closest names (``core.suggest``)."""
    usage = t("hint.usage")
    if message.startswith(_REQUIRED):
        return UsageError(t("cli.err_required", args=message[len(_REQUIRED):]), usage)
    if message.startswith(_UNRECOGNIZED):
        return UsageError(t("cli.err_unrecognized", args=message[len(_UNRECOGNIZED):]), usage)
    ambiguous = _AMBIGUOUS.fullmatch(message)
    if ambiguous:
        return UsageError(t("cli.err_ambiguous", option=ambiguous["option"], matches=ambiguous["matches"]), usage)
    match = _ARGUMENT.fullmatch(message)
    if match is None:
        return UsageError(message, usage)
    arg, detail = match["arg"], match["detail"]
    choice = _INVALID_CHOICE.fullmatch(detail)
    if choice:
        value = _unquote(choice["value"])
        choices = [c for c in (_unquote(c) for c in choice["choices"].split(",")) if c and c not in HIDDEN]
        suggestion = did_you_mean(value, choices)
        hint = join_sentences(suggestion, usage) if suggestion else usage
        if arg == "COMMAND":
            return UsageError(t("cli.err_unknown_command", value=value), hint)
        separator = "、" if console.language() == "zh" else ", "  # no half-width comma inside Chinese
        return UsageError(t("cli.err_invalid_choice", arg=arg, value=value, choices=separator.join(choices)), hint)
    explicit = _EXPLICIT.fullmatch(detail)
    if explicit:
        return UsageError(t("cli.err_explicit", arg=arg, value=_unquote(explicit["value"])), usage)
    if detail == _EXPECTED_ONE:
        return UsageError(t("cli.err_expected_one", arg=arg), usage)
    value = _INVALID_VALUE.fullmatch(detail)
    if value:
        kind = value["type"]
        kind = t(f"cli.type_{kind}") if kind in ("int", "float") else kind
        return UsageError(t("cli.err_invalid_value", arg=arg, type=kind, value=_unquote(value["value"])), usage)
    return UsageError(t("cli.err_argument", arg=arg, detail=detail), usage)


class _Formatter(argparse.HelpFormatter):
    """Help text whose "usage:" prefix follows the UI language."""

    def add_usage(self, usage: str | None, actions: Iterable[argparse.Action],
                  groups: Iterable[argparse._MutuallyExclusiveGroup], prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, t("cli.usage_prefix") if prefix is None else prefix)

    def format_help(self) -> str:
        """argparse ends each section title with an ASCII colon; after Chinese text it is the full-width one."""
        return _CJK_TITLE.sub("\\1：", super().format_help())


class _Parser(argparse.ArgumentParser):
    """argparse in the UI language that reports bad usage as a ``UsageError`` (one line + hint, exit 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        kwargs["add_help"] = False
        super().__init__(*args, **kwargs)
        self._positionals.title = t("cli.positionals")
        self._optionals.title = t("cli.options")
        self.add_argument("-h", "--help", action="help", help=t("cli.help"))

    def error(self, message: str) -> NoReturn:
        raise usage_error(message)

    def _print_message(self, message: str, file: Any = None) -> None:
        """``--help`` and ``--version`` (stdout) or the help after a missing command (stderr), through the console:
        ``qwenkit --help | head -1`` ends as quietly as any other output cut short."""
        if message:
            (console.info if file is sys.stderr else console.out)(message.rstrip("\n"))


def build_parser() -> argparse.ArgumentParser:
    """The whole command-line contract (DESIGN.md §2), one helper per command, in the order of ``--help``."""
    parser = _Parser(prog="qwenkit", description=t("cli.description"), epilog=t("cli.epilog"))
    parser.add_argument("-V", "--version", action="version", version=f"qwenkit {__version__}",
                        help=t("cli.version"))
    parser.add_argument("--debug", action="store_true", help=t("cli.debug"))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in (_add_doctor, _add_plan, _add_models, _add_download, _add_install, _add_status, _add_logs, _add_service,
                _add_bundle, _add_remove, _add_uninstall, _add_team, _add_launch, _add_ps, _add_stop, _add_run):
        add(sub)
    # Hidden: used by the wheel and frozen-build tests (and later the setup's first-start check).
    sub.add_parser("selfcheck")
    # Hidden: the start-script install's supervisor, started by ``qwenkit service start`` (register/supervisor).
    supervise = sub.add_parser("supervise")
    supervise.add_argument("--home", required=True)
    supervise.add_argument("script")
    # Hidden: several models' front before llama-server's router, started by the start script
    # (register/router_front).
    front = sub.add_parser("front")
    front.add_argument("--host", required=True)
    front.add_argument("--port", type=int, required=True)
    front.add_argument("--model", required=True)
    front.add_argument("--system-prompts")
    front.add_argument("router", nargs=argparse.REMAINDER)
    # Hidden: the prompt cache's restore and periodic save of a systemd install, started by the unit's
    # ExecStartPost= (register/cache_keeper).
    keeper = sub.add_parser("cache-keeper")
    keeper.add_argument("--home", required=True)
    keeper.add_argument("--detach", action="store_true")
    sub._choices_actions = [a for a in sub._choices_actions if a.dest not in HIDDEN]
    return parser


def _command(sub: Subcommands, name: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=t(f"cmd.{name}"), description=t(f"cmd.{name}"))


def _home(parser: argparse.ArgumentParser) -> None:
    """``--home DIR``: the same option, with the same meaning, on every command that reads or changes a home
    (DESIGN.md §2); ``dispatch`` puts it in force for the whole run, as ``QWENKIT_HOME`` would be."""
    parser.add_argument("--home", metavar="DIR", help=t("arg.home"))


def _add_doctor(sub: Subcommands) -> None:
    doctor = _command(sub, "doctor")
    _home(doctor)
    doctor.add_argument("--json", action="store_true", help=t("cli.json"))


def _add_plan(sub: Subcommands) -> None:
    plan = _command(sub, "plan")
    plan.add_argument("model", nargs="?", metavar="MODEL", help=t("arg.model"))
    plan.add_argument("--hardware", metavar="FILE.json", help=t("arg.hardware"))
    plan.add_argument("--ctx", type=int, metavar="N", help=t("arg.ctx"))
    plan.add_argument("--rpc", metavar="IP:PORT,...", help=t("arg.plan_rpc"))
    _home(plan)
    plan.add_argument("--json", action="store_true", help=t("cli.json"))


def _add_models(sub: Subcommands) -> None:
    models = _command(sub, "models")
    models.add_argument("--hardware", metavar="FILE.json", help=t("arg.hardware"))
    _home(models)
    models.add_argument("--json", action="store_true", help=t("cli.json"))


def _add_download(sub: Subcommands) -> None:
    download = _command(sub, "download")
    download.add_argument("model", metavar="MODEL", help=t("arg.model"))
    download.add_argument("--source", default="auto", metavar="SRC", help=t("arg.source"))
    download.add_argument("--dest", metavar="DIR", help=t("arg.dest"))
    _home(download)


def _add_install(sub: Subcommands) -> None:
    install = _command(sub, "install")
    install.add_argument("model", nargs="?", metavar="MODEL", help=t("arg.model"))
    install.add_argument("--source", metavar="SRC", help=t("arg.source"))
    install.add_argument("--bundle", metavar="DIR|URL", help=t("arg.bundle"))
    install.add_argument("--home", metavar="DIR", help=t("arg.home"))
    install.add_argument("--host", default="127.0.0.1", metavar="H", help=t("arg.host"))
    install.add_argument("--port", type=int, metavar="P", help=t("arg.port"))
    install.add_argument("--no-service", action="store_true", help=t("arg.no_service"))
    install.add_argument("--yes", "-y", action="store_true", help=t("arg.yes"))
    install.add_argument("--answers", metavar="FILE", help=t("arg.answers"))
    install.add_argument("--thinking", choices=["on", "off"], help=t("arg.thinking"))
    install.add_argument("--ctx", metavar="N|auto", help=t("options.arg_ctx"))
    install.add_argument("--verify", action="store_true", help=t("arg.verify"))
    install.add_argument("--no-venv", action="store_true", help=t("arg.no_venv"))
    install.add_argument("--hardware", metavar="FILE.json", help=t("arg.install_hardware"))
    install.add_argument("--rpc", metavar="IP:PORT,...", help=t("arg.install_rpc"))
    install.add_argument("--verbose", "-v", action="store_true", help=t("arg.verbose"))
    install.add_argument("--default", action="store_true", help=t("arg.install_default"))
    install.add_argument("--keep-alive", metavar="DURATION", help=t("ps.arg_keep_alive"))  # issue 40 (ps)
    _add_preset_options(install)


def _add_preset_options(install: argparse.ArgumentParser) -> None:
    """A model's preset (``plan/presets.py``, docs/presets.md): values are text here, checked there (one line)."""
    install.add_argument("--system", metavar="TEXT", help=t("arg.system"))
    for name in ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty"):
        install.add_argument("--" + name.replace("_", "-"), dest=name, metavar="X", help=t(f"arg.{name}"))
    install.add_argument("--preset", metavar="FILE", help=t("arg.preset"))
    install.add_argument("--clear-preset", action="store_true", help=t("arg.clear_preset"))


def _add_status(sub: Subcommands) -> None:
    status = _command(sub, "status")
    _home(status)
    status.add_argument("--json", action="store_true", help=t("cli.json"))
    status.add_argument("--open", action="store_true", help=t("arg.open_web"))


def _add_ps(sub: Subcommands) -> None:
    ps = _command(sub, "ps")
    _home(ps)
    ps.add_argument("--json", action="store_true", help=t("cli.json"))


def _add_stop(sub: Subcommands) -> None:
    stop = _command(sub, "stop")
    stop.add_argument("model", metavar="MODEL", help=t("ps.arg_stop_model"))
    _home(stop)


def _add_logs(sub: Subcommands) -> None:
    logs = _command(sub, "logs")
    logs.add_argument("-f", "--follow", action="store_true", help=t("arg.logs_follow"))
    logs.add_argument("-n", "--lines", type=int, metavar="N", help=t("arg.logs_lines"))
    logs.add_argument("--model", metavar="NAME", help=t("arg.logs_model"))
    _home(logs)


def _add_service(sub: Subcommands) -> None:
    service = _command(sub, "service")
    service.add_argument("action", choices=["install", "start", "stop", "restart", "status", "uninstall"],
                         metavar="ACTION", help=t("arg.service_action"))
    _home(service)
    service.add_argument("--json", action="store_true", help=t("cli.json"))


def _add_bundle(sub: Subcommands) -> None:
    """``bundle create`` and ``bundle verify``."""
    bundle = _command(sub, "bundle")
    actions = bundle.add_subparsers(dest="bundle_action", metavar="ACTION", required=True, parser_class=_Parser,
                                    help=t("arg.bundle_action"))
    create = actions.add_parser("create", help=t("cmd.bundle_create"), description=t("cmd.bundle_create"))
    create.add_argument("models", nargs="*", metavar="MODEL", help=t("arg.bundle_models"))
    create.add_argument("--out", required=True, metavar="DIR", help=t("arg.out"))
    create.add_argument("--platform", action="append", metavar="P", help=t("arg.platform"))
    create.add_argument("--quant", action="append", metavar="Q", help=t("arg.bundle_quant"))
    create.add_argument("--setup", action="append", metavar="FILE", help=t("arg.bundle_setup"))
    create.add_argument("--python", action="append", metavar="X.Y", help=t("arg.bundle_python"))
    create.add_argument("--reuse", action="append", metavar="DIR", help=t("arg.bundle_reuse"))
    create.add_argument("--source", default="auto", metavar="SRC", help=t("arg.source"))
    create.add_argument("--home", metavar="DIR", help=t("arg.home"))
    verify = actions.add_parser("verify", help=t("cmd.bundle_verify"), description=t("cmd.bundle_verify"))
    verify.add_argument("dir", metavar="DIR|URL", help=t("arg.dir"))
    verify.add_argument("--json", action="store_true", help=t("cli.json"))


def _add_remove(sub: Subcommands) -> None:
    remove = _command(sub, "remove")
    remove.add_argument("name", metavar="NAME", help=t("arg.remove_name"))
    _home(remove)
    remove.add_argument("--yes", "-y", action="store_true", help=t("arg.yes"))
    remove.add_argument("--json", action="store_true", help=t("cli.json"))


def _add_uninstall(sub: Subcommands) -> None:
    uninstall = _command(sub, "uninstall")
    uninstall.add_argument("--keep-models", action="store_true", help=t("arg.keep_models"))
    _home(uninstall)
    uninstall.add_argument("--yes", "-y", action="store_true", help=t("arg.yes"))
    uninstall.add_argument("--json", action="store_true", help=t("cli.json"))


def _add_team(sub: Subcommands) -> None:
    """``team add-member|remove-member|refresh|add-user|remove-user|rotate-key|users|start|stop|status|worker-start|
    worker-stop`` (docs/team-endpoint.md)."""
    team = _command(sub, "team")
    actions = team.add_subparsers(dest="team_action", metavar="ACTION", required=True, parser_class=_Parser,
                                  help=t("arg.team_action"))

    def action(name: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=t(f"cmd.team_{name.replace('-', '_')}"),
                                    description=t(f"cmd.team_{name.replace('-', '_')}"))
        parser.add_argument("--home", metavar="DIR", help=t("arg.home"))
        return parser

    add_member = action("add-member")
    add_member.add_argument("url", metavar="URL", help=t("arg.team_url"))
    add_member.add_argument("--key-file", required=True, metavar="FILE", help=t("arg.team_key_file"))
    add_member.add_argument("--name", metavar="NAME", help=t("arg.team_name"))
    add_member.add_argument("--slots", type=int, metavar="N", help=t("arg.team_slots"))
    action("remove-member").add_argument("member", metavar="NAME|URL", help=t("arg.team_member"))
    action("refresh")
    action("add-user").add_argument("name", metavar="NAME", help=t("arg.team_user"))
    action("remove-user").add_argument("name", metavar="NAME", help=t("arg.team_user"))
    action("rotate-key").add_argument("name", metavar="NAME", help=t("arg.team_user"))
    action("users").add_argument("--json", action="store_true", help=t("cli.json"))
    start = action("start")
    start.add_argument("--host", metavar="H", help=t("arg.team_host"))
    start.add_argument("--port", type=int, metavar="P", help=t("arg.team_port"))
    start.add_argument("--nginx", metavar="PATH", help=t("arg.team_nginx"))
    start.add_argument("--default-model", metavar="MODEL", help=t("arg.team_default_model"))
    action("stop")
    action("status").add_argument("--json", action="store_true", help=t("cli.json"))
    worker = action("worker-start")
    worker.add_argument("--host", required=True, metavar="H", help=t("arg.rpc_host"))
    worker.add_argument("--port", type=int, default=50052, metavar="P", help=t("arg.rpc_port"))
    worker.add_argument("--accept-rpc-risk", action="store_true", help=t("arg.rpc_accept"))
    action("worker-stop")


def _add_launch(sub: Subcommands) -> None:
    """``launch CLIENT [--model M] [--config|--restore|--print] [--yes] [--endpoint URL [--key-file FILE]]
    [-- ARGS...]`` (docs/agents.md)."""
    launch = sub.add_parser("launch", help=t("cmd.launch"), description=t("cmd.launch"), epilog=t("arg.launch_args"))
    launch.add_argument("client", metavar="CLIENT", help=t("arg.launch_client"))
    launch.add_argument("--model", metavar="M", help=t("arg.launch_model"))
    launch.add_argument("--config", action="store_true", help=t("arg.launch_config"))
    launch.add_argument("--restore", action="store_true", help=t("arg.launch_restore"))
    launch.add_argument("--print", action="store_true", dest="print_recipe", help=t("arg.launch_print"))
    launch.add_argument("--yes", "-y", action="store_true", help=t("arg.yes"))
    launch.add_argument("--endpoint", metavar="URL", help=t("arg.launch_endpoint"))
    launch.add_argument("--key-file", metavar="FILE", help=t("arg.launch_key_file"))
    launch.add_argument("--home", metavar="DIR", help=t("arg.home"))


def _add_run(sub: Subcommands) -> None:
    """``run [MODEL] [QUESTION...] [--think on|off] [--hide-thinking] [--verbose]``, alias ``chat``
    (docs/terminal-chat.md)."""
    run = sub.add_parser("run", aliases=["chat"], help=t("cmd.run"), description=t("cmd.run"))
    run.add_argument("model", nargs="?", metavar="MODEL", help=t("arg.run_model"))
    run.add_argument("prompt", nargs="*", metavar="QUESTION", help=t("arg.run_prompt"))
    run.add_argument("--think", choices=["on", "off"], help=t("arg.run_think"))
    run.add_argument("--hide-thinking", action="store_true", help=t("arg.run_hide_thinking"))
    run.add_argument("--verbose", "-v", action="store_true", help=t("arg.run_verbose"))
    _home(run)


def client_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """``launch … -- ARGS``: what follows the first ``--`` goes to the client untouched (argparse would otherwise
    read ``-p`` or ``--model`` there as launch's own options)."""
    if "--" in argv and "launch" in argv[:argv.index("--")]:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1:]
    return argv, []


def dispatch(args: argparse.Namespace) -> int:
    """Run the command's module; ``--home`` in force for everything it calls (``resolve_home()`` without an
    argument reads it, as it reads ``QWENKIT_HOME``)."""
    module = importlib.import_module(f"bootstrap.app.commands.{COMMANDS[args.command]}")
    home = getattr(args, "home", None)
    if not home:
        return int(module.run(args))
    from bootstrap.core.home import resolve_home

    chosen = str(resolve_home(home).root)  # checked as --home (control characters, length) before it is used
    with settings.overridden({"QWENKIT_HOME": chosen}):
        return int(module.run(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``qwenkit`` and ``python -m bootstrap``: never lets a traceback reach the user."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in client_args(argv)[0]  # a client's own --debug after -- is not ours
    try:
        parser = build_parser()
        argv, passed = client_args(argv)
        args = parser.parse_args(argv)
        if args.command == "launch":
            args.args = passed
        if args.command is None:
            parser.print_help(sys.stderr)
            raise UsageError(t("err.no_command"), t("hint.usage"))
        return dispatch(args)
    except console.OutputClosed:  # the reader of stdout stopped reading (| head): nothing to say, nobody to say it to
        return console.OUTPUT_CLOSED_EXIT
    except QwenKitError as exc:
        if debug:
            traceback.print_exc()
        console.error(exc.message, exc.hint)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        console.info(t("err.interrupted"))  # the user's choice, not an error
        return int(ExitCode.INTERRUPTED)
    except OSError as exc:  # a filesystem failure no stage mapped: still the user's disk, not a bug
        mapped = os_error(exc)
        if mapped is None:
            return _internal(exc, debug)
        if debug:
            traceback.print_exc()
        console.error(mapped.message, mapped.hint)
        return int(mapped.exit_code)
    except Exception as exc:  # the last line of defence: a bug, reported in one line unless --debug
        return _internal(exc, debug)


def _internal(exc: BaseException, debug: bool) -> int:
    """A bug: one line (the traceback only with ``--debug``), exit 1."""
    if debug:
        traceback.print_exc()
    console.error(t("err.internal", detail=f"{type(exc).__name__}: {exc}"), t("hint.internal"))
    return int(exit_code_for(exc))
