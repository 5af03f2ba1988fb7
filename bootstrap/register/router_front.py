"""The router's front: several models behind the endpoint answer clients as the one-model server did.

llama-server's router (llama.cpp b11434, ``tools/server/server-models.cpp``) differs from one model's server in two
ways clients meet, and the engine has no option for either (checked in the b11434 sources; a ``default-model``
preset key is only proposed upstream, llama.cpp PR #19855, open):

1. **A request that names no model is refused**: ``router_validate_model`` answers 400 "model name is missing from
   the request" before anything else, so an app that worked against the one-model install (curl without
   ``"model"``, ``/slots`` and ``/metrics`` without ``?model=``) stops working the moment a second model — even an
   embedding model — is added.
2. **``GET /v1/models`` shows each model's command line with an absolute path** (``status.args``) to every key
   holder: its first word is the engine's path, which the router takes from the OS (``get_server_exec_path``:
   ``/proc/self/exe``, ``GetModuleFileNameW``) whatever the start script says, so the install home and the user's
   name (``/home/alice/...``). The preset's own paths are already relative to the home.

So in router mode the start script runs this front on the install's address instead of the router; the front
starts the router as its child on a free 127.0.0.1 port and passes every request through unchanged, except:

- a JSON request body without a ``"model"`` (or with an empty one) gets the default model's name, and ``GET
  /slots``, ``/metrics`` and ``/lora-adapters`` without ``?model=`` get ``model=<default>`` — what the one-model
  server answered is what the default model answers now. The router's own model management (``/models``,
  ``/models/load``, ``/models/unload``) and ``GET /props`` (the router's description, which the web page reads to
  offer every model) are passed as they are;
- in the model list (``GET /models``, ``/v1/models``) every absolute path of ``status.args`` and ``status.preset``
  becomes its last part (``llama-server``); the flags stay (a team gateway reads a model's slots, ``-np``, there),
  and so do id, state and capabilities;
- a chat request with no system (or developer) message gets its model's system prompt first, when the user gave
  that model one (``plan/presets.py``, docs/presets.md: llama-server has no such option); for this alone the front
  also runs before one model's server (its child is then that llama-server, not a router).

In router mode the front also keeps each model's prompt cache across the router's own unloads (LRU) and the
keep-alive's sleep: it saves a model's slots when its requests end and it stays idle, and restores them before a
request that finds the model unloaded or asleep (``register/front_cache.py``).

For ``qwenkit ps`` the front also keeps, per model, how many requests it is passing on now and when the last one
ended (what the engine does not publish: its idle timer, ``time_last_task`` in ``server-queue.cpp``, has no
endpoint, and ``GET /slots`` would wake a sleeping model and restart that timer); ``GET ACTIVITY_PATH`` with the key
answers them (``Activity``). Only requests whose body names a model count (chat, completions, embeddings…).

The key stays llama-server's job: the front only reads the key file (``LLAMA_ARG_API_KEY_FILE``, which the start
script sets for the router's children anyway) to decide whether to read a body before passing it on; a request
without the key is streamed through untouched and the router refuses it (401). Bodies larger than
``INSPECT_LIMIT`` are streamed through as they are.

Answers are streamed as they arrive (server-sent events token by token) with ``Connection: close``, as the router's
own proxied answers are; a client that hangs up closes the router's connection, which stops the generation. While
the router is not yet listening the front answers 503 "Loading model", as llama-server does while it loads.

The front lives as long as its router: it exits with the router's status (the same signal for a crash, so the
supervisor and ``engine_failure`` read it as before), a SIGTERM/SIGINT/SIGHUP is passed to the router, and a
killed front leaves no router behind (``core/process_ties``): on Linux the router is told to end with the front
(``PR_SET_PDEATHSIG``); on Windows the front and all it starts are one kill-on-close job, and the front ends with
the process that started it (the frozen setup's first process, the venv's ``qwenkit.exe``, ``cmd.exe``), so a
kill of either of the two processes Task Manager shows for the frozen front ends the router and its children too.
Measured cost: ``scripts/bench_front.py`` (docs/several-models.md).
"""

