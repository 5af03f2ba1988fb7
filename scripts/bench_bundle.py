"""Offline-bundle install copy vs a plain ``cp``, side by side in one run; prints one JSON line.

    python scripts/bench_bundle.py [--rounds 5] [--random-gib 1] [--dest-root DIR]

What an install from a bundle folder does per file is ``verified_copy.copy_verified`` (copy + SHA-256 + fsync +
rename). On the real Gemma 3 270M GGUF (253 MB, the test bed's) and optionally a generated random file, each round
times, interleaved (order shuffled every round with a fixed seed, so drift and the after-effects of one case on
the next on a shared machine hits all alike; medians reported):

- ``ours``: ``copy_verified``; ``ours_fsync_s``: the part of it spent in ``fsync`` (does the flush dominate?),
  from separate runs (``ours_fsync_timed``) with ``os.fsync`` wrapped by a timer;
- ``cp``: ``cp SRC DEST`` in a subprocess (coreutils; leaves dirty pages, no durability);
- ``cp_fsync``: ``cp`` then an fsync of the copy: the same durability ours gives, the fair comparison;
- ``hash_only``: ``sha256_file`` of the source: the bound no verifying copy can beat on a warm cache;
- the alternatives that decided the design: ``serial`` (read, hash, write in one thread: the previous code),
  ``no_writeback`` (the pipeline without ``sync_file_range``), ``block_1mib`` and ``block_16mib``.

With the source in the page cache (``warm``) and, for ours/cp/cp_fsync, evicted first with
``posix_fadvise(DONTNEED)`` (``cold``: read from disk, as from a USB drive). Dirty pages are flushed (``os.sync``)
between timings, untimed. ``ratio_vs_cp`` = cp seconds / ours seconds (target >= 0.9); ``ratio_vs_cp_fsync``
likewise against ``cp`` + fsync. Destinations live under ``--dest-root`` (default ``~/.cache/qwenkit-bench``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bootstrap.fetch import verified_copy  # noqa: E402
from bootstrap.fetch.download import sha256_file  # noqa: E402
from bootstrap.fetch.verified_copy import copy_hashing, copy_verified  # noqa: E402
from tests.support import testbed  # noqa: E402

MIB = 1 << 20
# After each file is deleted and synced, let the disk finish (ext4 mounted with ``discard`` trims the freed blocks)
# so the next timing does not pay for the previous one's cleanup.
SETTLE_S = 0.5


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def evict(path: Path) -> None:
    """Drop the file's clean pages from the page cache (no root needed), so the next read comes from disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(path: Path) -> None:
    with path.open("rb", buffering=0) as fh:
        buf = bytearray(16 * MIB)
        while fh.readinto(buf):
            pass


