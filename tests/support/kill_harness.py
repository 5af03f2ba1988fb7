"""The crash-safety harness for ``qwenkit install``: kill the installer (at a named checkpoint or at a random time),
rerun it, and check that the home is exactly one complete, verified, serving install.

The installer runs as a real subprocess against the loopback hub (``install_bed``); the kill is a real SIGKILL
(``QWENKIT_KILL_AT`` makes the installer kill itself at a ``checkpoints.POINTS`` step, or the harness kills the
installer's whole process group after a seeded delay). Nothing in the product is mocked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil
import requests

from bootstrap.core.home import Home
from bootstrap.install import file_swap
from bootstrap.record.state import resolve_in_home
from bootstrap.register.managers import FallbackManager
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import MODEL_FILE, MODEL_REPO, InstallBed, serve_engine, write_chat_model


def sees_ctrl_c() -> None:
    """``preexec_fn`` for a child the test interrupts with SIGINT: SIGINT back to its default action.

    A signal ignored by the parent stays ignored across ``exec`` (POSIX ``execve``), and Python keeps an ignored
    SIGINT ignored instead of raising ``KeyboardInterrupt`` (``signal`` module docs). A test run from a background
    job of a non-interactive shell (``cmd &``, ``trap "" INT``; CI runners do this) would then send a Ctrl-C the
    child never sees, and the child would finish with exit 0. (``timeout`` hides this: it sets its own handler,
    which ``exec`` resets to the default.)
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


FRESH = "fresh"
UPGRADE = "upgrade"
# Where an upgrade stops serving the previous model (checkpoints.POINTS order): before it, the old server must answer.
OLD_STOPPED = "old-stopped"
TABLE_ENV = "QWENKIT_KILL_TABLE"  # harness configuration, not a product setting


@dataclass
class Revisions:
    """The two hub commits of the model repo: the first install's and the upgrade's (same name, other bytes)."""

    first: str
    second: str


@dataclass
class Row:
    """One line of the results table (JSON lines, see ``append_row``)."""

    scenario: str
    point: str  # a checkpoint name, or "random:<seed>@<delay>s"
    killed_rc: int | None = None
    old_server_answered: bool | str = "n/a"
    rerun_exit: int | None = None
    invariants_ok: bool = False
    rerun_seconds: float | None = None
    rerun_model_bytes: int | None = None  # model bytes the hub served during the rerun (header probes included)
    problems: list[str] = field(default_factory=list)


def make_bed(hub: LoopbackHub, engine_asset: Path, root: Path, wheels: Path | None = None) -> tuple[InstallBed,
                                                                                                   Revisions]:
    """A hub with the engine release and both revisions of the model repo, and a bed pinned to the first.

    The home's path has a space and Chinese characters, as a real user's may."""
    first = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "rev1" / MODEL_FILE)})
    second = hub.commit(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "rev2" / MODEL_FILE, seed=1)})
    return bed_for(hub, serve_engine(hub, engine_asset), root, first, wheels), Revisions(first, second)


def bed_for(hub: LoopbackHub, engine_url: str, root: Path, revision: str, wheels: Path | None = None,
            name: str = "我的 home") -> InstallBed:
    bed = InstallBed(hub, Home(root / name), root / f"catalog-{name.replace(' ', '_')}.toml", engine_url, wheels)
    bed.pin(revision)
    return bed


def install_args(port: int, *, venv: bool) -> tuple[str, ...]:
    return ("--port", str(port)) if venv else ("--port", str(port), "--no-venv")


