"""The verify stage against the test bed's real llama-server started from a real LaunchSpec: health, key check,
plain and streamed chat, the report and its snippets (the curl line is run for real), and each failure."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootstrap.core import console, progress
from bootstrap.core.console import t
from bootstrap.core.errors import ExitCode, ServerError
from bootstrap.place.engine_failure import EngineFailed
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.verify import chat as verify_mod
from bootstrap.verify.chat import (
    VerifyReport,
    last_log_line,
    print_report,
    render_snippets,
    verify_server,
    wait_healthy,
)
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

KEY = "sk-qwenkit-test-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
ALIAS = "qwen-local"


pytestmark = pytest.mark.usefixtures("english")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model("llama", tmp_path_factory.mktemp("tiny") / "tiny.gguf")


def _spec(home: Path, engine_bin_dir: Path, model: Path, args: tuple[str, ...], system: str = "Linux") -> LaunchSpec:
    key_file = home / "secrets" / "api-key"
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.write_text(KEY + "\n", encoding="utf-8")
    key_file.chmod(0o600)
    return LaunchSpec(home=home, system=system, engine_dir=engine_bin_dir, server=engine_bin_dir / "llama-server",
                      model=model, mmproj=None, args=args, alias=ALIAS, api_key_file=key_file, port=free_port())


@contextlib.contextmanager
def _running(argv: list[str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The server as the start script runs it (argv, no shell), its output in a log file; stopped on exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_") and k != "LLAMA_API_KEY"}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([*argv, "--log-colors", "off"], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


TINY_ARGS = ("-c", "256", "-np", "1", "-t", "2")


@pytest.fixture(scope="module")
def tiny_server(engine_bin_dir: Path, tiny: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LaunchSpec, subprocess.Popen[bytes], Path]]:
    home = tmp_path_factory.mktemp("home with space")
    spec = _spec(home, engine_bin_dir, tiny, TINY_ARGS)
    log = home / "server.log"
    with _running(spec.argv(), log) as proc:
        yield spec, proc, log


@pytest.fixture(scope="module")
def tiny_report(tiny_server: tuple[LaunchSpec, subprocess.Popen[bytes], Path]) -> VerifyReport:
    spec, proc, log = tiny_server
    return verify_server(spec, KEY, process=proc, log_path=log)


def test_tiny_server_verifies(tiny_server: tuple[LaunchSpec, subprocess.Popen[bytes], Path],
                              tiny_report: VerifyReport) -> None:
    spec = tiny_server[0]
    r = tiny_report
    assert (r.endpoint, r.model, r.api_key_file) == (spec.openai_base_url, ALIAS, str(spec.api_key_file))
    assert r.tokens_per_s > 0 and r.first_token_s > 0 and r.health_wait_s >= 0
    assert r.stream_ok and r.rejects_without_key
    assert 0 < r.completion_tokens <= 32 and 0 < len(r.reply) <= 200
    assert json.loads(json.dumps(r.to_json())) == r.to_json()


def test_report_never_holds_the_key(tiny_report: VerifyReport, capsys: pytest.CaptureFixture[str]) -> None:
    assert KEY not in json.dumps(tiny_report.to_json())
    assert f"$(cat {tiny_report.api_key_file!r})" in tiny_report.curl  # sh-quoted: the path holds a space
    tree = ast.parse(tiny_report.python)  # valid Python whose literals are exactly our values
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert {tiny_report.api_key_file, tiny_report.endpoint, ALIAS} <= literals
    print_report(tiny_report)
    out = capsys.readouterr()
    assert out.err == ""  # the report is the install's output: stdout
    for text in (tiny_report.endpoint, tiny_report.api_key_file, tiny_report.curl, "first token",
                 f"Chat in a browser: {tiny_report.endpoint.removesuffix('/v1')}/", "'Enter API Key'"):
        assert text in out.out
    assert KEY not in out.out
    # a server started without --reasoning (a model with no thinking mode): not a word about thinking
    assert "hinking" not in out.out and "enable_thinking" not in out.out
    print_report(dataclasses.replace(tiny_report, thinking=False))
    out = capsys.readouterr()
    for text in ("Thinking: off by default", '"chat_template_kwargs": {"enable_thinking": True}',
                 "reasoning_content", "--thinking on|off"):
        assert text in out.out
    assert "\n\n\n" not in out.out and not out.out.endswith("\n\n")  # blocks apart by one blank line


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("sh") is None, reason="needs curl and sh")
def test_curl_line_works_as_printed(tiny_report: VerifyReport) -> None:
    # Run exactly the printed line, as a user pastes it into a shell (plus -w to see the HTTP status).
    done = subprocess.run(["sh", "-c", tiny_report.curl + " -o /dev/null -w '%{http_code}'"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (0, "200"), done.stderr
    body = subprocess.run(["sh", "-c", tiny_report.curl], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(body.stdout)["choices"][0]["message"]["role"] == "assistant"


def test_wrong_key_is_a_server_error(tiny_server: tuple[LaunchSpec, subprocess.Popen[bytes], Path]) -> None:
    spec = tiny_server[0]
    with pytest.raises(ServerError) as info:
        verify_server(spec, "sk-not-the-key", timeout=30)
    assert info.value.exit_code == ExitCode.SERVER
    assert info.value.message == t("verify.err_status", what="GET /v1/models", status=401, message="Invalid API Key")


def test_chat_refused_by_the_server_reports_its_message(
        tiny_server: tuple[LaunchSpec, subprocess.Popen[bytes], Path]) -> None:
    spec = tiny_server[0]
    with pytest.raises(ServerError) as info:
        verify_server(spec, KEY, timeout=60, prompt="word " * 1000)  # far beyond -c 256
    assert info.value.exit_code == ExitCode.SERVER
    assert info.value.message.startswith("POST /v1/chat/completions answered HTTP 400: ")
    assert "context" in info.value.message and "\n" not in info.value.message


def test_server_without_a_key_is_refused(engine_bin_dir: Path, tiny: Path, tmp_path: Path) -> None:
    spec = _spec(tmp_path, engine_bin_dir, tiny, TINY_ARGS)
    argv = spec.argv()
    at = argv.index("--api-key-file")
    with _running(argv[:at] + argv[at + 2:], tmp_path / "server.log") as proc, pytest.raises(ServerError) as info:
        verify_server(spec, KEY, process=proc, timeout=60)
    assert info.value.exit_code == ExitCode.SERVER
    assert info.value.message == t("verify.err_no_key_file")  # read from its command line (verify/key_guard.py)
    assert info.value.hint == t("verify.hint_no_key_check")


def test_dead_server_fails_at_once_naming_the_cause(engine_bin_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    spec = _spec(tmp_path, engine_bin_dir, missing, TINY_ARGS)
    log = tmp_path / "server.log"
    with _running(spec.argv(), log) as proc, pytest.raises(EngineFailed) as info:
        # A timeout far beyond the test's own: only the exit check can end this wait.
        verify_server(spec, KEY, process=proc, log_path=log, timeout=3600)
    assert last_log_line(log) and proc.returncode not in (None, 0)
    failure = info.value.failure
    assert (failure.cause, failure.exit_code, failure.log) == ("model_load", proc.returncode, str(log))
    assert info.value.exit_code == ExitCode.SERVER
    assert info.value.message == t("failure.model_load", who="llama-server",
                                   detail=f"gguf_init_from_file: failed to open GGUF file '{missing}' "
                                          "(No such file or directory)")
    assert str(log) in (info.value.hint or "")


def test_nothing_listening_times_out_with_a_hint() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerError) as info:
        wait_healthy(url, timeout=0.5)
    assert info.value.exit_code == ExitCode.SERVER
    assert info.value.message.startswith(f"the server at {url} was not ready within 0.5 s (")
    assert "Connection refused" in info.value.message
    assert info.value.hint == t("verify.hint_health_timeout")


def test_windows_snippets(tmp_path: Path) -> None:
    key_file = Path("C:/Users/李 雷/AppData/Local/QwenClientKit/secrets/api-key")
    spec = LaunchSpec(home=tmp_path, system="Windows", engine_dir=tmp_path, server=tmp_path / "llama-server.exe",
                      model=tmp_path / "m.gguf", mmproj=None, args=(), alias=ALIAS, api_key_file=key_file, port=8080)
    curl, python = render_snippets(spec)
    assert curl.startswith(f'for /f "usebackq delims=" %k in ("{key_file}") do @curl.exe -sS '
                           f'"http://127.0.0.1:8080/v1/chat/completions" -H "Authorization: Bearer %k"')
    assert f'-d "{{\\"model\\": \\"{ALIAS}\\", ' in curl and "'" not in curl and "\n" not in curl
    literals = {n.value for n in ast.walk(ast.parse(python)) if isinstance(n, ast.Constant)}
    assert str(key_file) in literals


def test_gemma_verifies(engine_bin_dir: Path, gemma_gguf: Path, tmp_path: Path) -> None:
    """The slower test (a real 253 MB model): a base model without a template, so Gemma's built-in one."""
    spec = _spec(tmp_path, engine_bin_dir, gemma_gguf, ("-c", "2048", "-np", "1", "-t", "2", "--no-jinja",
                                                        "--chat-template", "gemma"))
    log = tmp_path / "server.log"
    with _running(spec.argv(), log) as proc:
        report = verify_server(spec, KEY, process=proc, log_path=log, max_tokens=16)
    assert report.tokens_per_s > 0 and report.first_token_s > 0
    assert report.stream_ok and report.rejects_without_key and report.completion_tokens > 0
    print(json.dumps({k: v for k, v in report.to_json().items() if k not in ("curl", "python")}))


