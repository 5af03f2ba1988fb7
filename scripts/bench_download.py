"""Download throughput, side by side on the loopback hub: our engine vs curl vs huggingface_hub; one JSON line.

Measures (DESIGN.md §7), each tool in its own process against the same hub process:
- unthrottled, a >= 512 MiB LFS file behind the CDN redirect: our engine (SHA-256 on) vs ``curl -L`` (no hash)
  vs ``hf_hub_download`` (targets: >= 0.9x curl, >= 1.0x hf_hub_download); best of ``--runs``;
- throttled to 10 MiB/s per connection: our engine with ``connections`` vs a single stream (target >= 6x);
- bytes fetched again after a ``kill -9`` mid-download (bound: one segment per connection).

Usage: ``python scripts/bench_download.py [--size-mib 512] [--throttled-mib 96] [--runs 2]``. Files live in a
temp dir that is deleted at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
REPO = "bench/model"
BIG, SMALL = "big.gguf", "throttled.gguf"

ENGINE = """
import json, sys, time
from pathlib import Path
from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.fetch.records import Mirror, RemoteFile
s = json.loads(sys.argv[1])
rf = RemoteFile(s["name"], s["size"], s["sha256"], (Mirror("hf", s["url"]),))
t = time.perf_counter()
[r] = fetch_files([(rf, Path(s["dest"]))], Path(s["partial"]), FetchOptions(connections=s["conn"], quiet=True))
print(json.dumps({"seconds": time.perf_counter() - t, "bytes": r.bytes_downloaded}))
"""

HF = """
import json, sys, time
from huggingface_hub import hf_hub_download
s = json.loads(sys.argv[1])
t = time.perf_counter()
p = hf_hub_download(s["repo"], s["name"], revision=s["commit"])
print(json.dumps({"seconds": time.perf_counter() - t, "path": p}))
"""


def make_file(path: Path, size: int) -> str:
    """Incompressible content written in 1 MiB blocks; returns its sha256."""
    digest = hashlib.sha256()
    with path.open("wb") as fh:
        left = size
        while left:
            block = os.urandom(min(MIB, left))
            fh.write(block)
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


class Hub:
    """The loopback hub in its own process (so its threads do not share our interpreter's GIL)."""

    def __init__(self, root: Path, tree: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.hub", "--root", str(root), "--tree", str(tree)],
            cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, env=child_env(root.parent / "env"),
        )  # fmt: skip
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        info = json.loads(line)
        self.endpoint: str = info["endpoint"]
        self.commit: str = info["repos"][REPO]

    def control(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.endpoint}/_control/{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(req, timeout=30) as resp:  # loopback only
            return json.loads(resp.read())

    def served(self, name: str) -> int:
        return sum(r["bytes"] for r in self.control("GET", "log") if r["file"] == name)

    def resolve_url(self, name: str) -> str:
        return f"{self.endpoint}/{REPO}/resolve/{self.commit}/{name}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def child_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGINGFACE_", "MODELSCOPE_", "QWENKIT_")) and "proxy" not in k.lower()}
    env.update({"HF_HOME": str(home / "hf"), "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                "HF_HUB_DISABLE_PROGRESS_BARS": "1", "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(REPO_ROOT),
                "PYTHONUNBUFFERED": "1"})  # fmt: skip
    return env


