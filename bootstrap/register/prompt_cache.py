"""The prompt cache across restarts: save a server's slots before it stops, restore them when it starts again.

llama-server saves and restores a slot itself (``--slot-save-path``, ``POST /slots/{id}?action=save|restore``), but
a restored slot of a hybrid (Qwen3.5/3.6) or sliding-window model is only reused when the tokens it holds are a
strict prefix of the next request (docs/prompt-cache.md: ``update_slots`` cannot cut a recurrent state back, and a
slot file carries no context checkpoint). A slot after an answer holds the answer's tokens too, so before saving
the kit *trims* it: one ``/completion`` of the slot's own tokens up to the marker that opens the last assistant
turn (``n_predict`` 0: the server reads at most a micro-batch from its in-memory checkpoints), then the save. The
saved prefix is what the agent's next request starts with.

Files live in the folder the server was started with (``plan/prompt_cache.py``: keyed by model, engine build and
template), as ``slot<id>.slot``; a save goes to a temporary name first and is renamed when whole. Whatever is
wrong with a file (cut short, another format, refused by the server) is one line through ``note`` and the file is
skipped: a bad cache never stops a start. The disk budget is the plan's (``budget.json`` beside the folders):
folders of other keys go first, then the oldest files.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psutil
import requests

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.errors import QwenKitError
from bootstrap.core.home import Home
from bootstrap.core.sizes import MIB
from bootstrap.fetch.http_session import local_session
from bootstrap.place.api_key import read_api_key
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.plan.prompt_cache import BUDGET_FILE, CACHE_HEADER
from bootstrap.register import slot_files
from bootstrap.register.server_identity import server_process

Note = Callable[[str], None]
TIMEOUT_S = 120.0  # a trim reads at most a micro-batch; a save or restore is disk speed
TRIM_TIMEOUT_S = 600.0
TEMP_SUFFIX = ".saving"  # a save in progress (slot<id>.slot.<pid>.saving); never restored
STALE_TEMP_S = 3600.0  # a temporary file this old is a killed save's: the next prune removes it
MIN_TOKENS = 1024  # shorter prefixes are read again in moments; saving them would replace an agent's long one
STOP_WAIT_IDLE_S = 15.0  # before a stop: a busy slot (another saver's trim, an answer ending) is waited for this long
IDLE_POLL_S = 0.25
MARKER_LEN = 3  # tokens of the text after a user message: e.g. <|im_end|> \n <|im_start|>


@dataclass(frozen=True)
class Server:
    """A running llama-server with a slot-save folder: where it answers, its key, that folder. In router mode
    ``model`` names the child (``"model"`` in each body, ``?model=`` for ``GET /slots``: the router proxies by them,
    llama.cpp ``server-models.cpp`` ``proxy_get``/``proxy_post``) and ``siblings`` are the other models' folders,
    which a prune keeps."""

    url: str
    key: str
    folder: Path
    model: str = ""
    siblings: tuple[Path, ...] = ()

    def headers(self) -> dict[str, str]:
        out = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        if self.model:
            out[CACHE_HEADER] = "1"
        return out


@dataclass(frozen=True)
class Done:
    """One slot saved or restored: its id and how many tokens it holds."""

    slot: int
    tokens: int


# -- the budget ----------------------------------------------------------------------------------------------------
def write_budget(root: Path, mib: int) -> None:
    """The plan's budget for every saved slot of this home together (``0``: nothing is saved)."""
    root.mkdir(parents=True, exist_ok=True)
    write_atomic(root / BUDGET_FILE, f'{{"mib": {int(mib)}}}\n'.encode(), mode=0o600)


def budget_bytes(root: Path) -> int:
    """The budget the plan wrote; 0 (nothing saved) when there is none or it does not read."""
    try:
        doc = json.loads((root / BUDGET_FILE).read_bytes()[:4096])
    except (OSError, ValueError):
        return 0
    mib = doc.get("mib") if isinstance(doc, dict) else None
    return mib * MIB if isinstance(mib, int) and mib > 0 else 0


