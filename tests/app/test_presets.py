"""A model's preset through the real CLI and the test bed's real llama-server (``plan/presets.py``, docs/presets.md):
``install MODEL --system … --temperature …`` rendered into the start script (sampling) and the front's JSON file
(the system prompt), applied to a real request (``/slots`` shows the sampling a request ran with; the prompt's
token count shows the system prompt), a request's own values winning, kept across a rerun, changed, cleared; bad
values refused in one line.

One install for the module (the tiny chat model, named by its hub repo id: the names users type), reused by every
test in order; each test that changes the preset says what it leaves.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.record.state import load_state
from bootstrap.register.managers import FallbackManager
from tests.support.hub import LoopbackHub
from tests.support.install_bed import (
    MODEL_FILE,
    MODEL_REPO,
    InstallBed,
    catalog_text,
    model_block,
    one_line_error,
    serve_engine,
)
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

TWO_ID, TWO_REPO, TWO_FILE = "tiny-two-1b", "qwenkit-test/tiny-two-1b-GGUF", "tiny-two-1b-Q8_0.gguf"
# Quotes of every kind, shell and cmd.exe specials, an INI comment, a line break, a tab, Chinese, an emoji.
NASTY = 'Du bist "Qwen" — it\'s $HOME `id` %PATH% !x! ^& | < > ; # [s]\n第二行：回答要简短。\t🙂 \\n'


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path) -> Iterator[InstallBed]:
    root = tmp_path_factory.mktemp("presets")
    with LoopbackHub(root / "hub") as hub:
        model = write_model("llama", root / MODEL_FILE, dtype="q8_0", n_layer=2, n_ctx=4096)
        revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: model})
        other = write_model("llama", root / "two" / TWO_FILE, dtype="q8_0", n_layer=2, n_ctx=4096, seed=2)
        two_revision = hub.create_repo(TWO_REPO, {TWO_FILE: other})
        bed = InstallBed(hub, Home(root / "Qwen 安装 home"), root / "catalog.toml", serve_engine(hub, engine_asset))
        args = ("-c", "2048", "-t", "2")
        bed.catalog.write_text(catalog_text(revision, server_args=args) + model_block(
            two_revision, model_id=TWO_ID, repo=TWO_REPO, file=TWO_FILE, server_args=args), encoding="utf-8")
        proc = bed.install(MODEL_REPO.upper(), "--no-venv", "--port", str(free_port()), "--system", NASTY,
                           "--temperature", "0.35", "--top-k", "7", "--repeat-penalty", "1.1")
        assert proc.returncode == 0, proc.stderr[-3000:]
        try:
            yield bed
        finally:
            FallbackManager(bed.home).stop()


def _post(bed: InstallBed, body: dict[str, object], model: str | None = None) -> dict[str, object]:
    state = load_state(bed.home)
    assert state is not None
    key = bed.home.api_key_file.read_text(encoding="utf-8").strip()
    with requests.Session() as session:
        session.trust_env = False
        answer = session.post(f"http://127.0.0.1:{state.server.port}/v1/chat/completions", timeout=60,
                              headers={"Authorization": f"Bearer {key}"},
                              json={"max_tokens": 2, **body, **({"model": model} if model else {})})
        assert answer.status_code == 200, answer.text
        query = f"?model={model}" if model else ""
        slots = session.get(f"http://127.0.0.1:{state.server.port}/slots{query}", timeout=30,
                            headers={"Authorization": f"Bearer {key}"})
        assert slots.status_code == 200, slots.text
    done = [s for s in slots.json() if "params" in s]
    assert done, slots.text
    return {"usage": answer.json()["usage"], "params": max(done, key=lambda s: s["id_task"])["params"]}


HI = [{"role": "user", "content": "hi"}]


def test_preset_is_rendered_and_recorded_and_names_resolve(bed: InstallBed) -> None:
    """The repo id in capitals installed the catalog model (recorded by its id); the sampling is in the start
    script as llama-server's defaults, the system text only in the front's JSON file, byte for byte."""
    state = load_state(bed.home)
    assert state is not None and state.request is not None
    assert state.request.model == "tiny-chat"
    preset = state.request.preset
    assert preset is not None and (preset.system, preset.temperature, preset.top_k) == (NASTY, 0.35, 7)
    script = bed.home.run_sh.read_text(encoding="utf-8")
    assert "--temp 0.35" in script and "--top-k 7" in script and "--repeat-penalty 1.1" in script
    assert "--system-prompts" in script and "第二行" not in script and "Du bist" not in script
    prompts = json.loads((bed.home.root / "system-prompts.json").read_text(encoding="utf-8"))
    assert prompts == {"tiny-chat": NASTY}


def test_preset_applies_to_a_real_request_and_the_request_wins(bed: InstallBed) -> None:
    """A request with nothing of its own runs with the preset's sampling and gets the system prompt (more prompt
    tokens than the same request with a one-word system message of its own); a request's own temperature and
    system message win."""
    plain = _post(bed, {"messages": HI})
    params = plain["params"]
    assert params["temperature"] == pytest.approx(0.35) and params["top_k"] == 7  # type: ignore[index]
    assert params["repeat_penalty"] == pytest.approx(1.1)  # type: ignore[index]
    own = _post(bed, {"messages": [{"role": "system", "content": "x"}, *HI], "temperature": 0.9})
    assert own["params"]["temperature"] == pytest.approx(0.9)  # type: ignore[index]
    assert own["params"]["top_k"] == 7  # type: ignore[index]  # what the request does not set stays the preset's
    with_prompt, without = plain["usage"]["prompt_tokens"], own["usage"]["prompt_tokens"]  # type: ignore[index]
    assert with_prompt > without + 20, (with_prompt, without)


def test_status_shows_the_preset(bed: InstallBed) -> None:
    proc = bed.run("status", "--json")
    doc = json.loads(proc.stdout)
    assert doc["healthy"] is True, doc["problems"]  # the front before one model's server is this home's own
    assert doc["preset"] == {"system": NASTY, "temperature": 0.35, "top_k": 7, "repeat_penalty": 1.1}
    text = bed.run("status").stdout
    line = next(ln for ln in text.splitlines() if ln.startswith("Preset: "))
    assert "--temperature 0.35" in line and "--top-k 7" in line and "--system 'Du bist" in line


def test_preset_is_kept_by_a_rerun_changed_and_cleared(bed: InstallBed) -> None:
    """A rerun without options keeps it (nothing to change); one option changes only that value (the server is
    started again with it); ``--clear-preset`` forgets it: no front, the engine's sampling."""
    again = bed.install()
    assert again.returncode == 0, again.stderr[-2000:]
    assert "the preset changes" not in again.stderr
    state = load_state(bed.home)
    assert state is not None and state.request is not None and state.request.preset is not None
    assert state.request.preset.system == NASTY
    changed = bed.install("--temperature", "0.5")
    assert changed.returncode == 0, changed.stderr[-2000:]
    assert "the preset changes" in changed.stderr
    assert "--temp 0.5" in bed.home.run_sh.read_text(encoding="utf-8")
    after = _post(bed, {"messages": HI})
    assert after["params"]["temperature"] == pytest.approx(0.5)  # type: ignore[index]
    assert after["params"]["top_k"] == 7  # type: ignore[index]
    cleared = bed.install("--clear-preset")
    assert cleared.returncode == 0, cleared.stderr[-2000:]
    script = bed.home.run_sh.read_text(encoding="utf-8")
    assert "--temp" not in script and "--system-prompts" not in script and " front " not in script
    assert not (bed.home.root / "system-prompts.json").exists()  # the text is not left behind
    state = load_state(bed.home)
    assert state is not None and state.request is not None and state.request.preset is None
    bare = _post(bed, {"messages": HI})
    assert bare["params"]["temperature"] == pytest.approx(0.8)  # type: ignore[index]  # llama.cpp's default


