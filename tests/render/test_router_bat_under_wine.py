"""The router's ``run_qwen.bat`` (several models) run by a real cmd.exe (Wine's), with a stand-in llama-server.exe.

The script and ``models.ini`` are rendered by the product for a home whose path holds spaces, an apostrophe, ``&``,
``!``, parentheses, ``^`` and Chinese characters, with a default model and two others (one with an mmproj). The
stand-in (``tests/support/win/router_recorder.c``) writes down its arguments as the C runtime split them, its
working directory, every ``LLAMA_*`` variable with its value, and whether the preset, the key file and each model
file the preset names open from that directory (what llama-server and each of its child servers open). The rules of
Wine's cmd that the single-model test found (``test_bat_under_wine.py``'s docstring) hold here too: no ``%`` in the
home's name, and the script is started directly, not by ``call``. One more seen here: Wine's cmd decodes the
batch file in the ANSI code page whatever ``chcp 65001`` says, so a non-ASCII folder *inside* the home (which the
script writes out after ``%~dp0``) is garbled too and its check says "file not found"; the model folders here are
ASCII (with a space), as the catalog's repository names are.

Without Wine or mingw-w64 the runs skip (the ``wine_prefix`` fixture says why); the preset's text and the refusal
of a path the preset cannot carry are checked without them.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePath, PureWindowsPath
from typing import cast

import pytest

from bootstrap.core import console
from bootstrap.core.errors import ExitCode
from bootstrap.core.home import Home
from bootstrap.plan.launch_spec import CHILD_KEY_ENV, LaunchSpec, PresetModel
from bootstrap.register.winsw import render_winsw_xml
from bootstrap.render.model_preset import PresetError
from bootstrap.render.start_scripts import render_start_scripts
from tests.support import wine

pytestmark = pytest.mark.usefixtures("english")

HOME_DIR = "张三's A&B ! (x)^ y"
ALIAS = "qwen3.6-35b-a3b"
ARGS = ("-c", "32768", "-np", "1", "-fa", "on", "--n-cpu-moe", "30", "-ot", r"blk\.(2|3)\.ffn_.*_exps=CPU",
        "--reasoning-budget", "-1")
EMBED_ARGS = ("--embeddings", "--pooling", "last", "-c", "8192")
VISION_ARGS = ("-c", "16384", "--no-mmap")
PORT = 8123
MODELS_MAX = 2
RECORDER_SOURCE = Path(__file__).resolve().parents[1] / "support" / "win" / "router_recorder.c"
RUN_TIMEOUT_S = 120  # cmd and a stand-in under Wine: seconds; a bound, not a speed check


def linux_path(path: PurePath) -> Path:
    """The Linux file behind a Wine ``Z:`` path (``wine.windows_path`` undone); other paths as they are."""
    if isinstance(path, PureWindowsPath) and path.drive.upper() == "Z:":
        return Path("/", *path.parts[1:])
    return Path(path)


@dataclass(frozen=True)
class RouterInstall:
    home: Home
    spec: LaunchSpec
    server: Path  # where the stand-in goes, on the Linux side
    files: dict[str, Path]  # every model file, on the Linux side, by a short name


def _touch(*paths: Path) -> None:
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")


def _w(path: Path) -> Path:
    """``path`` as Wine's programs see it; typed ``Path`` as LaunchSpec wants (on Windows its paths are
    WindowsPath, which is what the product's ``PureWindowsPath`` handling expects)."""
    return cast(Path, wine.windows_path(path))


def _router_spec(home: Home, **files: Path) -> LaunchSpec:
    engine = home.root / "engine" / "b11434-win-cpu"
    return LaunchSpec(home=_w(home.root), system="Windows", engine_dir=_w(engine),
                      server=_w(engine / "llama-server.exe"), model=_w(files["model"]), mmproj=_w(files["mmproj"]),
                      args=ARGS, alias=ALIAS, api_key_file=_w(home.secrets_dir / "api-key"), port=PORT,
                      others=(PresetModel("qwen3-embedding-0.6b", _w(files["embed"]), None, EMBED_ARGS),
                              PresetModel("qwen3-vl-8b", _w(files["vision"]), _w(files["vision_mmproj"]),
                                          VISION_ARGS, load_on_startup=True)),
                      models_max=MODELS_MAX)