def prune(root: Path, keep: Path | tuple[Path, ...], budget: int) -> list[Path]:
    """Hold the cache under ``budget`` bytes: other keys' folders go (no server of this home can use them), then
    the oldest files of the kept folders (router mode: every current model's, one budget over all). The files
    removed."""
    kept = (keep,) if isinstance(keep, Path) else keep
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for folder in root.iterdir():
            if folder.is_dir() and folder not in kept:
                for path in folder.iterdir():
                    with contextlib.suppress(OSError):
                        path.unlink()
                        removed.append(path)
                with contextlib.suppress(OSError):
                    folder.rmdir()
    files: list[slot_files.SlotFile] = []
    for folder in kept:
        with contextlib.suppress(OSError):
            for temp in folder.glob(f"*{TEMP_SUFFIX}"):  # a save killed half-way
                if time.time() - temp.stat().st_mtime > STALE_TEMP_S:
                    temp.unlink()
                    removed.append(temp)
        listed, bad = slot_files.listed(folder)
        files += listed
        for path, _why in bad:
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    files.sort(key=lambda f: f.mtime)
    total = sum(f.size for f in files)
    while files and total > budget:
        oldest = files.pop(0)
        with contextlib.suppress(OSError):
            oldest.path.unlink()
            removed.append(oldest.path)
        total -= oldest.size
    return removed


# -- talking to the server -----------------------------------------------------------------------------------------
def _post(session: requests.Session, server: Server, path: str, body: dict[str, Any],
          timeout: float = TIMEOUT_S) -> requests.Response:
    if server.model:
        body = {**body, "model": server.model}
    return session.post(server.url + path, json=body, headers=server.headers(), timeout=timeout)


def _slots(session: requests.Session, server: Server) -> list[dict[str, Any]]:
    """The server's slots; in router mode only a running child's (``autoload=false``: never loads a model)."""
    query = f"?{urlencode({'model': server.model, 'autoload': 'false'})}" if server.model else ""
    resp = session.get(server.url + "/slots" + query, headers=server.headers(), timeout=TIMEOUT_S)
    data = resp.json() if resp.status_code == 200 else None
    return [s for s in data if isinstance(s, dict) and isinstance(s.get("id"), int)] if isinstance(data, list) else []


def turn_marker(session: requests.Session, server: Server) -> tuple[int, ...]:
    """The first tokens after a user message in this server's chat template (the end of the user turn and the
    start of the assistant's), from its own ``/apply-template`` and ``/tokenize``; () when they cannot be read."""
    try:
        resp = _post(session, server, "/apply-template", {"messages": [{"role": "user", "content": "Q"}]})
        text = resp.json().get("prompt", "") if resp.status_code == 200 else ""
        if "Q" not in text:
            return ()
        suffix = text[text.rindex("Q") + 1:]
        resp = _post(session, server, "/tokenize", {"content": suffix, "parse_special": True})
        tokens = resp.json().get("tokens", []) if resp.status_code == 200 else []
    except (requests.RequestException, ValueError, AttributeError):
        return ()
    marker = tuple(t for t in tokens[:MARKER_LEN] if isinstance(t, int))
    return marker if len(marker) >= 2 else ()


def trim_point(tokens: tuple[int, ...], marker: tuple[int, ...]) -> int:
    """How many of ``tokens`` to keep: up to and including the last ``marker`` (the opening of the last assistant
    turn), or all of them when there is none (a dense model reuses any prefix; a hybrid one then reads again)."""
    n = len(marker)
    if n:
        for start in range(len(tokens) - n, -1, -1):
            if tokens[start:start + n] == marker:
                return start + n
    return len(tokens)


def save(session: requests.Session, server: Server, budget: int, note: Note,
         seen: dict[int, tuple[Any, ...]] | None = None, *, wait_idle_s: float = 0.0) -> list[Done]:
    """Save every idle slot that holds a prompt (and changed since ``seen`` recorded it), trimmed; then hold the
    budget (0: nothing is saved, and what was saved goes). A busy slot is waited for up to ``wait_idle_s``. Never
    raises for the server's or the disk's sake: each failure is one ``note``."""
    done: list[Done] = []
    try:
        if budget <= 0:
            raise _NoBudget
        slots = _idle_slots(session, server, wait_idle_s)
        marker = turn_marker(session, server) if slots else ()
        for slot in slots:
            result = _save_one(session, server, slot, marker, note, seen)
            if result is not None:
                done.append(result)
    except _NoBudget:
        pass
    except requests.RequestException as exc:
        note(f"prompt cache: not saved: {type(exc).__name__}")
    for path in prune(server.folder.parent, (server.folder, *server.siblings), budget):
        note(f"prompt cache: removed {path.parent.name}/{path.name} (over the budget or another model's)")
    return done


