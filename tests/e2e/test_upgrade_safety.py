"""Upgrades never take a working server down for a file that cannot serve, and the gap of a good one is measured.

End to end through ``qwenkit install`` on the loopback hub, with a client chatting every 0.5 s the whole time (so a
request is often in flight when something is stopped). A new revision that is cut short (a half-uploaded release:
the header parses, the last tensor runs past the end) and one whose architecture the installed engine does not
know are refused before the old server is stopped: zero failed chats, nothing swapped, one line naming the file
and the cause. The same bytes asked for again are refused at once, without a download or a stop; a newer revision
proceeds, and its gap (old server stopped → new one answering) is reported and recorded. (An engine that fails its
self-test: ``tests/place/test_working_engine.py``.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bootstrap.core.console import t
from tests.support import standin
from tests.support.chat_client import ChattingClient, chat
from tests.support.install_bed import MODEL_FILE, MODEL_REPO, InstallBed, one_line_error, write_chat_model
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

pytestmark = pytest.mark.usefixtures("english")


def _model_bytes(bed: InstallBed) -> bytes:
    return (bed.home.models_dir / MODEL_REPO / MODEL_FILE).read_bytes()


def _staging_left(bed: InstallBed) -> list[str]:
    staging = bed.home.staging_dir
    return sorted(p.relative_to(bed.home.root).as_posix() for p in staging.rglob("*")) if staging.exists() else []


def _publish(bed: InstallBed, tmp_path: Path, name: str, model: Path) -> str:
    """A new revision of the model repo, pinned by the catalog (what a catalog update does)."""
    folder = tmp_path / name
    folder.mkdir()
    target = folder / MODEL_FILE
    target.write_bytes(model.read_bytes())
    revision = bed.hub.commit(MODEL_REPO, {MODEL_FILE: target})
    bed.pin(revision)
    return revision


def _upgrade_while_chatting(bed: InstallBed, port: int) -> tuple[Any, ChattingClient, float]:
    with ChattingClient(port, bed.home.api_key_file) as client:
        time.sleep(1.0)
        start = time.monotonic()
        proc = bed.install("--no-venv")
        took = time.monotonic() - start
        time.sleep(1.0)
    return proc, client, took


def test_a_damaged_revision_is_refused_before_anything_stops_and_remembered(
        make_bed: Callable[..., InstallBed], tmp_path: Path) -> None:
    bed = make_bed()
    port = free_port()
    assert bed.install("--no-venv", "--port", str(port)).returncode == 0
    state_before, model_before = bed.home.state_file.read_bytes(), _model_bytes(bed)

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(model_before[:-4096])
    revision = _publish(bed, tmp_path, "rev-cut", cut)
    proc, client, _ = _upgrade_while_chatting(bed, port)
    assert proc.returncode == 5, proc.stderr
    line = one_line_error(proc)
    assert line.startswith(t("switch.refused", file=MODEL_FILE, reason="@").partition("@")[0]), line
    assert "past the end of the file" in line
    assert client.sent >= 4 and client.failed == [], client.failed
    assert bed.home.state_file.read_bytes() == state_before and _model_bytes(bed) == model_before
    assert _staging_left(bed) == []
    recorded = json.loads((bed.home.logs_dir / "refused.json").read_text(encoding="utf-8"))["refused"]
    assert [(r["file"], r["revision"], r["cause"]) for r in recorded] == [(MODEL_FILE, revision, "model_corrupt")]

    # the same bytes again: refused at once, nothing downloaded, nothing stopped
    bed.hub.clear_log()
    proc, client, _ = _upgrade_while_chatting(bed, port)
    assert proc.returncode == 5, proc.stderr
    line = one_line_error(proc)
    assert line.startswith(t("switch.refused_before", file=MODEL_FILE, revision=revision[:12], when="@", reason="")
                           .partition("@")[0]), line
    model_reads = [r for r in bed.hub.requests() if r.path.endswith(MODEL_FILE)]
    assert all(r.range is not None for r in model_reads)  # header reads of the plan at most, never the file
    assert sum(r.bytes for r in model_reads) < len(model_before) // 2
    assert client.failed == [] and bed.home.state_file.read_bytes() == state_before
    assert _staging_left(bed) == []

    # a newer revision proceeds; its gap is reported, recorded, and close to the new server's own load time
    good = write_chat_model(tmp_path / "rev-good" / "model.gguf", seed=7)
    _publish(bed, tmp_path, "rev-good2", good)
    proc, client, _ = _upgrade_while_chatting(bed, port)
    assert proc.returncode == 0, proc.stderr
    state = json.loads(bed.home.state_file.read_text(encoding="utf-8"))
    switch = state["server"]["switch_over"]
    assert switch["gap_s"] > 0 and switch["gap_s"] <= switch["load_s"] + 2.0, switch
    assert f"{switch['gap_s']:.1f} s" in proc.stderr
    assert client.longest_outage_s <= switch["gap_s"] + 2.0  # the client saw no longer outage than the one reported
    assert _model_bytes(bed) == good.read_bytes() and _staging_left(bed) == []
    assert chat(port, bed.home.api_key_file).status_code == 200


def test_a_model_the_engine_cannot_load_is_refused_before_anything_stops(
        make_bed: Callable[..., InstallBed], engine_bin_dir: Path, tmp_path: Path) -> None:
    """A real build without ``qwen3moe`` in its loader's table (``standin.without_architecture``) serves the llama
    model; an upgrade to a qwen3moe model is refused by reading the build, not by starting it (exit 3)."""
    older = standin.without_architecture(tmp_path / "older-engine", engine_bin_dir, "qwen3moe")
    bed = make_bed(engine=older)
    port = free_port()
    assert bed.install("--no-venv", "--port", str(port)).returncode == 0
    state_before, model_before = bed.home.state_file.read_bytes(), _model_bytes(bed)
    moe = write_model("qwen3moe", tmp_path / "moe.gguf", seed=3, dtype="q8_0")
    _publish(bed, tmp_path, "rev-moe", moe)
    proc, client, _ = _upgrade_while_chatting(bed, port)
    assert proc.returncode == 3, proc.stderr
    line = one_line_error(proc)
    reason = t("failure.model_unsupported", who="llama-server", detail="qwen3moe")
    assert line == t("switch.refused", file=MODEL_FILE, reason=reason), line
    assert client.sent >= 4 and client.failed == [], client.failed
    assert bed.home.state_file.read_bytes() == state_before and _model_bytes(bed) == model_before
    assert _staging_left(bed) == []