from __future__ import annotations

import contextlib
import hmac
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from bootstrap.core.process_ties import die_with_parent, end_with_parent, kill_on_close_job
from bootstrap.core.processes import SERVER_STOP_TIMEOUT_S, end_as
from bootstrap.plan.prompt_cache import CACHE_HEADER

if TYPE_CHECKING:
    from bootstrap.register.front_cache import CacheKeeper

CHILD_HOST = "127.0.0.1"
INSPECT_LIMIT = 64 << 20  # bytes of a request body read to find its "model" (a few base64 images fit)
LIST_LIMIT = 16 << 20  # bytes of a model list read to filter it
CLIENT_TIMEOUT_S = 600.0  # a client that sends or reads nothing for this long is dropped
BLOCK = 64 << 10
ROUTER_OWN = frozenset({"/models", "/models/load", "/models/unload"})  # there "model" names what to act on
MODEL_LISTS = frozenset({"/models", "/v1/models"})
CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})  # where a model's system prompt is added
GET_BY_QUERY = frozenset({"/slots", "/metrics", "/lora-adapters"})  # the router picks the child by ?model=
_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
                  "content-length", "host", "expect"})
ACTIVITY_PATH = "/qwenkit/activity"  # the front's own: no llama-server route starts with /qwenkit
_LOADING = json.dumps({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}).encode()


def name_default(body: bytes, default: str) -> bytes | None:
    """``body`` with ``"model": default`` when it is a JSON object naming no model (absent, null or ""); None when
    it needs nothing (not JSON, not an object, or a model named)."""
    text = body.lstrip()
    if not text.startswith(b"{"):
        return None
    try:
        doc = json.loads(body)
    except ValueError:  # UnicodeDecodeError included: the router says what is wrong with it
        return None
    if not isinstance(doc, dict) or (isinstance(doc.get("model"), str) and doc["model"]):
        return None
    doc["model"] = default
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def with_system(body: bytes, prompts: Mapping[str, str], default: str) -> bytes | None:
    """A chat request's ``body`` with its model's system prompt first (``plan/presets.py``), when the model has one
    and the request holds no ``system`` or ``developer`` message of its own (the request's own always wins); None
    when it needs nothing."""
    if not prompts:
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return None
    model = doc["model"] if isinstance(doc.get("model"), str) and doc["model"] else default
    text = prompts.get(model)
    messages = doc["messages"]
    if not text or any(isinstance(m, dict) and m.get("role") in ("system", "developer") for m in messages):
        return None
    doc["messages"] = [{"role": "system", "content": text}, *messages]
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def read_system_prompts(path: Path) -> dict[str, str]:
    """The system prompts file the start script names (model name → text); ``ValueError`` when it is not one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        raise ValueError(f"{path} is not a table of model names and texts")
    return doc


def query_with_default(target: str, default: str) -> str:
    """``/slots?x=1`` → ``/slots?x=1&model=<default>`` unless it names a model already."""
    parts = urlsplit(target)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if any(k == "model" and v for k, v in pairs):
        return target
    pairs = [(k, v) for k, v in pairs if k != "model"] + [("model", default)]
    return parts.path + "?" + urlencode(pairs)


_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def _bare(value: str) -> str:
    """An absolute path as its last part (``/home/alice/…/llama-server`` → ``llama-server``), anything else as it is."""
    if value.startswith("/") or _WINDOWS_ABSOLUTE.match(value):
        return re.split(r"[\\/]", value.rstrip("\\/"))[-1] or value
    return value


def without_paths(body: bytes) -> bytes | None:
    """The model list with no absolute path left in each model's ``status.args`` (the engine's own path first)
    and ``status.preset``: each becomes its last part, the flags stay (the team gateway reads ``-np`` there); None
    when it is not a model list."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return None
    for entry in data:
        status = entry.get("status") if isinstance(entry, dict) else None
        if not isinstance(status, dict):
            continue
        if isinstance(status.get("args"), list):
            status["args"] = [_bare(a) if isinstance(a, str) else a for a in status["args"]]
        if isinstance(status.get("preset"), str):
            status["preset"] = "\n".join(_preset_line(line) for line in status["preset"].split("\n"))
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _preset_line(line: str) -> str:
    key, sep, value = line.partition(" = ")
    return f"{key}{sep}{_bare(value)}" if sep else line


