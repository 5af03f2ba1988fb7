"""A day of agent traffic, compressed: N clients against one install for T minutes, the server killed once.

    python scripts/soak.py [--minutes 30] [--clients 4] [--home DIR | --code DIR] [--curve FILE.csv]

Without ``--home`` it installs the test bed's Gemma 3 270M (the demo's source: loopback hub, the real
llama-server) into a temporary home with ``qwenkit install --yes --no-service --no-venv`` (``--code DIR``: with
another tree's ``bootstrap``, e.g. ``git archive REV | tar -x -C DIR``, to measure a revision side by side), so the
server runs as that revision runs it without a service manager. With ``--home`` it attaches to a running install.

Each client loops over the jobs an agent sends (its own seeded order): a long prompt that no one sent before
(about 1,500 tokens, answered with 16), a short streamed chat (its inter-token gaps are the ones reported), a
stream abandoned after 3 tokens, and a chat offering a tool (``tools``; the server must run with ``--jinja``).
At ``--kill-at`` of the run the server gets SIGKILL; the time until a chat is answered again is ``back_s`` (None:
never, within the run). Every ``--sample-s`` the server's RSS and swap are sampled (the process holding the port).

One JSON line on stdout: requests, failed (outside the kill's window; abandoned streams are not failures),
failed_at_kill, P50/P95/P99 inter-token gap in ms, back_s, RSS+swap at the first answer / peak / end against the
plan's RAM figure (``state.json``), the machine's load average over the run. ``--curve`` writes the samples.
A benchmark, not a test: its numbers depend on the machine and what else runs on it.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bootstrap.core.home import Home  # noqa: E402
from bootstrap.place.api_key import read_api_key  # noqa: E402
from bootstrap.record.state import load_state  # noqa: E402
from bootstrap.register.managers import FallbackManager  # noqa: E402
from tests.support.llama import free_port  # noqa: E402

MIB = 1 << 20
WORDS = ("river", "ledger", "copper", "signal", "harbor", "lantern", "quartz", "meadow", "orbit", "cipher",
         "willow", "summit", "fabric", "engine", "canyon", "pixel", "tundra", "violet", "anchor", "marble")
TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
# The soak's model: a base model served with --jinja (llama.cpp's chatml fallback) so requests with tools work.
SERVER_ARGS = ("--jinja",)


@dataclass
class Tally:
    """What every client saw, shared under one lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    failed: list[str] = field(default_factory=list)
    failed_at_kill: int = 0
    abandoned: int = 0
    gaps: list[float] = field(default_factory=list)
    prompt_tokens: int = 0  # long prompts' tokens read (not taken from a cache)
    first_answer_at: float | None = None
    kill_window: tuple[float, float] | None = None  # (kill, back): failures inside it are the kill's

    def add(self, ok: bool, why: str, started: float) -> None:
        with self.lock:
            self.requests += 1
            if ok:
                if self.first_answer_at is None:
                    self.first_answer_at = time.monotonic()
                return
            window = self.kill_window
            if window is not None and window[0] - 60 <= started <= window[1]:
                self.failed_at_kill += 1
            else:
                self.failed.append(why)


