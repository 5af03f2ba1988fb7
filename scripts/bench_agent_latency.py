"""An agent's long prefix after each kind of restart: first-token time and tokens read / reused (docs/prompt-cache.md).

Prints ONE JSON line. The request is the real Claude Code's recorded first request (tests/data/agent_prefix,
``/v1/messages``, streamed as the client streams it); the first-token time is the time to the answer's first event
(``message_start``, sent once the prompt is read), and tokens read / reused are the server's own figures in it
(``usage.input_tokens``, ``usage.cache_read_input_tokens``).

``qwen35moe`` (the tiny hybrid-recurrent Qwen chat model, ~12.9k tokens of prefix): installed by the real CLI
(``--no-service``: the kit's supervisor runs it), then cold, warm, after ``service stop`` + ``service start``, after
the supervisor restarts a killed server, after an upgrade's switch-over (``install --ctx``: same model, engine and
template). BEFORE, side by side in the same run, with the same command line the install renders, run directly: a
restart with nothing restored, and a restart with the slot saved and restored as upstream documents it
(``POST /slots/0?action=save|restore``).

``gemma3`` (Gemma 3 270M, sliding-window attention): its prefix is the recorded request's system prompt cut to
``--gemma-chars`` characters and no tools (a full read of 12k tokens takes minutes on two busy cores). Installed by
the real CLI like ``qwen35moe`` (the plan gives it ``--swa-full``): cold, warm, after ``service stop`` + ``service
start``, after the supervisor restarts a killed server, after an upgrade's switch-over. BEFORE, side by side: the
install's command line without ``--swa-full`` (what the kit ran before it chose the flag), run directly, restarted
with nothing restored, with upstream's restore, and with the kit's trimmed save + restore.

``router`` (several models: the tiny Qwen model as the default and a tiny llama chat model beside it, installed by
the real CLI): cold, warm, after ``service stop`` + ``service start``; the LRU unload and reload (the install's
front and router run directly with ``--models-max 1``: a request for the other model unloads the Qwen one, then the
Qwen request again); a keep-alive sleep and wake (``install --keep-alive 4s``: the request after the sleep). BEFORE,
side by side: the same router command line without the kit's front (nothing saved or restored).

``*_ratio`` keys: first-token time over warm, per restart kind (goal ≤ 1.5); each restart kind of the one-model
installs runs ``--repeat`` times (default 3) and its row is the median run (``*_runs_s``: every run).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bootstrap.core.home import Home  # noqa: E402
from bootstrap.fetch.http_session import local_session  # noqa: E402
from bootstrap.place.api_key import read_api_key  # noqa: E402
from bootstrap.record.state import launch_spec, load_state  # noqa: E402
from bootstrap.register import prompt_cache, slot_files  # noqa: E402
from tests.support import testbed  # noqa: E402
from tests.support.agent_prefix import cut_request, load_claude_first_request  # noqa: E402
from tests.support.bundle_bed import GEMMA_REPO, gemma_catalog  # noqa: E402
from tests.support.hub import LoopbackHub  # noqa: E402
from tests.support.install_bed import (  # noqa: E402
    MODEL_FILE,
    MODEL_ID,
    MODEL_REPO,
    QWEN_MODEL_FILE,
    QWEN_MODEL_ID,
    QWEN_MODEL_REPO,
    InstallBed,
    model_block,
    qwen_catalog_text,
    serve_engine,
    write_chat_model,
)
from tests.support.llama import end_process, free_port  # noqa: E402
from tests.support.qwen_chat_model import qwen_chat_model  # noqa: E402
from tests.support.testbed import GEMMA_FILE  # noqa: E402

SERVER_ARGS = ("-c", "32768", "-np", "1", "-t", "2")


def ask(url: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """Stream the request; the time to ``message_start`` (the prompt read) and the server's usage in it."""
    start = time.monotonic()
    with requests.post(f"{url}/v1/messages", json={**body, "stream": True}, stream=True, timeout=1800,
                       headers={"Authorization": f"Bearer {key}"}) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if line.startswith(b"data: ") and b'"message_start"' in line:
                first = time.monotonic() - start
                usage = json.loads(line[6:])["message"]["usage"]
                for _ in resp.iter_lines():  # the rest of the answer, as a client reads it
                    pass
                return {"s": round(first, 3), "read": usage["input_tokens"],
                        "reused": usage.get("cache_read_input_tokens", 0)}
    raise RuntimeError("no message_start in the answer")