def _idle_slots(session: requests.Session, server: Server, wait_s: float) -> list[dict[str, Any]]:
    """The slots once none is processing, or as they are after ``wait_s``: before a stop, a slot can be busy for a
    moment with another saver's trim (the supervisor's or the keeper's minute, the front's idle save), which the
    stop would cut short, leaving no file at all."""
    deadline = time.monotonic() + wait_s
    slots = _slots(session, server)
    while any(s.get("is_processing") for s in slots) and time.monotonic() < deadline:
        time.sleep(IDLE_POLL_S)
        slots = _slots(session, server)
    return slots


class _NoBudget(Exception):
    """The plan gave the cache no disk: save nothing."""


def _signature(slot: dict[str, Any]) -> tuple[Any, ...]:
    return (slot.get("id_task"), slot.get("n_prompt_tokens"))


def _save_one(session: requests.Session, server: Server, slot: dict[str, Any], marker: tuple[int, ...], note: Note,
              seen: dict[int, tuple[Any, ...]] | None) -> Done | None:
    sid = int(slot["id"])
    if slot.get("is_processing") or int(slot.get("n_prompt_tokens") or 0) < MIN_TOKENS:
        return None  # a short prompt (a health probe, a one-line chat) never replaces a saved long prefix
    if seen is not None and seen.get(sid) == _signature(slot):
        return None
    final = server.folder / slot_files.file_name(sid)
    temp = final.with_name(f"{final.name}.{os.getpid()}{TEMP_SUFFIX}")  # the supervisor and the kit may both save
    try:
        if _post(session, server, f"/slots/{sid}?action=save{_no_load(server)}",
                 {"filename": temp.name}).status_code != 200:
            note(f"prompt cache: slot {sid} not saved: the server refused")
            return None
        tokens = slot_files.read_tokens(temp)
        keep = trim_point(tokens, marker)
        if keep < MIN_TOKENS:
            return None
        if _already_saved(final, tokens[:keep]):  # the same prefix: the trim would read it all again
            final.touch()
            return Done(sid, keep)
        if 0 < keep < len(tokens):
            body = {"prompt": list(tokens[:keep]), "n_predict": 0, "cache_prompt": True, "id_slot": sid}
            if _post(session, server, "/completion?" + _no_load(server)[1:], body, TRIM_TIMEOUT_S).status_code != 200 \
                    or _post(session, server, f"/slots/{sid}?action=save{_no_load(server)}",
                             {"filename": temp.name}).status_code != 200:
                note(f"prompt cache: slot {sid} not saved: the trim was refused")
                return None
            tokens = slot_files.read_tokens(temp)
        os.replace(temp, final)
    except (slot_files.BadSlotFile, OSError) as exc:
        note(f"prompt cache: slot {sid} not saved: {exc}")
        return None
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()
    if seen is not None:
        now = next((s for s in _slots(session, server) if s.get("id") == sid), slot)
        seen[sid] = _signature(now)
    return Done(sid, len(tokens))


def _no_load(server: Server) -> str:
    """``&autoload=false`` for a router (a save never loads a model the router has just unloaded), else ""."""
    return "&autoload=false" if server.model else ""


def _already_saved(final: Path, tokens: tuple[int, ...]) -> bool:
    """Whether ``final`` already holds exactly these tokens. Then it is kept as it is: a slot restored from it and
    only asked again has no checkpoint at or before its end (a restore brings none back, docs/prompt-cache.md), so
    trimming it once more would read the whole prefix again, on every stop."""
    try:
        return slot_files.read_tokens(final) == tokens
    except slot_files.BadSlotFile:
        return False


def restore(session: requests.Session, server: Server, note: Note) -> list[Done]:
    """Put every saved slot of this folder back into the server's slot of the same id. A file that does not read,
    names a slot the server does not have, or that the server refuses (another cache type, a smaller context) is
    one ``note`` and skipped; the server keeps serving."""
    files, bad = slot_files.listed(server.folder)
    for path, why in bad:
        note(f"prompt cache: {path.name} ignored: {why}")
    if not files:
        return []
    done: list[Done] = []
    try:
        _warm_up(session, server)
        ids = {int(s["id"]) for s in _slots(session, server)}
        for f in files:
            if f.slot not in ids:
                note(f"prompt cache: {f.path.name} ignored: the server has no slot {f.slot}")
                continue
            resp = _post(session, server, f"/slots/{f.slot}?action=restore", {"filename": f.path.name})
            if resp.status_code != 200:
                note(f"prompt cache: {f.path.name} ignored: {_error_text(resp)}")
                continue
            done.append(Done(f.slot, len(f.tokens)))
            note(f"prompt cache: slot {f.slot} restored ({len(f.tokens)} tokens, {f.size / MIB:.1f} MiB)")
    except requests.RequestException as exc:
        note(f"prompt cache: not restored: {type(exc).__name__}")
    return done


