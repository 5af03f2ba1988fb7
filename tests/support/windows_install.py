"""An install through the real ``QwenClientKit-Setup-windows-x64.exe`` under Wine, as the e2e tests
(tests/e2e/test_windows_install.py) and the bench (scripts/bench_windows_install.py) both make it: the loopback hub
serves the cross-built engine as upstream's ``win-cpu`` release asset, the tiny chat model (the catalog's default)
and the tiny embedding model (for a second model beside it), and the setup installs into a user folder given by
name.

Every command's output is a pipe, read in Wine's ANSI code page (cp1252); the detached supervisor Wine starts may
keep the pipes open after the exe ends, so a command is over when its process is (``wine.run_until_exit``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import requests

from tests.support import wine
from tests.support.hub import LoopbackHub
from tests.support.install_bed import (
    EMBED_MODEL_FILE,
    EMBED_MODEL_REPO,
    ENGINE_REPO,
    ENGINE_TAG,
    MODEL_FILE,
    MODEL_REPO,
    catalog_text,
    embed_block,
    write_chat_model,
    write_embed_model,
)
from tests.support.llama import free_port

COMMAND_TIMEOUT_S = 900  # an install under Wine on a busy 2-core machine (engine self-test, speed check): a bound


@dataclass
class WinInstall:
    exe: Path
    home: Path
    env: dict[str, str]
    port: int
    first: subprocess.CompletedProcess[str]
    hub: LoopbackHub
    catalog: Path
    embed_revision: str
    console: wine.ConsoleRun | None = None  # the first install, when it was a double-click

    def run(self, *args: str, timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return wine.run_until_exit(["wine", str(self.exe), *args], self.env, timeout)

    def launcher(self, *args: str, timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        """``qwenkit ARGS`` typed in a new ``cmd`` window: found through the user PATH, with no QWENKIT_HOME set (the
        launcher supplies the home it was written for), so it runs the setup's copy in the home's ``app\\``."""
        env = {k: v for k, v in self.env.items() if k != "QWENKIT_HOME"}
        return wine.run_until_exit(["wine", "cmd", "/d", "/c", "qwenkit", *args], env, timeout)

    def pin(self, revision: str) -> None:
        """The catalog pins the default chat model to ``revision`` (an updated catalog); the embedding model stays."""
        self.catalog.write_text(catalog_text(revision) + embed_block(self.embed_revision), encoding="utf-8")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def key(self) -> str:
        return (self.home / "secrets" / "api-key").read_text(encoding="utf-8").strip()

    def logs_tail(self, chars: int = 3000) -> str:
        """The end of each of the home's logs, for a failed step's message: the uninstall test after it removes
        the home, and with it the only record of why a server did not answer."""
        parts = []
        for path in sorted((self.home / "logs").glob("*.log")):
            with contextlib.suppress(OSError):
                parts.append(f"--- {path.name}\n{path.read_text(encoding='utf-8', errors='replace')[-chars:]}")
        return "\n".join(parts)

    def chat(self, key: str | None, model: str | None = None) -> requests.Response:
        body: dict[str, object] = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8}
        if model is not None:
            body["model"] = model
        return self.post("/v1/chat/completions", body, key)

    def post(self, path: str, body: dict[str, object], key: str | None) -> requests.Response:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        return requests.post(f"{self.url}{path}", headers=headers, timeout=120, json=body)


def _marks(home: Path) -> tuple[str, str]:
    """How this home shows in its Wine processes' command lines (as Linux sees them): its Windows path, which the
    programs it runs are named by (a router names its children by its own path), or its Linux one."""
    return str(wine.windows_path(home)), str(home)


def servers(home: Path) -> list[psutil.Process]:
    """The Wine processes running this home's llama-server.exe (one model's server; a router and its children), not
    the front whose arguments name it."""
    return [p for p in wine.processes_running("llama-server.exe", *_marks(home))
            if (p.info.get("cmdline") or [""])[0].replace("\\", "/").rsplit("/", 1)[-1] == "llama-server.exe"]


def fronts(home: Path) -> list[psutil.Process]:
    """The Wine processes running this home's front before the router (several models): the setup's copy in
    ``app\\`` started as ``… front …``, two processes (a one-file program's bootloader and the program)."""
    return wine.processes_running(".exe front ", str(wine.windows_path(home / "app")) + "\\")


def answers(url: str, key: str, timeout: float) -> bool:
    """Whether the server at ``url`` answers ``/v1/models`` with the key within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=5).ok:
                return True
        except requests.RequestException:
            pass
        time.sleep(1)
    return False


@contextlib.contextmanager
def installed(windows_setup: Path, win_bin: Path, root: Path, home_dir: str, *,
              double_click: bool = False) -> Iterator[WinInstall]:
    """A Wine prefix, a loopback hub serving ``win_bin`` as the ``win-cpu`` asset and the tiny chat model, and the
    first install into ``root/home_dir/QwenClientKit`` (``install --yes``, or a double-click); uninstalled after."""
    root.mkdir(parents=True, exist_ok=True)
    asset = wine.pack_win_cpu(win_bin, root, ENGINE_TAG)
    prefix = wine.make_prefix(root / "prefix")
    with LoopbackHub(root / "hub") as hub:
        hub.add_release_asset(ENGINE_REPO, ENGINE_TAG, asset, asset.name)
        revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(root / "model" / MODEL_FILE)})
        embed_revision = hub.create_repo(EMBED_MODEL_REPO, {
            EMBED_MODEL_FILE: write_embed_model(root / "model" / EMBED_MODEL_FILE)})
        catalog = root / "catalog.toml"
        catalog.write_text(catalog_text(revision) + embed_block(embed_revision), encoding="utf-8")
        home = root / home_dir / "QwenClientKit"
        w = wine.windows_path
        env = {k: v for k, v in wine.wine_env(prefix).items() if not k.startswith(("QWENKIT_", "LLAMA_"))}
        env.update(QWENKIT_HOME=str(w(home)), QWENKIT_CATALOG=str(w(catalog)), QWENKIT_HF_ENDPOINT=hub.endpoint,
                   QWENKIT_MODELSCOPE_ENDPOINT=hub.endpoint, QWENKIT_ENGINE_URL=hub.release_base(ENGINE_REPO),
                   QWENKIT_LANG="en", NO_PROXY="127.0.0.1,localhost")
        console = None
        if double_click:  # no arguments, a console of its own; Enter at the question and at the end
            console = wine.run_in_console(["wine", str(windows_setup)], env, COMMAND_TIMEOUT_S, answer_at="[Y/n]",
                                          close_at="Press Enter to close")
            first = subprocess.CompletedProcess(["wine", str(windows_setup)], console.returncode, console.text, "")
            state = home / "state.json"
            port = json.loads(state.read_text(encoding="utf-8"))["server"]["port"] if state.is_file() else 0
        else:
            port = free_port()
            first = wine.run_until_exit(["wine", str(windows_setup), "install", "--yes", "--port", str(port)], env,
                                        COMMAND_TIMEOUT_S)
        bed = WinInstall(windows_setup, home, env, port, first, hub, catalog, embed_revision, console)
        try:
            yield bed
        finally:
            if home.exists():
                bed.run("uninstall", "--yes", timeout=300)
            for proc in [*fronts(home), *servers(home)]:
                proc.kill()
            subprocess.run(["wineserver", "-k"], env=env, timeout=60, check=False)


@dataclass
class ChattingClient:
    """A client chatting every ``every`` seconds while something else happens (an upgrade): each answer's time and
    status (or exception name), for the failed count and the longest wait between two answers."""

    bed: WinInstall
    every: float = 0.2
    results: list[tuple[float, int | str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                code: int | str = self.bed.chat(self.bed.key()).status_code
            except requests.RequestException as exc:
                code = type(exc).__name__
            self.results.append((time.monotonic(), code))
            time.sleep(self.every)

    @contextlib.contextmanager
    def running(self) -> Iterator[ChattingClient]:
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=150)

    @property
    def codes(self) -> list[int | str]:
        return [code for _, code in self.results]

    def longest_gap_s(self) -> float:
        """The longest time between two successful answers."""
        times = [at for at, code in self.results if code == 200]
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)
