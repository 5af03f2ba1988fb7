"""A real Windows llama-server (the pinned sdist cross-compiled with mingw-w64, ``testbed.windows_engine_dir``) run
by the product's ``run_qwen.bat`` under Wine, from a home whose path holds Chinese characters, ``&``, ``!``,
parentheses and ``^``, as a Windows user named 张三 has it.

The provisioning builds it where Wine and mingw-w64 are installed (about 15 min on 2 cores, once;
``QWENKIT_TESTBED_WINDOWS=0`` opts out); these skip without it. docs/test-bed.md ("Windows scripts under Wine").
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.place.api_key import ensure_api_key
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.render.start_scripts import render_start_scripts
from bootstrap.verify.chat import wait_healthy
from tests.support import testbed, wine
from tests.support.chat_client import chat
from tests.support.install_bed import write_chat_model
from tests.support.llama import free_port

pytestmark = pytest.mark.usefixtures("english")
HOME_DIR = "张三 A&B ! (x)^ y"
READY_TIMEOUT_S = 300  # Wine's first start and the model load: a bound, not a speed check


@pytest.fixture(scope="module")
def windows_bin() -> Path:
    found = testbed.windows_engine_dir()
    if found is None:
        pytest.skip(f"the Windows engine is not provisioned (Wine or mingw-w64 missing, or {testbed.WINDOWS_OPT_IN}=0)")
    return found


@dataclass(frozen=True)
class WinHome:
    home: Home
    spec: LaunchSpec
    prefix: Path


@pytest.fixture
def win_home(tmp_path: Path, windows_bin: Path, wine_prefix: Path) -> Iterator[WinHome]:
    """The engine, the tiny chat model and a key in a home at a Chinese path; ``run_qwen.bat`` rendered."""
    home = Home(tmp_path / HOME_DIR / "QwenClientKit")
    engine = home.root / "engine" / "b10434-win-cpu"
    engine.mkdir(parents=True)
    shutil.copy2(windows_bin / "llama-server.exe", engine / "llama-server.exe")
    model = write_chat_model(home.models_dir / "qwenkit-test" / "tiny-chat-GGUF" / "tiny-chat-Q8_0.gguf")
    ensure_api_key(home)
    w = wine.windows_path
    spec = LaunchSpec(home=w(home.root), system="Windows", engine_dir=w(engine),  # type: ignore[arg-type]
                      server=w(engine / "llama-server.exe"), model=w(model), mmproj=None,  # type: ignore[arg-type]
                      args=("-c", "512", "-np", "1", "-t", "2"), alias="tiny-chat",
                      api_key_file=w(home.api_key_file), port=free_port())  # type: ignore[arg-type]
    render_start_scripts(spec, home)
    try:
        yield WinHome(home, spec, wine_prefix)
    finally:  # every Windows process of this prefix, the server included
        subprocess.run(["wineserver", "-k"], env=wine.wine_env(wine_prefix), capture_output=True, timeout=60)


def test_the_start_script_serves_from_a_chinese_home(win_home: WinHome) -> None:
    """``run_qwen.bat`` started as a double-click starts it (no arguments): /health answers (the product's
    ``wait_healthy``), a request without the key gets 401, one with it a chat reply naming the model.

    (The verify stage as a whole is not run here: under Wine the listening socket belongs to ``wineserver``, a
    Linux process, so its server-identity check would rightly refuse it; on Windows the owner is llama-server.exe.)"""
    proc = subprocess.Popen(["wine", str(wine.windows_path(win_home.home.run_bat))],
                            env=wine.wine_env(win_home.prefix), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = win_home.spec.base_url
    try:
        wait_healthy(base, timeout=READY_TIMEOUT_S, process=proc)
        with requests.Session() as session:
            session.trust_env = False
            refused = session.get(f"{base}/v1/models", timeout=60)
        reply = chat(win_home.spec.port, win_home.home.api_key_file, timeout=120)
    finally:
        subprocess.run(["wineserver", "-k"], env=wine.wine_env(win_home.prefix), capture_output=True, timeout=60)
        output = proc.communicate(timeout=60)[0].decode("utf-8", errors="replace")
    assert refused.status_code == 401, output[-2000:]
    assert reply.status_code == 200 and reply.json()["model"] == "tiny-chat", output[-2000:]
    assert reply.json()["choices"][0]["message"]["content"]


def test_the_key_file_by_its_full_path_is_what_fails(win_home: WinHome) -> None:
    """Why the key file is passed relative to the home (``LaunchSpec.key_file_arg``): this llama-server opens it
    with a narrow-string ``std::ifstream`` and fails on the same file named by its full, Chinese path. (If a later
    engine opens it correctly, this test says the workaround can go.)"""
    spec = win_home.spec
    argv = ["wine", str(wine.windows_path(win_home.home.root / "engine" / "b10434-win-cpu" / "llama-server.exe")),
            "-m", str(spec.model), "--api-key-file", str(spec.api_key_file), "--port", str(spec.port)]
    done = subprocess.run(argv, env=wine.wine_env(win_home.prefix), capture_output=True, timeout=READY_TIMEOUT_S)
    said = (done.stdout + done.stderr).decode("utf-8", errors="replace")
    assert done.returncode != 0 and 'error while handling argument "--api-key-file"' in said
    assert "failed to open file" in said and HOME_DIR in said


def test_the_router_answers_request_after_request(tmp_path: Path, windows_bin: Path, wine_prefix: Path) -> None:
    """llama-server.exe as a router over two models (several models, docs/several-models.md) answers one proxied
    request after another. Before the test bed linked its thread_local fix (``testbed.WINDOWS_TLS_ORDER_CPP``), this
    mingw-w64 build crashed after its first proxied answer, when the thread that proxied it ended: the second
    request found nothing listening."""
    write_chat_model(tmp_path / "chat.gguf")
    key = tmp_path / "key"
    key.write_text("router-test-key", encoding="utf-8")
    sections = "".join(f"\n[{name}]\nmodel = chat.gguf\nc = 512\nt = 2\nnp = 1\nload-on-startup = true\n"
                       for name in ("one", "two"))
    (tmp_path / "models.ini").write_text(f"version = 1\n{sections}", encoding="utf-8")
    port = free_port()
    proc = subprocess.Popen(["wine", str(windows_bin / "llama-server.exe"), "--models-preset", "models.ini",
                             "--models-max", "2", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=tmp_path, env=wine.wine_env(wine_prefix), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    codes = []
    try:
        wait_healthy(f"http://127.0.0.1:{port}", timeout=READY_TIMEOUT_S, process=proc)
        for model in ("one", "two", "one", "two"):
            try:
                codes.append(chat(port, key, timeout=120, model=model).status_code)
            except requests.ConnectionError as exc:
                codes.append(type(exc).__name__)
    finally:
        subprocess.run(["wineserver", "-k"], env=wine.wine_env(wine_prefix), capture_output=True, timeout=60)
        output = proc.communicate(timeout=60)[0].decode("utf-8", errors="replace")
    assert codes == [200, 200, 200, 200], output[-3000:]
