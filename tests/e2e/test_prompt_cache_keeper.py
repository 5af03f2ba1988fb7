"""The prompt cache of a one-model install run by systemd: the cache keeper (docs/prompt-cache.md).

No systemd runs here (PID 1 is not systemd), so each test starts the server as the unit does: the home's
``run_qwen.sh`` through ``/bin/sh`` in its own process group (the unit's cgroup), and the unit's own
``ExecStartPost=`` command, its words read back from the rendered unit (``render_unit``), which detaches the keeper.
A crash or a power cut is SIGKILL to the server's group and the keeper (what the cgroup holds). One install of the
tiny hybrid Qwen model (``cache_bed`` of tests/e2e/test_prompt_cache.py, its own instance for this module); each
reuse is read from the server's own usage (tokens read and reused), never from times. Selected with
``-k prompt_cache``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests

from bootstrap.place.api_key import read_api_key
from bootstrap.record.state import launch_spec, load_state
from bootstrap.register import prompt_cache, slot_files
from bootstrap.register.systemd import render_unit
from tests.e2e.test_prompt_cache import CacheBed, cache_bed  # noqa: F401  (the module's fixture)
from tests.support.polling import wait_for
from tests.support.systemd_words import exec_words

KEEPING = "cache keeper: keeping the prompt cache"


class SystemdLike:
    """The server and its keeper as the unit starts them; ``crash`` is what a power cut does to them."""

    def __init__(self, bed: CacheBed, journal: Path) -> None:
        self.bed, self.journal = bed, journal
        self.server: subprocess.Popen[bytes] | None = None
        self.keeping = 0  # the keepers' starts the log told before the last start

    def start(self, *, keeper: bool = True) -> None:
        home = self.bed.home
        self.keeping = self.bed.kit_log().count(KEEPING)
        with self.journal.open("ab") as out:
            self.server = subprocess.Popen(["/bin/sh", str(home.run_sh)], cwd=home.root, stdin=subprocess.DEVNULL,
                                           stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                           env=self.bed.bed.env())
        if keeper:
            self.start_keeper()

    def start_keeper(self) -> None:
        """The unit's ``ExecStartPost=`` line, run as systemd reads it: returns at once, the keeper detached."""
        unit = render_unit("user", self.bed.home, kit=self.bed.bed.command())
        line = next(line for line in unit.splitlines() if line.startswith("ExecStartPost="))
        post = subprocess.run(exec_words(line.removeprefix("ExecStartPost=")), cwd=self.bed.home.root,
                              env=self.bed.bed.env(), capture_output=True, timeout=60, check=False)
        assert post.returncode == 0, post.stderr[-2000:]

    def keepers(self) -> list[psutil.Process]:
        root = str(self.bed.home.root)
        found = []
        for proc in psutil.process_iter(["cmdline"]):
            argv = proc.info["cmdline"] or []
            if "cache-keeper" in argv and root in argv:
                found.append(proc)
        return found

    def crash(self) -> None:
        """SIGKILL to everything the unit's cgroup holds: the server's group and the keeper."""
        for proc in self.keepers():
            with contextlib.suppress(psutil.Error):
                proc.kill()
                proc.wait(10)
        if self.server is not None and self.server.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.server.pid, signal.SIGKILL)
            self.server.wait(30)
        wait_for(lambda: _down(self.bed), 60, "the server to be gone")


def _down(bed: CacheBed) -> bool:
    return not any(p.info["name"] == "llama-server" and str(bed.home.root) in " ".join(p.info["cmdline"] or [])
                   for p in psutil.process_iter(["name", "cmdline"]))


@pytest.fixture
def unit(cache_bed: CacheBed, tmp_path: Path) -> Iterator[SystemdLike]:  # noqa: F811
    """The kit's own server stopped (its stop saves), the saved slots removed: what the keeper saves is all there
    is. The unit-like processes are killed after the test."""
    cache_bed.run("service", "stop")
    for path in cache_bed.folder.iterdir():
        path.unlink()
    like = SystemdLike(cache_bed, tmp_path / "journal.log")
    try:
        yield like
    finally:
        like.crash()