class Client:
    """One agent: its own session, key and seeded job order."""

    def __init__(self, n: int, base: str, key: str, tally: Tally, stop: threading.Event) -> None:
        self.n, self.base, self.tally, self.stop = n, base, tally, stop
        self.rng = random.Random(1000 + n)
        self.session = requests.Session()
        self.session.trust_env = False
        self.session.headers["Authorization"] = f"Bearer {key}"
        self.count = 0

    def run(self, jobs: tuple[str, ...] = ("long_prompt", "stream", "abandon", "tool_call")) -> None:
        chosen = tuple(getattr(self, name) for name in jobs)
        while not self.stop.is_set():
            job = chosen[self.rng.randrange(len(chosen))]
            started = time.monotonic()
            try:
                ok, why = job()
            except requests.RequestException as exc:
                ok, why = False, type(exc).__name__
            self.tally.add(ok, why, started)
            if not ok:
                self.stop.wait(1.0)  # a failing server is not hammered

    def _post(self, body: dict[str, Any], *, stream: bool = False, timeout: float = 300) -> requests.Response:
        return self.session.post(f"{self.base}/v1/chat/completions", json=body, stream=stream, timeout=timeout)

    def long_prompt(self) -> tuple[bool, str]:
        self.count += 1
        text = " ".join(self.rng.choice(WORDS) for _ in range(1200))
        body = {"messages": [{"role": "user", "content": f"Client {self.n} note {self.count}: {text}\nSummarise."}],
                "max_tokens": 16}
        resp = self._post(body)
        if resp.status_code == 200:
            usage = resp.json().get("usage", {})
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
            with self.tally.lock:
                self.tally.prompt_tokens += int(usage.get("prompt_tokens", 0)) - int(cached or 0)
        return resp.status_code == 200, f"HTTP {resp.status_code}"

    @contextlib.contextmanager
    def _events(self, body: dict[str, Any]) -> Iterator[tuple[int, Iterator[bytes]]]:
        """A streamed chat: its status and its SSE ``data:`` lines as they arrive."""
        with self._post({**body, "stream": True}, stream=True) as resp:
            yield resp.status_code, (line for line in resp.iter_lines() if line.startswith(b"data: "))

    def stream(self) -> tuple[bool, str]:
        body = {"messages": [{"role": "user", "content": "Write a short poem about the sea."}], "max_tokens": 48}
        last = None
        gaps = []
        done = False
        with self._events(body) as (status, lines):
            if status != 200:
                return False, f"HTTP {status}"
            for line in lines:
                if line == b"data: [DONE]":
                    done = True
                    break
                now = time.monotonic()
                if last is not None:
                    gaps.append(now - last)
                last = now
        with self.tally.lock:
            self.tally.gaps.extend(gaps)
        return done, "stream cut"

    def abandon(self) -> tuple[bool, str]:
        body = {"messages": [{"role": "user", "content": "Count slowly from one to a hundred."}], "max_tokens": 200}
        with self._events(body) as (status, lines):
            if status != 200:
                return False, f"HTTP {status}"
            for seen, _ in enumerate(lines, start=1):
                if seen >= 3:
                    break
        with self.tally.lock:
            self.tally.abandoned += 1
        return True, ""

    def tool_call(self) -> tuple[bool, str]:
        body = {"messages": [{"role": "user", "content": "What is the weather in Hangzhou?"}], "tools": [TOOL],
                "max_tokens": 32}
        resp = self._post(body)
        return resp.status_code == 200, f"HTTP {resp.status_code}"


def server_process(port: int) -> psutil.Process | None:
    """The process listening on ``port`` (the server, whoever supervises it)."""
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            with contextlib.suppress(psutil.Error):
                return psutil.Process(conn.pid)
    return None


def resident(proc: psutil.Process) -> int | None:
    """RSS + swap of ``proc`` in bytes."""
    try:
        full = proc.memory_full_info()
    except (psutil.Error, OSError):
        return None
    return int(full.rss + getattr(full, "swap", 0))


def answered(base: str, key: str) -> bool:
    with contextlib.suppress(requests.RequestException), requests.Session() as session:
        session.trust_env = False
        resp = session.post(f"{base}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=10,
                            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
        return resp.status_code == 200
    return False


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def soak(home: Home, port: int, minutes: float, clients: int, kill_at: float, sample_s: float,
         curve: Path | None, restart: bool) -> dict[str, Any]:
    key = read_api_key(home)
    base = f"http://127.0.0.1:{port}"
    tally, stop = Tally(), threading.Event()
    threads = [threading.Thread(target=Client(n, base, key, tally, stop).run, daemon=True) for n in range(clients)]
    samples: list[tuple[float, int | None, float]] = []
    start = time.monotonic()
    end = start + minutes * 60
    kill_time = start + minutes * 60 * kill_at if kill_at > 0 else None
    back_s: float | None = None
    for thread in threads:
        thread.start()
    first_rss = None
    while time.monotonic() < end:
        proc = server_process(port)
        rss = resident(proc) if proc else None
        samples.append((time.monotonic() - start, rss, os.getloadavg()[0]))
        if first_rss is None and tally.first_answer_at is not None:
            first_rss = rss
        if kill_time is not None and time.monotonic() >= kill_time:
            kill_time = None
            back_s = kill_and_wait(port, base, key, tally, end, home if restart else None)
        time.sleep(sample_s)
    stop.set()
    for thread in threads:
        thread.join(timeout=330)
    if curve is not None:
        with curve.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["t_s", "rss_swap_mib", "load1"])
            for t_s, rss, load in samples:
                writer.writerow([f"{t_s:.0f}", "" if rss is None else f"{rss / MIB:.1f}", f"{load:.2f}"])
    state = load_state(home)
    planned = state.server.planned_ram if state else None
    rss_values = [r for _, r, _ in samples if r is not None]
    gaps_ms = [g * 1000 for g in tally.gaps]
    return {
        "minutes": minutes, "clients": clients, "requests": tally.requests, "failed": len(tally.failed),
        "failures": sorted(set(tally.failed))[:5], "failed_at_kill": tally.failed_at_kill,
        "abandoned": tally.abandoned, "stream_gaps": len(gaps_ms),
        "gap_p50_ms": _round(percentile(gaps_ms, 50)), "gap_p95_ms": _round(percentile(gaps_ms, 95)),
        "gap_p99_ms": _round(percentile(gaps_ms, 99)), "back_s": _round(back_s, 1),
        "rss_first_mib": _mib(first_rss), "rss_peak_mib": _mib(max(rss_values, default=None)),
        "rss_end_mib": _mib(rss_values[-1] if rss_values else None), "plan_ram_mib": _mib(planned),
        "args": list(state.server.args) if state else None,
        "load1_mean": _round(statistics.fmean(s[2] for s in samples), 2) if samples else None,
        "cpus": os.cpu_count(),
    }


