"""``qwenkit launch CLIENT``: find the client, point it at this install (or a team gateway), check that the model
and its context can take it, and start it with the user's arguments — or write its own config, or take that back.

The order is what a user needs to hear first: a client that is not installed is said before anything else (with
the line that installs it); then whether the server answers with the key; then whether the installed model can
take tools at all (the install's tool-call proof) and whether its context holds what the client sends. Only then
does the client start, with the kit's settings in its environment and on its command line, never the key in an
argument. Its exit code is the command's.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bootstrap.agents import aider, claude_code, codex, opencode, recipes, written
from bootstrap.agents.base import AgentClient
from bootstrap.agents.needs import ContextCheck, check_context
from bootstrap.agents.programs import Program, find_program
from bootstrap.agents.readiness import tools_refusal
from bootstrap.agents.target import Target, endpoint_key, endpoint_target, install_target, served
from bootstrap.core import console, settings
from bootstrap.core.console import join_names, t
from bootstrap.core.errors import QwenKitError, ServerError, UnsupportedMachine, UsageError
from bootstrap.core.home import Home
from bootstrap.core.prompts import ask_yes_no, stdin_is_terminal

CLIENTS: dict[str, AgentClient] = {c.name: c for c in (claude_code.CLIENT, codex.CLIENT, opencode.CLIENT,
                                                        aider.CLIENT)}
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class LaunchRequest:
    """``qwenkit launch``'s arguments, parsed."""

    client: str
    model: str | None = None
    endpoint: str | None = None
    key_file: str | None = None
    yes: bool = False
    args: tuple[str, ...] = ()


def client_named(name: str) -> AgentClient:
    client = CLIENTS.get(name)
    if client is None:
        raise UsageError(t("launch.err_client", name=name, clients=join_names(CLIENTS)), t("launch.hint_print"))
    return client


def target_for(home: Home, request: LaunchRequest, env: Mapping[str, str] | None = None) -> Target:
    """The install of ``home``, or the ``--endpoint`` with the user's key."""
    if request.endpoint:
        return endpoint_target(request.endpoint, endpoint_key(request.key_file, dict(env or os.environ)),
                               request.model)
    if request.key_file:
        raise UsageError(t("launch.err_key_file_alone"), t("launch.hint_endpoint"))
    return install_target(home, request.model)


def find_client(client: AgentClient, env: Mapping[str, str] | None = None, system: str | None = None) -> Program:
    """The client's program on PATH; exit 3 with the line that installs it when it is not there."""
    env = os.environ if env is None else env
    system = system or platform.system()
    found = find_program(client.programs, client.package, client.npm_bin, search_path=settings.search_path(env),
                         system=system, pathext=env.get("PATHEXT", ""))
    if found is None:
        first, *others = client.install_lines(system)
        raise UnsupportedMachine(t("launch.err_missing", title=client.title, program=client.programs[0]),
                                 t(f"launch.hint_missing_{client.installer}", lines=first,
                                   other=others[0] if others else "", package=client.package,
                                   python=client.python))
    return found


def child_env(client: AgentClient, target: Target, base: Mapping[str, str]) -> dict[str, str]:
    """The client's environment: the user's, without what would override ours, with the kit's settings (a
    setting the user tunes themselves, such as an output cap, kept). A local server is never reached through the
    user's proxy."""
    env = {k: v for k, v in base.items() if k not in client.unset}
    for name, value in client.env(target).items():
        if name in client.user_tunable and base.get(name, "").strip():
            continue
        env[name] = value
    if target.via == "install":
        for name in ("NO_PROXY", "no_proxy"):
            present = [h.strip() for h in env.get(name, "").split(",") if h.strip()]
            env[name] = ",".join(present + [h for h in LOOPBACK if h not in present])
    return env


def _check_ready(client: AgentClient, target: Target, home: Home) -> ContextCheck:
    """Tools first (a model that cannot call them gives every request of a client that sends tools a 500), then
    the context."""
    refusal = tools_refusal(home, target) if target.via == "install" and client.uses_tools else None
    if refusal is not None:
        raise UsageError(t("launch.err_no_tools", title=client.title, model=target.model, reason=refusal),
                         t("launch.hint_no_tools"))
    check = check_context(client, target, home)
    if not check.ok:
        hint = check.verdict or t("launch.hint_ctx_endpoint")
        raise UsageError(t("launch.err_ctx", title=client.title, ctx=target.ctx, need=client.min_ctx(),
                           tokens=client.first_request_tokens), hint)
    if check.low:
        console.warn(t("launch.warn_ctx", title=client.title, ctx=target.ctx, want=check.need))
        if check.verdict:
            console.info(check.verdict)
    return check