# -- one restore per server start --------------------------------------------------------------------------------
CLAIM_SUFFIX = ".restore-claim"
CLAIM_WAIT_S = 60.0  # a restore is a warm-up chat and a file read per slot: seconds even for a 35B model
CLAIM_DONE = b"done\n"
Identity = tuple[int, float]  # a server process: its PID and create time (a PID alone is reused)


def claim_name(identity: Identity) -> str:
    pid, created = identity
    return f"restore-{pid}-{int(created * 1000)}{CLAIM_SUFFIX}"


def restore_once(session: requests.Session, server: Server, identity: Identity | None, note: Note, *,
                 wait_s: float = CLAIM_WAIT_S) -> list[Done]:
    """``restore``, by only one of those who try it for the same server process (``identity``): the kit after it
    started the server (``restore_after_start``) and the cache keeper of a systemd install may both try at once, and
    a second restore's warm-up would push the first one's prefix out of a one-slot server (``_warm_up``). The first
    to create the claim file (``O_EXCL``, in the cache folder) restores; the others wait for it to write "done"
    (at most ``wait_s``), so ``service start`` still says "ready" only after the restore. None: no identity known
    (plain ``restore``). Claims of server processes that no longer run are removed."""
    if identity is None:
        return restore(session, server, note)
    claim = server.folder / claim_name(identity)
    _remove_old_claims(server.folder, claim)
    try:
        fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        _wait_for_claim(claim, wait_s)
        note(f"prompt cache: restore of server PID {identity[0]} left to the process that claimed it first")
        return []
    except OSError:  # a folder we cannot write: nobody saves into it either, but a restore may still work
        return restore(session, server, note)
    with contextlib.suppress(OSError):
        os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    try:
        return restore(session, server, note)
    finally:
        with contextlib.suppress(OSError):
            write_atomic(claim, CLAIM_DONE, mode=0o600)


