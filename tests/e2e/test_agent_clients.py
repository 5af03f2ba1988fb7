"""The real agent clients, started by ``qwenkit launch``, against one install made by the real CLI.

One install for the whole module (tests/support/install_bed.py): the test bed's engine and its Qwen chat model
(tests/support/qwen_chat_model.py: the Qwen3.5/3.6 family's own template and tokenizer) installed from the loopback
hub by ``qwenkit install``, so the kit's template, its tool-call proof and its context are the product's. The
installed server is then moved behind a counting pass-through proxy on the install's own port
(tests/support/counting_proxy.py): every request a client sends crosses it, so "every request answered 2xx with
the key, none 4xx/5xx" is counted on the wire, and the server's prompt cache is shared by every client here (an
agent's first request is thousands of tokens).

Each client is the pinned release from its registry (tests/support/agent_clients.py), run headless through
``qwenkit launch CLIENT --yes -- ARGS`` in a home folder of its own: exit 0, the model's answer printed, and no
process on the machine ever had the key on its command line while it ran. One client also runs through the team
gateway with a user key (``--endpoint``). Each test prints what it measured (``-s``): the client's version, its
requests, the first request's size in tokens (the server's own count in its answer) and the first token's time.

Selected with ``-k "claude or codex or opencode or aider or launch or tool_call"``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.place.api_key import read_api_key
from bootstrap.record.state import load_launch_spec
from bootstrap.register.managers import FallbackManager
from bootstrap.verify.chat import wait_healthy
from tests.support import agent_clients
from tests.support.counting_proxy import CountingProxy, Exchange
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import (
    QWEN_MODEL_FILE,
    QWEN_MODEL_REPO,
    InstallBed,
    qwen_catalog_text,
    serve_engine,
)
from tests.support.llama import end_process, free_port
from tests.support.qwen_chat_model import qwen_chat_model

# A window an agent works in (no "low context" warning), one slot, two threads: the tiny model's KV cache for it is
# a few MB.
SERVER_ARGS = ("-c", "65536", "-np", "1", "-t", "2")
ANSWER = "Hello from the tiny model."
PROMPT = "Say hello."
HEADLESS = {
    "claude": ("-p", PROMPT),
    "codex": ("exec", "--skip-git-repo-check", PROMPT),
    "opencode": ("run", PROMPT),
    "aider": ("--message", PROMPT, "--no-git", "--yes-always"),
}
# Where each protocol's first token shows in the answer stream: Anthropic, Responses, Chat Completions.
TEXT_MARKERS = (b'"text_delta"', b"response.output_text.delta", b'"delta":{"content"', b'"content":"')


@dataclass
class AgentBed:
    bed: InstallBed
    key: str
    proxy: CountingProxy
    server_log: Path
    root: Path

    def env(self, client_home: Path, *clients: str, **extra: str) -> dict[str, str]:
        """The product's environment for this home, the pinned clients first on PATH, and a home folder of the
        client's own (its settings, sessions, caches)."""
        env = self.bed.env()
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "CLAUDE_CONFIG_DIR",
                     "CODEX_HOME", "OPENCODE_CONFIG", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "QWENKIT_API_KEY"):
            env.pop(name, None)
        env.update(extra)
        dirs = [str(agent_clients.bin_dir(c)) for c in clients]
        env["PATH"] = os.pathsep.join([*dirs, env.get("PATH", "")])
        env["HOME"] = str(client_home)
        return env