def kill_at(bed: InstallBed, point: str, argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """The installer, told to SIGKILL itself at ``point`` (returncode -9 when it got there)."""
    return bed.install(*argv, QWENKIT_KILL_AT=point)


def kill_after(bed: InstallBed, argv: tuple[str, ...], delay: float) -> int:
    """The installer in its own process group, the whole group SIGKILLed after ``delay`` seconds (a server it
    started leads its own session and survives, as it would a real crash). Returns the exit status (0 or an
    error code when the run ended before the kill)."""
    command = [*bed.command(), "install", "--yes", "--no-service", *argv]
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env=bed.env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(delay)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait(60)


def random_delay(seed: int, window: float) -> float:
    """A kill time within a normal run's duration, reproducible from ``seed``."""
    return round(random.Random(seed).uniform(0.05, window), 3)


def chat(port: int, key: str) -> requests.Response:
    """The chat request a client sends (tests/e2e/test_serve.py ``_chat``)."""
    body = {"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 8, "temperature": 0}
    with requests.Session() as s:
        s.trust_env = False
        return s.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body,
                      headers={"Authorization": f"Bearer {key}"}, timeout=120)


def answers(home: Home, port: int) -> bool:
    """Does the server on ``port`` answer a chat request with this home's key?"""
    try:
        return chat(port, home.api_key_file.read_text(encoding="utf-8").strip()).status_code == 200
    except (OSError, requests.RequestException):
        return False


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def servers_of(home: Home) -> list[psutil.Process]:
    """Live llama-server processes started for this home (their command line names a file inside it)."""
    root = str(home.root)
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info.get("cmdline") or []
        if proc.info.get("status") == psutil.STATUS_ZOMBIE or not cmdline:
            continue
        if Path(cmdline[0]).name.startswith("llama-server") and any(root in word for word in cmdline):
            found.append(proc)
    return found


def check_home(bed: InstallBed, port: int, revision: str) -> list[str]:
    """Every invariant of a complete install; returns what is wrong (empty: all hold)."""
    home = bed.home
    problems: list[str] = []
    status = bed.run("status", "--json")
    if status.returncode != 0:
        problems.append(f"status exit {status.returncode}: {status.stderr.strip()[-300:]}")
    try:
        if json.loads(status.stdout).get("healthy") is not True:
            problems.append(f"status not healthy: {status.stdout.strip()[-300:]}")
    except ValueError:
        problems.append(f"status --json is not JSON: {status.stdout[-200:]!r}")
    if not answers(home, port):
        problems.append(f"no 200 to a chat request with the key on port {port}")
    problems += _check_state(bed, revision)
    problems += _check_leftovers(home)
    engines = [p.name for p in home.engines_dir.iterdir()] if home.engines_dir.is_dir() else []
    if len(engines) != 1:
        problems.append(f"engine/ holds {engines}, want exactly one folder")
    servers = servers_of(home)
    if len(servers) != 1:
        problems.append(f"{len(servers)} llama-server processes of this home: {[p.pid for p in servers]}")
    if not home.run_sh.is_file():
        problems.append("run_qwen.sh missing")
    return problems


def _check_state(bed: InstallBed, revision: str) -> list[str]:
    home = bed.home
    try:
        doc = json.loads(home.state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"state.json unreadable: {exc}"]
    problems = []
    files = doc.get("files") or []
    if not files:
        problems.append("state.json records no file")
    want = bed.hub.sha256_of(MODEL_REPO, MODEL_FILE, revision)
    for record in files:
        path = resolve_in_home(home, record["path"])
        if not path.is_file():
            problems.append(f"recorded file missing: {record['path']}")
            continue
        size, digest = path.stat().st_size, sha256_file(path)
        if size != record["size"]:
            problems.append(f"{record['path']}: {size} bytes on disk, {record['size']} recorded")
        if digest != record["sha256"]:
            problems.append(f"{record['path']}: sha256 on disk {digest[:12]} != recorded {record['sha256'][:12]}")
        if record["role"] == "model" and digest != want:
            problems.append(f"{record['path']}: sha256 {digest[:12]} is not revision {revision[:8]}'s {want[:12]}")
        for suffix in (".part", ".json"):  # a finished download's resume state
            if (home.partial_dir / f"{record['sha256']}{suffix}").exists():
                problems.append(f"partial leftover for the installed file: {record['sha256'][:12]}{suffix}")
    recorded = {resolve_in_home(home, r["path"]) for r in files}
    stray = sorted(str(p.relative_to(home.root)) for p in home.models_dir.rglob("*")
                   if p.is_file() and p not in recorded) if home.models_dir.is_dir() else []
    if stray:
        problems.append(f"model files not in state.json: {stray}")
    return problems


def _check_leftovers(home: Home) -> list[str]:
    problems = []
    if file_swap.journal_path(home).exists():
        problems.append("cache/swap.json left")
    if file_swap.backup_dir(home).exists():
        problems.append(f"cache/previous left: {_files_under(file_swap.backup_dir(home), home)}")
    if home.staging_dir.exists() and _files_under(home.staging_dir, home):
        problems.append(f"staging leftovers: {_files_under(home.staging_dir, home)}")
    temps = [str(p.relative_to(home.root)) for p in home.root.rglob(".*.tmp")
             if not p.is_relative_to(home.venv_dir)]
    if temps:
        problems.append(f"temp files left: {temps}")
    return problems


def _files_under(folder: Path, home: Home) -> list[str]:
    return sorted(str(p.relative_to(home.root)) for p in folder.rglob("*") if not p.is_dir())


def stop_server(home: Home) -> None:
    """Stop what the install started, and any server of this home a killed run may have orphaned."""
    with contextlib.suppress(Exception):  # teardown must go on to the orphan sweep
        FallbackManager(home).stop()
    for proc in servers_of(home):
        with contextlib.suppress(psutil.Error):
            proc.kill()
            proc.wait(10)


def append_row(row: Row) -> None:
    """Add the case to the table at ``$QWENKIT_KILL_TABLE`` (JSON lines), when that is set."""
    path = os.environ.get(TABLE_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")


def timed(run: Callable[[], subprocess.CompletedProcess[str]]) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    result = run()
    return result, round(time.monotonic() - start, 2)