def run_json(code: str, spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--throttled-mib", type=int, default=96)
    ap.add_argument("--throttle-mib-s", type=float, default=10.0)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-download-"))
    hub = None
    try:
        tree = work / "tree" / REPO
        tree.mkdir(parents=True)
        size, small = args.size_mib * MIB, args.throttled_mib * MIB
        sha_big, sha_small = make_file(tree / BIG, size), make_file(tree / SMALL, small)
        hub = Hub(work / "hub", work / "tree")
        env = {**child_env(work / "env"), "HF_ENDPOINT": hub.endpoint}
        out = work / "out"

        def engine(name: str, sha: str, n: int, conn: int) -> dict[str, Any]:
            dest = out / f"engine-{name}"
            spec = {"name": name, "size": n, "sha256": sha, "url": hub.resolve_url(name), "conn": conn,
                    "dest": str(dest), "partial": str(work / "partial")}  # fmt: skip
            res = run_json(ENGINE, spec, env)
            dest.unlink()
            return res

        def curl(name: str) -> float:
            dest = out / f"curl-{name}"
            out.mkdir(exist_ok=True)
            proc = subprocess.run(["curl", "-sS", "-L", "--fail", "--noproxy", "*", "-o", str(dest), "-w",
                                   "%{time_total}", hub.resolve_url(name)],
                                  capture_output=True, text=True, check=True, timeout=900)  # fmt: skip
            dest.unlink()
            return float(proc.stdout.strip())

        def curl_fsync(name: str) -> float:
            """curl, then fsync of its file: the durability our engine gives before its rename."""
            dest = out / f"curl-{name}"
            t0 = time.perf_counter()
            subprocess.run(["curl", "-sS", "-L", "--fail", "--noproxy", "*", "-o", str(dest), hub.resolve_url(name)],
                           check=True, timeout=900)  # fmt: skip
            fd = os.open(dest, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            seconds = time.perf_counter() - t0
            dest.unlink()
            return seconds

        def hf(name: str) -> float:
            res = run_json(HF, {"repo": REPO, "name": name, "commit": hub.commit}, env)
            shutil.rmtree(work / "env" / "hf", ignore_errors=True)
            return float(res["seconds"])

        subprocess.run(["cat", str(tree / BIG), str(tree / SMALL)], stdout=subprocess.DEVNULL, check=True)  # warm
        best: dict[str, float] = {k: float("inf") for k in ("engine", "curl", "curl_fsync", "hf")}
        for _ in range(args.runs):  # interleaved, so drift on a shared machine hits all three alike
            best["engine"] = min(best["engine"], engine(BIG, sha_big, size, args.connections)["seconds"])
            best["curl"] = min(best["curl"], curl(BIG))
            best["curl_fsync"] = min(best["curl_fsync"], curl_fsync(BIG))
            best["hf"] = min(best["hf"], hf(BIG))
        mib_s = {k: args.size_mib / v for k, v in best.items()}

        rate = int(args.throttle_mib_s * MIB)
        hub.control("POST", "faults", {"kind": "throttle", "path_glob": SMALL, "times": None, "rate": rate})
        single = engine(SMALL, sha_small, small, 1)["seconds"]
        parallel = engine(SMALL, sha_small, small, args.connections)["seconds"]
        curl_throttled = curl(SMALL)
        hub.control("DELETE", "faults")

        # kill -9 mid-download (throttled so the kill lands mid-file), then an unthrottled rerun.
        hub.control("DELETE", "log")
        hub.control("POST", "faults", {"kind": "throttle", "path_glob": BIG, "times": None, "rate": 16 * MIB})
        dest = out / "killed"
        spec = {"name": BIG, "size": size, "sha256": sha_big, "url": hub.resolve_url(BIG), "conn": args.connections,
                "dest": str(dest), "partial": str(work / "partial-kill")}  # fmt: skip
        proc = subprocess.Popen([sys.executable, "-c", ENGINE, json.dumps(spec)], env=env, cwd=REPO_ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(1.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(1.0)
        hub.control("DELETE", "faults")
        first_run = hub.served(BIG)
        state_file = work / "partial-kill" / f"{sha_big}.json"
        state = json.loads(state_file.read_text()) if state_file.exists() else {"segment_size": 0, "done": []}
        seg = state["segment_size"]
        recorded = sum(min(seg, size - i * seg) for i in state["done"])
        rerun = run_json(ENGINE, spec, env)
        total = hub.served(BIG)
        result = {
            "bench": "download", "cpus": os.cpu_count(), "runs": args.runs, "file_mib": args.size_mib,
            "engine_mib_s": round(mib_s["engine"], 1), "curl_mib_s": round(mib_s["curl"], 1),
            "hf_hub_download_mib_s": round(mib_s["hf"], 1),
            "curl_then_fsync_mib_s": round(mib_s["curl_fsync"], 1),
            "engine_vs_curl": round(mib_s["engine"] / mib_s["curl"], 3),
            "engine_vs_curl_then_fsync": round(mib_s["engine"] / mib_s["curl_fsync"], 3),
            "engine_vs_hf_hub_download": round(mib_s["engine"] / mib_s["hf"], 3),
            "throttle_mib_s_per_connection": args.throttle_mib_s, "throttled_file_mib": args.throttled_mib,
            "single_stream_s": round(single, 2), "engine_parallel_s": round(parallel, 2),
            "curl_throttled_s": round(curl_throttled, 2),
            "parallel_speedup": round(single / parallel, 2), "connections": args.connections,
            "kill_first_run_served_bytes": first_run, "kill_recorded_bytes": recorded,
            "kill_refetched_bytes": total - size, "kill_rerun_bytes": rerun["bytes"],
            "kill_bound_bytes": args.connections * seg,
        }  # fmt: skip
        print(json.dumps(result), flush=True)
        return 0
    finally:
        if hub is not None:
            hub.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
