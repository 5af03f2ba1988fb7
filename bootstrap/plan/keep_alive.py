"""How long a model stays in memory after its last request: Ollama's ``keep_alive``, LM Studio's idle TTL.

The engine's own mechanism does the unloading: llama-server's ``--sleep-idle-seconds N`` (llama.cpp b11434
``common/arg.cpp``; ``tools/server/README.md`` "Sleeping on Idle"): after N seconds without a task the server frees
the model and its KV cache and keeps only its process and port; the next request loads it again. It works for one
model's server and for each child of the router (a ``sleep-idle-seconds`` line in the model's preset section).

The values are Ollama's (``OLLAMA_KEEP_ALIVE``, ``keep_alive``): a duration (``30s``, ``5m``, ``1h``, ``1h30m``,
a bare number of seconds), ``0`` (unload once the request is done: the engine's shortest sleep, 1 s, since it
refuses 0), and ``-1`` or ``never`` (keep it loaded). Seconds are what the record keeps; ``-1`` means never.

Default: 30 minutes (docs/loaded-models.md says why: an agent's pause between turns is often longer than Ollama's
5 minutes, and a sleep drops the prompt cache, so the next turn reprocesses the whole conversation, not only
reloads the weights; half an hour still gives the memory back to a game or CAD program the same afternoon).
"""

from __future__ import annotations

import re

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError

NEVER = -1
DEFAULT_KEEP_ALIVE_S = 30 * 60
MAX_KEEP_ALIVE_S = 365 * 24 * 3600  # a year: more is "never" by another name
_PART = re.compile(r"(\d+)(h|m|s)")
_UNITS = {"h": 3600, "m": 60, "s": 1}


def parse_keep_alive(text: str) -> int:
    """``--keep-alive`` as seconds (``NEVER`` for ``-1``/``never``); anything else is exit 2 with the forms."""
    value = text.strip().lower()
    if value in ("-1", "never", "-1s", "-1m"):
        return NEVER
    if value.isdigit():
        seconds = int(value)
    else:
        parts = _PART.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise UsageError(t("ps.err_keep_alive", value=text), t("ps.hint_keep_alive"))
        seconds = sum(int(n) * _UNITS[u] for n, u in parts)
    if seconds > MAX_KEEP_ALIVE_S:
        raise UsageError(t("ps.err_keep_alive", value=text), t("ps.hint_keep_alive"))
    return seconds


def effective(recorded: int | None) -> int:
    """The keep-alive in force: the recorded one, else the default."""
    return DEFAULT_KEEP_ALIVE_S if recorded is None else recorded


def sleep_seconds(keep_alive: int) -> int | None:
    """llama-server's ``--sleep-idle-seconds`` for a keep-alive; None: no flag (keep loaded). The engine refuses 0
    (``invalid value: cannot be 0``): "unload at once" is its shortest sleep, 1 s."""
    if keep_alive < 0:
        return None
    return max(1, keep_alive)


def keep_alive_text(keep_alive: int) -> str:
    """``30m``, ``1h30m``, ``45s``, ``0`` or ``never``: the form ``--keep-alive`` takes, for reports."""
    if keep_alive < 0:
        return "never"
    if keep_alive == 0:
        return "0"
    out, left = "", keep_alive
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            out += f"{left // size}{unit}"
            left %= size
    return out