def _model_files(home: Home) -> dict[str, Path]:
    models = home.models_dir
    return {"model": models / "unsloth" / "Qwen3.6-35B-A3B-GGUF" / "Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf",
            "mmproj": models / "unsloth" / "Qwen3.6-35B-A3B-GGUF" / "mmproj-F16.gguf",
            "embed": models / "Qwen embed" / "Qwen3-Embedding-0.6B-Q8_0.gguf",
            "vision": models / "Qwen" / "Qwen3-VL-8B-Instruct-GGUF" / "Qwen3VL-8B-Instruct-Q4_K_M.gguf",
            "vision_mmproj": models / "Qwen" / "Qwen3-VL-8B-Instruct-GGUF" / "mmproj-Qwen3VL-8B-Instruct-F16.gguf"}


@pytest.fixture
def router_install(tmp_path: Path) -> RouterInstall:
    """A Windows home (on Wine's Z: drive) with three models, its key, models.ini and run_qwen.bat rendered."""
    console.set_language("en")
    home = Home(tmp_path / HOME_DIR / "QwenClientKit")
    files = _model_files(home)
    _touch(*files.values(), home.secrets_dir / "api-key")
    spec = _router_spec(home, **files)
    assert spec.router
    assert render_start_scripts(spec, home).bat == home.run_bat
    return RouterInstall(home, spec, linux_path(spec.server), files)


@pytest.fixture(scope="module")
def router_recorder(wine_prefix: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``router_recorder.c`` compiled once for this module (a Windows x64 console program)."""
    out = tmp_path_factory.mktemp("router-recorder") / "llama-server.exe"
    subprocess.run([wine.MINGW_GCC, "-municode", "-O2", "-o", str(out), str(RECORDER_SOURCE)], check=True,
                   capture_output=True, timeout=120)
    return out


@dataclass(frozen=True)
class Seen:
    """What the stand-in saw (record.txt)."""

    args: list[str]
    cwd: str
    env: dict[str, str]
    opened: dict[str, bool]


def _read_seen(server: Path) -> Seen:
    args: list[str] = []
    cwd = ""
    env: dict[str, str] = {}
    opened: dict[str, bool] = {}
    for line in (server.parent / "record.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("arg="):
            args.append(line[4:])
        elif line.startswith("cwd="):
            cwd = line[4:]
        elif line.startswith("env "):
            name, _, value = line[4:].partition("=")
            env[name] = value
        elif line.startswith("open "):
            path, _, state = line[5:].rpartition("=")
            opened[path] = state == "ok"
    return Seen(args, cwd, env, opened)


def _place(recorder: Path, server: Path) -> None:
    server.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(recorder, server)


def _run(install: RouterInstall, prefix: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    argv = ["wine", str(wine.windows_path(install.home.run_bat))]  # no arguments: as a double-click starts it
    return subprocess.run(argv, env=wine.wine_env(prefix, **env), capture_output=True, timeout=RUN_TIMEOUT_S)


def _preset(text: str) -> list[tuple[str, dict[str, str]]]:
    """models.ini as llama.cpp reads it (``common/preset.cpp``): ``[section]``, then ``key = value`` lines, a value
    ending at ``;`` or ``#``; the lines before the first section under ``""``."""
    sections: list[tuple[str, dict[str, str]]] = [("", {})]
    for raw in text.splitlines():
        line = raw.split(";", 1)[0].split("#", 1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1], {}))
        elif line:
            key, _, value = line.partition("=")
            sections[-1][1][key.strip()] = value.strip()
    return sections


def _preset_text(install: RouterInstall) -> str:
    return (install.home.root / "models.ini").read_text(encoding="utf-8")


def test_the_router_gets_only_its_own_flags_in_the_home(router_install: RouterInstall, router_recorder: Path,
                                                        wine_prefix: Path) -> None:
    """argv is the router's (the models' flags are in the preset), the key file reaches the children through
    ``LLAMA_ARG_API_KEY_FILE`` and no stray ``LLAMA_*`` does, the server runs in the home, and from there the
    preset, the key and every model file the preset names open."""
    _place(router_recorder, router_install.server)
    spec = router_install.spec
    proc = _run(router_install, wine_prefix, LLAMA_ARG_CTX_SIZE="1", LLAMA_API_KEY="sk-from-the-environment",
                LLAMA_ARG_API_KEY_FILE=r"C:\elsewhere\api-key", LLAMA_ARG_MODELS_PRESET=r"C:\elsewhere\models.ini")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", errors="replace")
    seen = _read_seen(router_install.server)
    assert seen.args == [str(spec.server), "--models-preset", "models.ini", "--models-max", str(MODELS_MAX),
                         "--metrics", "--host", "127.0.0.1", "--port", str(PORT), "--api-key-file", "secrets\\api-key"]
    assert seen.args == spec.argv() and HOME_DIR in seen.args[0]
    assert seen.env == {CHILD_KEY_ENV: "secrets\\api-key"} == spec.child_env()
    assert seen.cwd == str(spec.home)
    preset_models = [value for _, items in _preset(_preset_text(router_install)) for key, value in items.items()
                     if key in ("model", "mmproj")]
    assert len(preset_models) == 5
    assert seen.opened == {"secrets\\api-key": True, "models.ini": True, **dict.fromkeys(preset_models, True)}


