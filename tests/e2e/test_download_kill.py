"""kill -9 (and Ctrl-C) at random points, then a rerun: it completes, verified, re-fetching only what was in flight.

A subprocess runs ``fetch_files`` against the loopback hub (throttled per connection so there is time to kill it
mid-file); after each interruption the state file is read back: every segment it lists must hold the right
bytes, and the bytes the hub served but the state does not account for must fit in the segments that were in
flight (one per connection). The last run is not interrupted and must fetch exactly the missing bytes.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.fetch.partial import plan_segment_size
from tests.support.download_fixtures import FILE, MIB, REPO, hf_mirror, remote, state_of
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT, sdk_env, seeded_bytes
from tests.support.kill_harness import sees_ctrl_c

SIZE = 32 * MIB - 777  # 1 MiB segments with 4 connections
CONN = 4
RATE = 1 * MIB  # per connection: the whole file takes ~8 s, so each kill lands mid-file

# The child takes Ctrl-C as a terminal would deliver it, even when started from a shell that ignores SIGINT (a
# background job without job control: the ignore would be inherited and the SIGINT trial would prove nothing):
# it starts with SIGINT at its default (kill_harness.sees_ctrl_c), so Python raises KeyboardInterrupt.
CHILD = """
import json, sys
from pathlib import Path
from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.fetch.records import Mirror, RemoteFile
spec = json.loads(sys.argv[1])
rf = RemoteFile(spec["name"], spec["size"], spec["sha256"], tuple(Mirror(**m) for m in spec["mirrors"]))
try:
    fetch_files([(rf, Path(spec["dest"]))], Path(spec["partial"]),
                FetchOptions(connections=spec["conn"], quiet=True))
except KeyboardInterrupt:
    sys.exit(130)
"""


def held_bytes(partial: Path, sha256: str, size: int = SIZE) -> tuple[int, list[tuple[int, int]]]:
    """(bytes the state says are on disk, as (start, length) runs: whole segments and the recorded start of
    unfinished ones); zeros when no state was written yet."""
    path = partial / f"{sha256}.json"
    if not path.exists():
        return 0, []
    st = state_of(partial, sha256)
    seg = st["segment_size"]
    runs = [(i * seg, min(seg, size - i * seg)) for i in st["done"]]
    runs += [(int(i) * seg, n) for i, n in st.get("partial", {}).items()]
    return sum(n for _, n in runs), runs


def test_kill_at_random_points_then_rerun(hub: LoopbackHub, tmp_path: Path):
    data = seeded_bytes(SIZE, 41)
    hub.create_repo(REPO, {FILE: data})
    rf = remote(hub, hf_mirror(hub))
    partial, dest = tmp_path / "partial", tmp_path / "models" / FILE
    spec = {"name": rf.name, "size": rf.size, "sha256": rf.sha256, "conn": CONN, "dest": str(dest),
            "partial": str(partial), "mirrors": [{"source": m.source, "url": m.url} for m in rf.mirrors]}  # fmt: skip
    env = sdk_env(hub, tmp_path / "env")
    throttle = hub.inject("throttle", path_glob=FILE, times=None, rate=RATE)
    rng = random.Random(1234)
    prev_done, prev_served, seg, trials = 0, 0, plan_segment_size(SIZE, CONN), []
    assert seg == MIB
    for sig in (signal.SIGKILL, signal.SIGKILL, signal.SIGINT, signal.SIGKILL):
        hub_before = len(hub.requests(origin="hub"))
        proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(spec)], env=env, cwd=REPO_ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sees_ctrl_c)  # fmt: skip
        deadline = time.monotonic() + 60
        while len(hub.requests(origin="hub")) == hub_before and proc.poll() is None:  # the resolve 302 is logged
            assert time.monotonic() < deadline, "the child never started downloading"
            time.sleep(0.01)
        time.sleep(rng.uniform(1.0, 2.0))
        assert proc.poll() is None, "the child ended before the signal: the trial would prove nothing"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        if sig == signal.SIGINT:
            assert proc.returncode == 130, err.decode()[-2000:]  # Ctrl-C: clean exit, state kept
        hub.wait_idle()
        served = hub.bytes_served(FILE) - prev_served
        now_done, runs = held_bytes(partial, rf.sha256)
        assert now_done >= prev_done  # verified progress is never lost
        part = (partial / f"{rf.sha256}.part").read_bytes()
        for start, n in runs:  # the state never claims bytes that are not on disk
            assert part[start:start + n] == data[start:start + n], f"bytes {start}+{n} are wrong"
        lost = served - (now_done - prev_done)
        assert 0 <= lost <= CONN * seg, f"lost {lost} bytes, more than {CONN} segments in flight"
        trials.append({"signal": sig.name, "served": served, "recorded": now_done - prev_done, "lost": lost})
        prev_done, prev_served = now_done, prev_served + served
        assert not dest.exists()
    assert 0 < prev_done < SIZE, "kills must land after some segments were recorded and before the end"

    throttle.remove()
    [res] = fetch_files([(rf, dest)], partial, FetchOptions(connections=CONN, quiet=True))
    hub.wait_idle()
    final = hub.bytes_served(FILE) - prev_served
    assert dest.read_bytes() == data and res.sha256 == rf.sha256
    assert final == SIZE - prev_done == res.bytes_downloaded  # the rerun fetched exactly the missing bytes
    wasted = prev_served + final - SIZE
    print(json.dumps({"segment": seg, "connections": CONN, "trials": trials, "final": final, "wasted": wasted}))
    assert wasted <= len(trials) * CONN * seg
    assert list(partial.iterdir()) == []


def test_a_small_file_killed_midway_resumes_where_it_stopped(hub: LoopbackHub, tmp_path: Path):
    """A file under the segment threshold is one segment: what arrived before a kill -9 is recorded within
    ``FLUSH_AFTER_S`` and a rerun asks only for the rest (it used to start again from zero)."""
    size = 3 * MIB + 777
    data = seeded_bytes(size, 5)
    hub.create_repo(REPO, {FILE: data})
    rf = remote(hub, hf_mirror(hub))
    assert plan_segment_size(size, CONN) == size  # one segment
    partial, dest = tmp_path / "partial", tmp_path / "models" / FILE
    spec = {"name": rf.name, "size": rf.size, "sha256": rf.sha256, "conn": CONN, "dest": str(dest),
            "partial": str(partial), "mirrors": [{"source": m.source, "url": m.url} for m in rf.mirrors]}  # fmt: skip
    throttle = hub.inject("throttle", path_glob=FILE, times=None, rate=MIB // 2)  # ~6.5 s for the file
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(spec)], env=sdk_env(hub, tmp_path / "env"),
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    while held_bytes(partial, rf.sha256, size)[0] == 0 and proc.poll() is None:
        assert time.monotonic() < deadline, "no progress was recorded within 60 s"
        time.sleep(0.05)
    assert proc.poll() is None, "the child ended before the kill: the trial would prove nothing"
    proc.kill()
    proc.communicate(timeout=60)
    hub.wait_idle()
    held, runs = held_bytes(partial, rf.sha256, size)
    assert runs == [(0, held)] and 0 < held < size
    assert (partial / f"{rf.sha256}.part").read_bytes()[:held] == data[:held]
    served = hub.bytes_served(FILE)
    throttle.remove()
    [res] = fetch_files([(rf, dest)], partial, FetchOptions(connections=CONN, quiet=True))
    hub.wait_idle()
    assert dest.read_bytes() == data
    assert hub.bytes_served(FILE) - served == size - held == res.bytes_downloaded
    assert list(partial.iterdir()) == []