@pytest.mark.parametrize(("args", "says"), [
    (("--temperature", "9"), "--temperature: 9 is not valid (from 0 to 5)"),
    (("--top-k", "1.5"), "--top-k: 1.5 is not valid (a whole number)"),
    (("--top-p", "nan"), "--top-p: nan is not valid (from 0 to 1)"),
    (("--repeat-penalty", "0"), "--repeat-penalty: 0 is not valid (above 0, up to 10)"),
    (("--system", "bell\x07"), "--system: 'bell\\x07' is not valid"),
])
def test_preset_bad_values_are_one_line_exit_2(bed: InstallBed, args: tuple[str, ...], says: str) -> None:
    proc = bed.install(*args)
    assert proc.returncode == 2, proc.stderr
    assert says in one_line_error(proc)


def test_preset_file_unknown_key_is_one_line_exit_2(bed: InstallBed, tmp_path: Path) -> None:
    path = tmp_path / "preset.toml"
    path.write_text('temperature = 0.2\nsytem = "typo"\n', encoding="utf-8")
    proc = bed.install("--preset", str(path))
    assert proc.returncode == 2, proc.stderr
    assert "unknown preset key 'sytem'" in one_line_error(proc)


def test_preset_of_a_model_beside_the_default_in_the_router_preset(bed: InstallBed) -> None:
    """A second model, named the Ollama way, added with its own preset: its section of the router's ``models.ini``
    holds its sampling, the front adds its system prompt to requests naming it, a rerun keeps it; ``logs --model``
    and ``remove`` take the same names."""
    proc = bed.install("tiny-two:1b", "--system", "Zwei: " + NASTY, "--temperature", "0.2", "--min-p", "0.07")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ini = (bed.home.root / "models.ini").read_text(encoding="utf-8")
    section = ini.split(f"[{TWO_ID}]", 1)[1]
    assert "temp = 0.2" in section and "min-p = 0.07" in section and "Zwei" not in ini
    prompts = json.loads((bed.home.root / "system-prompts.json").read_text(encoding="utf-8"))
    assert prompts == {TWO_ID: "Zwei: " + NASTY}
    plain = _post(bed, {"messages": HI}, model=TWO_ID)
    assert plain["params"]["temperature"] == pytest.approx(0.2)  # type: ignore[index]
    assert plain["params"]["min_p"] == pytest.approx(0.07)  # type: ignore[index]
    own = _post(bed, {"messages": [{"role": "system", "content": "x"}, *HI], "top_k": 3}, model=TWO_ID)
    assert own["params"]["top_k"] == 3  # type: ignore[index]
    assert plain["usage"]["prompt_tokens"] > own["usage"]["prompt_tokens"] + 20  # type: ignore[index]
    default = _post(bed, {"messages": HI})  # the default model: its preset was cleared, no system prompt
    assert default["params"]["temperature"] == pytest.approx(0.8)  # type: ignore[index]
    status = bed.run("status")
    assert f"Preset of {TWO_ID}: --temperature 0.2; --min-p 0.07; --system 'Zwei: Du bist" in status.stdout
    models = json.loads(bed.run("status", "--json").stdout)["models"]
    assert [m["preset"] for m in models] == [None, {"system": "Zwei: " + NASTY, "temperature": 0.2, "min_p": 0.07}]
    again = bed.install("Qwenkit-Test/Tiny-Two-1B-GGUF")
    assert again.returncode == 0, again.stderr[-2000:]
    state = load_state(bed.home)
    assert state is not None and state.library[0].preset is not None
    assert state.library[0].preset.temperature == 0.2 and state.library[0].preset.system == "Zwei: " + NASTY
    logs = bed.run("logs", "--model", "tiny-two:1b", "-n", "5")
    assert logs.returncode == 0, logs.stderr
    chat = subprocess.run([*bed.command(), "run", "Tiny-Two:1B"], input="hi\n", capture_output=True, text=True,
                          env=bed.env(), timeout=120, check=False)
    assert chat.returncode == 0, chat.stderr[-2000:]
    stopped = bed.run("stop", "tiny_two_1b")
    assert stopped.returncode == 0, stopped.stderr[-2000:]
    removed = bed.run("remove", "TINY_TWO_1B", "--yes")
    assert removed.returncode == 0, removed.stderr[-2000:]
    assert TWO_ID in removed.stdout
    assert not (bed.home.root / "system-prompts.json").exists()  # its prompt went with it


