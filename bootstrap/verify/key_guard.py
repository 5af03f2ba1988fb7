"""Whether the server that answers requires the install's API key: read from what it was started with.

The check used to knock without the key and expect 401. llama-server logs every such refusal as ``W srv ...
unauthorized: Invalid API Key`` (b11434 ``tools/server/server-http.cpp``, ``middleware_validate_api_key``), so each
install, rerun and added model left lines in ``server.log`` that read like someone trying keys (issue 41). What the
knock proved is what the server was told, and the OS tells that without a request: the process holding the port
(``register/server_identity.py`` says it is ours; several models: the router the kit's front started) carries
``--api-key-file`` naming this home's key file, and that file holds a key (an empty file is an empty key, which
llama-server's check then accepts from every request). The router's children get the key file through
``LLAMA_ARG_API_KEY_FILE`` in the environment they inherit (docs/several-models.md): where the OS shows the
router's environment, it must name the same file. A command line the OS will not show (Wine reports no owners) is
checked the old way, with one request without the key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import psutil

from bootstrap.core.console import t
from bootstrap.core.errors import ServerError
from bootstrap.plan.launch_spec import CHILD_KEY_ENV, LaunchSpec
from bootstrap.register.server_identity import PortHolder, is_our_server

KEY_FLAG = "--api-key-file"


def engine_process(spec: LaunchSpec, holder: PortHolder) -> psutil.Process | None:
    """The llama-server behind the port: the holder itself, or (several models) the router its front started."""
    if holder.pid is None:
        return None
    try:
        proc = psutil.Process(holder.pid)
        if is_our_server(proc, spec):
            return proc
        return next((c for c in proc.children() if is_our_server(c, spec)), None)
    except (psutil.Error, OSError):
        return None


def _same_file(named: str, cwd: str, expected: Path) -> bool:
    path = Path(named) if os.path.isabs(named) else Path(cwd, named)
    try:
        return os.path.samefile(path, expected)
    except OSError:
        return False


def guards_key(spec: LaunchSpec, holder: PortHolder) -> bool | None:
    """True: started with this home's (non-empty) key file; False: not; None: the OS does not say."""
    proc = engine_process(spec, holder)
    if proc is None:
        return None
    try:
        argv, cwd = proc.cmdline(), proc.cwd()
    except (psutil.Error, OSError):
        return None
    named = [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == KEY_FLAG]
    if not named or not _same_file(named[-1], cwd, spec.api_key_file):
        return False
    try:
        if not spec.api_key_file.read_text(encoding="utf-8").strip():
            return False
    except OSError:
        return False
    if spec.router:
        try:
            inherited = proc.environ().get(CHILD_KEY_ENV)
        except (psutil.Error, OSError):
            return True  # the router's own key is checked; its environment is not shown here
        return inherited is not None and _same_file(inherited, cwd, spec.api_key_file)
    return True


def require_key_guard(spec: LaunchSpec, holder: PortHolder, knock: Callable[[], int]) -> None:
    """``ServerError`` (exit 6) unless the server requires the key; ``knock`` (a request without the key, its HTTP
    status) only where the OS does not show how the server was started."""
    guarded = guards_key(spec, holder)
    if guarded is None:
        status = knock()
        if status == 401:
            return
        raise ServerError(t("verify.err_no_key_check", status=status), t("verify.hint_no_key_check"))
    if not guarded:
        raise ServerError(t("verify.err_no_key_file"), t("verify.hint_no_key_check"))

