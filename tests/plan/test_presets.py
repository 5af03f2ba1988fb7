"""A model's preset as data (``plan/presets.py``): values checked, carried over, turned into llama-server's flags;
the system text rendered only into the front's JSON file whatever it holds (``render/start_scripts.py``), and added
by the front only to a chat request without its own (``register/router_front.with_system``)."""

from __future__ import annotations

import json
from pathlib import Path, PureWindowsPath

import pytest

from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.home import Home
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.plan.presets import Preset, preset_from, read_preset_file, with_preset
from bootstrap.register.router_front import with_system
from bootstrap.render.model_preset import render_preset_text
from bootstrap.render.start_scripts import render_text, start_files

pytestmark = pytest.mark.usefixtures("english")
NASTY = 'a "b" \'c\' $HOME `x` %PATH% !v! ^& | < > ; # [s] = \\ \n第二行：\t🙂'


def test_preset_values_are_checked_and_merged() -> None:
    given = preset_from({"temperature": "0.6", "top_k": "20", "system": "line1\r\nline2"})
    assert (given.temperature, given.top_k, given.system) == (0.6, 20, "line1\nline2")
    kept = Preset(system="old", temperature=1.0, min_p=0.05)
    assert given.over(kept) == Preset(system="line1\nline2", temperature=0.6, top_k=20, min_p=0.05)
    assert Preset(system="").over(kept).system == ""  # --system "": none, over a kept one
    assert given.flags() == ["--temp", "0.6", "--top-k", "20"]


@pytest.mark.parametrize(("values", "says"), [
    ({"temperature": "-0.1"}, "from 0 to 5"), ({"top_p": "1.5"}, "from 0 to 1"), ({"top_k": "-1"}, "from 0"),
    ({"min_p": "inf"}, "from 0 to 1"), ({"repeat_penalty": "0"}, "above 0"),
    ({"presence_penalty": "3"}, "from -2 to 2"), ({"temperature": True}, "a number"),
    ({"system": "nul\x00"}, "no other control"), ({"system": "x" * 40_000}, "32768"),
])
def test_bad_preset_values_are_usage_errors(values: dict[str, object], says: str) -> None:
    with pytest.raises(UsageError) as exc:
        preset_from(values)
    assert exc.value.exit_code == ExitCode.USAGE and says in exc.value.message and "\n" not in exc.value.message


def test_preset_file(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('system = """You are terse.\nAnswer in 中文."""\ntemperature = 0.7\ntop_k = 20\n',
                    encoding="utf-8")
    assert read_preset_file(path) == Preset(system="You are terse.\nAnswer in 中文.", temperature=0.7, top_k=20)
    path.write_text("top_k = 2.5\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"top_k: 2\.5 is not valid"):
        read_preset_file(path)


def test_with_preset_replaces_the_catalogs_sampling_in_any_spelling() -> None:
    plan = ["-c", "4096", "--temperature", "0.7", "--top-k", "20", "--presence-penalty", "1.5"]
    args = with_preset(plan, Preset(temperature=0.3, presence_penalty=-0.5, min_p=0.1))
    assert args == ["-c", "4096", "--top-k", "20", "--temp", "0.3", "--min-p", "0.1", "--presence-penalty", "-0.5"]
    assert with_preset(plan, None) == plan


def _spec(home: Path, system: str, **changes: object) -> LaunchSpec:
    engine = home / "engine"
    return LaunchSpec(home=home, system=system, engine_dir=engine, server=engine / "llama-server",
                      model=home / "models" / "m.gguf", mmproj=None, args=tuple(Preset(temperature=0.4).flags()),
                      alias="qwen", api_key_file=home / "secrets" / "api-key", kit=("/venv/bin/qwenkit",),
                      system_prompts=(("qwen", NASTY),), **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("system", ["Linux", "Windows"])
def test_the_system_text_never_reaches_a_script_or_the_ini(tmp_path: Path, system: str) -> None:
    """One model with a system prompt: the front starts the server (its address the front's), the script names the
    JSON file; the text is in that file exactly and in no script or INI, whatever it holds."""
    home = PureWindowsPath(r"C:\Users\张三\QwenClientKit") if system == "Windows" else tmp_path
    spec = _spec(home, system)  # type: ignore[arg-type]
    assert spec.fronted and "--host" not in spec.server_args()
    text = render_text(spec, "bat" if system == "Windows" else "sh")
    assert "front" in text and "--system-prompts" in text and "system-prompts.json" in text
    assert "第二行" not in text and "PATH%" not in text and "--temp" in text
    router = _spec(home, system, others=(), models_max=1)  # type: ignore[arg-type]
    assert "第二行" not in render_preset_text(router)
    if system == "Linux":
        files = {f.path.name: f for f in start_files(spec, Home(tmp_path))}
        assert json.loads(files["system-prompts.json"].data.decode("utf-8")) == {"qwen": NASTY}


def test_front_adds_the_system_prompt_only_where_the_request_has_none() -> None:
    prompts = {"qwen": NASTY, "other": "O"}
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    added = json.loads(with_system(body, prompts, "qwen") or b"")
    assert added["messages"][0] == {"role": "system", "content": NASTY} and len(added["messages"]) == 2
    named = json.dumps({"model": "other", "messages": [{"role": "user", "content": "hi"}]}).encode()
    assert json.loads(with_system(named, prompts, "qwen") or b"")["messages"][0]["content"] == "O"
    for role in ("system", "developer"):
        own = json.dumps({"messages": [{"role": role, "content": "mine"}, {"role": "user", "content": "hi"}]})
        assert with_system(own.encode(), prompts, "qwen") is None
    assert with_system(b'{"prompt": "x"}', prompts, "qwen") is None
    assert with_system(b"not json", prompts, "qwen") is None
    assert with_system(json.dumps({"model": "third", "messages": []}).encode(), prompts, "qwen") is None