@pytest.mark.parametrize("system", ["Linux", "Windows"])
def test_python_snippet_names_the_homes_venv_python(tmp_path: Path, system: str) -> None:
    home = tmp_path / "home with space"
    spec = LaunchSpec(home=home, system=system, engine_dir=home, server=home / "llama-server", model=home / "m.gguf",
                      mmproj=None, args=("--reasoning", "off"), alias=ALIAS, api_key_file=home / "secrets" / "api-key")
    _, bare = render_snippets(spec)
    assert bare.startswith("# pip install openai\n")  # no venv (install --no-venv): say what it needs
    python = home / "venv" / ("Scripts/python.exe" if system == "Windows" else "bin/python")
    python.parent.mkdir(parents=True)
    python.write_text("", encoding="utf-8")
    _, snippet = render_snippets(spec, max_tokens=100)
    first = snippet.splitlines()[0]
    assert str(python) in first and "max_tokens=100" in snippet
    if system == "Windows":
        assert first.endswith(f'"{python}" hello.py')
        ast.parse(snippet)
    else:
        assert first == f"'{python}' - <<'PY'" and snippet.endswith("\nPY")
        ast.parse("\n".join(snippet.splitlines()[1:-1]))
    assert "chat_template_kwargs" in snippet and "reasoning_content" in snippet
