"""What the speed measurement adds to an install, side by side with the chat proof it follows.

    python scripts/bench_verify_speed.py [-n 3] [--ab]

The test bed's real llama-server, started from a real ``LaunchSpec``'s argv (as ``run_qwen.sh`` runs it), serves
each model of the e2e suite: a tiny random llama GGUF and the real Gemma 3 270M Q4_K_M. Per run: the first-chat
proof (``verify_server``: health, models, 401 check, plain and streamed chat) then the measurement
(``check_speed``: warm-up + the fixed 64-token prompt / 16-token request), each timed with ``perf_counter``.
``--ab`` adds Gemma with ``--spec-type ngram-simple``: the A/B's two arms of two runs each and its restarts.
One JSON line: per model the samples, their medians, and the measured tokens/s.
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
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bootstrap.plan.launch_spec import LaunchSpec  # noqa: E402
from bootstrap.verify.chat import verify_server, wait_healthy  # noqa: E402
from bootstrap.verify.speed_check import check_speed  # noqa: E402
from tests.support import testbed  # noqa: E402
from tests.support.llama import free_port  # noqa: E402
from tests.support.tiny_gguf import write_model  # noqa: E402

KEY = "sk-bench-verify-speed-0123456789abcdefghijklmnopqrstuvwxyz"


class _Server:
    def __init__(self, log: Path) -> None:
        self.log, self.proc = log, None  # type: ignore[var-annotated]

    def start(self, spec: LaunchSpec) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_")}
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([*spec.argv(), "--log-colors", "off"], stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)
        wait_healthy(spec.base_url, timeout=120, process=self.proc, log_path=self.log)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)

    def restart(self, spec: LaunchSpec) -> None:
        self.stop()
        self.start(spec)


def _one(spec: LaunchSpec, tmp: Path) -> dict[str, Any]:
    server = _Server(tmp / "server.log")
    server.start(spec)
    try:
        start = time.perf_counter()
        verify_server(spec, KEY, timeout=120)
        proof = time.perf_counter() - start
        start = time.perf_counter()
        checked = check_speed(spec, KEY, None, server.restart, timeout=120)
        measure = time.perf_counter() - start
    finally:
        server.stop()
    m = checked.check.measured
    out = {"proof_s": round(proof, 3), "measure_s": round(measure, 3), "decode_tps": round(m.decode_tps, 2),
           "prompt_tps": round(m.prompt_tps, 2)}
    if checked.check.speculation is not None:
        trial = checked.check.speculation
        out.update(kept=trial.kept, on_tps=round(trial.on.decode_tps, 2), off_tps=round(trial.off.decode_tps, 2),
                   acceptance=trial.on.acceptance)
    return out


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=3)
    parser.add_argument("--ab", action="store_true", help="also time the A/B of speculative decoding")
    args = parser.parse_args()
    engine = testbed.engine_dir()
    line: dict[str, Any] = {"bench": "verify_speed", "runs": args.runs, "cpus": os.cpu_count(),
                            "load_1m": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory(prefix="bench-speed-") as tmp_text:
        tmp = Path(tmp_text)
        key_file = tmp / "api-key"
        key_file.write_text(KEY + "\n", encoding="ascii")
        base = LaunchSpec(home=tmp, system="Linux", engine_dir=engine, server=engine / "llama-server",
                          model=write_model("llama", tmp / "tiny.gguf"), mmproj=None,
                          args=("-c", "512", "-t", "2"), alias="m", api_key_file=key_file)
        gemma = ("-c", "1024", "-np", "1", "-t", "2", "--no-jinja", "--chat-template", "gemma")
        cases = {"tiny_llama": base,
                 "gemma3_270m": replace(base, model=testbed.gemma_model(), args=gemma)}
        if args.ab:
            cases["gemma3_270m_ab"] = replace(cases["gemma3_270m"], args=(*gemma, "--spec-type", "ngram-simple"))
        for name, spec in cases.items():
            runs = [_one(replace(spec, port=free_port()), tmp) for _ in range(args.runs)]
            line[name] = {"samples": runs, "proof_median_s": _median(runs, "proof_s"),
                          "measure_median_s": _median(runs, "measure_s")}
    print(json.dumps(line))


if __name__ == "__main__":
    main()