def _wait_for_claim(claim: Path, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if claim.read_bytes() == CLAIM_DONE:
                return
        except OSError:
            return  # removed: its server is gone
        time.sleep(0.2)


def _remove_old_claims(folder: Path, keep: Path) -> None:
    """Claims whose server process no longer runs (another PID, or the same PID with another create time)."""
    with contextlib.suppress(OSError):
        for path in folder.glob(f"restore-*{CLAIM_SUFFIX}"):
            if path != keep and not _claim_alive(path.name):
                with contextlib.suppress(OSError):
                    path.unlink()


def _claim_alive(name: str) -> bool:
    parts = name.removesuffix(CLAIM_SUFFIX).split("-")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return False
    try:
        return claim_name((int(parts[1]), psutil.Process(int(parts[1])).create_time())) == name
    except (psutil.Error, OSError, ValueError):
        return False


PENDING_NAME = "kit-restore.pending"  # the kit is starting this folder's server and restores it itself


def announce_restore(spec: LaunchSpec) -> None:
    """Before the kit starts this home's server (``service start``, an upgrade's switch-over): the restore after the
    start is the kit's, so a cache keeper started with the server (systemd's ``ExecStartPost=``) waits for it
    instead of restoring at once (``kit_pending``). ``restore_after_start`` removes the file; a kit that died
    before leaves one that names a process no longer running, which counts as none."""
    folder = spec.prompt_cache_dir
    if folder is None or not folder.parent.is_dir():
        return
    me = server_identity_of(psutil.Process())
    with contextlib.suppress(OSError):
        folder.mkdir(exist_ok=True)
        write_atomic(folder / PENDING_NAME, f"{me[0]} {me[1]!r}\n".encode() if me else b"", mode=0o600)


def kit_pending(folder: Path) -> bool:
    """Whether a kit process that announced a restore of this folder's server still runs."""
    try:
        pid_text, created_text = (folder / PENDING_NAME).read_text(encoding="utf-8").split()
        return psutil.Process(int(pid_text)).create_time() == float(created_text)
    except (OSError, ValueError, psutil.Error):
        return False


def _end_announce(spec: LaunchSpec) -> None:
    if spec.prompt_cache_dir is not None:
        with contextlib.suppress(OSError):
            (spec.prompt_cache_dir / PENDING_NAME).unlink()


def server_identity(spec: LaunchSpec) -> Identity | None:
    """This home's server process (``server_identity.server_process``: the one holding its port) as a claim key."""
    proc = server_process(spec)
    return None if proc is None else server_identity_of(proc)


def server_identity_of(proc: psutil.Process) -> Identity | None:
    try:
        return proc.pid, proc.create_time()
    except (psutil.Error, OSError):
        return None


def _warm_up(session: requests.Session, server: Server) -> None:
    """A one-token chat before the restore: a new llama-server's first request costs more than the next (its first
    decode; measured on the test bed: 0.75-1.6 s for a 30-token prompt, then 0.02 s), which would otherwise fall on
    the agent's first request. It runs before the restore, which overwrites its slot. (Only one restore per start:
    a second restorer's warm-up would push the restored prefix out of a one-slot server.)"""
    body = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
    with contextlib.suppress(requests.RequestException):
        _post(session, server, "/v1/chat/completions", body)


def _error_text(resp: requests.Response) -> str:
    try:
        message = resp.json().get("error", {}).get("message", "")
    except (ValueError, AttributeError):
        message = ""
    return f"the server said {resp.status_code}" + (f": {str(message)[:200]}" if message else "")


# -- the folder a running server saves into ------------------------------------------------------------------------
def folder_of(argv: list[str], cwd: Path) -> Path | None:
    """``--slot-save-path``'s folder in a server's command line (relative to ``cwd`` where it is relative, as the
    Windows start script passes it), or None."""
    for i, word in enumerate(argv[:-1]):
        if word == "--slot-save-path":
            path = Path(argv[i + 1])
            return path if path.is_absolute() else cwd / path
    return None


# -- the kit's own stops and starts (``service``, an upgrade's switch-over) -----------------------------------------
LOG_NAME = "prompt-cache.log"  # in <home>/logs: what the kit's own saves and restores did


def kit_note(spec: LaunchSpec) -> Note:
    """A note that appends a time-stamped line to ``<home>/logs/prompt-cache.log``."""
    def note(text: str) -> None:
        with contextlib.suppress(OSError):
            logs = spec.home / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            with (logs / LOG_NAME).open("a", encoding="utf-8") as f:
                f.write(time.strftime("%Y-%m-%d %H:%M:%S ") + f"qwenkit: {text}\n")
    return note


def _key(spec: LaunchSpec) -> str | None:
    try:
        return read_api_key(Home(spec.home))  # never through a link (place/api_key.py)
    except QwenKitError:
        return None


def router_servers(spec: LaunchSpec, url: str | None = None, key: str = "") -> list[Server]:
    """Router mode: one ``Server`` per model with a folder, each naming its model and keeping the others'."""
    folders = spec.model_cache_dirs()
    return [Server(url or spec.base_url, key, folder, name, tuple(f for f in folders.values() if f != folder))
            for name, folder in folders.items()]


def model_states(session: requests.Session, url: str, key: str) -> dict[str, str]:
    """A router's models and their state (``GET /models``: "loaded", "sleeping", "unloaded", "loading"…); {}
    when it does not answer."""
    try:
        resp = session.get(url + "/models", headers={"Authorization": f"Bearer {key}"} if key else {},
                           timeout=TIMEOUT_S)
        data = resp.json().get("data") if resp.status_code == 200 else None
    except (requests.RequestException, ValueError, AttributeError):
        return {}
    out: dict[str, str] = {}
    for entry in data if isinstance(data, list) else []:
        status = entry.get("status") if isinstance(entry, dict) else None
        if isinstance(entry.get("id"), str) and isinstance(status, dict) and isinstance(status.get("value"), str):
            out[entry["id"]] = status["value"]
    return out


def server_of(spec: LaunchSpec) -> Server | None:
    """This install's server with its folder and key (None: router mode, no folder, or no key that reads: the
    server then refuses every request anyway)."""
    folder = spec.prompt_cache_dir
    key = None if folder is None else _key(spec)
    return None if folder is None or key is None else Server(spec.base_url, key, folder)


def save_before_stop(spec: LaunchSpec) -> list[Done]:
    """Before the kit stops this home's server: save its slots (nothing when it does not answer or has no folder);
    in router mode each loaded model's, in its own folder (an asleep or unloaded one has nothing in its slots)."""
    if spec.router:
        return _router_each(spec, ("loaded",), saving=True)
    server = server_of(spec)
    if server is None or not server.folder.is_dir():
        return []
    with local_session() as session:
        if resting(session, server.url, server.key, "", TIMEOUT_S):  # the keep-alive emptied its slots
            return []
        return save(session, server, budget_bytes(server.folder.parent), kit_note(spec), wait_idle_s=STOP_WAIT_IDLE_S)


def resting(session: requests.Session, url: str, key: str, model: str, timeout: float) -> bool:
    """The model asleep after its keep-alive (``/props`` ``is_sleeping``: answered during the sleep without waking
    it, b11434 ``server-context.cpp`` ``get_props``) or, in a router (``model`` named), not loaded (400 with
    ``autoload=false``). Its slots are empty then, and ``/slots`` would wake or load it."""
    try:
        resp = session.get(f"{url}/props", headers={"Authorization": f"Bearer {key}"} if key else {},
                           params={"model": model, "autoload": "false"} if model else None, timeout=timeout)
        doc = resp.json() if resp.status_code == 200 else None
    except (requests.RequestException, ValueError):
        return False
    if resp.status_code == 400 and model:
        return True
    return isinstance(doc, dict) and doc.get("is_sleeping") is True


def _router_each(spec: LaunchSpec, states: tuple[str, ...], *, saving: bool) -> list[Done]:
    """Save or restore each of the router's models in ``states`` (the others: the front restores a model when
    it loads it, ``register/front_cache.py``)."""
    key = _key(spec)
    if key is None:
        return []
    note = kit_note(spec)
    done: list[Done] = []
    with local_session() as session:
        now = model_states(session, spec.base_url, key)
        for server in router_servers(spec, key=key):
            if now.get(server.model) not in states or not server.folder.is_dir():
                continue
            tagged = _tagged(note, server.model)
            done += save(session, server, budget_bytes(server.folder.parent), tagged,
                         wait_idle_s=STOP_WAIT_IDLE_S) if saving else restore(
                session, server, tagged)
    return done


def _tagged(note: Note, model: str) -> Note:
    return lambda text: note(f"{text} [{model}]")


def restore_after_start(spec: LaunchSpec) -> list[Done]:
    """After the kit started this home's server and it answers: put its saved slots back (router mode: each
    loaded model's)."""
    if spec.router:
        return _router_each(spec, ("loaded", "loading"), saving=False)  # the warm-up waits for a load
    server = server_of(spec)
    if server is None:
        _end_announce(spec)
        return []
    try:
        with local_session() as session:
            return restore_once(session, server, server_identity(spec), kit_note(spec))
    finally:
        _end_announce(spec)


def spec_summary(spec: LaunchSpec) -> dict[str, Any] | None:
    """``summary`` of this install's cache: one model's folder, or in router mode all models' together with
    ``models`` (name → that model's ``summary``); None when it keeps none."""
    folders = spec.model_cache_dirs()
    if not folders:
        return summary(spec.prompt_cache_dir)
    each = {name: summary(folder) for name, folder in folders.items()}
    parts = [s for s in each.values() if s is not None]
    ages = [s["newest_age_s"] for s in parts if s["newest_age_s"] is not None]
    return {"folder": str(next(iter(folders.values())).parent), "files": sum(s["files"] for s in parts),
            "tokens": sum(s["tokens"] for s in parts), "bytes": sum(s["bytes"] for s in parts),
            "budget_bytes": budget_bytes(next(iter(folders.values())).parent),
            "newest_age_s": min(ages) if ages else None, "slots": [], "models": each}


def summary(folder: Path | None) -> dict[str, Any] | None:
    """What ``status`` says of the cache: saved slots, their tokens and bytes, the newest one's age, the budget
    (None: this server keeps none)."""
    if folder is None:
        return None
    files, _bad = slot_files.listed(folder)
    now = time.time()
    return {"folder": str(folder), "files": len(files), "tokens": sum(len(f.tokens) for f in files),
            "bytes": sum(f.size for f in files), "budget_bytes": budget_bytes(folder.parent),
            "newest_age_s": round(min((f.age_s(now) for f in files), default=0.0), 1) if files else None,
            "slots": [{"slot": f.slot, "tokens": len(f.tokens), "bytes": f.size, "age_s": round(f.age_s(now), 1)}
                      for f in files]}
