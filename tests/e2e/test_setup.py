"""The frozen ``QwenClientKit-Setup`` end to end against the loopback hub, the way a user meets it.

1. Double-click: no arguments, a terminal; the setup shows the doctor summary and the plan, asks once, and Enter
   (the default: yes) installs: engine from the release, model from the hub, the runtime venv from offline wheels,
   the server started and verified with a real chat request.
2. The catalog pins a new revision: a rerun upgrades in place, downloading only the changed model file.
3. The next revision does not load: the upgrade is rolled back and the previous model answers again.
4. ``uninstall --yes`` stops the server and removes the install.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import requests

from bootstrap.fetch.download import sha256_file
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import MODEL_FILE, MODEL_REPO, InstallBed, write_chat_model

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the Windows setup is built and run on Windows")


@pytest.fixture
def bed(wheel_bed: InstallBed) -> InstallBed:
    return wheel_bed


def _double_click(exe: Path, env: dict[str, str], answer: bytes) -> subprocess.CompletedProcess[str]:
    """No arguments, stdin on a terminal holding the user's answer (typed ahead, as the line discipline keeps it)."""
    controller, terminal = pty.openpty()
    try:
        os.write(controller, answer)
        return subprocess.run([str(exe)], stdin=terminal, capture_output=True, text=True, timeout=900, env=env,
                              cwd=REPO_ROOT)
    finally:
        os.close(terminal)
        os.close(controller)


def _state(bed: InstallBed) -> dict:
    return json.loads(bed.home.state_file.read_text(encoding="utf-8"))


def _chat(bed: InstallBed) -> int:
    key = bed.home.api_key_file.read_text(encoding="utf-8").strip()
    with requests.Session() as session:
        session.trust_env = False
        return session.post(f"http://127.0.0.1:{_state(bed)['server']['port']}/v1/chat/completions", timeout=60,
                            headers={"Authorization": f"Bearer {key}"},
                            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}).status_code


def _supervisor(bed: InstallBed) -> list[psutil.Process]:
    """The supervisor's processes: a one-file program is two, the bootloader and the Python it starts."""
    return [p for p in psutil.process_iter(["cmdline"])
            if "supervise" in (p.info["cmdline"] or []) and str(bed.home.root) in (p.info["cmdline"] or [])]


def _commit(bed: InstallBed, tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name / MODEL_FILE
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    bed.pin(bed.hub.commit(MODEL_REPO, {MODEL_FILE: path}))


def test_frozen_setup_installs_upgrades_refuses_a_damaged_upgrade_and_uninstalls(frozen_setup: Path, bed: InstallBed,
                                                                                 tmp_path: Path) -> None:
    # 1. the double-click: one question, Enter accepts
    first = _double_click(frozen_setup, bed.env(), b"\n")
    assert first.returncode == 0, first.stderr
    assert "Plan: Tiny chat (test) Q8_0" in first.stderr and "Continue? [Y/n]" in first.stderr
    assert "The server answers" in first.stdout  # the report: the install's output
    assert _chat(bed) == 200
    assert (bed.home.venv_dir / "bin" / "qwenkit").is_file()  # the runtime venv, built from the offline wheels
    assert _state(bed)["files"][0]["sha256"] == bed.hub.sha256_of(MODEL_REPO, MODEL_FILE)
    # The supervisor outlives the setup: it runs the home's copy, unpacked on its own (a one-file program started by
    # another would run from that one's unpacked folder, deleted when it exits: "(deleted)" in its maps).
    supervisor = _supervisor(bed)
    assert len(supervisor) == 2
    assert {p.cmdline()[0] for p in supervisor} == {str(bed.home.app_dir / frozen_setup.name)}
    assert [m.path for p in supervisor for m in p.memory_maps() if m.path.endswith("(deleted)")] == []

    # a "no" changes nothing
    _commit(bed, tmp_path, "rev2", write_chat_model(tmp_path / "w2" / MODEL_FILE, seed=2).read_bytes())
    before = bed.home.state_file.read_text(encoding="utf-8")
    declined = _double_click(frozen_setup, bed.env(), b"n\n")
    assert declined.returncode == 0 and "Cancelled; nothing was changed." in declined.stderr
    assert bed.home.state_file.read_text(encoding="utf-8") == before

    # 2. upgrade in place: only the changed model file comes over the wire
    bed.hub.clear_log()
    upgrade = bed.run("install", "--yes", exe=frozen_setup)
    assert upgrade.returncode == 0, upgrade.stderr
    placed = bed.home.models_dir / MODEL_REPO / MODEL_FILE
    assert sha256_file(placed) == bed.hub.sha256_of(MODEL_REPO, MODEL_FILE) == _state(bed)["files"][0]["sha256"]
    assert bed.hub.bytes_served("*.tar.gz") == 0
    assert placed.stat().st_size <= bed.hub.bytes_served(MODEL_FILE) < 1.5 * placed.stat().st_size
    assert _chat(bed) == 200

    # 3. a new model that cannot load (cut short): refused before the old server is stopped, the old one answers
    upgraded = bed.home.state_file.read_text(encoding="utf-8")
    good = placed.read_bytes()
    _commit(bed, tmp_path, "rev3", good[:-4096])
    broken = bed.run("install", "--yes", exe=frozen_setup)
    assert broken.returncode == 5, broken.stderr
    assert "cannot serve, so nothing was changed" in broken.stderr and "keeps serving" in broken.stderr
    assert placed.read_bytes() == good and bed.home.state_file.read_text(encoding="utf-8") == upgraded
    assert _chat(bed) == 200

    # 4. uninstall: the server stops, the home goes
    port = _state(bed)["server"]["port"]
    removed = bed.run("uninstall", "--yes", exe=frozen_setup)
    assert removed.returncode == 0, removed.stderr
    assert not bed.home.root.exists()
    with pytest.raises(requests.ConnectionError), requests.Session() as session:
        session.trust_env = False
        session.get(f"http://127.0.0.1:{port}/health", timeout=5)