@pytest.mark.usefixtures("english")
def test_preset_in_the_answers_file_under_a_preset_file_under_the_options(tmp_path: Path) -> None:
    """An unattended rollout's answers file may carry a ``[preset]`` table; ``--preset FILE`` goes over it and the
    options over both; a bad value in it is one line (exit 2) naming the file."""
    import argparse

    from bootstrap.app.commands.install import _preset, read_answers
    from bootstrap.core.errors import UsageError

    answers = tmp_path / "answers.toml"
    answers.write_text('model = "tiny-chat"\n[preset]\nsystem = "from answers"\ntemperature = 0.1\ntop_k = 5\n',
                       encoding="utf-8")
    preset_file = tmp_path / "preset.toml"
    preset_file.write_text("temperature = 0.2\nmin_p = 0.03\n", encoding="utf-8")
    args = argparse.Namespace(system=None, temperature=None, top_p=None, top_k="9", min_p=None, repeat_penalty=None,
                              presence_penalty=None, preset=str(preset_file))
    preset = _preset(args, read_answers(str(answers))["preset"])
    assert preset is not None and preset.to_json() == {"system": "from answers", "temperature": 0.2, "top_k": 9,
                                                       "min_p": 0.03}
    answers.write_text("[preset]\ntemperature = 7\n", encoding="utf-8")
    with pytest.raises(UsageError) as exc:
        read_answers(str(answers))
    assert exc.value.message == f"{answers}: preset: temperature: 7 is not valid (from 0 to 5)"
