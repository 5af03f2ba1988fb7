"""What every client the kit starts has in common: its name, where it comes from, what it is told, and the file
``--config`` edits. Each client module (``claude_code``, ``codex``, ``opencode``, ``aider``) fills these in from
its own documentation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bootstrap.agents.target import Target
from bootstrap.agents.text_edits import Edit, apply

# Coding agents want a long context: Ollama's integration docs ask for at least 64k tokens for them
# (docs.ollama.com/integrations, "ollama launch": "context length of at least 64000 tokens").
AGENT_CTX = 65536
# Room left for the answer above the client's first request: a context that cannot hold the first request and an
# answer of this size is refused, not silently cut.
ANSWER_ROOM = 4096
MARKER = "qwenkit launch {client} --config (qwenkit launch {client} --restore takes this back)"


@dataclass(frozen=True)
class ConfigPlan:
    """What ``--config`` changes in a client's own config file: its new text, and the edits that made it (in the
    order made; ``text_edits.undo`` takes them back in reverse)."""

    path: Path
    skeleton: str  # the text the kit starts from when there is no file yet
    text: str
    edits: tuple[Edit, ...]
    key_in_env: bool = False  # the client then reads the key from QWENKIT_API_KEY, which the user sets


def edited(base: str, *batches: list[Edit]) -> tuple[str, tuple[Edit, ...]]:
    """``base`` after each batch of edits in turn (a batch's offsets refer to the text before it), and every edit
    in the order made."""
    text, made = base, []
    for batch in batches:
        text = apply(text, batch)
        made += batch
    return text, tuple(made)


class AgentClient:
    """A client the kit finds, points at a ``Target`` and starts (or configures). Subclasses set the fields and
    override what they tell the client."""

    name = ""  # the CLIENT word of ``qwenkit launch``
    title = ""  # how its makers name it
    programs: tuple[str, ...] = ()  # command names on PATH
    package = ""  # the npm or PyPI package
    installer = "npm"  # "npm" or "pip"
    python = ""  # pip: the newest Python version the package installs on
    npm_bin = ""  # the package's bin file (what npm's Windows shim runs)
    headless: tuple[str, ...] = ()  # the arguments that run one prompt and exit (for the docs and --print)
    first_request_tokens = 0  # its first request, measured on the test bed (docs/agents.md)
    measured_version = ""  # the client version those tokens were measured with
    user_tunable: frozenset[str] = frozenset()  # variables the user's own environment may set instead of the kit
    configurable = True  # it has a config file ``--config`` edits (``config_path``, ``config_plan``)
    uses_tools = True  # its requests carry tools: on a model that cannot take them, every request fails
    unset: tuple[str, ...] = ()  # variables removed from the client's environment (they would override ours)

    def min_ctx(self) -> int:
        """The smallest context the client can work in: its first request and an answer."""
        return self.first_request_tokens + ANSWER_ROOM

    def env(self, target: Target) -> dict[str, str]:
        """Variables the client is started with (the key among them where the client reads it from one)."""
        return {}

    def args(self, target: Target, files: Path, told: Mapping[str, str] | None = None) -> list[str]:
        """Arguments before the user's own (settings on the command line; never the key). ``files``: an owner-only
        folder in the home where the client may be given a file the kit writes; ``told``: the environment the client
        is started with (``env``'s variables as they are given, a user's own output cap kept)."""
        return []

    def run_files(self, files: Path) -> tuple[Path, ...]:
        """Files ``args`` wrote for this run alone, removed when the client has ended."""
        return ()

    def config_path(self, env: Mapping[str, str], user_home: Path) -> Path:
        """The client's own user config file (only where ``configurable``)."""
        raise NotImplementedError

    def config_plan(self, text: str | None, target: Target, path: Path) -> ConfigPlan:
        """The edits ``--config`` makes to the config file holding ``text`` (None: no file yet)."""
        raise NotImplementedError

    def install_lines(self, system: str) -> list[str]:
        """The command lines that install it on ``system``, the usual one first (for the missing-client message and
        the docs). A Python program goes into a venv of its own with pipx or uv: ``pip install --user`` is refused
        by the system Python of Debian 12, Ubuntu 23.04 and later (PEP 668 "externally-managed-environment"), and
        the newest Python may be newer than the program allows (``python``), which uv fetches."""
        if self.installer == "pip":
            return [f"pipx install {self.package}", f"uv tool install --python {self.python} {self.package}"]
        return [f"npm install -g {self.package}"]

    def context_tokens(self, target: Target) -> int | None:
        """The context the client is told: the server's, never more."""
        return target.ctx


def output_cap(ctx: int | None, default: int) -> int:
    """Tokens one answer may take: the client's ``default``, but no more than a quarter of the context (an answer
    that fills the window leaves no room for the next turn)."""
    if ctx is None:
        return default
    return max(1024, min(default, ctx // 4))