@contextmanager
def direct(argv: list[str], port: int, cwd: Path, env: dict[str, str] | None = None,
           log: Path | None = None) -> Iterator[str]:
    """The install's llama-server command line on another port, run directly (the BEFORE column); its output in
    ``log`` when given (the router's refusal to start is said there)."""
    argv = list(argv)
    argv[argv.index("--port") + 1] = str(port)
    with open(log or os.devnull, "ab") as out:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if proc.poll() is not None:
                said = log.read_text(errors="replace")[-3000:] if log else ""
                raise RuntimeError(f"llama-server ended: {proc.returncode} {said}")
            time.sleep(0.3)
        yield url
    finally:
        end_process(proc)


def slot_action(url: str, key: str, action: str, filename: str) -> None:
    resp = requests.post(f"{url}/slots/0?action={action}", json={"filename": filename}, timeout=600,
                         headers={"Authorization": f"Bearer {key}"})
    resp.raise_for_status()


def ratios(out: dict[str, Any], prefix: str, warm: float, kinds: list[str]) -> None:
    for kind in kinds:
        out[f"{prefix}{kind}_ratio"] = round(out[f"{prefix}{kind}"]["s"] / warm, 2)


@contextmanager
def kit_install(work: Path, repo: str, file: str, model: Path,
                catalog: Callable[[str], str]) -> Iterator[tuple[InstallBed, int]]:
    """``model`` on the loopback hub, installed by the real CLI (``--no-service``: the kit's supervisor runs it, its
    periodic save every 3 s) from the one-entry ``catalog(revision)``; the bed and the port it answers on."""
    with LoopbackHub(work / "hub") as hub:
        revision = hub.create_repo(repo, {file: model})
        engine = serve_engine(hub, testbed.release_asset(testbed.engine_dir()))
        bed = InstallBed(hub, Home(work / "home"), work / "catalog.toml", engine,
                         extra_env={"QWENKIT_CACHE_SAVE_INTERVAL": "3"})
        bed.catalog.write_text(catalog(revision), encoding="utf-8")
        port = free_port()
        proc = bed.install("--port", str(port), "--no-venv", timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-3000:])
        try:
            yield bed, port
        finally:
            bed.run("service", "stop")