# ---- the wait for the model, as a person sees it ------------------------------------------------------------------

def test_the_wait_for_the_model_is_announced_at_once(engine_bin_dir: Path, tiny: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The real server: the "waiting" line comes at the first poll that finds it not ready, not at the end."""
    said: list[tuple[float, str]] = []
    monkeypatch.setattr(verify_mod, "info", lambda text: said.append((time.monotonic(), text)))
    spec = _spec(tmp_path, engine_bin_dir, tiny, TINY_ARGS)
    log = tmp_path / "server.log"
    started = time.monotonic()
    with _running(spec.argv(), log) as proc:
        waited = wait_healthy(spec.base_url, timeout=60, process=proc, log_path=log)
    assert said[0][1] == f"Waiting for the server at {spec.base_url} to load the model (this can take minutes)..."
    assert said[0][0] - started < 1.0 < waited + 1.0  # at the start of the wait


class _LoadingServer(http.server.BaseHTTPRequestHandler):
    """``/health`` as llama-server answers it while the weights load (503), then ready (200)."""

    ready_at = 0.0

    def do_GET(self) -> None:
        loading = time.monotonic() < self.ready_at
        body = json.dumps({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}} if loading
                          else {"status": "ok"}).encode()
        self.send_response(503 if loading else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(("with_log", "verbose"), [(True, True), (True, False), (False, False)])
def test_a_long_load_shows_a_line_now_and_then_with_what_the_server_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], with_log: bool,
        verbose: bool) -> None:
    """The engine's own log line only with ``--verbose``; otherwise the elapsed time (the usual "Loading model"
    that ``/health`` says is no news)."""
    monkeypatch.setattr(progress, "LINE_EVERY", 0.5)  # 10 s in real life
    monkeypatch.setattr(console, "_verbose", verbose)
    log = tmp_path / "server.log"
    log.write_text("llama_model_loader: loaded meta data\n"
                   "load_tensors: loading model tensors, this can take a while... (mmap = true)\n", encoding="utf-8")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _LoadingServer)
    _LoadingServer.ready_at = time.monotonic() + 2.2
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        wait_healthy(f"http://127.0.0.1:{server.server_port}", timeout=30, log_path=log if with_log else None)
    finally:
        server.shutdown()
        server.server_close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("Waiting for the server at http://127.0.0.1:")
    assert 3 <= len(lines) - 1 <= 5 and "\r" not in "".join(lines)  # one line a "LINE_EVERY", no redraws
    for line in lines[1:]:
        if verbose:
            detail = "load_tensors: loading model tensors, this can take a while... (mmap = true)"
            assert re.fullmatch(rf"loading the model\.\.\. \d s \({re.escape(detail)}\)", line), line
        else:
            assert re.fullmatch(r"loading the model\.\.\. \d s", line), line


def test_the_key_goes_to_no_stranger_that_answers_health(tmp_path: Path) -> None:
    """Issue 24: what answers ``/health`` 200 on the port is not proof that it is our server (ours may have failed
    to bind while a stranger holds the port). ``verify_server`` asks the OS who holds the socket before the first
    request that carries the key: a stranger gets only the public ``/health`` poll, never the key (exit 6)."""
    from tests.support.stranger import Stranger

    spec = _spec(tmp_path, tmp_path / "engine", tmp_path / "m.gguf", TINY_ARGS)
    with Stranger(spec.port, tmp_path / "seen.jsonl") as stranger, pytest.raises(ServerError) as info:
        verify_server(spec, KEY, timeout=30)
    assert info.value.exit_code == ExitCode.SERVER
    assert info.value.message.startswith(f"port {spec.port} is held by PID {stranger.pid} (")
    assert [(r["path"], r["authorization"]) for r in stranger.requests()] == [("/health", None)]
