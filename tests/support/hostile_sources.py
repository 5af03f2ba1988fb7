"""Hostile sources for ``qwenkit download`` (issue 24): the cases, and a runner that times each one and reads its
peak memory. Shared by ``tests/fetch/test_hostile_network.py`` (exit code, one line, a generous time bound) and
``scripts/bench_hostile.py`` (the exact figures, before and after).

Every case is the loopback hub (``tests/support/hub.py``) with one fault of ``hub_faults.FAULT_KINDS`` armed for
every matching request, and the real CLI run against it as a user runs it. The hub serves ``tiny`` from both
protocols (``--source hf`` / ``--source modelscope``), so a case names the one it breaks.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT, seeded_bytes

MIB = 1 << 20
REPO = "acme/tiny-GGUF"
FILE = "tiny-Q4_K_M.gguf"
MODEL = seeded_bytes(3 * MIB + 5, 24)  # under 4 MiB: one stream, so a trickle meets every request of the file
TRICKLE_FROM = 2 * MIB  # the first bytes come at once, so the failed run leaves something to resume
HF_API = "/api/models/*"
MS_API = "/api/v1/models/*"
BOMB = 300 * MIB  # inflated size of the gzip bomb, as in the issue
# The bounds shrunk for tests (the defaults and their reasons: bootstrap/fetch/http_session.py).
FAST_BOUNDS = {"QWENKIT_RATE_WINDOW": "2", "QWENKIT_META_DEADLINE": "3"}
_SCRUB = ("HF_", "QWENKIT_", "MODELSCOPE_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
          "all_proxy")


def catalog_toml() -> str:
    """A catalog with one model, ``tiny``, on both hubs."""
    return f"""
schema = 1
default_model = "tiny"

