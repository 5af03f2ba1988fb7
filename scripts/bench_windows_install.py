"""The install through the real Windows setup under Wine, timed: one JSON line.

    python scripts/bench_windows_install.py

Builds ``QwenClientKit-Setup-windows-x64.exe`` with the test bed's Windows CPython under Wine (as
``bench_setup.py --windows``), then, with the loopback hub serving the cross-built ``win-cpu`` engine and the tiny
chat model (tests/support/windows_install.py, the e2e tests' bed), measures in one run:

- ``install_s``: the first ``install --yes`` (engine download and self-test, the speed measurement, the model, the
  start script and its proof), and ``noop_rerun_s``: the rerun with nothing new. ``noop_ratio`` is their ratio;
- the upgrade to a new model revision while a client chats every 0.2 s: ``upgrade_s``, the answers it got, the
  requests that failed, and the longest wait between two answers (``upgrade_gap_s``).

Needs Wine, mingw-w64 and the Windows engine the provisioning cross-builds (``scripts/provision_testbed.py``).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.support import testbed, wine
    from tests.support.install_bed import MODEL_FILE, MODEL_REPO, catalog_text, write_chat_model
    from tests.support.windows_install import ChattingClient, installed
    from tests.support.windows_python import build_setup_exe, windows_python

    python, win_bin = windows_python(), testbed.windows_engine_dir()
    if python is None or win_bin is None:
        sys.exit("needs Wine, mingw-w64 and the provisioned Windows engine (bash scripts/setup_env.sh, then "
                 "python scripts/provision_testbed.py)")
    with tempfile.TemporaryDirectory(prefix="bench-win-install-") as tmp:
        work = Path(tmp)
        exe = build_setup_exe(python, ROOT, work / "out", wine.make_prefix(work / "build-prefix"))
        exe_mb = round(exe.stat().st_size / 1e6, 2)
        start = time.perf_counter()
        with installed(exe, win_bin, work / "bed", "张三 A&B ! (x)") as bed:
            install_s = time.perf_counter() - start
            if bed.first.returncode != 0:
                sys.exit(f"the install failed (exit {bed.first.returncode}): {bed.first.stderr[-2000:]}")
            start = time.perf_counter()
            rerun = bed.run("install", "--yes", "--port", str(bed.port))
            noop_s = time.perf_counter() - start
            if "Up to date" not in rerun.stdout:
                sys.exit(f"the rerun was not a no-op: {rerun.stderr[-2000:]}")
            revision = bed.hub.commit(MODEL_REPO, {MODEL_FILE: write_chat_model(work / "v2" / MODEL_FILE, seed=7)})
            bed.catalog.write_text(catalog_text(revision), encoding="utf-8")
            start = time.perf_counter()
            with ChattingClient(bed).running() as client:
                upgrade = bed.run("install", "--yes", "--port", str(bed.port))
            upgrade_s = time.perf_counter() - start
            if upgrade.returncode != 0:
                sys.exit(f"the upgrade failed (exit {upgrade.returncode}): {upgrade.stderr[-2000:]}")
    codes = client.codes
    print(json.dumps({
        "exe_mb": exe_mb,
        "install_s": round(install_s, 1), "noop_rerun_s": round(noop_s, 1),
        "noop_ratio": round(noop_s / install_s, 3),
        "upgrade_s": round(upgrade_s, 1), "upgrade_answers": codes.count(200),
        "upgrade_failed": len(codes) - codes.count(200),
        "upgrade_failures": sorted({str(c) for c in codes if c != 200}),
        "upgrade_gap_s": round(client.longest_gap_s(), 2),
    }))


if __name__ == "__main__":
    main()