class FsyncTimer:
    """Adds up the seconds spent in ``os.fsync`` while active (the bench process only)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._original = os.fsync

    def __enter__(self) -> FsyncTimer:
        def timed(fd: int) -> None:
            start = time.perf_counter()
            try:
                self._original(fd)
            finally:
                self.seconds += time.perf_counter() - start

        os.fsync = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        os.fsync = self._original


def serial_copy(src: Path, tmp: Path) -> str:
    """The previous single-threaded loop (read 4 MiB, hash, write; fsync), as ``source_bundle`` had it."""
    digest = hashlib.sha256()
    with src.open("rb") as fh, tmp.open("wb") as out:
        while block := fh.read(4 * MIB):
            digest.update(block)
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def measure_file(src: Path, size: int, sha: str, work: Path, rounds: int) -> dict[str, Any]:
    dest, tmp, partial = work / "out" / src.name, work / "variant.tmp", work / "partial"
    dest.parent.mkdir(parents=True, exist_ok=True)
    fsync_share: list[float] = []

    def ours() -> None:
        copy_verified(src, dest, size, sha, partial)

    def ours_fsync_timed() -> None:
        """A separate case, so the timer's wrapper never touches the runs the ratios come from."""
        with FsyncTimer() as timer:
            copy_verified(src, dest, size, sha, partial)
        fsync_share.append(timer.seconds)

    def cp() -> None:
        subprocess.run(["cp", str(src), str(dest)], check=True)

    def cp_fsync() -> None:
        subprocess.run(["cp", str(src), str(dest)], check=True)
        fsync_path(dest)

    def hash_only() -> None:
        if sha256_file(src) != sha:
            sys.exit(f"bench_bundle: {src} does not hash to {sha}")

    def variant(**kwargs: Any) -> Callable[[], None]:
        return lambda: copy_hashing(src, tmp, size + 1, **kwargs) and None

    warm_cases: dict[str, Callable[[], None]] = {
        "ours": ours, "ours_fsync_timed": ours_fsync_timed, "cp": cp, "cp_fsync": cp_fsync, "hash_only": hash_only,
        "serial": lambda: serial_copy(src, tmp) and None, "no_writeback": variant(writeback=False),
        "block_1mib": variant(block=MIB), "block_16mib": variant(block=16 * MIB),
    }  # fmt: skip
    cold_cases = {"ours": ours, "cp": cp, "cp_fsync": cp_fsync}

    def clean() -> None:
        dest.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
        os.sync()
        time.sleep(SETTLE_S)

    samples: dict[str, list[float]] = {f"warm_{k}": [] for k in warm_cases} | {f"cold_{k}": [] for k in cold_cases}
    cases = [(f"warm_{k}", f, False) for k, f in warm_cases.items()] + [(f"cold_{k}", f, True)
                                                                       for k, f in cold_cases.items()]
    ours()  # untimed warm-up: imports, the writer thread, the page cache
    clean()
    order = random.Random(7)
    for _ in range(rounds):
        for name, call, cold in order.sample(cases, len(cases)):
            clean()
            evict(src) if cold else warm(src)
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    clean()
    med = {name: statistics.median(values) for name, values in samples.items()}
    out: dict[str, Any] = {"bytes": size}
    for temp in ("warm", "cold"):
        part = {f"{k.removeprefix(temp + '_')}_s": round(v, 4) for k, v in med.items() if k.startswith(temp)}
        part["ratio_vs_cp"] = round(med[f"{temp}_cp"] / med[f"{temp}_ours"], 3)
        part["ratio_vs_cp_fsync"] = round(med[f"{temp}_cp_fsync"] / med[f"{temp}_ours"], 3)
        out[temp] = part
    out["warm"]["ours_fsync_s"] = round(statistics.median(fsync_share), 4)
    out["warm"]["cp_fsync_part_s"] = round(med["warm_cp_fsync"] - med["warm_cp"], 4)
    out["warm"]["ratio_vs_hash_only"] = round(med["warm_hash_only"] / med["warm_ours"], 3)
    out["warm"]["ours_mib_s"] = round(size / MIB / med["warm_ours"], 1)
    out["cold"]["ours_mib_s"] = round(size / MIB / med["cold_ours"], 1)
    return out


def random_file(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with path.open("wb") as fh:
        left = size
        while left:
            block = os.urandom(min(16 * MIB, left))
            fh.write(block)
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5, at least 3)")
    ap.add_argument("--random-gib", type=float, default=0.0, help="also a generated random file of this size")
    ap.add_argument("--dest-root", type=Path, default=Path.home() / ".cache" / "qwenkit-bench")
    args = ap.parse_args()
    rounds = max(3, args.rounds)
    gemma = testbed.gemma_model()
    args.dest_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-bundle-", dir=args.dest_root))
    try:
        files: dict[str, Any] = {
            "gemma": measure_file(gemma, testbed.GEMMA_SIZE, testbed.GEMMA_SHA256, work, rounds)}
        if args.random_gib > 0:
            size = int(args.random_gib * (1 << 30))
            src = work / "src" / "random.bin"
            src.parent.mkdir()
            sha = random_file(src, size)
            files[f"random_{args.random_gib:g}gib"] = measure_file(src, size, sha, work, rounds)
        result = {
            "bench": "bundle", "cpus": os.cpu_count(), "rounds": rounds, "dest_dir": str(work),
            "same_filesystem": os.stat(work).st_dev == os.stat(gemma).st_dev,
            "block_bytes": verified_copy.BLOCK, "buffers": verified_copy.BUFFERS,
            "writeback_hint": verified_copy._writeback_starter() is not None,
            "ratio_vs_cp": files["gemma"]["warm"]["ratio_vs_cp"],
            "ratio_vs_cp_fsync": files["gemma"]["warm"]["ratio_vs_cp_fsync"],
            "hash_only_s": files["gemma"]["warm"]["hash_only_s"], "files": files,
        }  # fmt: skip
        print(json.dumps(result), flush=True)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