def test_models_ini_lists_every_model_in_order_relative_to_the_home(router_install: RouterInstall) -> None:
    """One section per model, the default first and loaded at start; CRLF endings; every file relative to the home
    with backslashes, resolving there to the file the spec names."""
    data = (router_install.home.root / "models.ini").read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") > 0
    sections = _preset(data.decode("utf-8"))
    assert [name for name, _ in sections] == ["", ALIAS, "qwen3-embedding-0.6b", "qwen3-vl-8b"]
    assert sections[0][1] == {"version": "1"}
    files = router_install.files
    want = [(ALIAS, {"model": files["model"], "mmproj": files["mmproj"]}),
            ("qwen3-embedding-0.6b", {"model": files["embed"]}),
            ("qwen3-vl-8b", {"model": files["vision"], "mmproj": files["vision_mmproj"]})]
    for (name, items), (want_name, want_files) in zip(sections[1:], want, strict=True):
        assert name == want_name
        assert {k: v for k, v in items.items() if k in ("model", "mmproj")}.keys() == want_files.keys()
        for key, file in want_files.items():
            value = PureWindowsPath(items[key])
            assert not value.is_absolute() and "/" not in items[key] and "\\" in items[key], items[key]
            on_disk = router_install.home.root.joinpath(*value.parts)
            assert on_disk.is_file() and on_disk == file
    assert sections[1][1]["load-on-startup"] == "true" and sections[2][1]["load-on-startup"] == "false"
    assert sections[1][1]["ot"] == r"blk\.(2|3)\.ffn_.*_exps=CPU" and sections[2][1]["embeddings"] == "true"


def test_a_missing_preset_is_named_and_nothing_starts(router_install: RouterInstall, router_recorder: Path,
                                                      wine_prefix: Path) -> None:
    _place(router_recorder, router_install.server)
    (router_install.home.root / "models.ini").unlink()
    proc = _run(router_install, wine_prefix)
    assert proc.returncode == 1
    err = proc.stderr.decode("utf-8", errors="replace")
    assert "run_qwen.bat: file not found:" in err and "models.ini" in err and "run qwenkit install again" in err
    assert not (router_install.server.parent / "record.txt").exists()


@pytest.mark.parametrize("outside", ["model", "embed", "vision_mmproj"])
def test_a_model_outside_the_home_in_a_folder_with_a_hash_is_refused(tmp_path: Path, outside: str) -> None:
    """Outside the home a file is named by its absolute path, and ``#`` would end the INI value there: refused
    (exit 2) before anything is written, neither models.ini nor run_qwen.bat."""
    home = Home(tmp_path / HOME_DIR / "QwenClientKit")
    files = {**_model_files(home), outside: tmp_path / "D models #1" / "m.gguf"}
    _touch(*files.values(), home.secrets_dir / "api-key")
    before = sorted(tmp_path.rglob("*"))
    spec = _router_spec(home, **files)
    with pytest.raises(PresetError) as caught:
        render_start_scripts(spec, home)
    assert caught.value.exit_code == ExitCode.USAGE == 2
    assert "#1" in caught.value.message and "cannot be written into llama-server's preset file" in caught.value.message
    assert sorted(tmp_path.rglob("*")) == before
    assert not (home.root / "models.ini").exists() and not home.run_bat.exists()


def test_the_windows_service_hands_the_router_the_key_file_for_its_children(router_install: RouterInstall) -> None:
    """WinSW starts llama-server itself (no run_qwen.bat): its definition carries the same variable."""
    xml = render_winsw_xml(router_install.spec, router_install.home)
    assert '<env name="LLAMA_ARG_API_KEY_FILE" value="secrets\\api-key"/>' in xml
    assert "<argument>--models-preset</argument>" in xml and "<argument>models.ini</argument>" in xml