def after_rows(bed: InstallBed, port: int, key: str, body: dict[str, Any], prefix: str,
               upgrade_ctx: int, repeat: int) -> dict[str, Any]:
    """AFTER (the kit's own path): cold, warm (the median of three), then the first request after ``service stop``
    + ``service start``, after the supervisor restarts a killed server, after an upgrade's switch-over that keeps
    model, engine and template (``install --ctx``, alternating two sizes), each restart kind ``repeat`` times: the
    row is the median run by first-token time (one request after a restart is one noisy sample on shared cores),
    ``*_runs_s`` all of them; with their ratios to warm."""
    url = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {f"{prefix}cold": ask(url, key, body)}
    out[f"{prefix}prefix_tokens"] = out[f"{prefix}cold"]["read"]
    out[f"{prefix}warm"] = sorted((ask(url, key, body) for _ in range(3)), key=lambda r: r["s"])[1]
    runs: dict[str, list[dict[str, Any]]] = {"stop_start": [], "supervisor_restart": [], "upgrade": []}
    ctx_sizes = [upgrade_ctx, upgrade_ctx + 1024]
    for i in range(repeat):
        bed.run("service", "stop")
        bed.run("service", "start")
        runs["stop_start"].append(ask(url, key, body))
        supervisor_restart(bed)
        runs["supervisor_restart"].append(ask(url, key, body))
        proc = bed.install("--port", str(port), "--no-venv", "--ctx", str(ctx_sizes[i % 2]), timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-3000:])
        runs["upgrade"].append(ask(url, key, body))
    for kind, rows in runs.items():
        out[f"{prefix}{kind}"] = sorted(rows, key=lambda r: r["s"])[len(rows) // 2]
        out[f"{prefix}{kind}_runs_s"] = [r["s"] for r in rows]
    ratios(out, prefix, out[f"{prefix}warm"]["s"], list(runs))
    return out


def _state(url: str, key: str, model: str) -> str:
    with local_session() as session:
        return prompt_cache.model_states(session, url, key).get(model, "")


def _wait_state(url: str, key: str, model: str, state: str, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while _state(url, key, model) != state:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{model} never {state}")
        time.sleep(0.5)


def _other(url: str, key: str) -> None:
    """One short chat to the other model (the router loads it: with --models-max 1 it unloads the Qwen one)."""
    resp = requests.post(f"{url}/v1/chat/completions", timeout=600, headers={"Authorization": f"Bearer {key}"},
                         json={"model": MODEL_ID, "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]})
    resp.raise_for_status()


def _set_word(argv: list[str], flag: str, value: str) -> list[str]:
    out = list(argv)
    out[out.index(flag) + 1] = value
    return out


def bench_router(work: Path) -> dict[str, Any]:
    body = {**load_claude_first_request(), "model": QWEN_MODEL_ID}
    out: dict[str, Any] = {}
    with LoopbackHub(work / "hub") as hub:
        revision = hub.create_repo(QWEN_MODEL_REPO, {QWEN_MODEL_FILE: qwen_chat_model()})
        other = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(work / "src" / MODEL_FILE, seed=7)})
        engine = serve_engine(hub, testbed.release_asset(testbed.engine_dir()))
        bed = InstallBed(hub, Home(work / "home"), work / "catalog.toml", engine,
                         extra_env={"QWENKIT_CACHE_IDLE_S": "1"})
        bed.catalog.write_text(qwen_catalog_text(revision, server_args=SERVER_ARGS) + model_block(other),
                               encoding="utf-8")
        port = free_port()
        for argv in (("--port", str(port), "--no-venv"), (MODEL_ID, "--yes")):
            proc = bed.install(*argv, timeout=1800)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-3000:])
        try:
            key, url = read_api_key(bed.home), f"http://127.0.0.1:{port}"
            out["router_cold"] = ask(url, key, body)
            warm = sorted((ask(url, key, body) for _ in range(3)), key=lambda r: r["s"])
            out["router_warm"] = warm[1]
            bed.run("service", "stop")
            bed.run("service", "start")
            out["router_stop_start"] = ask(url, key, body)
            bed.run("service", "stop")
            spec = launch_spec(load_state(bed.home), bed.home)
            env = {**spec.child_env(), "QWENKIT_CACHE_IDLE_S": "1"}
            # --models-max 1: only the default loads at startup (the router refuses more), the other on demand
            text = spec.preset_file.read_text(encoding="utf-8")
            first = text.index("load-on-startup = true") + 1
            lru = bed.home.root / "models-lru.ini"
            lru.write_text(text[:first] + text[first:].replace("load-on-startup = true", "load-on-startup = false"),
                           encoding="utf-8")

            def one_max(argv: list[str]) -> list[str]:
                return _set_word(_set_word(argv, "--models-max", "1"), "--models-preset", lru.name)

            router = [str(spec.server), *one_max(spec.server_args()), "--host", "127.0.0.1", "--port", "0"]
            front = one_max(spec.argv())
            for kind, argv in (("before_", router), ("", front)):
                with direct(argv, free_port(), bed.home.root, env, work / "direct.log") as direct_url:
                    ask(direct_url, key, body)  # the Qwen model in its slot (read, or restored by the front)
                    _other(direct_url, key)  # LRU: the Qwen model unloaded
                    _wait_state(direct_url, key, QWEN_MODEL_ID, "unloaded")
                    out[f"router_{kind}lru_reload"] = ask(direct_url, key, body)
            bed.run("service", "start")
            proc = bed.install("--port", str(port), "--no-venv", "--keep-alive", "4s", timeout=1800)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-3000:])
            ask(url, key, body)
            _wait_state(url, key, QWEN_MODEL_ID, "sleeping")
            out["router_sleep_wake"] = ask(url, key, body)
            bed.run("service", "stop")
            spec = launch_spec(load_state(bed.home), bed.home)
            router = [str(spec.server), *spec.server_args(), "--host", "127.0.0.1", "--port", "0"]
            with direct(router, free_port(), bed.home.root, spec.child_env(), work / "direct.log") as direct_url:
                ask(direct_url, key, body)
                _wait_state(direct_url, key, QWEN_MODEL_ID, "sleeping")
                out["router_before_sleep_wake"] = ask(direct_url, key, body)
            ratios(out, "router_", out["router_warm"]["s"],
                   ["stop_start", "lru_reload", "sleep_wake", "before_lru_reload", "before_sleep_wake"])
        finally:
            bed.run("service", "stop")
    return out


def bench_qwen(work: Path, repeat: int) -> dict[str, Any]:
    body = load_claude_first_request()
    out: dict[str, Any] = {}
    catalog = partial(qwen_catalog_text, server_args=SERVER_ARGS)
    with kit_install(work, QWEN_MODEL_REPO, QWEN_MODEL_FILE, qwen_chat_model(), catalog) as (bed, port):
        key = read_api_key(bed.home)
        out.update(after_rows(bed, port, key, body, "qwen35moe_", upgrade_ctx=24576, repeat=repeat))
        # BEFORE: the same command line run directly, restarted with nothing restored / upstream's restore
        bed.run("service", "stop")
        spec = launch_spec(load_state(bed.home), bed.home)
        argv, inner = spec.argv(), free_port()
        with direct(argv, inner, bed.home.root) as direct_url:
            ask(direct_url, key, body)  # fills the slot (its cold read, not reported again)
            slot_action(direct_url, key, "save", "upstream.bin")
        with direct(argv, inner, bed.home.root) as direct_url:
            out["qwen35moe_before_restart_nothing_restored"] = ask(direct_url, key, body)
        with direct(argv, inner, bed.home.root) as direct_url:
            slot_action(direct_url, key, "restore", "upstream.bin")
            out["qwen35moe_before_restart_upstream_restore"] = ask(direct_url, key, body)
        (spec.prompt_cache_dir / "upstream.bin").unlink(missing_ok=True)  # type: ignore[operator]
        ratios(out, "qwen35moe_before_restart_", out["qwen35moe_warm"]["s"],
               ["nothing_restored", "upstream_restore"])
    return out


