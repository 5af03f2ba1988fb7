"""How long stopping the server takes, with a generation in flight and idle, side by side with another checkout.

    python scripts/bench_stop.py [-n 3] [--before DIR]

The test bed's real llama-server serves the real Gemma 3 270M GGUF through the rendered ``run_qwen.sh``, started
and stopped by the fallback manager (``FallbackManager``: the path every upgrade, restart and uninstall takes where
no service manager runs). Each run starts the server, waits for ``/health``, then times ``stop()`` twice:

- ``inflight``: a streamed chat (``max_tokens`` far beyond what the run lasts, ``ignore_eos``) is confirmed to be
  generating (chunks arriving) before the stop; ``client_s`` is how long after the stop began the client's request
  ended (a server killed mid-answer resets the connection), and ``exit`` how the server ended (code or signal);
- ``idle``: nothing in flight.

With ``--before DIR`` (a plain copy of another revision, e.g. ``git archive main | tar -x -C DIR``), every run is
done once with that tree's ``bootstrap`` and once with this one's, interleaved, each in a fresh interpreter
(``PYTHONDONTWRITEBYTECODE``: nothing is written into DIR); the test-side helpers always come from this checkout.
One JSON line: per tree, the samples and their medians, and ``stop_timeout_s`` (the manager's bound).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _import_kit(code: Path) -> None:
    """``bootstrap`` from ``code``, everything under ``tests`` from this checkout."""
    sys.path.insert(0, str(code))
    import bootstrap

    if Path(bootstrap.__file__).resolve().parent != (code / "bootstrap").resolve():
        sys.exit(f"bench_stop: bootstrap came from {bootstrap.__file__}, not {code}")
    sys.path.insert(0, str(ROOT))


def one_run(code: Path) -> dict[str, Any]:
    """One in-flight stop and one idle stop with ``code``'s fallback manager (runs in a worker process)."""
    _import_kit(code)
    from bootstrap.core.home import Home
    from bootstrap.plan.launch_spec import LaunchSpec
    from bootstrap.register.managers import FallbackManager
    from bootstrap.render.start_scripts import render_start_scripts
    from tests.support import testbed
    from tests.support.llama import InFlightChat, free_port

    with tempfile.TemporaryDirectory(prefix="bench-stop-") as tmp:
        home = Home(Path(tmp) / "home")
        home.secrets_dir.mkdir(parents=True, mode=0o700)
        home.api_key_file.write_text("sk-bench-stop\n", encoding="ascii")
        engine = testbed.engine_dir()
        # A base model without a chat template: llama.cpp's built-in gemma template (as tests/e2e/test_serve.py).
        spec = LaunchSpec(home=home.root, system="Linux", engine_dir=engine, server=engine / "llama-server",
                          model=testbed.gemma_model(), mmproj=None,
                          args=("-c", "8192", "-np", "1", "-t", "2", "--no-jinja", "--chat-template", "gemma"),
                          alias="gemma", api_key_file=home.api_key_file, port=free_port())
        render_start_scripts(spec, home)
        manager = FallbackManager(home)
        result: dict[str, Any] = {"stop_timeout_s": manager.stop_timeout}
        for mode in ("inflight", "idle"):
            manager.start()
            _wait_healthy(spec.base_url)
            chat = None
            if mode == "inflight":
                chat = InFlightChat(spec.base_url, api_key="sk-bench-stop", max_tokens=8000).start()
                chat.wait_generating()
            start = time.monotonic()
            manager.stop()
            took = time.monotonic() - start
            exit_info = manager.last_exit()
            result[f"{mode}_s"] = round(took, 3)
            result[f"{mode}_exit"] = None if exit_info is None else (
                f"signal {exit_info.signal}" if exit_info.signal else f"code {exit_info.code}")
            if chat is not None:
                ended = chat.wait_ended(timeout=60)
                result["client_s"] = round(chat.ended_at - start, 3) if ended and chat.ended_at else None
        return result


def _wait_healthy(base_url: str, limit: float = 120.0) -> None:
    import requests

    deadline = time.monotonic() + limit
    with requests.Session() as session:
        session.trust_env = False
        while time.monotonic() < deadline:
            try:
                if session.get(f"{base_url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
    sys.exit(f"bench_stop: {base_url}/health never answered 200")


def _worker(code: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(code)], env=env,
                          capture_output=True, text=True, timeout=900, check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        sys.exit(f"bench_stop: the worker for {code} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"stop_timeout_s": runs[0]["stop_timeout_s"]}
    for key in ("inflight_s", "client_s", "idle_s"):
        values = [r[key] for r in runs if r.get(key) is not None]
        out[key] = values
        out[f"{key[:-2]}_median_s"] = round(statistics.median(values), 3) if values else None
    for key in ("inflight_exit", "idle_exit"):
        out[key] = [r[key] for r in runs]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another revision's tree, run interleaved with this one")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(one_run(args.worker)))
        return
    trees = {"after": ROOT} if args.before is None else {"before": args.before.resolve(), "after": ROOT}
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, tree in trees.items():
            samples[name].append(_worker(tree))
    line: dict[str, Any] = {"bench": "stop", "runs": args.runs}
    line.update({name: _summary(runs) for name, runs in samples.items()})
    print(json.dumps(line))


if __name__ == "__main__":
    main()
