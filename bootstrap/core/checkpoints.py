"""Named steps of the installer, where the crash-safety harness can kill it (``QWENKIT_KILL_AT``).

Every stage of an install or upgrade calls ``checkpoint(name)`` at the points where an interruption would leave the
home in a distinct state; the harness (``tests/e2e/test_install_kill.py``) sets ``QWENKIT_KILL_AT`` to one of ``POINTS``
and checks that a rerun completes with nothing corrupt. In normal use the variable is unset and this is a no-op.
"""

from __future__ import annotations

import os
import signal
import sys

from bootstrap.core import settings

# In pipeline order. A name here that no code reaches is caught by the harness (the run would not be killed).
POINTS: tuple[str, ...] = (
    "locked",               # the home lock is held, nothing read yet
    "recovered",            # an interrupted upgrade was rolled back (or there was none)
    "planned",              # detect + plan done, nothing fetched
    "engine-staged",        # the engine archive is extracted into staging, not yet renamed into place
    "engine-placed",        # the engine is in place, probed and self-tested; no model byte fetched yet
    "fetch-started",        # a model file is partly downloaded (first bytes on disk)
    "fetched",              # every model file verified (in place, or in staging for an upgrade)
    "venv-created",         # the runtime venv exists but its packages are not installed
    "venv-ready",           # the runtime venv is complete (stamp written)
    "tuned",                # llama-fit-params has checked the plan
    "old-stopped",          # the running server of the previous install was stopped
    "swap-journaled",       # the swap journal is written, no file moved yet
    "swap-half",            # the first changed file is moved aside, the new one not yet in place
    "swapped",              # every changed file is in place (the old ones kept aside)
    "rendered",             # run_qwen.sh / run_qwen.bat written for the new install
    "registered",           # the service definition is installed, the server not yet started
    "started",              # the new server was started, not yet verified
    "verified",             # the chat request succeeded, state.json not yet written
    "recorded",             # state.json written, old files not yet deleted
    "cleaned",              # old files and staging removed
)


def checkpoint(name: str) -> None:
    """Kill this process with SIGKILL (no cleanup, no finally) when ``QWENKIT_KILL_AT`` names this step."""
    if name not in POINTS:  # a typo would make a harness case pass without ever killing anything
        raise ValueError(f"unknown checkpoint {name!r}")
    if settings.kill_at() == name:
        sys.stderr.flush()
        if hasattr(signal, "SIGKILL"):
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(137)  # Windows: TerminateProcess-like, also skips every handler
