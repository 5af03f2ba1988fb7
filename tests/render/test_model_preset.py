"""The router's preset (``models.ini``) and the router start script, from one ``LaunchSpec`` with other models.

The text is checked against llama.cpp's INI dialect (``common/preset.cpp``: no quoting, a value ends at ``;`` or
``#``), the refusals are checked to write nothing, and the rendered ``run_qwen.sh`` is run for real from the hostile
home of test_start_scripts.py (quotes, ``%``, ``$``, a backtick, Chinese): two models answer through the router, and
its children refuse a request without the key.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path, PureWindowsPath
from typing import cast

import psutil
import pytest
import requests

from bootstrap.core.errors import ExitCode
from bootstrap.core.home import Home
from bootstrap.place.api_key import ensure_api_key, read_api_key
from bootstrap.plan.launch_spec import CHILD_KEY_ENV, LaunchSpec, PresetModel
from bootstrap.render.model_preset import PresetError, render_preset_text
from bootstrap.render.start_scripts import render_start_scripts
from tests.render.test_start_scripts import ENGINE_BUILD, ENGINE_VARIANT, WEIRD, started
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

pytestmark = pytest.mark.usefixtures("english")

ARGS = ("-c", "256", "-np", "1", "-t", "2", "--no-mmap", "-kvu", "--seed", "-1", "-ot", r"blk\.(1)\.ffn_.*=CPU")


def _spec(home: Path, **changes: object) -> LaunchSpec:
    spec = LaunchSpec(home=home, system="Linux", engine_dir=home / "engine", server=home / "engine" / "llama-server",
                      model=home / "models" / "a" / "chat.gguf", mmproj=None, args=ARGS, alias="chat",
                      api_key_file=home / "secrets" / "api-key", port=8080,
                      others=(PresetModel("embed", home / "models" / "b" / "e.gguf", None,
                                          ("--embeddings", "--pooling", "last")),
                              PresetModel("see", home / "models" / "c" / "v.gguf",
                                          home / "models" / "c" / "mmproj.gguf", ("-c", "512"),
                                          load_on_startup=True)),
                      models_max=3)
    return replace(spec, **changes)  # type: ignore[arg-type]


def _sections(text: str) -> dict[str, dict[str, str]]:
    """The preset as llama.cpp reads it: [section] then key = value (a value ends at ';' or '#')."""
    out: dict[str, dict[str, str]] = {}
    current = "(top)"
    for raw in text.splitlines():
        line = raw.split(";", 1)[0].split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            current = line[1:-1]
            out[current] = {}
        else:
            key, _, value = line.partition("=")
            out.setdefault(current, {})[key.strip()] = value.strip()
    return out


def test_each_model_is_a_section_of_its_flags_with_paths_relative_to_the_home(tmp_path: Path) -> None:
    sections = _sections(render_preset_text(_spec(tmp_path / "h")))
    assert list(sections) == ["(top)", "chat", "embed", "see"]
    assert sections["(top)"] == {"version": "1"}
    assert sections["chat"] == {"model": "models/a/chat.gguf", "c": "256", "np": "1", "t": "2", "no-mmap": "true",
                                "kvu": "true", "seed": "-1", "ot": r"blk\.(1)\.ffn_.*=CPU",
                                "load-on-startup": "true"}
    assert sections["embed"] == {"model": "models/b/e.gguf", "embeddings": "true", "pooling": "last",
                                 "load-on-startup": "false"}
    assert sections["see"]["mmproj"] == "models/c/mmproj.gguf" and sections["see"]["load-on-startup"] == "true"


def test_windows_paths_are_relative_with_backslashes(tmp_path: Path) -> None:
    home = Path("C:/Users/张三/AppData/Local/QwenClientKit")
    spec = _spec(home, system="Windows")
    spec = replace(spec, model=Path(r"C:\Users\张三\AppData\Local\QwenClientKit\models\a\chat.gguf"),
                   home=Path(r"C:\Users\张三\AppData\Local\QwenClientKit"))
    assert _sections(render_preset_text(spec))["chat"]["model"] == r"models\a\chat.gguf"
    assert spec.server_args()[:2] == ["--models-preset", "models.ini"]
    assert spec.child_env() == {CHILD_KEY_ENV: spec.key_file_arg()}


@pytest.mark.parametrize(("change", "needle"), [
    ({"args": ("-ot", "a;b")}, "a;b"),
    ({"args": ("--chat-template", "x # y")}, "x # y"),
    ({"model": Path("/data/models #1/m.gguf")}, "#1"),
    ({"alias": "qwen:Q4_K_M"}, "qwen:Q4_K_M"),
    ({"alias": "a]b"}, "a]b"),
    ({"args": ("--lora-scaled", "f.gguf", "0.5")}, "--lora-scaled"),
], ids=["semicolon", "hash", "outside-home", "colon-name", "bracket-name", "two-values"])
def test_what_the_dialect_cannot_carry_is_refused_and_nothing_is_written(tmp_path: Path, change: dict[str, object],
                                                                         needle: str) -> None:
    home = Home(tmp_path / "h")
    spec = _spec(home.root, **change)
    with pytest.raises(PresetError) as caught:
        render_start_scripts(spec, home)
    assert caught.value.exit_code == ExitCode.USAGE and needle in caught.value.message
    assert not spec.preset_file.exists() and not home.run_sh.exists()


def test_two_models_of_one_name_are_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path, others=(PresetModel("chat", tmp_path / "x.gguf", None, ()),))
    with pytest.raises(PresetError, match="two models are named chat"):
        render_preset_text(spec)


def test_one_model_is_no_router(tmp_path: Path) -> None:
    spec = _spec(tmp_path, others=())
    assert not spec.router and spec.child_env() == {}
    assert spec.server_args()[:2] == ["-m", str(tmp_path / "models" / "a" / "chat.gguf")]


def test_the_router_script_serves_every_model_from_a_hostile_home(tmp_path_factory: pytest.TempPathFactory,
                                                                  engine_bin_dir: Path) -> None:
    """run_qwen.sh from a home named with quotes, %, $, a backtick and Chinese: the router starts there (the
    preset's relative paths), both models answer with the key, the router and each child refuse without it."""
    home = Home(tmp_path_factory.mktemp("router") / WEIRD)
    engine = home.engine_dir(ENGINE_BUILD, ENGINE_VARIANT)
    shutil.copytree(engine_bin_dir, engine, symlinks=True)
    chat = write_model("llama", home.models_dir / "tiny 模型 $x" / "tiny.gguf")
    embed = write_model("llama", home.models_dir / "e" / "embed.gguf", n_layer=2, pooling=3, seed=2)
    ensure_api_key(home)
    spec = LaunchSpec(home=home.root, system="Linux", engine_dir=engine, server=engine / "llama-server", model=chat,
                      mmproj=None, args=("-c", "256", "-np", "1", "-t", "2"), alias="tiny-qwen",
                      api_key_file=home.api_key_file, port=free_port(),
                      others=(PresetModel("tiny-embed", embed, None, ("--embeddings", "--pooling", "last", "-c",
                                                                       "256", "-ub", "256", "-b", "256", "-t", "2"),
                                          load_on_startup=True),), models_max=2)
    render_start_scripts(spec, home)
    key = read_api_key(home)
    assert key not in home.run_sh.read_text(encoding="utf-8") + spec.preset_file.read_text(encoding="utf-8")
    auth = {"Authorization": f"Bearer {key}"}
    log = home.root.parent / "router.log"
    with started(home.run_sh, spec.base_url, log) as proc:
        chat_answer = requests.post(f"{spec.base_url}/v1/chat/completions", headers=auth, timeout=120, json={
            "model": "tiny-qwen", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
        assert chat_answer.status_code == 200, chat_answer.text
        vectors = requests.post(f"{spec.base_url}/v1/embeddings", headers=auth, timeout=120,
                                json={"model": "tiny-embed", "input": "你好"})
        assert vectors.status_code == 200 and len(vectors.json()["data"][0]["embedding"]) == 128
        assert requests.post(f"{spec.base_url}/v1/embeddings", json={"model": "tiny-embed", "input": "x"},
                             timeout=30).status_code == 401
        children = [c for c in psutil.Process(proc.pid).children(recursive=True) if c.name() == "llama-server"]
        ports = [conn.laddr.port for c in children for conn in c.net_connections("tcp")
                 if conn.status == psutil.CONN_LISTEN and conn.laddr.port != spec.port]
        assert len(ports) == 2
        for port in ports:
            refused = requests.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=30,
                                    json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
            assert refused.status_code == 401, (port, refused.text)
        listed = requests.get(f"{spec.base_url}/models", headers=auth, timeout=30).json()
        assert {m["id"]: m["status"]["value"] for m in listed["data"]} == {"tiny-qwen": "loaded",
                                                                           "tiny-embed": "loaded"}


def test_the_kits_chat_template_is_each_models_own_line(tmp_path: Path) -> None:
    """The default model's and another model's derived templates (``place/chat_template.py``), relative to the
    home like the model files; a model without one gets no line (its own template serves)."""
    home = tmp_path / "h"
    spec = _spec(home, chat_template=home / "chat-templates" / "qwen3.5-a.jinja")
    spec = replace(spec, others=(replace(spec.others[0]),
                                 replace(spec.others[1], chat_template=home / "chat-templates" / "qwen3.5-b.jinja")))
    sections = _sections(render_preset_text(spec))
    assert sections["chat"]["chat-template-file"] == "chat-templates/qwen3.5-a.jinja"
    assert "chat-template-file" not in sections["embed"]
    assert sections["see"]["chat-template-file"] == "chat-templates/qwen3.5-b.jinja"


def test_with_the_kits_front_the_scripts_start_it_before_the_router(tmp_path: Path) -> None:
    """Several models (issue 41): the start scripts and WinSW run the kit's front on the install's address, which
    starts the router itself on a loopback port of its own (``register/router_front.py``): the router's words carry
    no address, the front's name the default model; on Windows the front's program inside the home is named
    relative to the script's folder, as the server is."""
    from bootstrap.register.winsw import render_winsw_xml
    from bootstrap.render.start_scripts import render_text

    spec = _spec(tmp_path, kit=("/usr/bin/python3", "-m", "bootstrap"), host="0.0.0.0")
    assert spec.fronted and spec.argv()[:11] == ["/usr/bin/python3", "-m", "bootstrap", "front", "--host", "0.0.0.0",
                                                 "--port", "8080", "--model", "chat", "--"]
    router = spec.argv()[11:]
    assert router[0] == str(spec.server) and "--host" not in router and "--port" not in router
    assert router[router.index("--api-key-file") + 1] == str(spec.api_key_file)
    sh = render_text(spec, "sh")
    assert "exec /usr/bin/python3 \\\n        -m bootstrap front \\\n        --host 0.0.0.0 \\" in sh
    assert f"        -- {spec.server} \\\n        --models-preset" in sh

    win_home = cast(Path, PureWindowsPath("C:/Users/张三/AppData/Local/QwenClientKit"))
    win = _spec(win_home, system="Windows", server=win_home / "engine" / "b1" / "llama-server.exe",
                kit=(str(win_home / "venv" / "Scripts" / "qwenkit.exe"),))
    bat = render_text(win, "bat")
    assert '"%~dp0venv\\Scripts\\qwenkit.exe" ^\n  "front" ^\n  "--host" "127.0.0.1" ^' in bat, bat
    assert '"--" "%~dp0engine\\b1\\llama-server.exe"' in bat, bat
    xml = render_winsw_xml(win, Home(win_home))
    assert "<executable>C:\\Users\\张三\\AppData\\Local\\QwenClientKit\\venv\\Scripts\\qwenkit.exe</executable>" \
        in xml and "<argument>front</argument>" in xml, xml


def test_keep_alive_is_each_models_sleep_line_and_absent_when_never(tmp_path: Path) -> None:
    """``install --keep-alive``: llama-server's ``--sleep-idle-seconds`` as a preset key, in every model's section
    (the router passes a section's keys to that model's child; ``tools/server/README.md`` "Sleeping on Idle")."""
    spec = _spec(tmp_path / "h", keep_alive_s=300)
    spec = replace(spec, others=tuple(replace(o, keep_alive_s=300) for o in spec.others))
    sections = _sections(render_preset_text(spec))
    assert [sections[name].get("sleep-idle-seconds") for name in ("chat", "embed", "see")] == ["300"] * 3
    assert "sleep-idle-seconds" not in render_preset_text(_spec(tmp_path / "h"))  # -1: kept loaded
    assert "sleep-idle-seconds" not in render_preset_text(_spec(tmp_path / "h", keep_alive_s=-1))
    zero = _sections(render_preset_text(_spec(tmp_path / "h", keep_alive_s=0)))
    assert zero["chat"]["sleep-idle-seconds"] == "1"  # the engine refuses 0: its shortest sleep
    one = replace(_spec(tmp_path / "h", keep_alive_s=60), others=())  # one model: the flag on its command line
    assert one.server_args()[-10:-8] == ["--sleep-idle-seconds", "60"]