@pytest.fixture(scope="module")
def agent_bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path) -> Iterator[AgentBed]:
    """One install of the Qwen chat model by the real CLI; its server then runs behind a counting proxy on the
    install's own port (the same command line, the server on another port)."""
    root = tmp_path_factory.mktemp("agents")
    with LoopbackHub(root / "hub") as hub:
        revision = hub.create_repo(QWEN_MODEL_REPO, {QWEN_MODEL_FILE: qwen_chat_model()})
        bed = InstallBed(hub, Home(root / "Qwen 智能体 home"), root / "catalog.toml", serve_engine(hub, engine_asset))
        bed.catalog.write_text(qwen_catalog_text(revision, server_args=SERVER_ARGS), encoding="utf-8")
        port = free_port()
        proc = bed.install("--port", str(port), "--no-venv", timeout=900)
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert "tools ok" in proc.stdout + proc.stderr, proc.stdout[-3000:]
        FallbackManager(bed.home).stop()
        spec = load_launch_spec(bed.home)
        inner = free_port()
        argv = spec.argv()
        argv[argv.index("--port") + 1] = str(inner)
        log = root / "server.log"
        with log.open("wb") as sink:
            server = subprocess.Popen(argv, cwd=bed.home.root, stdout=sink, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        try:
            wait_healthy(f"http://127.0.0.1:{inner}", timeout=180, process=server)
            key = read_api_key(bed.home)
            with CountingProxy(f"http://127.0.0.1:{inner}", key, port=port) as proxy:
                yield AgentBed(bed, key, proxy, log, root)
        finally:
            end_process(server)


def _cmdlines() -> Iterator[str]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                yield (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue


def run_watched(argv: list[str], env: dict[str, str], key: str | tuple[str, ...], cwd: Path,
                timeout: float = 600) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``argv`` to its end while reading every process's command line on the machine (``/proc/*/cmdline``)
    every 0.2 s: returns the result and how many times a key was seen there (always 0, or the test fails)."""
    keys = (key,) if isinstance(key, str) else key
    out, err = cwd / ".stdout", cwd / ".stderr"
    seen = 0
    with out.open("w") as so, err.open("w") as se:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=so, stderr=se, stdin=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            seen += sum(1 for line in _cmdlines() if any(k in line for k in keys))
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise TimeoutError(f"{argv} ran past {timeout} s")
            time.sleep(0.2)
    return subprocess.CompletedProcess(argv, proc.returncode, out.read_text(), err.read_text()), seen


def prompt_tokens(exchange: Exchange) -> int | None:
    """The request's prompt size as the server counted it in its answer: Anthropic ``input_tokens`` plus
    ``cache_read_input_tokens`` (message_start), else OpenAI's ``input_tokens`` / ``prompt_tokens`` (both count
    cached tokens too)."""
    text = exchange.answer.decode(errors="replace")
    start = re.search(r'"usage":\{"cache_read_input_tokens":(\d+),"input_tokens":(\d+)', text)
    if start:
        return int(start.group(1)) + int(start.group(2))
    found = [int(n) for n in re.findall(r'"(?:input_tokens|prompt_tokens)":(\d+)', text)]
    # llama-server's own figures in a stream's last chunk: cached + processed prompt tokens
    found += [int(c) + int(p) for c, p in re.findall(r'"timings":\{"cache_n":(\d+),"prompt_n":(\d+)', text)]
    return max(found) if found else None


def qwenkit(argv: list[str]) -> str:
    """``python -m bootstrap ARGS`` as a user types it."""
    return "qwenkit " + " ".join(argv[3:])


def first_token_s(exchange: Exchange) -> float | None:
    times = [s for s in (exchange.time_to(m) for m in TEXT_MARKERS) if s is not None]
    return min(times) if times else None


def report(client: str, version: str, command: str, proc: subprocess.CompletedProcess[str],
           exchanges: list[Exchange], seconds: float) -> dict[str, object]:
    """What the closing note asks for, printed as one JSON line (pytest ``-s`` shows it)."""
    first = exchanges[0] if exchanges else None
    line = {
        "client": client, "version": version, "command": command, "exit": proc.returncode,
        "requests": len(exchanges), "answered_2xx": sum(1 for e in exchanges if 200 <= e.status < 300),
        "first_request_bytes": first.request_bytes if first else None,
        "first_request_tokens": prompt_tokens(first) if first else None,
        "largest_request_tokens": max((prompt_tokens(e) or 0 for e in exchanges), default=None),
        "first_token_s": round(first_token_s(first) or 0, 2) if first else None,
        "seconds": round(seconds, 1),
    }
    print("AGENT-CLIENT " + json.dumps(line))
    return line


def launch(agent: AgentBed, client: str, *extra: str, env_extra: dict[str, str] | None = None,
           keys: tuple[str, ...] = (), home_files: dict[str, str] | None = None
           ) -> tuple[subprocess.CompletedProcess[str], list[Exchange], list[str], float]:
    """``qwenkit launch CLIENT --yes EXTRA -- HEADLESS`` in a fresh home folder for the client (``home_files``: the
    user's own files there, relative path → text; it is also the folder the client starts in); the proxy's
    exchanges during the run."""
    home = agent.root / f"{client}-home-{time.monotonic_ns()}"
    home.mkdir()
    for relative, text in (home_files or {}).items():
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(text, encoding="utf-8")
    env = agent.env(home, client, **(env_extra or {}))
    argv = [sys.executable, "-m", "bootstrap", "launch", client, "--yes", *extra, "--", *HEADLESS[client]]
    before = len(agent.proxy.exchanges)
    start = time.monotonic()
    proc, seen = run_watched(argv, env, (agent.key, *keys), home)
    seconds = time.monotonic() - start
    assert seen == 0, "the key was on a command line"
    return proc, agent.proxy.since(before), argv, seconds


def assert_answered(proc: subprocess.CompletedProcess[str], exchanges: list[Exchange]) -> None:
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-3000:], proc.stderr[-6000:])
    assert ANSWER in proc.stdout, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert exchanges, "the client sent no request through the install's port"
    bad = [(e.method, e.path, e.status) for e in exchanges if not 200 <= e.status < 300]
    assert bad == [], bad
    assert all(e.with_key for e in exchanges), [(e.path, e.with_key) for e in exchanges]


@pytest.mark.parametrize("client", ["claude", "codex", "opencode", "aider"])
def test_launch_real_client(agent_bed: AgentBed, client: str) -> None:
    """``qwenkit launch CLIENT --yes -- ARGS``: the real client answers through the install, every request 2xx
    with the key, the key on no command line."""
    proc, exchanges, argv, seconds = launch(agent_bed, client)
    report(client, agent_clients.PINNED[client].version, qwenkit(argv), proc, exchanges, seconds)
    assert_answered(proc, exchanges)
    assert "Starting " in proc.stderr  # launch said what it started, against what


# What a user's own files may say that a client reads over its environment: a dead server, another key, a tiny
# window (as `qwenkit launch claude --config` of another install, or a Python project's .env, leaves them).
ELSEWHERE = "http://127.0.0.1:9"
THEIR_KEY = "sk-proj-their-own-openai-key"
USER_FILES = {
    "claude": {".claude/settings.json": json.dumps({"env": {
        "ANTHROPIC_BASE_URL": ELSEWHERE, "ANTHROPIC_AUTH_TOKEN": THEIR_KEY, "ANTHROPIC_MODEL": "other-model",
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS": "1024"}}, indent=2)},
    "aider": {".env": f"OPENAI_API_KEY={THEIR_KEY}\nOPENAI_API_BASE={ELSEWHERE}/v1\nOPENAI_BASE_URL={ELSEWHERE}/v1\n"},
}


@pytest.mark.parametrize("client", sorted(USER_FILES))
def test_launch_wins_over_what_the_users_own_files_tell_the_client(agent_bed: AgentBed, client: str) -> None:
    """A client whose own files name another server, key or window (Claude Code's user settings ``env``, which it
    applies over its environment; a ``.env`` in the folder Aider starts in, which it loads over its environment):
    launch's settings still reach it, so it answers through the install with the install's key (was: Claude Code
    "Prompt is too long" or requests to the other server, Aider "AuthenticationError"). Aider's own preference file
    is not changed for good (``--analytics-disable`` disabled its analytics permanently)."""
    proc, exchanges, argv, seconds = launch(agent_bed, client, home_files=USER_FILES[client])
    report(f"{client} with the user's own settings", agent_clients.PINNED[client].version, qwenkit(argv), proc,
           exchanges, seconds)
    assert_answered(proc, exchanges)
    if client == "aider":
        assert "permanently disabled" not in proc.stdout
        home = next(p for p in agent_bed.root.glob("aider-home-*") if (p / ".env").exists())
        prefs = home / ".aider" / "analytics.json"
        assert not prefs.exists() or not json.loads(prefs.read_text(encoding="utf-8")).get("permanently_disable")


def test_launch_print_recipe_runs_the_openai_agents_sdk(agent_bed: AgentBed) -> None:
    """The OpenAI Agents SDK (a library: no launch) with its documented client settings, as ``qwenkit launch
    --print openai-agents`` prints them: an agent with a function tool runs to its final answer."""
    home = agent_bed.root / "agents-sdk-home"
    home.mkdir()
    env = agent_bed.env(home, "openai-agents")
    printed = subprocess.run([sys.executable, "-m", "bootstrap", "launch", "--print", "openai-agents"], env=env,
                             capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert printed.returncode == 0, printed.stderr
    code = printed.stdout.rstrip("\n").split("\n\n", 1)[1].rsplit("\n", 1)[0]  # between the title and the context
    script = home / "agent.py"
    script.write_text(code, encoding="utf-8")
    python = agent_clients.bin_dir("openai-agents") / "python"
    before = len(agent_bed.proxy.exchanges)
    start = time.monotonic()
    proc, seen = run_watched([str(python), str(script)], env, agent_bed.key, home)
    exchanges = agent_bed.proxy.since(before)
    report("openai-agents", agent_clients.PINNED["openai-agents"].version, "python agent.py", proc, exchanges,
           time.monotonic() - start)
    assert seen == 0
    assert_answered(proc, exchanges)


def _kit(agent: AgentBed, *argv: str) -> subprocess.CompletedProcess[str]:
    proc = agent.bed.run(*argv)
    assert proc.returncode == 0, (argv, proc.stdout[-2000:], proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def gateway(agent_bed: AgentBed) -> Iterator[tuple[str, str]]:
    """The team gateway (``qwenkit team``, nginx) on this machine with the install as its one member and one user;
    yields the gateway's URL and the user's key (docs/team-endpoint.md)."""
    member = agent_bed.proxy.url
    _kit(agent_bed, "team", "add-member", member, "--key-file", str(agent_bed.bed.home.api_key_file), "--name", "pc1")
    user_key = _kit(agent_bed, "team", "add-user", "alice").stdout.strip().splitlines()[-1]
    port = free_port()
    _kit(agent_bed, "team", "start", "--host", "127.0.0.1", "--port", str(port))
    try:
        yield f"http://127.0.0.1:{port}", user_key
    finally:
        agent_bed.bed.run("team", "stop")


def test_launch_codex_through_team_gateway_with_user_key(agent_bed: AgentBed, gateway: tuple[str, str]) -> None:
    """A user of the team: ``qwenkit launch codex --endpoint GATEWAY`` with their own key in ``QWENKIT_API_KEY``
    (never an argument). Counted on both sides of the gateway: every request the client sent carried the user's key
    and was answered 2xx; every request the gateway passed on carried the member's key and was answered 2xx."""
    url, user_key = gateway
    with CountingProxy(url, user_key) as front:
        member_before = len(agent_bed.proxy.exchanges)
        proc, _, argv, seconds = launch(agent_bed, "codex", "--endpoint", front.url,
                                        env_extra={"QWENKIT_API_KEY": user_key}, keys=(user_key,))
        sent = front.since(0)
    passed_on = agent_bed.proxy.since(member_before)
    report("codex via gateway", agent_clients.PINNED["codex"].version, qwenkit(argv), proc, sent, seconds)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-6000:])
    assert ANSWER in proc.stdout
    assert sent and all(200 <= e.status < 300 and e.with_key for e in sent), [(e.path, e.status) for e in sent]
    assert len(passed_on) == len(sent)
    assert all(200 <= e.status < 300 and e.with_key for e in passed_on), [(e.path, e.status) for e in passed_on]


