"""The confirmation screen of ``qwenkit install``, from the real CLI on the test bed (engine, model, loopback hub).

It is printed with ``--yes`` too (without the question), says what each part of the download is (model, engine,
runtime venv) or that it is already here, and speaks of RAM only on a machine that uses no GPU.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from pathlib import Path

from bootstrap.core.sizes import GIB
from bootstrap.register.base import port_busy
from bootstrap.register.managers import FallbackManager
from tests.support.install_bed import InstallBed


def _cpu_only_profile(bed: InstallBed, tmp_path: Path) -> Path:
    """This machine's ``doctor --json`` with no GPU and 12 GiB of RAM (what ``install --hardware`` takes)."""
    doctor = bed.run("doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    doc = json.loads(doctor.stdout)
    doc["gpus"] = []
    doc["memory"] = {"total_bytes": 12 * GIB, "available_bytes": 10 * GIB}
    path = tmp_path / "no-gpu.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _screen(stderr: str, first: str) -> list[str]:
    """The screen's lines: from its title to the install-folder line."""
    lines = stderr.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].lstrip().startswith(("install into", "安装到")))
    return lines[start:end + 1]


def _free_pair() -> int:
    """A port below the ephemeral range (as 8080 is) whose next port is free too: where a taken one moves to."""
    return next(p for p in range(21000, 31000, 11)
                if not port_busy("127.0.0.1", p) and not port_busy("127.0.0.1", p + 1))


def test_the_screen_says_everything_with_yes_in_english(make_bed: Callable[..., InstallBed], tmp_path: Path) -> None:
    bed = make_bed()
    hardware = _cpu_only_profile(bed, tmp_path)
    port = _free_pair()
    proc = bed.install("--no-venv", "--port", str(port), "--hardware", str(hardware))
    print(proc.stderr, proc.stdout)  # the screen and the final report, as a user saw them
    assert proc.returncode == 0, proc.stderr
    screen = "\n".join(_screen(proc.stderr, "Plan: "))
    assert "Continue?" not in proc.stderr
    # The screen is a question (stderr); the report is the command's output (stdout): '> install.log' keeps it.
    assert "Plan: " not in proc.stdout and "The server answers:" not in proc.stderr
    assert "The server answers:" in proc.stdout and f"http://127.0.0.1:{port}/v1" in proc.stdout
    assert f"Installed in {bed.home.root}." in proc.stdout
    # the checks that passed are counted, not listed (qwenkit doctor lists them); a warning keeps its row
    assert re.search(r"^(All \d+ checks of this machine passed|The other \d+ checks passed) \('qwenkit doctor' "
                     r"shows them( all)?\)\.$", proc.stderr, re.M), proc.stderr
    assert not re.search(r"^CPU +ok ", proc.stderr, re.M), proc.stderr
    assert screen.startswith("Plan: Tiny chat (test) Q8_0 on the CPU"), screen
    assert re.search(r"^  download       at least \d+\.\d (KiB|MiB) \(the engine's size", screen, re.M), screen
    assert re.search(r"^    model: 1\.\d MiB$", screen, re.M), screen
    assert re.search(r"^    engine: size stated by the release when downloaded$", screen, re.M), screen
    assert re.search(r"^    runtime venv: not made \(--no-venv\)$", screen, re.M), screen
    assert re.search(r"^  memory         RAM \d+\.\d of \d+\.\d GiB; no GPU used$", screen, re.M), screen
    assert "GPU 0.0" not in screen
    assert "  context        512 tokens" in screen  # the catalog's server_args (-c 512) are what runs
    assert f"  port           {port}\n" in screen
    assert "  runs as        the start script run_qwen.sh only (no service: start it yourself)" in screen
    assert "hinking" not in screen and "hinking" not in proc.stdout  # the tiny model has no thinking mode
    assert f"  install into   {bed.home.root}" in screen

    # A rerun that checks every file, its recorded port now taken by another program: every part is already
    # here, and the port moves to the next free one (the recorded port is not the user's explicit word).
    FallbackManager(bed.home).stop()
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the stopped server's port is in TIME_WAIT
        taken.bind(("127.0.0.1", port))
        taken.listen()
        again = bed.install("--no-venv", "--hardware", str(hardware), "--verify")
    assert again.returncode == 0, again.stderr
    screen = "\n".join(_screen(again.stderr, "Plan: "))
    assert "  download       nothing: every part is already here" in screen, screen
    assert re.search(r"^    model: already here$", screen, re.M), screen
    assert re.search(r"^    engine: already here$", screen, re.M), screen
    assert f"  port           {port + 1} ({port} is taken by another program)" in screen, screen