[[models]]
id = "tiny"
architecture = "llama"
default_quant = "Q4_K_M"
repos = [{{ hub = "hf", repo = "{REPO}" }}, {{ hub = "modelscope", repo = "{REPO}" }}]
quants = [{{ name = "Q4_K_M", file = "{FILE}" }}]
"""


@dataclass(frozen=True)
class Case:
    """One hostile source: the fault armed (``hub.inject`` keywords, ``times`` unlimited), the ``--source`` it is
    met through, and what the run must end with (exit code, a regex for the ``error:`` line)."""

    name: str
    source: str
    fault: Mapping[str, Any]
    exit_code: int
    line: str
    defect: str = ""  # what the issue measured before (for the report)
    extra: Mapping[str, str] = field(default_factory=dict)


def _malformed(name: str, source: str, where: str, changes: Mapping[str, Any], line: str, defect: str = "",
               drop: tuple[str, ...] = ()) -> Case:
    fault = {"kind": "malformed", "path_glob": where, "set": dict(changes), "drop": list(drop)}
    return Case(name, source, fault, 5, rf"error: bad listing from {source} \(127\.0\.0\.1:\d+\): {line}", defect)


CASES: tuple[Case, ...] = (
    Case("body-trickle", "hf", {"kind": "trickle", "path_glob": FILE, "bytes": 1, "every": 5.0,
                                "offset": TRICKLE_FROM}, 4,
         r"error: could not download tiny-Q4_K_M\.gguf from hf: hf: slower than 1(\.0)? KiB/s for \d+ s",
         "never trips the stall timeout"),
    Case("hf-listing-trickle", "hf", {"kind": "trickle", "scope": "api", "path_glob": HF_API, "bytes": 1,
                                      "every": 5.0}, 4,
         r"error: cannot reach hf \(127\.0\.0\.1:\d+\): no complete answer within \d+ s", "never gives up"),
    Case("ms-listing-trickle", "modelscope", {"kind": "trickle", "scope": "api", "path_glob": MS_API, "bytes": 1,
                                              "every": 5.0}, 4,
         r"error: cannot reach modelscope \(127\.0\.0\.1:\d+\): no complete answer within \d+ s", "never gives up"),
    Case("hf-gzip-bomb", "hf", {"kind": "gzip_bomb", "path_glob": HF_API, "inflated": BOMB}, 5,
         r"error: bad listing from hf \(127\.0\.0\.1:\d+\): it inflates past 16(\.0)? MiB \(Content-Encoding gzip\)",
         "inflated whole (peak 644 MiB)"),
    Case("ms-gzip-bomb", "modelscope", {"kind": "gzip_bomb", "path_glob": MS_API, "inflated": BOMB}, 5,
         r"error: bad listing from modelscope \(127\.0\.0\.1:\d+\): it inflates past 16(\.0)? MiB "
         r"\(Content-Encoding gzip\)"),
    _malformed("hf-lfs-size-text", "hf", HF_API, {"siblings.*.lfs.size": "abc"},
               r'tiny-Q4_K_M\.gguf: lfs\.size is "abc", not a size in bytes', "waits forever"),
    _malformed("hf-lfs-size-negative", "hf", HF_API, {"siblings.*.lfs.size": -5},
               r"tiny-Q4_K_M\.gguf: lfs\.size is -5, not a size in bytes", "OSError: [Errno 22], exit 1"),
    _malformed("hf-lfs-size-float", "hf", HF_API, {"siblings.*.lfs.size": 3145733.5},
               r"tiny-Q4_K_M\.gguf: lfs\.size is 3145733\.5, not a size in bytes"),
    _malformed("hf-lfs-sha256-number", "hf", HF_API, {"siblings.*.lfs.sha256": 12},
               r"tiny-Q4_K_M\.gguf: lfs\.sha256 is 12, not a sha256"),
    _malformed("hf-siblings-object", "hf", HF_API, {"siblings": {"a": 1}}, r'unexpected siblings: \{"a": 1\}'),
    _malformed("hf-sibling-number", "hf", HF_API, {"siblings.0": 7}, r"unexpected siblings\[0\]: 7"),
    _malformed("hf-no-sha", "hf", HF_API, {}, r"no sha in it", drop=("sha",)),
    _malformed("hf-answer-list", "hf", HF_API, {"": [1, 2]}, r"unexpected model info: \[1, 2\]"),
    _malformed("ms-data-list", "modelscope", "*/revisions", {"Data": [1, 2, 3]}, r"unexpected Data: \[1, 2, 3\]",
               "waits forever"),
    _malformed("ms-revisionmap-text", "modelscope", "*/revisions", {"Data.RevisionMap": "abc"},
               r'unexpected Data\.RevisionMap: "abc"', "waits forever"),
    _malformed("ms-branches-object", "modelscope", "*/revisions", {"Data.RevisionMap.Branches": {"a": 1}},
               r'unexpected Data\.RevisionMap\.Branches: \{"a": 1\}', "waits forever"),
    _malformed("ms-size-negative", "modelscope", "*/repo/files", {"Data.Files.*.Size": -5},
               r"tiny-Q4_K_M\.gguf: Size is -5, not a size in bytes"),
    _malformed("ms-size-text", "modelscope", "*/repo/files", {"Data.Files.*.Size": "3 MB"},
               r'tiny-Q4_K_M\.gguf: Size is "3 MB", not a size in bytes'),
    _malformed("ms-files-text", "modelscope", "*/repo/files", {"Data.Files": "none"},
               r'unexpected Data\.Files: "none"'),
)
BY_NAME = {c.name: c for c in CASES}


@dataclass(frozen=True)
class Run:
    """How one CLI run ended: exit code (None: still running at the time limit, then killed), its stderr, seconds
    to exit, and its peak resident memory (``getrusage`` of that child alone, KiB)."""

    rc: int | None
    stderr: str
    seconds: float
    max_rss_kib: int

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.startswith("error: ")]

    @property
    def first_line(self) -> str:
        """The ``error:`` line, else the last line said (what a user reads last)."""
        lines = self.error_lines or [ln for ln in self.stderr.splitlines() if ln.strip()][-1:]
        return lines[0] if lines else ""


def cli_env(hub: LoopbackHub, home: Path, catalog: Path, code: Path = REPO_ROOT, **extra: str) -> dict[str, str]:
    """The environment a run gets: only the loopback hub, this home and catalog, English, no proxy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.update({"QWENKIT_HF_ENDPOINT": hub.endpoint, "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint,
                "QWENKIT_HOME": str(home), "QWENKIT_CATALOG": str(catalog), "QWENKIT_LANG": "en", "NO_COLOR": "1",
                "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(code), "PYTHONUNBUFFERED": "1", **extra})
    return env


# Runs the CLI and writes its peak RSS (KiB) to argv[1]. The peak is read by this small launcher, not by the test
# process: Linux keeps the old address space's high-water mark across exec (``exec_mmap``), so a child spawned
# straight from a big pytest process would report that process's size as its own.
_LAUNCHER = (
    "import os, sys\n"
    "pid = os.posix_spawn(sys.executable, [sys.executable, '-m', 'bootstrap', *sys.argv[2:]], os.environ)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    out.write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def run_cli(argv: list[str], env: Mapping[str, str], timeout: float, code: Path = REPO_ROOT) -> Run:
    """``python -m bootstrap ARGV`` with ``code``'s ``bootstrap`` (it is the current folder: ``-m`` looks there
    first); killed after ``timeout`` seconds (rc None), with its own peak memory."""
    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        with (Path(tmp) / "err").open("w+b") as err:
            start = time.monotonic()
            proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(peak), *argv], env=dict(env),
                                    cwd=str(code), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
            try:
                rc: int | None = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = None
            seconds = time.monotonic() - start
            err.seek(0)
            text = err.read().decode("utf-8", "replace")
        kib = int(peak.read_text() or 0) if peak.is_file() else 0
    return Run(rc, text, seconds, kib)


def arm(hub: LoopbackHub, case: Case) -> None:
    """The case's fault, armed for every matching request until cleared."""
    spec = dict(case.fault)
    hub.inject(spec.pop("kind"), times=None, **spec)


def matches(case: Case, run: Run) -> bool:
    """Whether a run ended as the case says it must: its exit code and exactly one matching ``error:`` line."""
    return run.rc == case.exit_code and len(run.error_lines) == 1 and re.match(case.line, run.error_lines[0]) \
        is not None
