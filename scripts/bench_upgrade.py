"""What a client sees while an install is upgraded to something that cannot serve, and during a good upgrade.

    python scripts/bench_upgrade.py [--before DIR]

On the loopback hub with the test bed's real llama-server and a tiny real chat model, a client chats every 0.5 s
(``tests/support/chat_client.py``) while ``qwenkit install`` upgrades a working install to:

- ``selftest_fails``: a newly pinned engine build that dies with SIGILL on this machine;
- ``damaged``: a new revision cut short by 4 KiB (a half-uploaded release: the header parses, the data does not fit);
- ``damaged_again``: the same revision once more (a rerun, or a scheduled upgrade);
- ``good``: a newer, good revision;
- ``unknown_arch`` (its own home): a qwen3moe model, on a real build whose loader table lacks ``qwen3moe``
  (``standin.without_architecture``).

Per case: the exit code, the one error line, chats sent and failed, the client's longest gap between two answers,
the run's wall time and, for ``good``, the gap the product recorded. With ``--before DIR`` (a plain copy of another
revision, e.g. ``git archive REV | tar -x -C DIR``), every case also runs with that tree's ``bootstrap``
(``PYTHONPATH``); the test-side helpers always come from this checkout. One JSON line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bootstrap.core.home import Home  # noqa: E402
from bootstrap.register.managers import FallbackManager  # noqa: E402
from tests.support import standin, testbed  # noqa: E402
from tests.support.chat_client import ChattingClient  # noqa: E402
from tests.support.hub import LoopbackHub  # noqa: E402
from tests.support.install_bed import (  # noqa: E402
    MODEL_FILE,
    MODEL_REPO,
    InstallBed,
    catalog_text,
    serve_engine,
    write_chat_model,
)
from tests.support.llama import free_port  # noqa: E402
from tests.support.tiny_gguf import write_model  # noqa: E402


def _error_line(stderr: str) -> str:
    return next((ln.removeprefix("error: ") for ln in stderr.splitlines() if ln.startswith("error: ")), "")


def _install(bed: InstallBed, code: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``qwenkit install`` run with ``code``'s ``bootstrap`` (its folder first on the path, nothing written there)."""
    return subprocess.run([sys.executable, "-m", "bootstrap", "install", "--yes", "--no-service", "--no-venv", *argv],
                          cwd=code, env=bed.env(PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1", **env),
                          capture_output=True, text=True, timeout=600, check=False, stdin=subprocess.DEVNULL)


def _upgrade(bed: InstallBed, port: int, code: Path, **env: str) -> dict[str, Any]:
    with ChattingClient(port, bed.home.api_key_file) as client:
        time.sleep(1.0)
        start = time.monotonic()
        proc = _install(bed, code, **env)
        took = time.monotonic() - start
        time.sleep(1.0)
    return {"exit": proc.returncode, "error": _error_line(proc.stderr), "chats": client.sent,
            "failed": len(client.failed), "longest_outage_s": round(client.longest_outage_s, 2),
            "wall_s": round(took, 1)}


def _publish(bed: InstallBed, work: Path, name: str, model: Path) -> None:
    folder = work / name
    folder.mkdir(parents=True)
    (folder / MODEL_FILE).write_bytes(model.read_bytes())
    bed.pin(bed.hub.commit(MODEL_REPO, {MODEL_FILE: folder / MODEL_FILE}))


def _bed(hub: LoopbackHub, work: Path, engine: Path, code: Path) -> tuple[InstallBed, int]:
    revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: write_chat_model(work / "rev1" / MODEL_FILE)})
    bed = InstallBed(hub, Home(work / "Qwen 安装 home"), work / "catalog.toml", serve_engine(hub, engine))
    bed.catalog.write_text(catalog_text(revision), encoding="utf-8")
    port = free_port()
    first = _install(bed, code, "--port", str(port))
    if first.returncode != 0:
        sys.exit(f"bench_upgrade: the first install failed:\n{first.stderr[-2000:]}")
    return bed, port


def run_cases(code: Path, work: Path, engine_bin: Path, engine: Path) -> dict[str, Any]:
    """Every case against a fresh home, with ``code``'s ``bootstrap``."""
    out: dict[str, Any] = {}
    with LoopbackHub(work / "hub") as hub:
        bed, port = _bed(hub, work / "main", engine, code)
        try:
            # a newly pinned build that dies with SIGILL (both Linux variants); the model is unchanged
            pins = work / "engines.toml"
            pins.write_text((ROOT / "payload" / "engines.toml").read_text(encoding="utf-8").replace("10434", "10500"),
                            encoding="utf-8")
            broken = standin.release_asset(work / "b10500", engine_bin, standin.kill_self("ILL"))
            for variant in ("ubuntu-vulkan-x64", "ubuntu-x64"):
                hub.add_release_asset("ggml-org/llama.cpp", "b10500", broken, f"llama-b10500-bin-{variant}.tar.gz")
            out["selftest_fails"] = _upgrade(bed, port, code, QWENKIT_ENGINES=str(pins))
            good = (bed.home.models_dir / MODEL_REPO / MODEL_FILE).read_bytes()
            cut = work / "cut.gguf"
            cut.write_bytes(good[:-4096])
            _publish(bed, work, "rev-cut", cut)
            out["damaged"] = _upgrade(bed, port, code)
            out["damaged_again"] = _upgrade(bed, port, code)
            _publish(bed, work, "rev-good", write_chat_model(work / "good.gguf", seed=7))
            out["good"] = _upgrade(bed, port, code)
            server = json.loads(bed.home.state_file.read_text(encoding="utf-8"))["server"]
            out["good"]["recorded"] = server.get("switch_over")
        finally:
            FallbackManager(bed.home).stop()
    with LoopbackHub(work / "hub-arch") as hub:
        older = standin.without_architecture(work / "older-engine", engine_bin, "qwen3moe")
        bed, port = _bed(hub, work / "arch", older, code)
        try:
            _publish(bed, work, "rev-moe", write_model("qwen3moe", work / "moe.gguf", seed=3, dtype="q8_0"))
            out["unknown_arch"] = _upgrade(bed, port, code)
        finally:
            FallbackManager(bed.home).stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, help="another tree: run every case with its code too")
    opts = parser.parse_args()
    engine_bin = testbed.engine_dir()
    engine = testbed.release_asset(engine_bin)
    result: dict[str, Any] = {}
    trees = {"after": ROOT, **({"before": opts.before.resolve()} if opts.before else {})}
    for name, code in trees.items():
        with tempfile.TemporaryDirectory(prefix=f"bench-upgrade-{name}-") as tmp:
            result[name] = run_cases(code, Path(tmp), engine_bin, engine)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
