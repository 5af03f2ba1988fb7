"""The start-script install's supervisor: what systemd's ``Restart=`` is for the other installs, and a stall check.

Without a service manager (containers, WSL without systemd, ``--no-service``) nothing else would bring a dead
server back. ``qwenkit service start`` there runs ``qwenkit supervise``, which runs ``run_qwen.sh`` as its child
and:

- **restarts it when it ends** once it has served (answered ``/health`` 200): after 1 s, doubling up to 30 s while
  it keeps dying within a minute of its start (a restart that fails too, e.g. memory another program took, is
  retried the same way). A first start that ends before it ever served is not retried: the supervisor ends with
  the same status (exit code or signal), so the install names the cause as before (``engine_failure.classify``)
  instead of a crash loop hiding it;
- **restarts it when it stalls**, judged as a client would: every ``probe_interval`` seconds a one-token chat
  must be answered within ``probe_deadline``. ``/health`` is no proof: upstream reports generation stalled
  while ``/health`` stays 200 (llama.cpp issue #27388). A probe that times out only means a stall when the
  server is not making progress either: ``/slots`` (served by the same task loop) does not answer within the
  deadline, or two looks ``probe_deadline`` apart show no slot's prompt or generation move. Busy slots that move
  (four agents streaming, a long prompt being read) are never interrupted. The restart is SIGTERM, then SIGKILL
  after ``SERVER_STOP_TIMEOUT_S``. A chat and ``/slots`` are tasks that start the engine's idle time again
  (b11434 ``server-queue.cpp`` ``task_resets_idle_timer``: every task but ``/metrics``'), so asking them every
  minute kept the keep-alive's sleep (``--sleep-idle-seconds``) from ever coming. The kit starts its servers with
  ``--metrics`` (``LaunchSpec.server_args``): the probe reads ``/metrics`` first, asks no chat while no request is
  processing (nothing can stall then), and judges progress by the decode count; the periodic prompt-cache save
  runs only when something was decoded since the last one (``register/periodic_save.py``: the rule the cache
  keeper of a systemd install runs too). A model asleep (``/props`` ``is_sleeping``) or, in a
  router, not loaded is not probed at all: ``/metrics`` of a busy-looking router would ask its child, and it
  cannot stall. A server started without ``--metrics`` (a script from before) gets the chat and ``/slots``;
- **bounds the log**: the server's output comes through a pipe into ``logs/server.log``, rolled at 10 MiB with
  three old files kept (``core/log_files``); every line starts with the time of day it was written
  (``wall_clock``), and the supervisor's own lines then say ``qwenkit:``.

SIGTERM/SIGINT/SIGHUP stop it: the server is stopped the same way and nothing is restarted.

On Windows the child is ``cmd.exe`` running ``run_qwen.bat`` (``fallback.script_argv``), with llama-server its own
child: the port is looked up over that tree, and a restart kills the tree (``TerminateProcess`` ends only the
process it is given). The supervisor itself has no console there and gets no signal: ``FallbackManager.stop``
kills it with its tree.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import requests

from bootstrap.core.home import PRESET_NAME
from bootstrap.core.log_files import MAX_BYTES, RotatingLog
from bootstrap.core.processes import NO_WINDOW, SERVER_STOP_TIMEOUT_S, end_as, kill_tree
from bootstrap.fetch.http_session import local_session
from bootstrap.place.engine_failure import SUPERVISOR_PREFIX
from bootstrap.register import periodic_save, prompt_cache
from bootstrap.register.periodic_save import NO_METRICS, Load
from bootstrap.register.server_identity import argv_url, listening_url, owners_untold
from bootstrap.render.model_preset import first_model

RESTART_DELAYS_S = (1, 2, 4, 8, 16, 30)
STEADY_S = 60  # a server that ran this long before ending restarts after the first delay again
PROBE_INTERVAL_S = 60.0
PROBE_DEADLINE_S = 60.0
# The prompt cache's periodic save (what a reboot or a stall restart finds), also run just before a stall probe is
# due: the probe's one-token chat takes a slot, and on a one-slot server it would push an unsaved prefix out.
CACHE_SAVE_INTERVAL_S = periodic_save.SAVE_INTERVAL_S
HEALTH_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Watch:
    """How closely the supervised server is watched, and with which key. Where it answers is not given: it is
    read from the socket the server listens on (``listening_url``), so no record can send the probes elsewhere."""

    key_file: Path
    probe_interval: float = PROBE_INTERVAL_S
    probe_deadline: float = PROBE_DEADLINE_S
    cache_save_interval: float = CACHE_SAVE_INTERVAL_S

    @classmethod
    def from_env(cls, key_file: Path, env: Mapping[str, str] = os.environ) -> Watch:
        """``QWENKIT_PROBE_INTERVAL`` / ``QWENKIT_PROBE_DEADLINE`` / ``QWENKIT_CACHE_SAVE_INTERVAL`` (seconds) shorten
        the watch for tests."""
        return cls(key_file, periodic_save.seconds(env, "QWENKIT_PROBE_INTERVAL", PROBE_INTERVAL_S),
                   periodic_save.seconds(env, "QWENKIT_PROBE_DEADLINE", PROBE_DEADLINE_S),
                   periodic_save.interval(env))


class Supervisor:
    """Runs ``argv`` (the start script) until told to stop; see the module docstring."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, log: Path, watch: Watch, log_max_bytes: int = MAX_BYTES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.argv, self.cwd, self.watch, self.clock = list(argv), cwd, watch, clock
        self.log = RotatingLog(log, max_bytes=log_max_bytes)
        self._log_lock = threading.Lock()
        self._stopping = threading.Event()
        self._url = ""  # where the current server listens, once it does
        self._periodic = periodic_save.PeriodicSave()  # the current server's periodic save (its last decode count)
        self.restarts = 0

    # -- the log ---------------------------------------------------------------------------------------------
    def note(self, text: str) -> None:
        """One line of our own in the server's log."""
        self._write(f"{SUPERVISOR_PREFIX} {text}\n".encode())  # after the time of day every line starts with

    def _write(self, data: bytes) -> None:
        with self._log_lock:
            self.log.write(wall_clock().encode("ascii") + data)

    def _pump(self, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            self._write(line)
        stream.close()

    # -- the loop --------------------------------------------------------------------------------------------
    def run(self) -> int:
        """Serve until stopped: 0; or the first start's own status when the server never served."""
        for name in ("SIGTERM", "SIGINT", "SIGHUP"):  # Windows has no SIGHUP
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), self._on_signal)
        delay_index = -1
        try:
            while not self._stopping.is_set():
                started = self.clock()
                served, returncode = self._run_once()
                if self._stopping.is_set():
                    break
                if not served and not self.restarts:
                    self.note(f"llama-server ended before it served ({_how(returncode)}); not restarting it")
                    return end_as(returncode)
                steady = self.clock() - started >= STEADY_S
                delay_index = 0 if steady else min(delay_index + 1, len(RESTART_DELAYS_S) - 1)
                delay = RESTART_DELAYS_S[delay_index]
                self.note(f"llama-server ended ({_how(returncode)}); starting it again in {delay} s")
                self.restarts += 1
                self._stopping.wait(delay)
        finally:
            self.log.close()
        return 0

    def _on_signal(self, signum: int, frame: object) -> None:
        self._stopping.set()

    def _run_once(self) -> tuple[bool, int]:
        """One life of the server: (it answered /health 200 at some point, its return code)."""
        child = subprocess.Popen(self.argv, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, close_fds=True, creationflags=NO_WINDOW)
        self._url, server_pid = "", child.pid
        self._periodic = periodic_save.PeriodicSave()
        pump = threading.Thread(target=self._pump, args=(child.stdout,), daemon=True)
        pump.start()
        served = False
        next_probe = next_save = 0.0
        cache: prompt_cache.Server | None = None
        with local_session() as session:
            while child.poll() is None:
                if self._stopping.wait(0.5):
                    break
                if not served:
                    if not self._url:
                        self._url, server_pid = _tree_server(child.pid) or ("", child.pid)
                    served = bool(self._url) and self._healthy(session)
                    if served:  # the server's own PID (on Windows cmd.exe's child), as tasklist and status show it
                        self.note(f"llama-server (PID {server_pid}) serves at {self._url}; watching it")
                        cache = self._restore_cache(session, server_pid, restore=self.restarts > 0)
                    next_probe = self.clock() + self.watch.probe_interval
                    next_save = self.clock() + self.watch.cache_save_interval
                elif self.clock() >= next_probe:
                    if cache is not None and self.clock() >= next_save:  # first: the probe's chat takes a slot
                        self._save_cache(session, cache)
                        next_save = self.clock() + self.watch.cache_save_interval
                    if self._stalled(session):
                        self.note(f"llama-server stalled: no answer to a one-token chat within "
                                  f"{self.watch.probe_deadline:g} s and no slot moving; restarting it")
                        self._end(child)
                    next_probe = self.clock() + self.watch.probe_interval
                elif cache is not None and self.clock() >= next_save:
                    self._save_cache(session, cache)
                    next_save = self.clock() + self.watch.cache_save_interval
        if child.poll() is None:
            self._end(child)
        pump.join(timeout=5)
        return served, child.wait()

    def _end(self, child: subprocess.Popen[bytes]) -> None:
        """SIGTERM, then SIGKILL after ``SERVER_STOP_TIMEOUT_S`` (llama-server finishes nothing in flight).
        Windows: the script's whole tree, at once (module docstring)."""
        if os.name == "nt":
            kill_tree(child.pid)
            child.wait()
            return
        with contextlib.suppress(ProcessLookupError):
            child.terminate()
        try:
            child.wait(timeout=SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            child.wait()

    def _restore_cache(self, session: requests.Session, server_pid: int, *,
                       restore: bool) -> prompt_cache.Server | None:
        """The server's slot-save folder (``--slot-save-path`` in its command line), and with ``restore`` its saved
        slots put back: on the supervisor's own restarts. The first start of its life was asked for by the kit
        (``service start``, an install), which restores once the server answers: two restores racing would put the
        slot back after the agent's first request (docs/prompt-cache.md). None when it has none (router mode)."""
        try:
            folder = prompt_cache.folder_of(psutil.Process(server_pid).cmdline(), self.cwd)
        except psutil.Error:
            return None
        if folder is None:
            return None
        server = prompt_cache.Server(self._url, self._key(), folder)
        if restore:
            prompt_cache.restore(session, server, self.note)
        return server

    # -- the checks ------------------------------------------------------------------------------------------
    def _key(self) -> str:
        try:
            return self.watch.key_file.read_text(encoding="utf-8").strip()
        except OSError:
            return ""

    def _healthy(self, session: requests.Session) -> bool:
        try:
            return session.get(f"{self._url}/health", timeout=HEALTH_TIMEOUT_S).status_code == 200
        except requests.RequestException:
            return False

    def _stalled(self, session: requests.Session) -> bool:
        """A one-token chat unanswered within the deadline while nothing moves; no chat for a model at rest or a
        server with no request in flight (module docstring)."""
        if self._resting(session):
            return False
        load = self._metrics(session)
        if load is NO_METRICS:
            return self._stalled_by_slots(session)
        if load is not None and load.processing == 0:
            return False
        if self._answers(session):
            return False
        if load is None:
            return True
        if self._stopping.wait(self.watch.probe_deadline):
            return False
        again = self._metrics(session)
        return again is None or again == NO_METRICS or again.decodes == load.decodes

    def _stalled_by_slots(self, session: requests.Session) -> bool:
        """The probe of a server without ``/metrics``: the chat, then two looks at ``/slots``."""
        if self._answers(session):
            return False
        first = self._progress(session)
        if first is None:
            return True
        if self._stopping.wait(self.watch.probe_deadline):
            return False
        second = self._progress(session)
        return second is None or second == first

    def _model(self) -> dict[str, str]:
        """A router (several models: ``models.ini`` in the home, where the server runs) is asked about its default
        model: a request naming none gets 400, which would pass for an answer whatever its children do."""
        name = first_model(self.cwd / PRESET_NAME)
        return {"model": name} if name else {}

    def _answers(self, session: requests.Session) -> bool:
        body = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1, **self._model()}
        try:
            resp = session.post(f"{self._url}/v1/chat/completions", json=body,
                                headers={"Authorization": f"Bearer {self._key()}"},
                                timeout=self.watch.probe_deadline)
        except requests.RequestException:
            return False
        return resp.status_code < 500

    def _resting(self, session: requests.Session) -> bool:
        """The model asleep or, in a router, not loaded (``prompt_cache.resting``)."""
        return prompt_cache.resting(session, self._url, self._key(), self._model().get("model", ""),
                                    HEALTH_TIMEOUT_S)

    def _save_cache(self, session: requests.Session, cache: prompt_cache.Server) -> None:
        """The periodic save, by ``periodic_save``'s rule: not of a model at rest, nor when nothing was decoded
        since the last one."""
        self._periodic.run(session, cache, self.note, model=self._model().get("model", ""),
                           props_timeout=HEALTH_TIMEOUT_S, metrics_timeout=self.watch.probe_deadline)

    def _metrics(self, session: requests.Session) -> Load | None:
        """``periodic_save.read_load``: requests processing and decodes so far."""
        return periodic_save.read_load(session, self._url, self._key(), self._model().get("model", ""),
                                       self.watch.probe_deadline)

    def _progress(self, session: requests.Session) -> tuple[tuple[Any, ...], ...] | None:
        """Each slot's (busy, task, prompt tokens, tokens generated) from ``/slots``; None when it does not
        answer."""
        try:
            resp = session.get(f"{self._url}/slots", headers={"Authorization": f"Bearer {self._key()}"},
                               params=self._model() or None, timeout=self.watch.probe_deadline)
            slots = resp.json() if resp.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None
        if not isinstance(slots, list):
            return None
        return tuple((s.get("is_processing") is True, s.get("id_task"), s.get("n_prompt_tokens"), _decoded(s))
                     for s in slots if isinstance(s, dict))


def wall_clock(now: float | None = None) -> str:
    """The stamp every line of the log starts with: local date and time to the millisecond, then a space.
    llama-server's own stamps count from each process's start (``0.00.302.813``: minutes, seconds, ms, µs since
    it started, llama.cpp ``common/log.cpp``), and a router's children each from their own: a reader needs the
    time of day (issue 41)."""
    now = time.time() if now is None else now
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d} "


def _tree_server(pid: int) -> tuple[str, int] | None:
    """Where the script's server listens, and that server's PID: the child itself (``exec`` in ``run_qwen.sh``),
    else a process it started (llama-server under ``cmd.exe`` on Windows); where the OS tells no socket owners
    (Wine), what that llama-server was told (``server_identity.argv_url``), once it answers there."""
    url = listening_url(pid)
    if url or os.name != "nt":
        return None if url is None else (url, pid)
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return None
    found = next(((u, p.pid) for p in descendants if (u := listening_url(p.pid))), None)
    return found or (argv_url(pid) if owners_untold() else None)


def _decoded(slot: dict[str, Any]) -> object:
    tokens = slot.get("next_token")
    return tokens[0].get("n_decoded") if isinstance(tokens, list) and tokens and isinstance(tokens[0], dict) else None


def _how(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"
