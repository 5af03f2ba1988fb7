"""``<home>/venv/examples/rag.py`` and ``roles.py`` against a real llama-server router (several models, one endpoint).

Real parts: the runtime venv built offline from the wheelhouse (the pinned OpenAI SDK) with its examples rendered by
``ensure_venv``, and the test bed's llama-server run as a router over a hand-written ``models.ini`` holding a tiny
chat model and a tiny embedding model (``--embeddings --pooling last``), both loaded at start, one key for the
router and its children. rag.py must embed the documents (one request), the question (another) and ask the chat
model (a third), each named in "model" and proxied by the router to that model's child; the router's log says so.
roles.py must switch thinking per request (``chat_template_kwargs``), seen by a recording pass-through proxy. A
wrong embedding model name ends rag.py with exit 2 and one line naming what to install.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.detect.hardware import PythonInfo
from bootstrap.place.runtime_venv import ensure_venv
from tests.support.llama import end_process, free_port
from tests.support.tiny_gguf import SPM_SPACE, build_vocab, spec_for, write_model
from tests.support.wheelhouse import kit_wheel

KEY = "sk-examples-several-models"
CHAT, EMBED = "tiny-chat", "tiny-embed"
READY_S = 180.0
EXAMPLES = ("agent.py", "rag.py", "roles.py")
PLAN_TOKENS, STEP_TOKENS = 96, 48  # roles.py's 2048 and 512, shortened for the tiny model


def _max_token_bytes() -> int:
    """The most UTF-8 bytes one token of the tiny chat model's vocabulary decodes to (a byte token is one byte)."""
    tokens, _, _ = build_vocab(spec_for("llama").n_vocab)
    return max(1 if t.startswith("<0x") else len(t.replace(SPM_SPACE, " ").encode()) for t in tokens)


# The planner's reply goes back into each executor's prompt as text, and the model's text re-tokenizes to more
# tokens than it generated (its numerics, so its words, differ by CPU and thread count). Bounded whatever it writes:
# a prompt never holds more tokens than UTF-8 bytes (SentencePiece's byte fallback), so the plan costs at most
# PLAN_TOKENS * _max_token_bytes() tokens; the executor's fixed text (system prompt, task, step, ChatML markers)
# is under FIXED_BYTES. The chat model's context is sized for that worst case, checked by _check_context_bound.
FIXED_BYTES = 640
CHAT_CTX = 2048


def _check_context_bound() -> None:
    worst = FIXED_BYTES + PLAN_TOKENS * _max_token_bytes() + STEP_TOKENS
    assert worst <= CHAT_CTX, f"the executor's worst-case prompt ({worst} tokens) overflows c = {CHAT_CTX}"


@dataclass
class Bed:
    home: Home
    python: Path  # the venv's interpreter
    wheelhouse: Path

    def render(self, endpoint: str) -> None:
        """The examples for this endpoint, as an install (or a rerun that reuses the venv) renders them."""
        result = ensure_venv(self.home, python=PythonInfo(path=sys.executable, version=platform.python_version()),
                             endpoint=endpoint, api_key_file=self.home.api_key_file, model=CHAT,
                             find_links=self.wheelhouse, kit_source=kit_wheel(self.wheelhouse))
        assert result.reused and result.example == self.home.examples_dir / "agent.py"

    def example(self, name: str, tmp_path: Path, changes: dict[str, str]) -> Path:
        """A copy of a rendered example with its bounds shortened for the tiny model (and checked to be there)."""
        text = (self.home.examples_dir / name).read_text(encoding="utf-8")
        for old, new in changes.items():
            assert old in text, old
            text = text.replace(old, new)
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    def run(self, script: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("QWENKIT_", "OPENAI_"))}
        return subprocess.run([str(self.python), str(script), *args], capture_output=True, text=True,
                              timeout=timeout, env={**clean, **(env or {})}, check=False)


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Bed:
    """A runtime venv made offline from the wheelhouse, as an install makes it, and the home's key file."""
    home = Home(tmp_path_factory.mktemp("examples") / "home")
    result = ensure_venv(home, python=PythonInfo(path=sys.executable, version=platform.python_version()),
                         endpoint="http://127.0.0.1:9/v1", api_key_file=home.api_key_file, model=CHAT,
                         find_links=wheelhouse, kit_source=kit_wheel(wheelhouse))
    assert result.python is not None, result.skipped_reason
    home.api_key_file.parent.mkdir(parents=True, exist_ok=True)
    home.api_key_file.write_text(KEY + "\n", encoding="utf-8")
    return Bed(home, Path(result.python), wheelhouse)


