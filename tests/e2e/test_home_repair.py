"""A home someone changed by hand, through the real CLI with the test bed's llama-server (issue 41, red team).

- The kit's working folders removed (``rm -r <home>/cache``, ``logs``, ``run``): the next install makes them again,
  as the first install did.
- The files the kit renders (``models.ini``, ``run_qwen.sh``) changed: a tampered preset that binds every interface
  and names a file outside the home (``/etc/hostname``), a start script with a line of its own. The rerun sees that
  they are not what this install renders, says so and writes them again before the server starts; ``service start``
  does the same, so what the kit starts never loads a file the install did not record.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from bootstrap.register.managers import FallbackManager
from tests.support.install_bed import MODEL_ID, InstallBed, catalog_text, model_block, write_chat_model
from tests.support.llama import free_port

CHAT2_ID, CHAT2_REPO, CHAT2_FILE = "tiny-chat-two", "qwenkit-test/tiny-chat-two-GGUF", "tiny-chat-two-Q8_0.gguf"

pytestmark = pytest.mark.usefixtures("english")


def _state(bed: InstallBed) -> dict[str, Any]:
    return json.loads(bed.home.state_file.read_text(encoding="utf-8"))


def test_a_removed_cache_folder_is_made_again(make_bed: Callable[..., InstallBed]) -> None:
    """Before: exit 2 "cannot use …/cache/.swap.json….tmp" (the swap journal's folder was gone)."""
    bed = make_bed()
    port = str(free_port())
    first = bed.install("--no-venv", "--port", port)
    assert first.returncode == 0, first.stderr[-3000:]
    for folder in ("cache", "logs", "run"):  # the kit's working folders; the server runs meanwhile
        shutil.rmtree(bed.home.root / folder, ignore_errors=True)

    again = bed.install("--no-venv", "--port", port, "--ctx", "2048")
    assert again.returncode == 0, again.stderr[-3000:]
    state = _state(bed)
    assert state["request"]["ctx"] == 2048 and " -c 2048 " in bed.home.run_sh.read_text(encoding="utf-8")
    with requests.Session() as session:  # the server restarted with it answers
        session.trust_env = False
        assert session.get(f"http://127.0.0.1:{state['server']['port']}/health", timeout=30).status_code == 200


def _server_files(home: Path) -> list[str]:
    """Every file a llama-server of this home has open, as the OS lists them."""
    found = []
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.info["name"] == "llama-server" and proc.cwd() == str(home):
                found += [f.path for f in proc.open_files()]
        except psutil.Error:
            continue
    return found


def test_tampered_rendered_files_are_written_again_before_a_start(make_bed: Callable[..., InstallBed],
                                                                  tmp_path: Path) -> None:
    """Before: the rerun said "Nothing to update" and ``service start`` loaded the tampered preset, then blamed
    "a damaged model file" (exit 5)."""
    bed = make_bed()
    revision = bed.hub.create_repo(CHAT2_REPO, {CHAT2_FILE: write_chat_model(tmp_path / "two" / CHAT2_FILE, seed=7)})
    found = re.search(r'revision = "([^"]+)"', bed.catalog.read_text(encoding="utf-8"))
    assert found is not None
    first_rev = found.group(1)
    bed.catalog.write_text(catalog_text(first_rev, server_args=("-c", "512", "-t", "2"))
                           + model_block(revision, model_id=CHAT2_ID, repo=CHAT2_REPO, file=CHAT2_FILE,
                                         title="Tiny chat two (test)"), encoding="utf-8")
    port = str(free_port())
    assert (first := bed.install("--no-venv", "--port", port)).returncode == 0, first.stderr[-3000:]
    assert (added := bed.run("install", CHAT2_ID, "--yes")).returncode == 0, added.stderr[-3000:]
    preset, script = bed.home.preset_file, bed.home.run_sh
    good_preset, good_script = preset.read_bytes(), script.read_bytes()
    assert b"[tiny-chat-two]" in good_preset
    noop = bed.install("--no-venv")  # untouched files: a rerun finds nothing to write
    assert noop.returncode == 0 and "Up to date" in noop.stdout and "written again" not in noop.stderr, noop.stderr

    def tamper() -> None:
        text = good_preset.decode().replace("load-on-startup", "host = 0.0.0.0\nload-on-startup", 1)
        preset.write_text(text + "\n[stolen]\nmodel = /etc/hostname\nload-on-startup = true\n", encoding="utf-8")
        script.write_bytes(good_script.replace(b"\n    exec ", b"\n    echo tampered >&2\n    exec ", 1))

    tamper()
    rerun = bed.install("--no-venv")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    said = rerun.stderr + rerun.stdout
    assert "models.ini" in said and "run_qwen.sh" in said and "written again" in said, said[-3000:]
    assert "Nothing to update" not in said
    assert preset.read_bytes() == good_preset and script.read_bytes() == good_script
    assert "/etc/hostname" not in _server_files(bed.home.root)

    # service start: the same check before the server starts
    FallbackManager(bed.home).stop()
    tamper()
    start = bed.run("service", "start")
    assert start.returncode == 0, start.stderr[-3000:]
    assert "models.ini" in start.stderr and "written again" in start.stderr, start.stderr[-3000:]
    assert preset.read_bytes() == good_preset and script.read_bytes() == good_script
    assert "/etc/hostname" not in _server_files(bed.home.root)
    key = bed.home.api_key_file.read_text(encoding="utf-8").strip()
    with requests.Session() as session:
        session.trust_env = False
        for model in (MODEL_ID, CHAT2_ID):
            answer = session.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=120,
                                  headers={"Authorization": f"Bearer {key}"},
                                  json={"model": model, "max_tokens": 2,
                                        "messages": [{"role": "user", "content": "hello"}]})
            assert answer.status_code == 200, answer.text
