"""Router mode: the front keeps each model's prompt cache across what the router does by itself.

llama-server's router (llama.cpp b11434 ``tools/server/server-models.cpp``) unloads the least recently used model
when ``--models-max`` is reached (``unload_lru``), and a model's child with ``--sleep-idle-seconds`` (``install
--keep-alive``) frees its memory when idle: either way its slots are gone, and the next request reads the agent's
whole prefix again. The kit's own stops and starts save and restore every loaded model (``register/prompt_cache.py``);
for these the front (``register/router_front.py``), which sees every request, does it:

- **save when idle**: ``IDLE_S`` seconds after a model's last request ended (none running, new requests since its
  last save), a background thread saves its slots, trimmed (``prompt_cache.save``), in the model's own folder (its
  preset section's ``slot-save-path``). Before the front lets a request load a model that is not loaded, models
  with unsaved requests are saved first: that load may push one of them out (LRU).
- **restore when loaded again**: before the front passes on a request for a model the router reports
  ``unloaded`` or ``sleeping`` (``GET /models``) and that has saved slots, it restores them
  (``prompt_cache.restore``: its one-token warm-up loads or wakes the model), then passes the request on.

Out of the hot path: the check runs only for a model with saved files, and only when something may have changed
since the last one (another model was asked, a model was loaded or unloaded through ``/models``, or the model was
idle past its sleep time). Whatever fails is one line on stderr (the router's log) and the request goes on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from bootstrap.fetch.http_session import local_session
from bootstrap.register import periodic_save, prompt_cache

IDLE_ENV = "QWENKIT_CACHE_IDLE_S"  # shorter in tests
# After a model's last request: longer than an agent's pause between turns (a tool run, a person reading), since each
# save writes the whole slot (~300 MB for a 35B hybrid model at 12k tokens) and trims it; the supervisor's period.
# An unload or another model's load does not wait for it (saved at once before), and a model that sleeps sooner is
# saved at half its sleep time (``_idle_for``).
IDLE_S = 60.0
TICK_S = 0.5


def _note(text: str) -> None:
    print(f"qwenkit front: {text}", file=sys.stderr, flush=True)


def read_preset(path: Path) -> dict[str, dict[str, str]]:
    """Each section's ``key = value`` pairs of a models.ini (llama.cpp ``common/preset.cpp`` dialect: a value ends
    at ``;`` or ``#``); {} when it does not read."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    for raw in lines:
        line = raw.split(";", 1)[0].split("#", 1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
        elif current is not None and "=" in line:
            key, _, value = line.partition("=")
            current[key.strip()] = value.strip()
    return sections


class CacheKeeper:
    """Per model: saves after its requests end, restores before a request that finds it unloaded or asleep."""

    def __init__(self, url: str, key: str, folders: dict[str, Path], sleep_s: dict[str, float],
                 busy: Callable[[str], int], idle_s: float = IDLE_S) -> None:
        self.url, self.key, self.folders, self.sleep_s, self.idle_s = url, key, folders, sleep_s, idle_s
        self._busy = busy
        self._lock = threading.Lock()
        self._model_locks = {name: threading.Lock() for name in folders}  # one restore per model at a time
        self._save_lock = threading.Lock()  # one save at a time (the thread's, or one before a load)
        self._dirty: dict[str, float] = {}  # model → when its last request ended, not saved since
        self._last_end: dict[str, float] = {}
        self._seen: dict[str, dict[int, tuple[Any, ...]]] = {name: {} for name in folders}  # slots as last saved
        self._saved = {name: self._has_files(name) for name in folders}  # has files to restore
        self._checked: set[str] = set()  # models whose state is known since the last change
        self._fresh = set(folders)  # not restored since this front started (the kit restores the loaded ones)
        self._last_model = ""
        self._wake = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="prompt-cache", daemon=True)
        self._thread.start()

    @classmethod
    def from_preset(cls, preset: Path, url: str, key: str, busy: Callable[[str], int]) -> CacheKeeper | None:
        """From the router's preset (each section's ``slot-save-path``, ``sleep-idle-seconds``; relative paths are
        relative to the router's folder, the home); None without any folder."""
        sections = read_preset(preset)
        folders = {name: Path(items["slot-save-path"]) for name, items in sections.items()
                   if items.get("slot-save-path")}
        if not folders:
            return None
        sleep_s = {name: float(items["sleep-idle-seconds"]) for name, items in sections.items()
                   if items.get("sleep-idle-seconds", "").isdigit()}
        return cls(url, key, folders, sleep_s, busy, periodic_save.seconds(os.environ, IDLE_ENV, IDLE_S))

    def _has_files(self, name: str) -> bool:
        try:
            return any(self.folders[name].glob("slot*.slot"))
        except OSError:
            return False

    def _server(self, name: str) -> prompt_cache.Server:
        folder = self.folders[name]
        return prompt_cache.Server(self.url, self.key, folder, name,
                                   tuple(f for f in self.folders.values() if f != folder))

    # -- the hot path -----------------------------------------------------------------------------------------
    def changed(self, unloading: bool = False) -> None:
        """A model is loaded or unloaded through ``/models``: every model's state is checked again; before an
        unload, the models with unsaved requests are saved (the unload empties its slots). Never raises."""
        with self._lock:
            self._checked.clear()
            if not unloading or not self._dirty:
                return
        try:
            with local_session() as session:
                self._save_dirty(session, every=True)
        except Exception as exc:  # the unload goes on whatever happened here
            _note(f"prompt cache: not saved before the unload: {type(exc).__name__}: {exc}")

    def kit_request(self, model: str) -> None:
        """The kit's own save or restore passed for ``model`` (``service start``): not restored here again."""
        with self._lock:
            self._fresh.discard(model)

    def ended(self, model: str) -> None:
        """A request for ``model`` ended: it is saved once it stays idle (``_run``)."""
        if model in self.folders:
            now = time.monotonic()
            with self._lock:
                self._dirty[model] = now
                self._last_end[model] = now
            self._wake.set()

    def before(self, model: str) -> None:
        """Before a request for ``model`` is passed on: when it may have been unloaded or put to sleep since it
        was last seen, save the models with unsaved requests if this request loads it (the load may unload one of
        them, LRU), and restore its saved slots (loading or waking it). Never raises."""
        now = time.monotonic()
        with self._lock:
            if model != self._last_model:
                self._checked.clear()  # a request for another one may have pushed this one out (LRU)
                self._last_model = model
            ended = self._last_end.get(model)
            sleep = self.sleep_s.get(model)
            if sleep is not None and ended is not None and now - ended >= sleep:
                self._checked.discard(model)
            restore = bool(self._saved.get(model)) and (model not in self._checked or model in self._fresh)
            flush = model not in self._checked and any(m != model for m in self._dirty)
            self._checked.add(model)
            if not self._saved.get(model):
                self._fresh.discard(model)
        if not restore and not flush:
            return
        try:
            self._load(model, restore)
        except Exception as exc:  # the request goes on whatever happened here
            _note(f"prompt cache: {model}: not restored: {type(exc).__name__}: {exc}")

    def _load(self, model: str, restore: bool) -> None:
        with contextlib.ExitStack() as stack:
            if restore:
                stack.enter_context(self._model_locks[model])
            session = stack.enter_context(local_session())
            state = prompt_cache.model_states(session, self.url, self.key).get(model)
            if state == "unloaded":
                self._save_dirty(session, every=True)  # this load may unload another (LRU): keep its prefix
            with self._lock:
                fresh = model in self._fresh
                self._fresh.discard(model)
            if not restore or (state not in ("unloaded", "sleeping") and not fresh):  # loaded since restored
                return
            done = prompt_cache.restore(session, self._server(model), lambda text: _note(f"{text} [{model}]"))
            with self._lock:
                self._dirty.pop(model, None)  # what was just restored is what is saved
                self._seen[model] = {}  # a new process or a woken one: its slots are not the ones last saved
            if done:
                _note(f"prompt cache: {model} {state}: {sum(d.tokens for d in done)} tokens restored")

    def _idle_for(self, model: str) -> float:
        """How long ``model`` stays idle before its save: ``idle_s``, or half its sleep time when that is sooner
        (``--keep-alive 30s``: asleep, its slots gone, before a minute's pause ends)."""
        sleep = self.sleep_s.get(model)
        return self.idle_s if sleep is None or sleep <= 0 else min(self.idle_s, sleep / 2)

    # -- in the background ------------------------------------------------------------------------------------
    def _save_dirty(self, session: requests.Session, every: bool) -> None:
        """Save the models whose requests ended (``every``: at once; else those idle ``idle_s``) and that are
        loaded (an asleep or unloaded one's slots are gone; its saved files stay). One save at a time."""
        with self._save_lock:
            now = time.monotonic()
            with self._lock:
                due = [m for m, ended in self._dirty.items()
                       if self._busy(m) == 0 and (every or now - ended >= self._idle_for(m))]
                for model in due:
                    self._dirty.pop(model, None)
            if not due:
                return
            states = prompt_cache.model_states(session, self.url, self.key)
            for model in due:
                if states.get(model) != "loaded":
                    continue
                server = self._server(model)
                done = prompt_cache.save(session, server, prompt_cache.budget_bytes(server.folder.parent),
                                         lambda text, m=model: _note(f"{text} [{m}]"), self._seen[model])
                with self._lock:
                    self._saved[model] = bool(done) or self._has_files(model)

    def _run(self) -> None:
        while not self._stop:
            self._wake.wait(TICK_S)
            self._wake.clear()
            if not self._dirty:
                continue
            try:
                with local_session() as session:
                    self._save_dirty(session, every=False)
            except Exception as exc: # a failed save is one line; the front keeps serving
                _note(f"prompt cache: not saved: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        with contextlib.suppress(RuntimeError):
            self._thread.join(2.0)


