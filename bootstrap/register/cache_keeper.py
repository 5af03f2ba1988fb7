"""The cache keeper: the prompt cache's restore and periodic save for a one-model install run by systemd.

Without a service manager the supervisor saves every minute and restores after its own restarts
(``register/supervisor.py``). Under systemd there is no supervisor: systemd starts the server at boot and after
``Restart=always``, and nothing of the kit runs then. So the unit starts ``qwenkit cache-keeper --home HOME
--detach`` after each start of the server (``ExecStartPost=``, ``register/systemd.py``). The keeper:

1. waits for this home's server to answer ``/health`` 200 (at most ``WAIT_S``: a big model loads slowly; then it
   ends quietly);
2. restores the saved slots once (``prompt_cache.restore_once``: when the kit's own ``service start`` restores the
   same server at the same moment, only the first to claim it restores); when the kit announced that it starts
   this server itself (``prompt_cache.announce_restore``: ``service start``, an upgrade's switch-over), after the
   kit's restore, which then leaves it nothing to do;
3. every minute saves the slots that changed, by the supervisor's rule (``register/periodic_save.py``: never a
   model asleep, only after new decodes);
4. ends when the server process has ended and no new one of this home answers within ``GONE_S``. Under systemd
   it ends sooner: it runs in the unit's cgroup, so a stop or a restart of the unit signals it with the server.

It does nothing, and writes nothing, for a home whose server keeps no prompt cache (no ``prompt-cache`` folder;
router mode: the front saves and restores there, ``register/front_cache.py``). Its lines go to
``logs/prompt-cache.log``, each saying ``cache keeper``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

import psutil
import requests

from bootstrap.core.home import Home
from bootstrap.core.processes import detached_options
from bootstrap.fetch.http_session import local_session
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register import periodic_save, prompt_cache
from bootstrap.register.server_identity import server_process

COMMAND = "cache-keeper"
WAIT_S = 1800.0  # for the first /health 200 after the start
GONE_S = 60.0  # after the server ended: for a new one of this home
ENV_GONE = "QWENKIT_CACHE_KEEPER_GONE_S"  # shortens GONE_S for tests
POLL_S = 1.0
HEALTH_TIMEOUT_S = 5.0


def keeps_cache(spec: LaunchSpec | None) -> bool:
    """Whether there is anything to keep: one model's server whose home has its prompt-cache folder
    (``<home>/prompt-cache``, made at install with the budget). Not the model's own folder inside it: the start
    script makes that one, and ``ExecStartPost=`` runs as soon as the script is started."""
    return spec is not None and not spec.router and spec.prompt_cache_dir is not None and \
        spec.prompt_cache_dir.parent.is_dir()


def detach(home: Home, words: Sequence[str]) -> int:
    """Start ``words cache-keeper --home HOME`` in its own session and return at once (the unit's
    ``ExecStartPost=`` must not wait for it). Its own output (a traceback, if it ever failed) goes to the log."""
    log = home.logs_dir / prompt_cache.LOG_NAME
    home.logs_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        proc = subprocess.Popen([*words, COMMAND, "--home", str(home.root)], stdin=subprocess.DEVNULL, stdout=fd,
                                stderr=fd, close_fds=True, cwd=home.root, **detached_options())
    finally:
        os.close(fd)
    return proc.pid


class Keeper:
    """See the module docstring. ``stop`` ends it between two looks (tests; signals end the process itself)."""

    def __init__(self, spec: LaunchSpec, *, interval: float | None = None, wait_s: float = WAIT_S,
                 gone_s: float = GONE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.spec, self.clock = spec, clock
        self.interval = periodic_save.interval() if interval is None else interval
        self.wait_s, self.gone_s = wait_s, gone_s
        self.stop = threading.Event()
        self._note = prompt_cache.kit_note(spec)
        self._said = ""  # the last skip said: a minute's "unchanged" is said once, not every minute

    def note(self, text: str) -> None:
        self._note(f"cache keeper: {text}" if not text.startswith("prompt cache:") else text)

    def run(self) -> int:
        """Keep the cache of each server of this home that answers; 0 when none is left (always 0: a keeper that
        cannot help says so in the log and ends, the server is not its business)."""
        server = prompt_cache.server_of(self.spec)
        if server is None or not keeps_cache(self.spec):
            return 0
        wait = self.wait_s
        with local_session() as session:
            while not self.stop.is_set():
                proc = self._wait_serving(session, server, wait)
                if proc is None:
                    self.note(f"no server of this home answers after {wait:g} s; ending")
                    return 0
                identity = prompt_cache.server_identity_of(proc)
                self.note(f"keeping the prompt cache of llama-server (PID {proc.pid})")
                self._let_the_kit_restore(server)
                prompt_cache.restore_once(session, server, identity, self.note)
                self._keep(session, server, proc)
                wait = self.gone_s
        return 0

    def _wait_serving(self, session: requests.Session, server: prompt_cache.Server,
                      wait: float) -> psutil.Process | None:
        """This home's server process once it holds the port and answers /health 200; None after ``wait`` s."""
        deadline = self.clock() + wait
        while self.clock() < deadline and not self.stop.is_set():
            proc = server_process(self.spec)
            if proc is not None and _healthy(session, server):
                return proc
            self.stop.wait(POLL_S)
        return None

    def _let_the_kit_restore(self, server: prompt_cache.Server) -> None:
        """While the kit starts this server itself (``service start``, an upgrade's switch-over: its verify chats
        and speed measurement come before its own restore, and would push an earlier restore out of a one-slot
        server), the restore is the kit's: wait for it (``prompt_cache.kit_pending``), at most ``wait_s``."""
        deadline = self.clock() + self.wait_s
        if prompt_cache.kit_pending(server.folder):
            self.note("the kit is starting this server; its own restore comes first")
        while prompt_cache.kit_pending(server.folder) and self.clock() < deadline and not self.stop.is_set():
            self.stop.wait(POLL_S)

    def _keep(self, session: requests.Session, server: prompt_cache.Server, proc: psutil.Process) -> None:
        """The periodic save while ``proc`` runs."""
        saving = periodic_save.PeriodicSave()
        next_save = self.clock() + self.interval
        while not self.stop.is_set():
            if not _running(proc):
                self.note(f"llama-server (PID {proc.pid}) ended")
                return
            if self.clock() >= next_save:
                self._save(session, server, saving)
                next_save = self.clock() + self.interval
            self.stop.wait(POLL_S)

    def _save(self, session: requests.Session, server: prompt_cache.Server,
              saving: periodic_save.PeriodicSave) -> None:
        """One period: a line per slot saved; a skip is said when it differs from the last period's."""
        said = saving.run(session, server, self.note)
        if said == "saved" and saving.done:
            for done in saving.done:
                self.note(f"prompt cache: slot {done.slot} saved ({done.tokens} tokens)")
        elif said != self._said:
            self.note({"resting": "not saved: the model is asleep",
                       "saved": "not saved: no slot changed (or none holds a long prompt)",
                       "unchanged": "not saved: nothing decoded since the last save"}[said])
        self._said = said


def _healthy(session: requests.Session, server: prompt_cache.Server) -> bool:
    with contextlib.suppress(requests.RequestException):
        return session.get(f"{server.url}/health", timeout=HEALTH_TIMEOUT_S).status_code == 200
    return False


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