@pytest.fixture(scope="module")
def models_ini(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny chat model and a tiny embedding model (pooling last), both loaded when the router starts."""
    root = tmp_path_factory.mktemp("router-models")
    chat = write_model("llama", root / "tiny-chat-Q8_0.gguf", dtype="q8_0", n_layer=4)
    embed = write_model("llama", root / "tiny-embed-Q8_0.gguf", dtype="q8_0", n_layer=2, pooling=3, seed=1)
    _check_context_bound()
    common = ["t = 2", "load-on-startup = true"]
    lines = ["version = 1", "", f"[{CHAT}]", f"model = {chat}", f"c = {CHAT_CTX}", *common, "",
             f"[{EMBED}]", f"model = {embed}", "c = 512", *common, "embeddings = true", "pooling = last",
             "ub = 512", "b = 512"]
    path = root / "models.ini"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Router:
    """``llama-server --models-preset`` on 127.0.0.1, its output in a log file read once it has stopped."""

    def __init__(self, engine: Path, preset: Path, key_file: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_") and k != "LLAMA_API_KEY"}
        # The children take their flags from the preset; the key reaches them only through the environment.
        env.update({"LD_LIBRARY_PATH": str(engine), "LLAMA_ARG_API_KEY_FILE": str(key_file)})
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [str(engine / "llama-server"), "--models-preset", str(preset), "--models-max", "2", "--host",
                 "127.0.0.1", "--port", str(self.port), "--api-key-file", str(key_file)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=preset.parent)

    def wait_ready(self) -> None:
        """``/health`` answers 200 and ``GET /models`` shows both models loaded; else the log's tail."""
        deadline = time.monotonic() + READY_S
        statuses: dict[str, str] = {}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"router exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(requests.RequestException, ValueError):
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    listed = requests.get(f"{self.url}/models", headers={"Authorization": f"Bearer {KEY}"},
                                          timeout=5).json()["data"]
                    statuses = {m["id"]: m["status"]["value"] for m in listed}
                    if statuses.get(CHAT) == "loaded" and statuses.get(EMBED) == "loaded":
                        return
            time.sleep(0.2)
        raise TimeoutError(f"models not loaded after {READY_S:.0f} s: {statuses}\n{self.log_tail()}")

    def stop(self) -> None:
        end_process(self.proc)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def proxied(self, model: str) -> int:
        """Requests the router passed to ``model``'s child."""
        return self.log().count(f"proxying request to model {model} on port")


@pytest.fixture
def router(bed: Bed, models_ini: Path, engine_bin_dir: Path, tmp_path: Path) -> Iterator[Router]:
    server = Router(engine_bin_dir, models_ini, bed.home.api_key_file, tmp_path / "router.log")
    try:
        server.wait_ready()
        bed.render(f"{server.url}/v1")
        yield server
    finally:
        server.stop()


class _Proxy(http.server.ThreadingHTTPServer):
    upstream: str
    bodies: list[dict[str, Any]]


class _Handler(http.server.BaseHTTPRequestHandler):
    """POST passed through to the router (its request body kept), the answer streamed back as it arrives."""

    server: _Proxy

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.bodies.append(json.loads(body))
        with requests.Session() as session:
            session.trust_env = False
            upstream = session.post(self.server.upstream + self.path, data=body, stream=True, timeout=300,
                                    headers={k: v for k, v in self.headers.items()
                                             if k.lower() in ("authorization", "content-type")})
            self.send_response(upstream.status_code)
            self.send_header("Content-Type", upstream.headers.get("Content-Type", ""))
            self.send_header("Connection", "close")
            self.end_headers()
            for line in upstream.iter_lines():
                self.wfile.write(line + b"\n")
                self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    server = _Proxy(("127.0.0.1", 0), _Handler)
    server.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_all_examples_are_rendered_and_rewritten_only_when_they_change(bed: Bed) -> None:
    paths = [bed.home.examples_dir / name for name in EXAMPLES]
    bed.render("http://127.0.0.1:7/v1")
    before = [p.stat().st_mtime_ns for p in paths]
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert '"http://127.0.0.1:7/v1"' in text and f'"{CHAT}"' in text and str(bed.home.api_key_file) in text
    time.sleep(0.01)
    bed.render("http://127.0.0.1:7/v1")
    assert [p.stat().st_mtime_ns for p in paths] == before  # same values: nothing written
    bed.render("http://127.0.0.1:8/v1")
    assert all('"http://127.0.0.1:8/v1"' in p.read_text(encoding="utf-8") for p in paths)


def test_rag_embeds_the_documents_and_the_question_then_asks_the_chat_model(bed: Bed, router: Router) -> None:
    started = time.monotonic()
    proc = bed.run(bed.home.examples_dir / "rag.py", "Where does photosynthesis happen?",
                   env={"QWENKIT_EMBED_MODEL": EMBED})
    elapsed = time.monotonic() - started
    router.stop()  # the log is complete once the router has ended (llama.cpp logs from a worker thread)
    counts = {EMBED: router.proxied(EMBED), CHAT: router.proxied(CHAT)}
    print(json.dumps({"seconds": round(elapsed, 1), "proxied": counts, "stdout": proc.stdout[-600:]},
                     ensure_ascii=False))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    retrieved = [line for line in lines if line.startswith("[retrieved ")]
    assert len(retrieved) == 2  # the nearest two passages
    answer = "\n".join(line for line in lines if not line.startswith("[retrieved ")).strip()
    assert answer  # the chat model's answer was printed
    assert counts == {EMBED: 2, CHAT: 1}, router.log_tail()  # documents, question; then the chat request
    assert "Remote end closed connection" not in proc.stderr


def test_roles_switches_thinking_per_request_on_one_server(bed: Bed, router: Router, proxy: _Proxy,
                                                           tmp_path: Path) -> None:
    proxy.upstream = router.url
    # The tiny model never ends a reply by itself: its plan fills PLANNER_MAX_TOKENS, which the executors' prompts
    # then carry, re-tokenized (CHAT_CTX has room for the worst case).
    roles = bed.example("roles.py", tmp_path, {"PLANNER_MAX_TOKENS = 2048": f"PLANNER_MAX_TOKENS = {PLAN_TOKENS}",
                                               "EXECUTOR_MAX_TOKENS = 512": f"EXECUTOR_MAX_TOKENS = {STEP_TOKENS}"})
    started = time.monotonic()
    proc = bed.run(roles, "Plan a picnic.",
                   env={"QWENKIT_BASE_URL": f"http://127.0.0.1:{proxy.server_address[1]}/v1"})
    elapsed = time.monotonic() - started
    print(json.dumps({"seconds": round(elapsed, 1), "requests": len(proxy.bodies), "stdout": proc.stdout[-600:]},
                     ensure_ascii=False))
    assert proc.returncode == 0, proc.stderr[-3000:]
    thinking = [body.get("chat_template_kwargs", {}).get("enable_thinking") for body in proxy.bodies]
    assert thinking == [True, False, False]  # the planner thinks, the two executors do not
    assert all(body["model"] == CHAT and body["stream"] is True for body in proxy.bodies)
    assert [body["max_tokens"] for body in proxy.bodies] == [PLAN_TOKENS, STEP_TOKENS, STEP_TOKENS]
    for body in proxy.bodies[1:]:  # the context bound's premise: the executor's text besides the plan is small
        system, user = (message["content"] for message in body["messages"])
        fixed = system.split("\nPlan:\n", 1)[0] + user
        assert len(fixed.encode()) + 64 <= FIXED_BYTES, fixed  # 64: ChatML's markers and roles, generously
    assert "== planner (thinking on) ==" in proc.stdout and "== executor, step 2 (thinking off) ==" in proc.stdout


def test_rag_without_that_embedding_model_says_what_to_install(bed: Bed, router: Router) -> None:
    proc = bed.run(bed.home.examples_dir / "rag.py", "--embed-model", "no-such-embedder", "What is RAG?", timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines() == [
        "rag.py: the server has no embedding model 'no-such-embedder'; add it with:  "
        "qwenkit install qwen3-embedding-0.6b"]
    assert proc.stdout == ""