def _exit_status(code: int) -> int:
    """A child killed by a signal as a shell reports it (128 + the signal)."""
    return 128 - code if code < 0 else code


def run_client(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Start the client in this terminal and wait for it; Ctrl+C reaches it (same process group) and it decides
    how to end, so the kit only waits on."""
    proc = subprocess.Popen(list(argv), env=dict(env))
    while True:
        try:
            return _exit_status(proc.wait())
        except KeyboardInterrupt:
            continue


def launch(home: Home, request: LaunchRequest) -> int:
    """Start the client against the target and return its exit code."""
    client = client_named(request.client)
    program = find_client(client)
    target = served(target_for(home, request))
    _check_ready(client, target, home)
    folder = written.private_dir(home)
    env = child_env(client, target, os.environ)
    try:
        argv = [*program.argv, *client.args(target, folder, env), *request.args]
        if any(target.key in word for word in argv):  # a process list shows arguments to every user of the machine
            raise QwenKitError(t("launch.err_key_in_argv"))
        ctx = target.ctx if target.ctx is not None else "?"
        console.info(t("launch.starting", title=client.title, url=target.base_url, model=target.model, ctx=ctx))
        return run_client(argv, env)
    finally:
        for path in client.run_files(folder):
            path.unlink(missing_ok=True)


def _confirm(question: str, yes: bool) -> bool:
    if yes:
        return True
    if not stdin_is_terminal():
        raise UsageError(t("launch.err_need_yes"), t("launch.hint_need_yes"))
    return ask_yes_no(question, default=True)


def configure(home: Home, request: LaunchRequest) -> int:
    """``--config``: write the client's own config file (what ``launch`` would tell it), recorded for
    ``--restore``; refused where ``launch`` would refuse to start the client."""
    client = client_named(request.client)
    if not client.configurable:
        raise UsageError(t("launch.err_no_config", title=client.title),
                         t("launch.hint_no_config", client=client.name))
    target = target_for(home, request)
    try:
        target = served(target)
    except ServerError as exc:
        if target.via != "install":
            raise
        console.warn(t("launch.warn_config_offline", reason=exc.message))  # the server's own words: no repeat
    _check_ready(client, target, home)  # a config the client would fail with is not written either
    path = written.real_path(client.config_path(os.environ, Path.home()))
    if written.recorded(home, client.name) is not None:  # a second --config replaces the first
        written.restore(home, client.name)
    before = written.read_config(path, client.name)
    try:
        plan = client.config_plan(before, target, path)
    except ValueError as exc:  # the file is not one the kit can edit safely: nothing written
        raise UsageError(t("launch.err_config_shape", path=path, reason=str(exc)),
                         t("launch.hint_config_shape", client=client.name)) from None
    if not plan.edits:
        console.out(t("launch.config_same", title=client.title, path=path))
        return 0
    if not _confirm(t("launch.confirm_config", title=client.title, path=path), request.yes):
        console.info(t("launch.cancelled"))
        return 0
    written.write(home, client.name, plan, before)
    console.out(t("launch.config_written", title=client.title, path=path, client=client.name))
    if plan.key_in_env:  # the install's key file, or the one the user named with --endpoint
        key_file = target.key_file or (Path(request.key_file).absolute() if request.key_file else None)
        console.out(recipes.key_note(client.title, client.programs[0], key_file))
    return 0


def take_back_all(home: Home) -> None:
    """Before an uninstall: what ``--config`` wrote for every client taken back, since the record goes with the home
    and the clients would keep pointing at a server that is gone (Claude Code's settings with its key). A file that
    cannot be given back is named, with what to do by hand, and the uninstall goes on."""
    def said(exc: QwenKitError) -> None:
        console.warn(exc.message)
        if exc.hint:
            console.info(exc.hint)

    try:
        names = written.recorded_clients(home)
    except QwenKitError as exc:
        names = ()
        said(exc)
    for name in names:
        try:
            restore(home, LaunchRequest(name))
        except QwenKitError as exc:
            said(exc)


def restore(home: Home, request: LaunchRequest) -> int:
    """``--restore``: take back what ``--config`` wrote for the client."""
    client = client_named(request.client)
    done = written.restore(home, client.name)
    if done is None:
        console.out(t("launch.restore_nothing", title=client.title))
    elif done.undone:
        console.out(t("launch.restored", title=client.title, path=done.entry.path))
    else:
        console.out(t("launch.restore_forgot", title=client.title, path=done.entry.path))
    return 0
