"""The verify stage: prove the installed server answers like the OpenAI API, with its key, and measure it.

Order matters: ``/health`` first (llama-server answers 503 ``Loading model`` on every endpoint until the weights
are in, then 200 ``{"status":"ok"}``), then the OS is asked whether the socket that answered is this home's server
(``register/server_identity.py``: the key is never sent to another program on the port), then ``/v1/models`` with
the key (the alias must be listed), then whether the server was started with the key
(``verify/key_guard.py``: read from its command line, not by a request without the key, which llama-server logs as
"unauthorized"), then one plain and one streamed chat request, then one tool-call request (``tools_check``: whether
agent clients can use this server; a "no" is reported and recorded, not a failure). Streaming with
``stream_options.include_usage`` makes the last chunk carry ``usage`` and ``timings`` before ``data: [DONE]``
(llama.cpp ``tools/server/README.md``; docs/engine.md, "Endpoints"). The key is sent, never printed: reports name
its file. Last, whether llama-server's own chat page loads (``web_page``), so the report mentions it only then.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests

from bootstrap.core.console import info, join_names, out, t, verbose
from bootstrap.core.errors import ServerError
from bootstrap.core.progress import Ticker
from bootstrap.core.templating import render_template
from bootstrap.fetch.http_session import local_session
from bootstrap.place.engine_failure import (
    NOT_STARTED,
    EngineFailed,
    EngineFailure,
    ExitInfo,
    classify,
    clean_lines,
    read_log_tail,
)
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.base import Evidence
from bootstrap.register.server_identity import require_ours
from bootstrap.verify.key_guard import require_key_guard
from bootstrap.verify.server_text import one_line as _one_line
from bootstrap.verify.server_text import server_message as _server_message
from bootstrap.verify.tools_check import check_tools, tools_line
from bootstrap.verify.tools_record import ToolsCheck
from bootstrap.verify.web_page import WebPage, check_web_page, web_page_lines

DEFAULT_PROMPT = "Say hello in one short sentence."
REPLY_CHARS = 200  # the report shows the start of the reply, not a whole essay
_POLL_S = 0.1
LOADING_DETAIL = 100  # characters of the server's own words on the loading line
_DEAD_AFTER = 5  # polls in a row without the server process (a start script execs llama-server: a brief gap)


@dataclass(frozen=True)
class VerifyReport:
    """What a person (or ``status --json``) needs to use the server, and how fast it answered."""

    endpoint: str  # OpenAI base_url, http://HOST:PORT/v1
    model: str  # the alias to send as "model"
    api_key_file: str
    health_wait_s: float
    first_token_s: float  # request sent → first streamed content (or reasoning) delta
    tokens_per_s: float  # generation speed of the streamed reply (llama-server's timings)
    completion_tokens: int
    reply: str
    stream_ok: bool
    rejects_without_key: bool
    curl: str
    python: str
    thinking: bool | None = None  # the server's default (``--reasoning on|off``); None: the chat template decides
    agent: str = ""  # the command that runs <home>/venv/examples/agent.py ("" without the venv or without tools)
    web_page: WebPage | None = None  # llama-server's own chat page, checked to load (``web_page``)
    tools: ToolsCheck | None = None  # the tool-call proof (``tools_check``)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def last_log_line(path: Path) -> str:
    """The last non-empty line of a log file (ANSI colours stripped), read from its tail only."""
    lines = clean_lines(read_log_tail(path))
    return lines[-1] if lines else ""


def _failed(evidence: Evidence) -> EngineFailed:
    """The server is gone: name the cause from how it ended and what it logged (``engine_failure``). No exit status
    and an empty or missing log: it never ran (a log that does not exist is not named as the place to look)."""
    if evidence.exit is None and not evidence.log_text.strip():
        where = evidence.log_where if evidence.log_where and Path(evidence.log_where).is_file() else None
        failure = EngineFailure(NOT_STARTED, t("failure.no_log", log=where) if where else t("failure.no_log_file"),
                                log=where)
    else:
        failure = classify(evidence.exit, evidence.log_text, log_path=evidence.log_where)
    return failure.error(t("failure.who_server"))


def _from_log(log_path: Path | None, exit_info: ExitInfo | None = None) -> Evidence:
    return Evidence(exit_info, read_log_tail(log_path) if log_path is not None else "",
                    None if log_path is None else str(log_path))


def _exited(process: subprocess.Popen[Any], log_path: Path | None) -> EngineFailed:
    return _failed(_from_log(log_path, ExitInfo.from_returncode(process.returncode)))


def wait_healthy(base_url: str, *, timeout: float, process: subprocess.Popen[Any] | None = None,
                 log_path: Path | None = None, alive: Callable[[], bool] | None = None,
                 evidence: Callable[[], Evidence] | None = None) -> float:
    """Poll ``/health`` until 200; the seconds waited. A dead ``process`` fails at once, not at the timeout, and
    so does a server that ``alive`` (the service manager's view) reports gone several polls in a row; either way
    the error names the cause, from ``evidence`` (the manager's exit status and log) or the log file."""
    start = time.perf_counter()
    deadline = start + timeout
    last = t("verify.no_answer")
    misses = 0
    ticker: Ticker | None = None  # made at the first answer that is not 200: a quick start prints nothing
    with local_session() as session, contextlib.ExitStack() as stack:
        while True:
            if process is not None and process.poll() is not None:
                raise _exited(process, log_path)
            misses = misses + 1 if alive is not None and not alive() else 0
            if misses >= _DEAD_AFTER:
                raise _failed(evidence() if evidence is not None else _from_log(log_path))
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise ServerError(t("verify.err_health_timeout", url=base_url, seconds=f"{timeout:g}", last=last),
                                  t("verify.hint_health_timeout"))
            try:
                resp = session.get(f"{base_url}/health", timeout=min(2.0, max(remaining, 0.1)))
                if resp.status_code == 200:
                    return time.perf_counter() - start
                said = _server_message(resp)
                last = f"HTTP {resp.status_code} {said}"  # 503 "Loading model": keep waiting
            except requests.RequestException as exc:
                last = _one_line(str(exc))
                said = ""
            if ticker is None:
                ticker = Ticker()
                stack.callback(ticker.close)
                info(t("verify.loading_started", url=base_url))
            ticker.tick(lambda said=said: _loading_line(time.perf_counter() - start, log_path, said))
            time.sleep(min(_POLL_S, max(deadline - time.perf_counter(), 0)))


def _loading_line(elapsed: float, log_path: Path | None, said: str) -> str:
    """"loading the model... 20 s": with ``--verbose`` what the server last logged (``load_tensors: …``); otherwise
    only what ``/health`` said when it is not the usual "Loading model" (the engine's own log is not for people)."""
    detail = _one_line(last_log_line(log_path), LOADING_DETAIL) if log_path is not None and verbose() else ""
    if not detail and said.strip().rstrip(".").lower() != "loading model":
        detail = _one_line(said, LOADING_DETAIL)
    key = "verify.loading_detail" if detail else "verify.loading"
    return t(key, seconds=int(elapsed), detail=detail)


def checked_json(resp: requests.Response, what: str) -> dict[str, Any]:
    """The JSON object of a 200 answer; anything else is a ``ServerError`` with the server's own words."""
    if resp.status_code != 200:
        raise ServerError(t("verify.err_status", what=what, status=resp.status_code, message=_server_message(resp)),
                          t("verify.hint_server"))
    try:
        doc = resp.json()
    except ValueError as exc:
        raise ServerError(t("verify.err_request", what=what, detail=_one_line(resp.text[:300])),
                          t("verify.hint_server")) from exc
    if not isinstance(doc, dict):
        raise ServerError(t("verify.err_request", what=what, detail=_one_line(resp.text[:300])),
                          t("verify.hint_server"))
    return doc


def _request(session: requests.Session, method: str, url: str, what: str, **kwargs: Any) -> requests.Response:
    try:
        return session.request(method, url, **kwargs)
    except requests.RequestException as exc:
        raise ServerError(t("verify.err_request", what=what, detail=_one_line(str(exc))),
                          t("verify.hint_server")) from exc


def post_json(session: requests.Session, url: str, what: str, timeout: float, body: dict[str, Any],
              headers: dict[str, str]) -> requests.Response:
    """POST a JSON body; a connection failure is a ``ServerError`` naming ``what``."""
    return _request(session, "POST", url, what, json=body, headers=headers, timeout=timeout)


def _listed_models(doc: dict[str, Any]) -> list[str]:
    """Ids in OpenAI's ``data`` and names in the Ollama-style ``models`` list llama-server also returns."""
    names = [str(m.get("id")) for m in doc.get("data", []) if isinstance(m, dict)]
    names += [str(m.get(k)) for m in doc.get("models", []) if isinstance(m, dict) for k in ("name", "model")
              if m.get(k)]
    return names


def _chat_body(spec: LaunchSpec, prompt: str, max_tokens: int, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": spec.alias, "messages": [{"role": "user", "content": prompt}],
                            "max_tokens": max_tokens}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _sse_events(resp: requests.Response, deadline: float, what: str) -> Iterator[str]:
    """The ``data:`` payloads of a server-sent event stream, bounded by ``deadline``."""
    for raw in resp.iter_lines():
        if time.perf_counter() > deadline:
            raise ServerError(t("verify.err_request", what=what, detail=t("verify.no_answer")),
                              t("verify.hint_server"))
        line = raw.decode("utf-8", "replace").strip()
        if line.startswith("data:"):
            yield line[5:].strip()
        elif line.startswith("error:"):  # llama-server reports a failure mid-stream this way
            raise ServerError(t("verify.err_request", what=what, detail=_one_line(line[6:])), t("verify.hint_server"))


@dataclass(frozen=True)
class StreamPart:
    """One chunk of a streamed chat answer: its text and reasoning deltas, and on the last chunks the ``usage``
    and ``timings`` (``stream_options.include_usage``); ``done`` marks ``data: [DONE]``, the stream's proper end
    (a stream cut short ends without it)."""

    content: str = ""
    reasoning: str = ""
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    done: bool = False


def stream_parts(resp: requests.Response, what: str, deadline: float = float("inf")) -> Iterator[StreamPart]:
    """The chunks of a streamed ``/v1/chat/completions`` answer (one home for its parsing: the verify stage and
    ``qwenkit run`` read the same stream). The reasoning arrives in ``delta.reasoning_content`` (``--reasoning-format``
    auto = deepseek, llama.cpp ``common/arg.cpp``); an ``error`` object mid-stream is a ``ServerError``."""
    for payload in _sse_events(resp, deadline, what):
        if payload == "[DONE]":
            yield StreamPart(done=True)
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            continue
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("error"), dict):
            raise ServerError(t("verify.err_status", what=what, status=chunk["error"].get("code", "?"),
                                message=_one_line(str(chunk["error"].get("message", "")))),
                              t("verify.hint_server"))
        content, reasoning = [], []
        for choice in chunk.get("choices") or []:
            delta = (choice.get("delta") or {}) if isinstance(choice, dict) else {}
            content.append(str(delta.get("content") or ""))
            reasoning.append(str(delta.get("reasoning_content") or ""))
        usage, timings = chunk.get("usage"), chunk.get("timings")
        yield StreamPart("".join(content), "".join(reasoning), usage if isinstance(usage, dict) else None,
                         timings if isinstance(timings, dict) else None)


@dataclass(frozen=True)
class _Streamed:
    first_token_s: float
    tokens_per_s: float
    done: bool


def _stream(session: requests.Session, spec: LaunchSpec, headers: dict[str, str], prompt: str, max_tokens: int,
            timeout: float) -> _Streamed:
    what = "POST /v1/chat/completions (stream)"
    url = f"{spec.openai_base_url}/chat/completions"
    sent = time.perf_counter()
    resp = _request(session, "POST", url, what, json=_chat_body(spec, prompt, max_tokens, True), headers=headers,
                    timeout=(5, timeout), stream=True)
    with resp:
        if resp.status_code != 200:
            checked_json(resp, what)
        first: float | None = None
        last_token = sent
        tokens = 0
        per_second: float | None = None
        done = False
        for part in stream_parts(resp, what, sent + timeout):
            if part.done:
                done = True
                break
            if part.content or part.reasoning:
                last_token = time.perf_counter()
                first = last_token - sent if first is None else first
            tokens = int((part.usage or {}).get("completion_tokens") or tokens)
            timings = part.timings or {}
            if timings.get("predicted_per_second"):
                per_second = float(timings["predicted_per_second"])
    if first is None or not done:
        raise ServerError(t("verify.err_stream"), t("verify.hint_server"))
    if per_second is None:  # an engine without timings: tokens after the first over the time they took
        span = last_token - sent - first
        per_second = (tokens - 1) / span if tokens > 1 and span > 0 else 0.0
    return _Streamed(first, per_second, done)


def home_python(spec: LaunchSpec) -> Path | None:
    """The home's venv interpreter (``venv/bin/python``, ``venv\\Scripts\\python.exe``), which has the OpenAI SDK,
    when it exists (``install --no-venv``: none)."""
    venv = spec.home / "venv"
    python = venv / "Scripts" / "python.exe" if spec.system == "Windows" else venv / "bin" / "python"
    return python if python.is_file() else None


def agent_command(spec: LaunchSpec) -> str:
    """How to run the agent example the venv carries (``place.runtime_venv``), or "" when there is none."""
    python, agent = home_python(spec), spec.home / "venv" / "examples" / "agent.py"
    if python is None or not agent.is_file():
        return ""
    return render_template("agent-command.txt.j2", system=spec.system, python=str(python), agent=str(agent)).strip()


def rag_command(spec: LaunchSpec) -> str:
    """How to run the RAG example the venv carries (``venv/examples/rag.py``), or "" when there is none."""
    python, rag = home_python(spec), spec.home / "venv" / "examples" / "rag.py"
    if python is None or not rag.is_file():
        return ""
    return render_template("agent-command.txt.j2", system=spec.system, python=str(python), agent=str(rag)).strip()


def render_embedding_snippet(spec: LaunchSpec, name: str) -> str:
    """The curl line that asks embedding model ``name`` for vectors through this endpoint (key from its file)."""
    body = json.dumps({"model": name, "input": ["检索增强生成", "retrieval-augmented generation"]},
                      ensure_ascii=False)
    return render_template("snippet-curl.txt.j2", system=spec.system, url=f"{spec.client_openai_url}/embeddings",
                           key_file=str(spec.api_key_file), body=body, body_cmd=body.replace('"', '\\"')).strip()


def render_snippets(spec: LaunchSpec, prompt: str = DEFAULT_PROMPT, max_tokens: int = 256) -> tuple[str, str]:
    """The curl line and the Python snippet for this server (both read the key from its file), addressed where
    clients should connect (``LaunchSpec.client_openai_url``). The Python one names the home's venv interpreter
    when there is one: a system Python usually lacks the ``openai`` package."""
    body = json.dumps(_chat_body(spec, prompt, max_tokens, False), ensure_ascii=False)
    curl = render_template("snippet-curl.txt.j2", system=spec.system, url=f"{spec.client_openai_url}/chat/completions",
                           key_file=str(spec.api_key_file), body=body, body_cmd=body.replace('"', '\\"'))
    python_exe = home_python(spec)
    python = render_template("snippet-python.txt.j2", base_url=spec.client_openai_url, system=spec.system,
                             key_file=str(spec.api_key_file), alias=spec.alias, prompt=prompt, max_tokens=max_tokens,
                             python=None if python_exe is None else str(python_exe), thinks=spec.thinking is not None,
                             notes={"save_as": t("verify.note_save_as"), "thinking": t("verify.note_thinking"),
                                    "reasoning": t("verify.note_reasoning")})
    return curl.strip(), python.rstrip()


def verify_server(spec: LaunchSpec, api_key: str, *, timeout: float = 120, prompt: str = DEFAULT_PROMPT,
                  max_tokens: int = 32, process: subprocess.Popen[Any] | None = None,
                  log_path: Path | None = None, alive: Callable[[], bool] | None = None,
                  evidence: Callable[[], Evidence] | None = None) -> VerifyReport:
    """Wait for the server, check it guards its key and lists the model, chat once plainly and once streamed."""
    health_wait = wait_healthy(spec.base_url, timeout=timeout, process=process, log_path=log_path, alive=alive,
                               evidence=evidence)
    holder = require_ours(spec)  # the key goes only to this home's server, never to whatever answered on the port
    auth = {"Authorization": f"Bearer {api_key}"}
    chat_url = f"{spec.openai_base_url}/chat/completions"
    with local_session() as session:
        what = "GET /v1/models"
        models = checked_json(_request(session, "GET", f"{spec.openai_base_url}/models", what, headers=auth,
                                   timeout=timeout), what)
        listed = _listed_models(models)
        if spec.alias not in listed:
            raise ServerError(t("verify.err_alias", alias=spec.alias, listed=join_names(listed) or "-"),
                              t("verify.hint_server"))

        what = "POST /v1/chat/completions"
        require_key_guard(spec, holder, lambda: _request(session, "POST", chat_url, what, timeout=timeout,
                                                         json=_chat_body(spec, prompt, 1, False)).status_code)

        plain = checked_json(_request(session, "POST", chat_url, what, json=_chat_body(spec, prompt, max_tokens, False),
                                  headers=auth, timeout=timeout), what)
        message = ((plain.get("choices") or [{}])[0].get("message")) or {}
        reply = str(message.get("content") or message.get("reasoning_content") or "")
        usage = plain.get("usage") or {}
        streamed = _stream(session, spec, auth, prompt, max_tokens, timeout)
        tools = check_tools(session, spec.base_url, spec.alias, spec.args, auth, router=spec.router,
                            timeout=timeout)

    curl, python = render_snippets(spec)
    return VerifyReport(
        endpoint=spec.client_openai_url,  # where clients connect (a LAN address for --host 0.0.0.0)
        model=spec.alias,
        api_key_file=str(spec.api_key_file),
        health_wait_s=health_wait,
        first_token_s=streamed.first_token_s,
        tokens_per_s=streamed.tokens_per_s,
        completion_tokens=int(usage.get("completion_tokens") or 0),
        reply=_one_line(reply, REPLY_CHARS),
        stream_ok=streamed.done,
        rejects_without_key=True,
        curl=curl,
        python=python,
        thinking=spec.thinking,
        agent=agent_command(spec) if tools.ok else "",  # the example calls a tool: offered where tools work
        web_page=check_web_page(spec),
        tools=tools,
    )


def print_report(report: VerifyReport, speed: Sequence[str] = ()) -> None:
    """The human report, the install's output (stdout): where to connect, where the key is, how fast (``speed``:
    the measured lines of ``speed_check.speed_lines``), how to try it, and (for a model that thinks) how thinking
    is switched; its blocks apart by one blank line."""
    head = [t("verify.report_title"), t("verify.report_endpoint", url=report.endpoint),
            t("verify.report_model", model=report.model), t("verify.report_key", path=report.api_key_file),
            t("verify.report_speed", first=report.first_token_s, tps=report.tokens_per_s)]
    head += speed
    if report.reply:
        head.append(t("verify.report_reply", reply=report.reply))
    if report.tools is not None:
        head.append(tools_line(report.tools))
    blocks = [head, [t("verify.report_curl"), report.curl], [t("verify.report_python"), report.python]]
    if report.agent:
        blocks.append([t("verify.report_agent"), report.agent])
    if report.web_page is not None:
        blocks.append(web_page_lines(report.web_page, report.api_key_file))
    blocks.append(thinking_lines(report.thinking))
    for n, block in enumerate(b for b in blocks if b):
        if n:
            out("")
        for line in block:
            out(line)


def thinking_lines(thinking: bool | None) -> list[str]:
    """Whether the server thinks by default, and how a client turns it on or off per request: the request's
    ``chat_template_kwargs`` (llama.cpp ``tools/server/README.md``), the reasoning in ``reasoning_content``
    (``--reasoning-format`` auto = deepseek, llama.cpp ``common/arg.cpp``). Nothing for ``None``: a server started
    without ``--reasoning`` serves a model with no thinking mode (``planner.Candidate.thinks``)."""
    if thinking is None:
        return []
    state = "verify.thinking_on" if thinking else "verify.thinking_off"
    return [t(state), t("verify.thinking_per_request"), t("verify.thinking_default")]