def kill_and_wait(port: int, base: str, key: str, tally: Tally, end: float, home: Home | None) -> float | None:
    """SIGKILL the server; seconds until a chat is answered again (None: not before ``end``). ``home``: when
    nothing brings it back within 60 s, start it again (a revision without a supervisor) so the soak goes on."""
    proc = server_process(port)
    if proc is None:
        return None
    killed = time.monotonic()
    with tally.lock:
        tally.kill_window = (killed, float("inf"))
    with contextlib.suppress(psutil.Error):
        proc.send_signal(signal.SIGKILL)
    back: float | None = None
    restarted = False
    while time.monotonic() < end:
        if answered(base, key):
            back = time.monotonic() - killed
            break
        if home is not None and not restarted and time.monotonic() - killed > 60:
            FallbackManager(home).start()
            restarted = True
        time.sleep(0.25)
    with tally.lock:
        tally.kill_window = (killed, time.monotonic() + 5)
    return None if restarted else back


def _round(value: float | None, digits: int = 0) -> float | None:
    return None if value is None else round(value, digits)


def _mib(value: int | None) -> float | None:
    return None if value is None else round(value / MIB, 1)


@contextlib.contextmanager
def test_bed_install(code: Path, work: Path) -> Iterator[tuple[Home, int]]:
    """The demo's source (loopback hub, Gemma 3 270M, the real engine) installed into a home under ``work``."""
    import demo  # scripts/demo.py: the same hub, catalog and home layout

    with demo.demo_source(work, wheels=None) as bed:
        bed.catalog.write_text(bed.catalog.read_text(encoding="utf-8").replace(
            ", ".join(f'"{a}"' for a in demo.SERVER_ARGS), ", ".join(f'"{a}"' for a in SERVER_ARGS)),
            encoding="utf-8")
        port = free_port()
        proc = subprocess.run([sys.executable, "-m", "bootstrap", "install", "--yes", "--no-service", "--no-venv",
                               "--port", str(port)], cwd=code, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=1800, check=False,
                              env=bed.env(PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1"))
        if proc.returncode != 0:
            sys.exit(f"soak: the install failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        try:
            yield bed.home, port
        finally:
            subprocess.run([sys.executable, "-m", "bootstrap", "service", "stop"], cwd=code, env=bed.env(
                PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1"), capture_output=True, timeout=120, check=False)
            FallbackManager(bed.home).stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of the run (0: no kill)")
    parser.add_argument("--sample-s", type=float, default=5)
    parser.add_argument("--home", type=Path, help="attach to this running install instead of installing one")
    parser.add_argument("--code", type=Path, default=ROOT, help="the tree whose bootstrap installs (default: this)")
    parser.add_argument("--curve", type=Path, help="write the RSS+swap samples here (CSV)")
    parser.add_argument("--restart", action="store_true",
                        help="start the server again when nothing did within 60 s of the kill")
    opts = parser.parse_args()
    sys.path.insert(0, str(ROOT / "scripts"))
    if opts.home is not None:
        home = Home(opts.home)
        state = load_state(home)
        if state is None:
            sys.exit(f"soak: no install at {opts.home}")
        result = soak(home, state.server.port, opts.minutes, opts.clients, opts.kill_at, opts.sample_s, opts.curve,
                      opts.restart)
    else:
        with tempfile.TemporaryDirectory(prefix="soak-") as tmp, \
                test_bed_install(opts.code.resolve(), Path(tmp)) as (home, port):
            result = soak(home, port, opts.minutes, opts.clients, opts.kill_at, opts.sample_s, opts.curve,
                          opts.restart)
    print(json.dumps(result, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