def _healthy(url: str) -> bool:
    with contextlib.suppress(requests.RequestException):
        return requests.get(f"{url}/health", timeout=5).status_code == 200
    return False


def _restored(bed: CacheBed) -> int:
    return bed.kit_log().count("prompt cache: slot 0 restored")


def _ready(like: SystemdLike) -> None:
    """The new keeper saw the new server answer."""
    wait_for(lambda: like.bed.kit_log().count(KEEPING) > like.keeping, 300, "the keeper's start")


def _saved_then_crashed(unit: SystemdLike) -> tuple[int, ...]:
    """The agent's request sent to a new unit, the keeper's save waited for, then a crash: the tokens saved."""
    unit.start()
    _ready(unit)
    unit.bed.ask()
    slot = unit.bed.folder / slot_files.file_name(0)
    wait_for(lambda: slot.exists(), 120, "the keeper's save")
    saved = slot_files.read_tokens(slot)
    unit.crash()
    return saved


def test_prompt_cache_keeper_saves_and_restores_across_a_crash(unit: SystemdLike) -> None:
    bed = unit.bed
    unit.start()
    _ready(unit)
    cold = bed.ask()
    assert cold["read"] > 10_000, cold
    slot = bed.folder / slot_files.file_name(0)
    wait_for(lambda: "prompt cache: slot 0 saved" in bed.kit_log() and slot.exists(), 120, "the keeper's save")
    saved = slot_files.read_tokens(slot)
    assert len(saved) > 10_000
    restored = _restored(bed)
    unit.crash()  # nothing is saved now: what the periodic save kept is all a reboot finds
    unit.start()
    wait_for(lambda: _restored(bed) > restored, 300, "the keeper's restore")
    after = bed.ask()
    assert after["reused"] >= len(saved) - 1 and after["read"] < 100, (after, len(saved))
    assert _restored(bed) == restored + 1  # one restore for the new server


def test_prompt_cache_keeper_and_the_kits_restore_never_both_restore(unit: SystemdLike) -> None:
    """``service start`` under systemd: systemd's ExecStartPost starts the keeper while the kit restores the same
    new server; only the first to claim it restores, the other waits for it (the kit says "ready" after)."""
    bed = unit.bed
    saved = _saved_then_crashed(unit)
    before = bed.kit_log()
    unit.start()  # the keeper waits for /health and claims the restore the moment it answers ...
    spec = launch_spec(load_state(bed.home), bed.home)
    kit: list[list[prompt_cache.Done]] = []

    def kit_restore() -> None:  # ... as the kit's service start does once the server answers
        wait_for(lambda: prompt_cache.server_identity(spec) is not None and _healthy(spec.base_url), 300,
                  "the new server")
        kit.append(prompt_cache.restore_after_start(spec))

    threads = [threading.Thread(target=kit_restore) for _ in range(2)]  # two of the kit's too, for good measure
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(400)
    wait_for(lambda: bed.kit_log().count("left to the process that claimed it first") - before.count(
        "left to the process that claimed it first") == 2, 120, "the keeper's turn")
    new = bed.kit_log()[len(before):]
    assert new.count("prompt cache: slot 0 restored") == 1, new
    assert new.count("left to the process that claimed it first") == 2, new
    assert sum(len(done) for done in kit) <= 1
    # the first server's claim is gone; the new one's says it is done
    claims = list(bed.folder.glob(f"*{prompt_cache.CLAIM_SUFFIX}"))
    assert len(claims) == 1 and claims[0].read_bytes() == prompt_cache.CLAIM_DONE, claims
    after = bed.ask()
    assert after["reused"] >= len(saved) - 1 and after["read"] < 100, after


