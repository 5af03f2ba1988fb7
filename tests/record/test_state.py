"""The record stage: state.json round-trips, paths stay relative to the home, and every defect is one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.home import Home
from bootstrap.record.state import (
    AssetRecord,
    ChatTemplateRecord,
    EngineRecord,
    FileRecord,
    InstallState,
    LibraryModel,
    RequestRecord,
    ServerRecord,
    ServiceRecord,
    launch_spec,
    load_state,
    load_tools_check,
    relative_to_home,
    require_state,
    save_state,
)
from bootstrap.verify.speed_records import SpecTrial, SpeedCheck, SpeedSample
from bootstrap.verify.tools_record import ToolsCheck
from tests.support.hub_fixtures import REPO_ROOT


def _state(home: Home, outside: Path) -> InstallState:
    return InstallState(
        system="Linux", model_id="qwen3.6-35b-a3b", quant="UD-Q4_K_XL",
        engine=EngineRecord(10434, "ubuntu-vulkan-x64", "engine/b10434-ubuntu-vulkan-x64",
                            "engine/b10434-ubuntu-vulkan-x64/llama-server", "version: 11434 (abc)",
                            (AssetRecord("llama-b10434-bin-ubuntu-vulkan-x64.tar.gz", "ab" * 32, 123),)),
        files=(FileRecord("model", relative_to_home(home, home.models_dir / "u" / "r" / "m.gguf"), 10, "cd" * 32,
                          "hf", "0" * 40),
               FileRecord("mmproj", str(outside), 5, "ef" * 32, "local")),
        server=ServerRecord("127.0.0.1", 8080, "qwen3.6-35b-a3b", ("-c", "32768"), ("-c", "32768")),
        service=ServiceRecord("systemd-user", True),
    )


def test_round_trip_and_launch_spec(tmp_path: Path) -> None:
    home = Home(tmp_path / "家 home")
    outside = tmp_path / "elsewhere" / "mmproj.gguf"
    state = _state(home, outside)
    save_state(home, state)
    loaded = load_state(home)
    assert loaded == state
    doc = json.loads(home.state_file.read_text(encoding="utf-8"))
    assert doc["schema"] == 1 and doc["files"][0]["path"] == "models/u/r/m.gguf"
    spec = launch_spec(loaded, home)
    assert spec.model == home.models_dir / "u" / "r" / "m.gguf"
    assert spec.mmproj == outside
    assert spec.server == home.root / "engine" / "b10434-ubuntu-vulkan-x64" / "llama-server"
    assert spec.api_key_file == home.api_key_file
    assert spec.argv()[-2:] == ["--api-key-file", str(home.api_key_file)]


def test_the_thinking_request_round_trips_and_an_older_record_reads_as_the_default(tmp_path: Path) -> None:
    home = Home(tmp_path)
    base = _state(home, tmp_path / "x")
    for thinking in (True, False, None):
        state = replace(base, request=RequestRecord("qwen3.6-35b-a3b", "auto", thinking),
                        server=replace(base.server, args=("-c", "4096", "--reasoning", "on" if thinking else "off")))
        save_state(home, state)
        loaded = load_state(home)
        assert loaded == state and loaded.request is not None and loaded.request.thinking is thinking
        assert loaded.thinking is bool(thinking) and launch_spec(loaded, home).thinking is bool(thinking)
    doc = json.loads(home.state_file.read_text(encoding="utf-8"))
    del doc["request"]["thinking"]  # written before install --thinking existed
    home.state_file.write_text(json.dumps(doc), encoding="utf-8")
    loaded = load_state(home)
    assert loaded is not None and loaded.request is not None and loaded.request.thinking is None
    assert replace(loaded, server=replace(loaded.server, args=("-c", "4096"))).thinking is None  # no flag: template


def test_keep_alive_round_trips_is_rendered_and_an_older_record_reads_as_the_default(tmp_path: Path) -> None:
    home = Home(tmp_path)
    base = _state(home, tmp_path / "x")
    for asked, flag in ((300, ["--sleep-idle-seconds", "300"]), (-1, []), (None, ["--sleep-idle-seconds", "1800"])):
        state = replace(base, request=RequestRecord("qwen3.6-35b-a3b", "auto", keep_alive=asked))
        save_state(home, state)
        loaded = load_state(home)
        assert loaded == state and loaded is not None and loaded.request is not None
        assert loaded.request.keep_alive == asked
        words = launch_spec(loaded, home).server_args()
        found = words[words.index("--sleep-idle-seconds"):][:2] if "--sleep-idle-seconds" in words else []
        assert found == flag
    doc = json.loads(home.state_file.read_text(encoding="utf-8"))
    del doc["request"]["keep_alive"]  # written before install --keep-alive existed: the default from now on
    home.state_file.write_text(json.dumps(doc), encoding="utf-8")
    loaded = load_state(home)
    assert loaded is not None and loaded.request is not None and loaded.request.keep_alive is None
    assert launch_spec(loaded, home).keep_alive_s == 1800
    doc["request"]["keep_alive"] = -5
    home.state_file.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(UsageError):
        load_state(home)


SPEED = SpeedCheck(
    measured=SpeedSample(prompt_tps=512.25, decode_tps=38.2, prompt_n=128, decode_n=32, runs=2, draft_n=20,
                         draft_accepted=15),
    predicted={"decode_tps": 40.0, "decode_low": 32.0, "decode_high": 48.0, "prompt_tps": 600.0, "prompt_low": 450.0,
               "prompt_high": 750.0, "context_fill": 0.25, "inputs": {"bandwidth_gbps": 448}},
    verdict="ok",
    speculation=SpecTrial(("--spec-type", "draft-mtp", "--spec-draft-n-max", "2"),
                          on=SpeedSample(512.25, 38.2, 128, 32, 2, 20, 15), off=SpeedSample(530.0, 30.1, 128, 32, 2),
                          kept="on"),
    measure_s=3.5,
)


def test_the_speed_check_round_trips_and_records_without_it_still_read(tmp_path: Path) -> None:
    home = Home(tmp_path)
    state = replace(_state(home, tmp_path / "x"), speed=SPEED)
    save_state(home, state)
    assert load_state(home) == state
    doc = json.loads(home.state_file.read_text(encoding="utf-8"))
    assert doc["speed"]["measured"]["acceptance"] == 0.75 and doc["speed"]["speculation"]["kept"] == "on"
    assert doc["speed"]["predicted"]["inputs"] == {"bandwidth_gbps": 448}
    # A record written before verify measured speed has no "speed" at all; a damaged block is only a lost report.
    for damage in (lambda d: d.pop("speed"), lambda d: d.update(speed={"measured": {"decode_tps": "fast"}}),
                   lambda d: d["speed"].update(verdict="great"), lambda d: d.update(speed=[1, 2])):
        broken = json.loads(json.dumps(doc))
        damage(broken)
        home.state_file.write_text(json.dumps(broken), encoding="utf-8")
        loaded = load_state(home)
        assert loaded is not None and loaded.speed is None and loaded.server == state.server
    # An A/B whose "on" arm failed the measurement has no "on" figures, only why.
    failed = replace(SPEED, speculation=SpecTrial(("--spec-type", "draft-mtp"), None, SpeedSample(530.0, 30.1, 128, 32),
                                                  "off", "POST /completion failed: HTTP 500"))
    save_state(home, replace(state, speed=failed))
    loaded = load_state(home)
    assert loaded is not None and loaded.speed == failed
    # A damaged A/B alone leaves the measurement readable.
    broken = json.loads(json.dumps(doc))
    broken["speed"]["speculation"]["kept"] = "maybe"
    home.state_file.write_text(json.dumps(broken), encoding="utf-8")
    loaded = load_state(home)
    assert loaded is not None and loaded.speed == replace(SPEED, speculation=None)


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d["server"].pop("port"), "server.port"),
    (lambda d: d["files"][0].update(size="10"), "files[0].size"),
    (lambda d: d["files"][0].update(role="weights"), "files[0].role"),
    (lambda d: d["engine"].update(assets={}), "engine.assets"),
    (lambda d: d["server"].update(args=["-c", 5]), "server.args"),
    (lambda d: d.update(request={"model": "m", "source": "auto", "thinking": "yes"}), "request.thinking"),
])
def test_damaged_record_names_the_field(tmp_path: Path, mutate, field: str) -> None:
    home = Home(tmp_path)
    save_state(home, _state(home, tmp_path / "x"))
    doc = json.loads(home.state_file.read_text(encoding="utf-8"))
    mutate(doc)
    home.state_file.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(UsageError) as err:
        load_state(home)
    assert field in err.value.message and err.value.exit_code == ExitCode.USAGE


def test_newer_schema_and_garbage_are_refused(tmp_path: Path) -> None:
    home = Home(tmp_path)
    home.state_file.write_text('{"schema": 99}', encoding="utf-8")
    with pytest.raises(UsageError, match="99"):
        load_state(home)
    home.state_file.write_bytes(b"\xff\xfe not json")
    with pytest.raises(UsageError, match=r"state\.json"):
        load_state(home)


def test_nothing_installed(tmp_path: Path) -> None:
    home = Home(tmp_path / "empty")
    assert load_state(home) is None
    with pytest.raises(UsageError):
        require_state(home)
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "status"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60, env={"QWENKIT_HOME": str(home.root), "PATH": "/usr/bin:/bin",
                                                      "QWENKIT_LANG": "en"}, check=False)
    assert proc.returncode == 2
    assert "nothing is installed" in proc.stderr and "Traceback" not in proc.stderr


def test_the_chat_template_and_tools_proof_round_trip_per_model(tmp_path: Path) -> None:
    """``server.chat_template`` starts the server with the kit's template (``launch_spec``); ``tools`` is what
    ``qwenkit launch`` reads (``load_tools_check``), for the default model and for another one."""
    home = Home(tmp_path / "home")
    template = ChatTemplateRecord("chat-templates/qwen3.5-0123456789abcdef.jinja", "qwen3.5",
                                  ("merge-leading-system", "system-in-place"), "ab" * 32)
    base = _state(home, tmp_path / "mmproj.gguf")
    other = LibraryModel("coder", "coder", "Q4", "chat", base.files[:1], ("-c", "4096"), "coder",
                         chat_template=replace(template, path=None, problem="system-in-place: x"),
                         tools=ToolsCheck("no_call", "finish_reason length"))
    state = replace(base, server=replace(base.server, chat_template=template, tools=ToolsCheck("ok", "get_time({})")),
                    library=(other,), models_max=2)
    save_state(home, state)
    loaded = load_state(home)
    assert loaded == state
    doc = json.loads(home.state_file.read_text(encoding="utf-8"))
    assert doc["server"]["tools"] == {"ok": True, "reason": "ok", "detail": "get_time({})"}
    assert doc["library"][0]["tools"]["ok"] is False
    spec = launch_spec(loaded, home)
    assert spec.chat_template == home.root / "chat-templates" / "qwen3.5-0123456789abcdef.jinja"
    assert spec.others[0].chat_template is None  # the model's own template serves
    assert load_tools_check(home) == ToolsCheck("ok", "get_time({})")
    assert load_tools_check(home, "qwen3.6-35b-a3b") == load_tools_check(home)
    coder = load_tools_check(home, "coder")
    assert coder is not None and coder.reason == "no_call" and not coder.ok
    assert load_tools_check(home, "absent") is None
    # a record from before the proof: not known, never a damaged record
    del doc["server"]["tools"], doc["server"]["chat_template"]
    home.state_file.write_text(json.dumps(doc), encoding="utf-8")
    assert load_tools_check(home) is None and launch_spec(require_state(home), home).chat_template is None
    assert load_tools_check(Home(tmp_path / "empty")) is None