# A user's own config before --config: settings of their own the restore must give back byte for byte.
USER_CONFIG = {
    "codex": (".codex/config.toml", '# my Codex settings\nmodel = "gpt-5.5"\n\n[tui]\nnotifications = false\n'),
    "opencode": (".config/opencode/opencode.json",
                 '{\n  "$schema": "https://opencode.ai/config.json",\n  "theme": "opencode"\n}\n'),
}
ALONE = {"codex": ("codex", "exec", "--skip-git-repo-check", PROMPT), "opencode": ("opencode", "run", PROMPT)}


@pytest.mark.parametrize("client", ["codex", "opencode"])
def test_launch_config_then_client_alone_then_restore(agent_bed: AgentBed, client: str) -> None:
    """``qwenkit launch CLIENT --config --yes`` writes the client's own config file (owner-only); the real client,
    started by the user without qwenkit, answers through the install; ``--restore`` gives the user's file back byte
    for byte, with its mode."""
    home = agent_bed.root / f"{client}-config-home"
    relative, mine = USER_CONFIG[client]
    path = home / relative
    path.parent.mkdir(parents=True)
    path.write_text(mine, encoding="utf-8")
    path.chmod(0o644)
    env = agent_bed.env(home, client)
    written = subprocess.run([sys.executable, "-m", "bootstrap", "launch", client, "--config", "--yes"], env=env,
                             cwd=home, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert written.returncode == 0, written.stderr
    assert path.stat().st_mode & 0o777 == 0o600
    kept = "[tui]\nnotifications = false\n" if client == "codex" else '"theme": "opencode"'
    assert kept in path.read_text(encoding="utf-8")  # the user's other settings are still there
    alone_env = dict(env)
    if client == "codex":  # as the printed note says: the key in QWENKIT_API_KEY, read from the key file
        assert "QWENKIT_API_KEY" in written.stdout
        alone_env["QWENKIT_API_KEY"] = agent_bed.bed.home.api_key_file.read_text(encoding="utf-8").strip()
    else:  # the switches docs/agents.md asks a user to export (models.dev, plugins from npm, updates)
        alone_env.update({"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                          "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1"})
    before = len(agent_bed.proxy.exchanges)
    proc, seen = run_watched(list(ALONE[client]), alone_env, agent_bed.key, home)
    exchanges = agent_bed.proxy.since(before)
    report(f"{client} after --config", agent_clients.PINNED[client].version, " ".join(ALONE[client]), proc,
           exchanges, 0)
    assert seen == 0
    assert_answered(proc, exchanges)
    restored = subprocess.run([sys.executable, "-m", "bootstrap", "launch", client, "--restore"], env=env,
                              cwd=home, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes() == mine.encode("utf-8")
    assert path.stat().st_mode & 0o777 == 0o644


STAND_IN = '''import json, os, stat, sys
cmdline = open("/proc/self/cmdline", "rb").read().decode().split("\\0")
names = ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CODE_MAX_CONTEXT_TOKENS",
         "NO_PROXY")
settings = json.load(open(sys.argv[2])) if sys.argv[1:2] == ["--settings"] else None
mode = stat.S_IMODE(os.stat(sys.argv[2]).st_mode) if settings is not None else None
record = {"argv": sys.argv[1:], "cmdline": cmdline, "env": {n: os.environ.get(n) for n in names},
          "settings": settings, "mode": mode}
with open(os.environ["STAND_IN_RECORD"], "w") as fh:
    json.dump(record, fh)
sys.exit(7)
'''


def test_launch_passes_args_and_exit_code_and_the_key_only_in_the_environment(agent_bed: AgentBed,
                                                                               tmp_path: Path) -> None:
    """A stand-in ``claude`` (the one mock here: at the client boundary, to see exactly what it is given): every
    word after ``--`` arrives unchanged (shell and cmd syntax included), its exit code is launch's, the key is in
    its environment and not in its command line (its own ``/proc/self/cmdline``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "claude"
    stand_in.write_text(f"#!{sys.executable}\n{STAND_IN}", encoding="utf-8")
    stand_in.chmod(0o755)
    record = tmp_path / "record.json"
    env = agent_bed.env(tmp_path, STAND_IN_RECORD=str(record), ANTHROPIC_API_KEY="sk-ant-theirs")
    env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
    words = ["-p", "a b", "%PATH%", "$HOME", "--model", "x", "'quoted'", "--", "--debug", "&|<>^"]
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "launch", "claude", "--yes", "--", *words], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 7, proc.stderr
    seen = json.loads(record.read_text())
    assert seen["argv"][0] == "--settings" and seen["argv"][2:] == words
    settings = Path(seen["argv"][1])  # the same variables, above the user's own settings files: gone after the run
    assert settings.parent == agent_bed.bed.home.agents_dir and not settings.exists()
    assert not any(agent_bed.key in word for word in seen["cmdline"])
    assert seen["env"]["ANTHROPIC_AUTH_TOKEN"] == agent_bed.key and seen["env"]["ANTHROPIC_API_KEY"] is None
    assert seen["env"]["ANTHROPIC_BASE_URL"] == agent_bed.proxy.url
    assert seen["env"]["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "65536"
    assert seen["mode"] == 0o600 and seen["settings"]["env"]["ANTHROPIC_BASE_URL"] == agent_bed.proxy.url
    assert seen["settings"]["env"]["ANTHROPIC_AUTH_TOKEN"] == agent_bed.key
    assert "127.0.0.1" in seen["env"]["NO_PROXY"].split(",")