def test_prompt_cache_keeper_leaves_the_restore_to_the_kit_that_starts_the_server(unit: SystemdLike) -> None:
    """An upgrade's switch-over under systemd: the kit starts the unit, verifies with short chats, then restores.
    A keeper that restored at once would have its prefix pushed out of the one slot by those chats; so the kit
    announces its restore (``announce_restore``) and the keeper waits for it."""
    bed = unit.bed
    _saved_then_crashed(unit)
    spec = launch_spec(load_state(bed.home), bed.home)
    before = bed.kit_log()
    prompt_cache.announce_restore(spec)  # this test's process is "the kit"
    unit.start()
    _ready(unit)
    wait_for(lambda: "its own restore comes first" in bed.kit_log()[len(before):], 60, "the keeper to wait")
    verify = requests.post(f"{spec.base_url}/v1/chat/completions", timeout=300,
                           headers={"Authorization": f"Bearer {read_api_key(bed.home)}"},
                           json={"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 4})
    assert verify.status_code == 200
    assert "restored" not in bed.kit_log()[len(before):]  # the keeper has not restored meanwhile
    assert [d.slot for d in prompt_cache.restore_after_start(spec)] == [0]  # the kit's own restore
    wait_for(lambda: "left to the process that claimed it first" in bed.kit_log()[len(before):], 60,
              "the keeper's turn")
    assert bed.kit_log()[len(before):].count("prompt cache: slot 0 restored") == 1
    assert not (bed.folder / prompt_cache.PENDING_NAME).exists()
    after = bed.ask()
    assert after["reused"] > 10_000 and after["read"] < 100, after


def test_prompt_cache_keeper_ends_when_its_server_is_gone(unit: SystemdLike) -> None:
    """Outside a unit's cgroup nothing ends the keeper with the server: it ends by itself once the server has
    ended and no new one of the home answers (``QWENKIT_CACHE_KEEPER_GONE_S``, a minute in the product)."""
    unit.bed.bed.extra_env["QWENKIT_CACHE_KEEPER_GONE_S"] = "3"
    try:
        unit.start()
        _ready(unit)
    finally:
        del unit.bed.bed.extra_env["QWENKIT_CACHE_KEEPER_GONE_S"]
    [keeper] = unit.keepers()
    assert unit.server is not None
    os.killpg(unit.server.pid, signal.SIGKILL)
    unit.server.wait(30)
    keeper.wait(60)  # psutil.TimeoutExpired if it stays
    log = unit.bed.kit_log()
    assert f"llama-server (PID {unit.server.pid}) ended" in log
    assert "no server of this home answers after 3 s; ending" in log


def test_prompt_cache_keeper_without_a_cache_folder_does_nothing(cache_bed: CacheBed) -> None:  # noqa: F811
    """A home whose server keeps no prompt cache (no ``prompt-cache`` folder): the keeper ends at once, 0, and
    writes nothing."""
    cache_bed.run("service", "stop")
    folder = cache_bed.folder.parent  # <home>/prompt-cache
    aside = folder.with_name(folder.name + ".aside")
    folder.rename(aside)
    try:
        log = cache_bed.home.logs_dir / prompt_cache.LOG_NAME
        before = log.read_bytes() if log.exists() else b""
        listing = sorted(p.relative_to(cache_bed.home.root) for p in cache_bed.home.root.rglob("*"))
        for extra in ((), ("--detach",)):
            proc = cache_bed.bed.run("cache-keeper", "--home", str(cache_bed.home.root), *extra, timeout=60)
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
        assert not folder.exists()
        assert (log.read_bytes() if log.exists() else b"") == before
        assert sorted(p.relative_to(cache_bed.home.root) for p in cache_bed.home.root.rglob("*")) == listing
        assert not SystemdLike(cache_bed, Path(os.devnull)).keepers()
    finally:
        aside.rename(folder)
        cache_bed.run("service", "start")