def test_the_screen_in_chinese_comes_before_the_network_and_estimates_the_venv(
        make_bed: Callable[..., InstallBed], tmp_path: Path) -> None:
    """The engine's release host is down: the screen (made without it) is printed, then one line says why."""
    bed = make_bed()
    hardware = _cpu_only_profile(bed, tmp_path)
    dead = f"http://127.0.0.1:{_free_pair()}/releases"
    proc = bed.run("install", "--yes", "--no-service", "--hardware", str(hardware),
                   env=bed.env(QWENKIT_LANG="zh", QWENKIT_ENGINE_URL=dead))
    assert proc.returncode == 4, proc.stderr
    screen = "\n".join(_screen(proc.stderr, "方案："))
    assert screen.startswith("方案：Tiny chat (test) Q8_0，运行于处理器（CPU）"), screen  # no space inside Chinese
    assert re.search(r"^  下载          至少 \d+\.\d MiB（引擎大小在下载时才知道）$", screen, re.M), screen
    assert re.search(r"^    模型：1\.\d MiB$", screen, re.M), screen
    assert re.search(r"^    引擎：大小在下载时由发布页给出$", screen, re.M), screen
    assert re.search(r"^    Python 环境（venv）：约 \d+\.\d MiB（按记录的依赖包大小估算）$", screen, re.M), screen
    assert re.search(r"^  内存          内存 \d+\.\d / \d+\.\d GiB；不使用 GPU$", screen, re.M), screen
    assert "  运行方式      仅启动脚本 run_qwen.sh（不注册服务：需自行启动）" in screen
    assert "  上下文        512 token" in screen
    assert "  端口          8080" in screen or "已被其他程序占用" in screen
    assert not re.search(r"[\u4e00-\u9fff]:", screen), screen  # no ASCII colon after Chinese text
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("错误：")]
    assert len(errors) == 1 and proc.stderr.index("方案：") < proc.stderr.index(errors[0]), proc.stderr


def test_the_screen_needs_no_network(make_bed: Callable[..., InstallBed], tmp_path: Path) -> None:
    """The shipped catalog (its entries carry shape facts) with every source and the engine host down: the whole
    screen is printed — sizes from the catalog, the venv's recorded estimate — and only then does a source fail."""
    bed = make_bed()
    doctor = json.loads(bed.run("doctor", "--json").stdout)
    doctor["gpus"], doctor["memory"] = [], {"total_bytes": 64 * GIB, "available_bytes": 60 * GIB}
    hardware = tmp_path / "big.json"
    hardware.write_text(json.dumps(doctor), encoding="utf-8")
    dead = f"http://127.0.0.1:{_free_pair()}"
    env = {k: v for k, v in bed.env().items() if k != "QWENKIT_CATALOG"}
    env.update(QWENKIT_HF_ENDPOINT=dead, QWENKIT_MODELSCOPE_ENDPOINT=dead, QWENKIT_ENGINE_URL=dead)
    # named: on this CPU-only profile the default alone would be planned as the 4B, which answers in time
    proc = bed.run("install", "qwen3.6-35b-a3b", "--yes", "--no-service", "--hardware", str(hardware), env=env)
    print(proc.stderr)
    assert proc.returncode == 4, proc.stderr
    screen = "\n".join(_screen(proc.stderr, "Plan: "))
    assert screen.startswith("Plan: Qwen3.6-35B-A3B "), screen
    assert re.search(r"^    model: (about )?\d+\.\d GiB$", screen, re.M), screen
    assert re.search(r"^    vision projector: (about )?\d+\.\d MiB$", screen, re.M), screen
    assert re.search(r"^    runtime venv: about 24\.7 MiB \(recorded size of its wheels\)$", screen, re.M), screen
    assert re.search(r"^  memory         RAM \d+\.\d of \d+\.\d GiB; no GPU used$", screen, re.M), screen
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and proc.stderr.index(screen) < proc.stderr.index(errors[0]), proc.stderr