class Activity:
    """Per model: requests being passed on now, and the wall-clock time the last one ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: dict[str, int] = {}
        self._ended: dict[str, float] = {}
        self.started = time.time()

    def begin(self, model: str) -> None:
        with self._lock:
            self._busy[model] = self._busy.get(model, 0) + 1

    def busy(self, model: str) -> int:
        with self._lock:
            return self._busy.get(model, 0)

    def end(self, model: str) -> None:
        with self._lock:
            self._busy[model] = max(0, self._busy.get(model, 0) - 1)
            self._ended[model] = time.time()

    def document(self) -> bytes:
        """``{"started": T, "models": {name: {"busy": N, "last_end": T|null}}}`` (seconds since the epoch)."""
        with self._lock:
            names = set(self._busy) | set(self._ended)
            models = {n: {"busy": self._busy.get(n, 0), "last_end": self._ended.get(n)} for n in sorted(names)}
        return json.dumps({"started": self.started, "models": models}).encode("utf-8")


def body_model(body: bytes) -> str | None:
    """The ``"model"`` a JSON request body names (after ``name_default``), or None."""
    if not body.lstrip().startswith(b"{"):
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    return model if isinstance(model, str) and model else None


class _Front(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = os.name != "nt"  # POSIX: a port in TIME_WAIT may be bound again; Windows: would share it

    def __init__(self, address: tuple[str, int], family: int, default: str, upstream: int, key: str,
                 prompts: Mapping[str, str] | None = None) -> None:
        self.address_family = family
        self.default_model, self.upstream_port, self.key = default, upstream, key
        self.system_prompts: Mapping[str, str] = prompts or {}
        self.activity = Activity()
        self.cache: CacheKeeper | None = None  # router mode with prompt cache folders (register/front_cache.py)
        super().__init__(address, _Handler, bind_and_activate=False)
        if family == socket.AF_INET6 and address[0] == "::":
            with contextlib.suppress(OSError):  # "::" takes IPv4 too, as llama-server's own bind does
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        try:
            self.server_bind()
            self.server_activate()
        except OSError:
            self.server_close()
            raise


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CLIENT_TIMEOUT_S
    server: _Front

    def log_message(self, format: str, *args: Any) -> None:
        """No access log: the router logs what it serves (and never the key)."""

    def do_GET(self) -> None:
        self._relay()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = do_GET

    # -- the request ---------------------------------------------------------------------------------------
    def _keyed(self) -> bool:
        """Whether the request carries this install's key (as llama-server reads it: ``Authorization: Bearer``,
        else ``X-Api-Key``); only such a request's body is read before it is passed on."""
        if not self.server.key:
            return True
        given = self.headers.get("Authorization") or self.headers.get("X-Api-Key") or ""
        given = given[len("Bearer "):] if given.startswith("Bearer ") else given
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.server.key.encode("utf-8"))

    def _target(self) -> str:
        path = urlsplit(self.path).path
        if self.command == "GET" and path in GET_BY_QUERY:
            return query_with_default(self.path, self.server.default_model)
        return self.path

    def _read_chunked(self) -> bytes | None:
        """A chunked request body (RFC 9112 §7.1), whole; None past ``INSPECT_LIMIT``."""
        parts, size = [], 0
        while True:
            line = self.rfile.readline(1024)
            length = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if length == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers: dropped
                return b"".join(parts)
            size += length
            if size > INSPECT_LIMIT:
                return None
            parts.append(self.rfile.read(length))
            self.rfile.readline(1024)

    # -- passing it on -------------------------------------------------------------------------------------
    def _relay(self) -> None:
        self.close_connection = True
        path = urlsplit(self.path).path
        if path == ACTIVITY_PATH and self.command == "GET":
            if self._keyed():
                self._answer(200, self.server.activity.document())
            else:
                self._answer(401, b'{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}')
            return
        body: bytes | None = b""
        stream_length = 0  # bytes of a body passed on as it comes (too large, or not ours to read)
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            try:
                body = self._read_chunked()
            except ValueError:
                body = None
            if body is None:
                self._answer(413, b'{"error":{"code":413,"message":"request body too large",'
                                  b'"type":"invalid_request_error"}}')
                return
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if 0 < length <= INSPECT_LIMIT and self._keyed():
                body = self.rfile.read(length)
            else:
                stream_length = length
        if body and path not in ROUTER_OWN:
            body = name_default(body, self.server.default_model) or body
        if body and path in CHAT_PATHS:
            body = with_system(body, self.server.system_prompts, self.server.default_model) or body
        using = body_model(body) if body and path not in ROUTER_OWN and self.command == "POST" else None
        cache = self.server.cache
        if using is not None and CACHE_HEADER in self.headers:
            if cache is not None:
                cache.kit_request(using)
            using = None  # the kit's own save or restore: no client's request
        elif cache is not None and path in ROUTER_OWN and self.command == "POST":
            cache.changed(unloading=path == "/models/unload")  # by hand (``qwenkit stop MODEL``): saved first
        if using is not None:
            self.server.activity.begin(using)
            if cache is not None:
                cache.before(using)  # restores its saved slots when the router unloaded it or it sleeps
        upstream = http.client.HTTPConnection(CHILD_HOST, self.server.upstream_port)
        try:
            try:
                upstream.putrequest(self.command, self._target(), skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in _HOP:
                        upstream.putheader(name, value)
                upstream.putheader("Host", self.headers.get("Host") or f"{CHILD_HOST}:{self.server.upstream_port}")
                upstream.putheader("Connection", "close")
                if stream_length or body or self.command in ("POST", "PUT", "PATCH"):
                    upstream.putheader("Content-Length", str(stream_length or len(body or b"")))
                upstream.endheaders()
            except ConnectionRefusedError:  # the router is not listening yet (or is starting again)
                self._answer(503, _LOADING)
                return
            if stream_length:
                _copy(self.rfile.read, upstream.send, stream_length)
            elif body:
                upstream.send(body)
            response = upstream.getresponse()
            self._answer_from(response, filter_list=self.command == "GET" and path in MODEL_LISTS)
        except (OSError, http.client.HTTPException):
            pass  # either side hung up: closing the router's connection ends what it was doing for this client
        finally:
            upstream.close()
            if using is not None:
                self.server.activity.end(using)
                if cache is not None:
                    cache.ended(using)

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _answer_from(self, response: http.client.HTTPResponse, *, filter_list: bool) -> None:
        length = response.getheader("Content-Length")
        body: bytes | None = None
        if filter_list and response.status == 200 and length is not None and int(length) <= LIST_LIMIT:
            body = without_paths(response.read(int(length)))
        self.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in _HOP:
                self.send_header(name, value)
        self.send_header("Connection", "close")
        if body is not None:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if length is not None:
            self.send_header("Content-Length", length)
        self.end_headers()
        if self.command == "HEAD":
            return
        while True:  # as it comes: a streamed answer token by token
            chunk = response.read1(BLOCK)
            if not chunk:
                return
            self.wfile.write(chunk)
            self.wfile.flush()


def _copy(read: Callable[[int], bytes], write: Callable[[bytes], Any], length: int) -> None:
    left = length
    while left > 0:
        chunk = read(min(BLOCK, left))
        if not chunk:
            raise ConnectionError("the client closed before its whole body was sent")
        write(chunk)
        left -= len(chunk)


def free_loopback_port() -> int:
    """A port nothing listens on at 127.0.0.1 now (the OS's choice), for the router."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((CHILD_HOST, 0))
        return int(sock.getsockname()[1])


def _bind_family(host: str, port: int) -> tuple[int, tuple[str, int]]:
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _type, _proto, _name, address = infos[0]
    return family, (str(address[0]), int(address[1]))


def _read_key(env: dict[str, str] | os._Environ[str]) -> str:
    """The key the router checks (its file named by ``LLAMA_ARG_API_KEY_FILE``, relative to the home where the
    router runs); "" without one (then every body may be read: the router has no key to refuse anyway)."""
    name = env.get("LLAMA_ARG_API_KEY_FILE", "")
    if not name:
        return ""
    try:
        return Path(name).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _cache_keeper(argv: Sequence[str], front: _Front) -> CacheKeeper | None:
    """The prompt cache keeper when the router's preset gives a model a ``slot-save-path``; imported only then
    (it brings ``requests``: ~9 MiB more for the front)."""
    words = list(argv)
    preset = next((Path(words[i + 1]) for i, w in enumerate(words[:-1]) if w == "--models-preset"), None)
    try:
        if preset is None or b"slot-save-path" not in preset.read_bytes():
            return None
    except OSError:
        return None
    from bootstrap.register.front_cache import CacheKeeper

    return CacheKeeper.from_preset(preset, f"http://{CHILD_HOST}:{front.upstream_port}", front.key,
                                   front.activity.busy)


def run_front(host: str, port: int, default_model: str, argv: Sequence[str],
              system_prompts: Path | None = None) -> int:
    """Listen on ``host:port``, start the router (``argv`` plus its own 127.0.0.1 address), relay until it ends;
    the router's exit status (a signal re-raised: ``processes.end_as``). ``system_prompts``: the JSON file of
    each model's system prompt (``with_system``); a damaged one ends the start (exit 1), never ignored."""
    try:
        prompts = read_system_prompts(system_prompts) if system_prompts is not None else {}
    except ValueError as exc:
        print(f"qwenkit front: {exc}", file=sys.stderr, flush=True)
        return 1
    family, address = _bind_family(host, port)
    upstream = free_loopback_port()
    try:
        front = _Front(address, family, default_model, upstream, _read_key(os.environ), prompts)
        front.cache = _cache_keeper(argv, front)
    except OSError as exc:  # the words llama-server uses, so the install names the cause the same way
        print(f"qwenkit front: couldn't bind HTTP server socket on {host}:{port}: {exc.strerror or exc}",
              file=sys.stderr, flush=True)
        return 1
    command = [*argv, "--host", CHILD_HOST, "--port", str(upstream)]
    extra: dict[str, Any] = {"preexec_fn": die_with_parent} if sys.platform.startswith("linux") else {}
    kill_on_close_job()  # Windows: the router and its children end with this process (module docstring)
    try:
        router = subprocess.Popen(command, close_fds=True, **extra)
    except OSError as exc:
        front.server_close()
        print(f"qwenkit front: cannot start {argv[0] if argv else '-'}: {exc.strerror or exc}", file=sys.stderr,
              flush=True)
        return 127
    end_with_parent(router.kill)  # Windows: the router's end then ends this front (router.wait below)

    def stop(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            router.send_signal(signum if os.name != "nt" else signal.SIGTERM)

    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)
    serving = threading.Thread(target=front.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    serving.start()
    try:
        returncode = router.wait()
    except KeyboardInterrupt:
        router.terminate()
        try:
            returncode = router.wait(SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            router.kill()
            returncode = router.wait()
    front.shutdown()
    front.server_close()
    if front.cache is not None:
        front.cache.close()
    return end_as(returncode)
