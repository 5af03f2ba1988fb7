"""A llama-server that cannot run here, end to end through ``qwenkit install`` on the loopback hub.

Every failure class is produced for real — a build killed by SIGILL or SIGSEGV, a loader that cannot find a
library, a GPU build that comes up without its GPU, a server whose address space is capped so its KV cache cannot
be allocated, a truncated model, a port another socket holds — and each gets its own one-line message and exit code.
A preferred build that cannot run falls back to the next one and serves; a first start that runs out of memory is
replanned once with a smaller context; an upgrade to an engine that fails its self-test never stops the server that
works. Stand-in builds: ``tests/support/standin.py``.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from bootstrap.core.console import t
from bootstrap.place.working_engine import who
from tests.support import standin
from tests.support.chat_client import ChattingClient
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import (
    MODEL_FILE,
    MODEL_REPO,
    InstallBed,
    catalog_text,
    one_line_error,
    write_chat_model,
)
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

pytestmark = pytest.mark.usefixtures("english")

VULKAN, CPU = "ubuntu-vulkan-x64", "ubuntu-x64"
# The RTX 3070 as NVML reported it on a real Linux machine (tests/data/hardware/rtx3070_8gb_32gb.json).
RTX3070 = json.loads((REPO_ROOT / "tests" / "data" / "hardware" / "rtx3070_8gb_32gb.json").read_text())["gpus"]
GIB = 1 << 30


def _chat(bed: InstallBed, port: int, timeout: float = 30) -> requests.Response:
    key = bed.home.api_key_file.read_text(encoding="utf-8").strip()
    with requests.Session() as session:
        session.trust_env = False
        return session.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=timeout,
                            headers={"Authorization": f"Bearer {key}"},
                            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})


def _state(bed: InstallBed) -> dict[str, Any]:
    return json.loads(bed.home.state_file.read_text(encoding="utf-8"))


def _profile(bed: InstallBed, tmp_path: Path, *, gpus: list[dict[str, Any]] | None = None,
             ram_gib: int | None = None, cores: int | None = None) -> Path:
    """This machine's ``doctor --json`` with the GPUs, RAM or cores changed (what ``install --hardware`` takes)."""
    doctor = bed.run("doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    doc = json.loads(doctor.stdout)
    if gpus is not None:
        doc["gpus"] = gpus
    if ram_gib is not None:
        doc["memory"] = {"total_bytes": ram_gib * GIB, "available_bytes": (ram_gib - 2) * GIB}
    if cores is not None:
        doc["cpu"]["physical_cores"] = doc["cpu"]["logical_cores"] = cores
    path = tmp_path / "hardware.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _assert_nothing_downloaded(bed: InstallBed) -> None:
    """The engine failed before the model: nothing of it is on disk, and the hub saw only prefixes of it (the
    plan's header read, the sources' speed probes), never its whole body."""
    assert not (bed.home.models_dir / MODEL_REPO / MODEL_FILE).exists()
    assert not [p for p in bed.home.partial_dir.rglob("*") if p.is_file()]
    size = bed.hub.entry(MODEL_REPO, MODEL_FILE, bed.hub.commit_of(MODEL_REPO)).size
    reads = [(r.range, r.bytes) for r in bed.hub.requests() if r.file == MODEL_FILE and r.status in (200, 206)]
    assert reads and all(rng is not None and rng.startswith("bytes=0-") and sent < size for rng, sent in reads), reads


# ---- fallback to the next build -------------------------------------------------------------------------
@pytest.mark.parametrize(("vulkan_build", "cause", "detail"), [
    pytest.param(standin.kill_self("ILL"), "illegal_instruction", "SIGILL", id="sigill"),
    pytest.param(None, "gpu_init", "no GPU device came up", id="gpu-missing"),  # the real engine: a CPU-only build
    # a Vulkan build that serves but answers the self-test with HTTP 500, as on lavapipe (issue #29): no crash,
    # named by its answer, and the next build serves
    pytest.param(standin.answers_http_error(), "http_error", standin.CONTENT_ONLY, id="http-500"),
])
def test_a_preferred_build_that_cannot_run_falls_back_and_serves(
        make_bed: Callable[..., InstallBed], tmp_path: Path, vulkan_build: str | None, cause: str,
        detail: str) -> None:
    bed = make_bed({VULKAN: vulkan_build} if vulkan_build else {})
    hardware = _profile(bed, tmp_path, gpus=RTX3070)  # an NVIDIA GPU: Linux plans the Vulkan build
    port = free_port()
    first = bed.install("--no-venv", "--port", str(port), "--hardware", str(hardware))
    assert first.returncode == 0, first.stderr
    why = t(f"failure.{cause}", who=who(VULKAN), detail=detail, signal=detail, wanted="?", device="?", status=500)
    assert t("failure.fallback", used=CPU, failed=VULKAN, reason=why) in first.stderr
    state = _state(bed)
    assert state["engine"]["variant"] == CPU
    assert [(g["variant"], g["cause"]) for g in state["engine"]["given_up"]] == [(VULKAN, cause)]
    plan_args = state["server"]["plan_args"]
    assert plan_args[plan_args.index("-ngl") + 1] == "0"  # replanned for the CPU build: everything in RAM
    assert [p.name for p in bed.home.engines_dir.iterdir()] == [f"b10434-{CPU}"]  # the failed build is gone
    assert not any((bed.home.partial_dir / "engine").iterdir())
    assert _chat(bed, port).status_code == 200
    status = bed.run("status")
    assert status.returncode == 0 and t("failure.status_fallback", note=t(
        "failure.fallback", used=CPU, failed=VULKAN, reason=f"{cause}: {state['engine']['given_up'][0]['detail']}"
    )) in status.stderr

    # A new model revision: the rerun installs it without trying the build that failed here before.
    vulkan_bytes = bed.hub.bytes_served(f"*-{VULKAN}.tar.gz")
    model = write_chat_model(tmp_path / "rev2" / MODEL_FILE, seed=1)
    bed.catalog.write_text(catalog_text(bed.hub.commit(MODEL_REPO, {MODEL_FILE: model})), encoding="utf-8")
    again = bed.install("--no-venv", "--hardware", str(hardware))
    assert again.returncode == 0, again.stderr
    assert bed.hub.bytes_served(f"*-{VULKAN}.tar.gz") == vulkan_bytes
    assert _state(bed)["engine"]["given_up"] == state["engine"]["given_up"]
    assert _chat(bed, port).status_code == 200


# ---- each failure class, with nothing to fall back to ------------------------------------------------------
@pytest.mark.parametrize(("build", "code", "cause", "message"), [
    pytest.param(standin.kill_self("ILL"), 3, "illegal_instruction",
                 t("failure.illegal_instruction", who=who(CPU), detail="SIGILL"), id="sigill"),
    pytest.param(standin.kill_self("SEGV"), 6, "crash", t("failure.crash", who=who(CPU), signal="SIGSEGV",
                                                          detail=standin.LAST_WORDS), id="sigsegv"),
    pytest.param(standin.kill_self("ABRT"), 6, "crash", t("failure.crash", who=who(CPU), signal="SIGABRT",
                                                          detail=standin.LAST_WORDS), id="sigabrt"),
    pytest.param(standin.loader_error("libvulkan.so.1"), 3, "missing_library",
                 t("failure.missing_library", who=who(CPU), detail="libvulkan.so.1"), id="missing-library"),
])
def test_an_engine_that_cannot_run_is_named_before_any_model_byte(
        make_bed: Callable[..., InstallBed], build: str, code: int, cause: str, message: str) -> None:
    bed = make_bed({CPU: build, VULKAN: build})
    proc = bed.install("--no-venv", "--port", str(free_port()))
    assert proc.returncode == code, proc.stderr
    assert one_line_error(proc) == message
    _assert_nothing_downloaded(bed)
    assert not bed.home.state_file.exists()
    assert not bed.home.engines_dir.exists() or not any(bed.home.engines_dir.iterdir())  # nothing unusable kept
    recorded = json.loads((bed.home.logs_dir / "last-failure.json").read_text(encoding="utf-8"))
    assert (recorded["cause"], recorded["exit_code"], recorded["message"]) == (cause, code, message)
    status = bed.run("status")
    assert status.returncode == 2 and t("failure.status_last", when=recorded["when"], message=message) \
        in status.stderr
    if cause == "missing_library":
        assert t("failure.lib_vulkan") in proc.stderr  # the hint says what provides it


def _big_kv_model(path: Path) -> Path:
    """A llama with a 1 GiB f16 KV cache at 32768 tokens (16 layers × 512 KV dims), 512 MiB at 16384."""
    return write_model("llama", path, dtype="q8_0", n_layer=16, n_embd=512, n_head=4, n_head_kv=4, head_dim=128,
                       n_ff=512, n_ctx=32768)


# The capped server needs about 700 MiB of address space at 16384 tokens and 1.2 GiB at 32768 (measured with one
# malloc arena, 2 threads, 4 HTTP threads); a cap between the two makes the first start fail for real.
ROOM_FOR_16K = 900_000
NO_ROOM = 400_000


@pytest.mark.parametrize(("cap_kib", "serves"), [pytest.param(ROOM_FOR_16K, True, id="replanned"),
                                                 pytest.param(NO_ROOM, False, id="no-way-out")])
def test_out_of_memory_at_the_first_start_is_replanned_once(make_bed: Callable[..., InstallBed], tmp_path: Path,
                                                            cap_kib: int, serves: bool) -> None:
    """The RAM budget given via --hardware (64 GiB) lets the plan take 32768 tokens of context; the server's real
    address space cannot hold that KV cache. The install names the failed allocation and starts it once more with
    the next smaller context."""
    bed = make_bed({CPU: standin.address_space_kib(cap_kib)}, model=_big_kv_model(tmp_path / "big" / MODEL_FILE),
                   server_args=("--threads-http", "4"))
    hardware = _profile(bed, tmp_path, gpus=[], ram_gib=64, cores=2)
    port = free_port()
    proc = bed.install("--no-venv", "--port", str(port), "--hardware", str(hardware))
    note = t("failure.oom_replan", wanted="1,024 MiB", device="CPU",
             change=t("failure.change_ctx", ctx=16384, old=32768))
    assert note in proc.stderr
    if serves:
        assert proc.returncode == 0, proc.stderr
        state = _state(bed)
        args = state["server"]["args"]
        assert args[args.index("-c") + 1] == "16384" and state["server"]["retried"] == note
        assert _chat(bed, port).status_code == 200
        assert not (bed.home.logs_dir / "last-failure.json").exists()
    else:
        assert proc.returncode == 3, proc.stderr
        line = one_line_error(proc)
        assert line.startswith(t("failure.out_of_memory", who="llama-server", device="CPU", wanted="512 MiB",
                                 detail="").rstrip(" ()"))
        assert json.loads((bed.home.logs_dir / "last-failure.json").read_text())["cause"] == "out_of_memory"


def test_a_truncated_model_is_named_as_damaged_before_anything_starts(make_bed: Callable[..., InstallBed],
                                                                      tmp_path: Path) -> None:
    """A half-uploaded release on a first install: its header parses but its last tensor runs past the end. The plan
    reads the remote header and the file's size, so it is refused before any model byte is downloaded or the engine
    started (exit 2, naming the file and the tensor). During an upgrade (the plan reads the installed file) the
    refusal comes from ``install.validate`` and the old server keeps serving: ``tests/e2e/test_upgrade_safety.py``;
    what llama-server itself says about such a file: ``tests/place/test_engine_failure.py``."""
    good = write_chat_model(tmp_path / "good" / MODEL_FILE)
    truncated = tmp_path / "truncated" / MODEL_FILE
    truncated.parent.mkdir()
    truncated.write_bytes(good.read_bytes()[:-4096])
    bed = make_bed(model=truncated)
    proc = bed.install("--no-venv", "--port", str(free_port()))
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert line.endswith(f"{MODEL_FILE}: tensor 'blk.11.ffn_down.weight' data ends at byte 1424064, past the end of "
                         "the file (1419968 bytes)"), line
    assert all(r.range is not None for r in bed.hub.requests() if r.path.endswith(MODEL_FILE))  # header reads only
    assert not (bed.home.models_dir / MODEL_REPO / MODEL_FILE).exists() and not bed.home.state_file.exists()


def test_a_port_another_socket_holds_is_named(make_bed: Callable[..., InstallBed]) -> None:
    """A socket bound but not listening: the installer's connect-based check finds the port free, llama-server's
    own bind fails — the failure comes from the server, and says so."""
    bed = make_bed()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        proc = bed.install("--no-venv", "--port", str(port))
    assert proc.returncode == 6, proc.stderr
    line = one_line_error(proc)
    assert line == t("failure.port_in_use", who="llama-server",
                     detail=f"start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: {port}")


# ---- an upgrade to an engine that cannot run here ----------------------------------------------------------
def test_an_upgrade_to_an_engine_that_fails_its_selftest_never_stops_the_working_server(
        make_bed: Callable[..., InstallBed], engine_bin_dir: Path, tmp_path: Path) -> None:
    bed = make_bed()
    port = free_port()
    assert bed.install("--no-venv", "--port", str(port)).returncode == 0
    before = bed.home.state_file.read_text(encoding="utf-8")
    # engines.toml pins a new build whose archives (both Linux variants) die with SIGILL on this machine
    shipped = (REPO_ROOT / "payload" / "engines.toml").read_text(encoding="utf-8")
    pins = tmp_path / "engines.toml"
    pins.write_text(shipped.replace("10434", "10500"), encoding="utf-8")
    broken = standin.release_asset(tmp_path / "b10500", engine_bin_dir, standin.kill_self("ILL"))
    for variant in (VULKAN, CPU):
        bed.hub.add_release_asset("ggml-org/llama.cpp", "b10500", broken, f"llama-b10500-bin-{variant}.tar.gz")
    bed.extra_env["QWENKIT_ENGINES"] = str(pins)
    with ChattingClient(port, bed.home.api_key_file) as client:
        time.sleep(1.0)
        upgrade = bed.install("--no-venv")
        time.sleep(1.0)
    assert upgrade.returncode == 3, upgrade.stderr
    assert one_line_error(upgrade) == t("failure.illegal_instruction", who=who(CPU), detail="SIGILL")
    assert client.sent >= 4 and client.failed == []
    assert bed.home.state_file.read_text(encoding="utf-8") == before
    assert [p.name for p in bed.home.engines_dir.iterdir()] == [f"b10434-{CPU}"]
    status = bed.run("status", "--json")
    assert status.returncode == 0
    report = json.loads(status.stdout)
    assert report["healthy"] is True and report["last_failure"]["cause"] == "illegal_instruction"
