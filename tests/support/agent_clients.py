"""The real agent clients, pinned, installed from their registries into the test bed cache (never the repository).

npm: Claude Code (``@anthropic-ai/claude-code``), Codex (``@openai/codex``), OpenCode (``opencode-ai``), each with
``npm install --prefix`` into a folder of its own; their commands are in ``node_modules/.bin``. PyPI: Aider
(``aider-chat``) and the OpenAI Agents SDK (``openai-agents``), each in a venv of its own. A client is published
with an atomic rename once it runs (``--version`` names the pinned version), under a lock shared by every checkout,
so a killed provisioning run is simply run again. ``scripts/provision_testbed.py`` provisions them all up front.

CI reaches the npm and PyPI registries and nothing else: the clients' own traffic to their makers is switched off
by the settings ``qwenkit launch`` gives them (docs/agents.md), and the tests give each a home folder of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support import testbed


@dataclass(frozen=True)
class Pinned:
    """One client: its registry, package, pinned version and command (None: a library, no command)."""

    name: str
    registry: str  # "npm" or "pypi"
    package: str
    version: str
    command: str | None

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


PINNED: dict[str, Pinned] = {p.name: p for p in (
    Pinned("claude", "npm", "@anthropic-ai/claude-code", "2.1.332", "claude"),
    Pinned("codex", "npm", "@openai/codex", "0.171.0", "codex"),
    Pinned("opencode", "npm", "opencode-ai", "1.18.33", "opencode"),
    Pinned("aider", "pypi", "aider-chat", "0.86.2", "aider"),
    Pinned("openai-agents", "pypi", "openai-agents", "0.24.0", None),
)}
STAMP = ".provisioned"
# Seconds each client's provisioning took in this process (provision_testbed.py prints them).
timings: dict[str, float] = {}


def _bin_dir(root: Path, pinned: Pinned) -> Path:
    return root / "node_modules" / ".bin" if pinned.registry == "npm" else root / "venv" / "bin"


def _runs(root: Path, pinned: Pinned) -> bool:
    """The client starts and names its pinned version (a library: its venv imports it)."""
    bin_dir = _bin_dir(root, pinned)
    if pinned.command is None:
        argv = [str(bin_dir / "python"), "-c", "import agents, importlib.metadata as m; "
                "print(m.version('openai-agents'))"]
    else:
        argv = [str(bin_dir / pinned.command), "--version"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              env={**os.environ, "HOME": str(root)})
    except OSError:
        return False
    return proc.returncode == 0 and pinned.version in proc.stdout + proc.stderr


def _install(pinned: Pinned, staging: Path) -> None:
    if pinned.registry == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not installed: the agent-client tests need Node.js and npm")
        subprocess.run([npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save",
                        "--loglevel", "error", f"{pinned.package}@{pinned.version}"],
                       check=True, stdout=subprocess.DEVNULL, timeout=1800)
        return
    subprocess.run([sys.executable, "-m", "venv", str(staging / "venv")], check=True, timeout=300)
    subprocess.run([str(staging / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", f"{pinned.package}=={pinned.version}"],
                   check=True, stdout=subprocess.DEVNULL, timeout=1800)


def client_dir(name: str) -> Path:
    """The folder holding the pinned client ``name`` (provisioned on first use): its commands are in
    ``bin_dir(name)``. A venv's scripts name their interpreter by absolute path, so a client is installed where it
    stays and published by a stamp written once it runs; a folder without the stamp is a killed run's, redone."""
    pinned = PINNED[name]
    final = testbed.cache_dir() / "agents" / pinned.key
    stamp = final / STAMP
    if stamp.is_file():
        return final
    with testbed.cache_lock(f"agent-{pinned.name}"):
        if stamp.is_file():
            return final
        start = time.perf_counter()
        shutil.rmtree(final, ignore_errors=True)
        final.mkdir(parents=True)
        _install(pinned, final)
        if not _runs(final, pinned):
            raise RuntimeError(f"{pinned.package}=={pinned.version} was installed but does not run here")
        stamp.write_text(f"{pinned.package}=={pinned.version}\n", encoding="utf-8")
        timings[pinned.name] = round(time.perf_counter() - start, 1)
    return final


def bin_dir(name: str) -> Path:
    """The folder of the pinned client's command (or the library's venv ``bin``)."""
    return _bin_dir(client_dir(name), PINNED[name])


def provision_all() -> dict[str, str]:
    """Every pinned client, provisioned: name → its folder."""
    return {name: str(client_dir(name)) for name in PINNED}