def supervisor_restart(bed: InstallBed) -> None:
    """Kill the home's llama-server (after a periodic save) and wait for the supervisor's restart and restore."""
    time.sleep(4)  # the periodic save (QWENKIT_CACHE_SAVE_INTERVAL 3 s) has run since the last answer
    server = next(p for p in psutil.process_iter(["name", "cmdline"]) if p.info["name"] == "llama-server"
                  and str(bed.home.root) in " ".join(p.info["cmdline"] or []))
    log = bed.home.logs_dir / "server.log"
    restored = log.read_text(errors="replace").count("prompt cache: slot 0 restored")
    os.kill(server.pid, signal.SIGKILL)
    deadline = time.monotonic() + 180
    while log.read_text(errors="replace").count("prompt cache: slot 0 restored") <= restored:
        if time.monotonic() > deadline:
            raise RuntimeError("the supervisor did not restore")
        time.sleep(0.5)


def bench_gemma(work: Path, chars: int, repeat: int) -> dict[str, Any]:
    body = cut_request(chars)
    out: dict[str, Any] = {}
    catalog = partial(gemma_catalog, ctx=4096)
    with kit_install(work, GEMMA_REPO, GEMMA_FILE, testbed.gemma_model(), catalog) as (bed, port):
        key = read_api_key(bed.home)
        argv = launch_spec(load_state(bed.home), bed.home).argv()
        out["gemma3_swa_full"] = "--swa-full" in argv
        out.update(after_rows(bed, port, key, body, "gemma3_", upgrade_ctx=3072, repeat=repeat))
        # BEFORE: the install's command line without --swa-full, run directly
        bed.run("service", "stop")
        spec = launch_spec(load_state(bed.home), bed.home)
        folder = spec.prompt_cache_dir
        assert folder is not None
        before = [a for a in spec.argv() if a != "--swa-full"]
        (folder / slot_files.file_name(0)).unlink(missing_ok=True)  # the AFTER server's: its own save next
        inner = free_port()
        with direct(before, inner, bed.home.root) as direct_url:
            ask(direct_url, key, body)  # fills the slot (its cold read, not reported again)
            out["gemma3_before_warm"] = sorted((ask(direct_url, key, body) for _ in range(3)),
                                               key=lambda r: r["s"])[1]
            slot_action(direct_url, key, "save", "upstream.bin")
            with local_session() as session:
                prompt_cache.save(session, prompt_cache.Server(direct_url, key, folder), 1 << 30,
                                  lambda _text: None)
        with direct(before, inner, bed.home.root) as direct_url:
            out["gemma3_before_restart_nothing_restored"] = ask(direct_url, key, body)
        with direct(before, inner, bed.home.root) as direct_url:
            slot_action(direct_url, key, "restore", "upstream.bin")
            out["gemma3_before_restart_upstream_restore"] = ask(direct_url, key, body)
        with direct(before, inner, bed.home.root) as direct_url, local_session() as session:
            prompt_cache.restore(session, prompt_cache.Server(direct_url, key, folder), lambda _text: None)
            out["gemma3_before_restart_kit_trimmed_restore"] = ask(direct_url, key, body)
        (folder / "upstream.bin").unlink(missing_ok=True)
        ratios(out, "gemma3_before_restart_", out["gemma3_before_warm"]["s"],
               ["nothing_restored", "upstream_restore", "kit_trimmed_restore"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gemma-chars", type=int, default=6000, help="Gemma's prefix: system prompt characters")
    parser.add_argument("--skip-gemma", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="restarts of each kind (the median is the row)")
    parser.add_argument("--skip-qwen", action="store_true", help="no qwen35moe (one model) rows")
    parser.add_argument("--skip-router", action="store_true", help="no router-mode (several models) rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-agent-latency-") as tmp:
        work = Path(tmp)
        result: dict[str, Any] = {"bench": "agent_latency", "cpu_count": os.cpu_count()}
        if not args.skip_qwen:
            (work / "qwen").mkdir()
            result.update(bench_qwen(work / "qwen", args.repeat))
        if not args.skip_router:
            (work / "router").mkdir()
            result.update(bench_router(work / "router"))
        if not args.skip_gemma:
            (work / "gemma").mkdir()
            result["gemma3_prefix_chars"] = args.gemma_chars
            result.update(bench_gemma(work / "gemma", args.gemma_chars, args.repeat))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
