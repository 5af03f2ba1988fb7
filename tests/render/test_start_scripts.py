"""Start scripts: the rendered ``run_qwen.sh`` runs the real llama-server from a hostile path; ``run_qwen.bat`` is
checked on its text against cmd.exe's quoting rules (and run by Wine's cmd in test_bat_under_wine.py).

The home path holds a space, both quote kinds, ``%``, ``!``, ``&``, ``$``, a backtick and Chinese characters: each
breaks a different naive quoting. A Windows home with ``%`` is written out in the .bat (not through ``%~dp0``, which
Wine's cmd does not carry it through), so it must be ASCII: with a non-ASCII character it is refused (exit 2).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path, PureWindowsPath

import pytest
import requests

from bootstrap.core import console
from bootstrap.core.errors import UsageError
from bootstrap.core.home import Home
from bootstrap.core.templating import QuotingError
from bootstrap.place.api_key import ensure_api_key, read_api_key
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.render.start_scripts import (
    check_home,
    group_words,
    render_start_scripts,
    render_text,
    windows_relative,
)
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

WEIRD = "我的 \"模型\" 100% !&$`x'"
ENGINE_BUILD, ENGINE_VARIANT = "b10434", "ubuntu-vulkan-x64"
SERVER_ARGS = ("-c", "256", "-np", "1", "-t", "2")
# Variables llama-server would take as flag values if the script let them through (common/arg.cpp set_env):
# LLAMA_API_KEY adds a key next to --api-key-file's, LLAMA_ARG_ENDPOINT_PROPS turns POST /props on (the script
# does not pass --props), LLAMA_ARG_CTX_SIZE would be overridden by -c but logs a warning.
HOSTILE_ENV = {"LLAMA_API_KEY": "sk-from-the-environment-0123456789", "LLAMA_ARG_ENDPOINT_PROPS": "1",
               "LLAMA_ARG_CTX_SIZE": "1",
               "QK_TEST_NOT_UTF8": "\udcff\udcfe"}  # bytes 0xff 0xfe: the scrub must not trip over them
READY_TIMEOUT_S = 120  # a bound on waiting for /health, not a speed assertion


pytestmark = pytest.mark.usefixtures("english")


@dataclass(frozen=True)
class Install:
    home: Home
    spec: LaunchSpec
    key: str


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory, engine_bin_dir: Path) -> Install:
    """A home at a hostile path with a copy of the test-bed engine, a tiny model and a key; run_qwen.sh rendered."""
    console.set_language("en")
    home = Home(tmp_path_factory.mktemp("start") / WEIRD)
    engine = home.engine_dir(ENGINE_BUILD, ENGINE_VARIANT)
    shutil.copytree(engine_bin_dir, engine, symlinks=True)
    model = write_model("llama", home.models_dir / "tiny 模型 $x" / "tiny.gguf")
    ensure_api_key(home)
    spec = LaunchSpec(home=home.root, system="Linux", engine_dir=engine, server=engine / "llama-server",
                      model=model, mmproj=None, args=SERVER_ARGS, alias="tiny-qwen",
                      api_key_file=home.api_key_file, port=free_port())
    scripts = render_start_scripts(spec, home)
    assert scripts.sh == home.run_sh and scripts.bat is None
    return Install(home, spec, read_api_key(home))


@contextlib.contextmanager
def started(script: Path, base_url: str, log: Path, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """Run the script (argv list, no shell) with the hostile environment; wait for /health; SIGTERM on exit."""
    env = {**os.environ, **HOSTILE_ENV}
    with open(log, "wb") as out:
        # Own process group: whatever the script starts is stopped with it, even if a broken script forked.
        proc = subprocess.Popen([str(script), *extra], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"run_qwen.sh exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{base_url}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"no /health after {READY_TIMEOUT_S} s:\n{log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _chat(base_url: str, headers: dict[str, str]) -> requests.Response:
    body = {"model": "tiny-qwen", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
            "temperature": 0}
    return requests.post(f"{base_url}/v1/chat/completions", json=body, headers=headers, timeout=120)


@pytest.fixture(scope="module")
def served(install: Install, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen[bytes],
                                                                                           Path]]:
    """run_qwen.sh serving for the tests below that only ask it questions."""
    log = tmp_path_factory.mktemp("log") / "server.log"
    with started(install.home.run_sh, install.spec.base_url, log) as proc:
        yield proc, log


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# --- run_qwen.sh, run for real ---------------------------------------------------------------------------------

def test_sh_script_is_executable_posix_sh(install: Install) -> None:
    script = install.home.run_sh
    assert script.stat().st_mode & 0o777 == 0o755
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/sh\n") and "\r" not in text
    assert text.rstrip("\n").endswith('main "$@"')  # a truncated file defines main() but never runs it
    assert text.count("exec ") == 1
    for shell in (["sh", "-n"], ["bash", "--posix", "-n"]):
        proc = subprocess.run([*shell, str(script)], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == "", (shell, proc.stderr)


def test_sh_script_holds_no_key(install: Install) -> None:
    text = install.home.run_sh.read_text(encoding="utf-8")
    assert install.key not in text and "sk-qwenkit-" not in text
    assert "--api-key-file" in text


def test_chat_with_the_key_answers(install: Install, served: tuple[subprocess.Popen[bytes], Path]) -> None:
    resp = _chat(install.spec.base_url, _bearer(install.key))
    assert resp.status_code == 200
    body = resp.json()
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["model"] == "tiny-qwen"


def test_requests_without_the_key_are_rejected(install: Install,
                                               served: tuple[subprocess.Popen[bytes], Path]) -> None:
    assert _chat(install.spec.base_url, {}).status_code == 401
    assert _chat(install.spec.base_url, _bearer(install.key + "x")).status_code == 401


def test_environment_cannot_add_a_key_or_flags(install: Install, served: tuple[subprocess.Popen[bytes], Path]) -> None:
    base, auth = install.spec.base_url, _bearer(install.key)
    assert _chat(base, _bearer(HOSTILE_ENV["LLAMA_API_KEY"])).status_code == 401
    props = requests.get(f"{base}/props", headers=auth, timeout=30).json()
    assert props["default_generation_settings"]["n_ctx"] == 256  # -c from the script, not LLAMA_ARG_CTX_SIZE=1
    assert props["endpoint_props"] is False  # LLAMA_ARG_ENDPOINT_PROPS=1 was unset
    assert requests.post(f"{base}/props", headers=auth, json={}, timeout=30).status_code == 501
    assert props["endpoint_metrics"] is True  # the kit's own --metrics (the supervisor's probe reads /metrics)
    log = served[1].read_text(errors="replace")
    assert "environment variable is set" not in log  # llama-server's warning when an env var meets its flag


def test_paths_reach_the_server_unchanged(install: Install, served: tuple[subprocess.Popen[bytes], Path]) -> None:
    proc, _ = served
    props = requests.get(f"{install.spec.base_url}/props", headers=_bearer(install.key), timeout=30).json()
    assert props["model_path"] == str(install.spec.model)
    # exec replaced the shell: the pid the caller holds is llama-server itself, so signals reach it directly.
    assert os.readlink(f"/proc/{proc.pid}/exe") == str(install.spec.server)


def test_extra_arguments_are_appended_and_sigterm_stops_it(install: Install, tmp_path: Path) -> None:
    spec = replace(install.spec, port=free_port())  # the module's server holds the first port
    home = Home(tmp_path / "second")
    render_start_scripts(spec, home)
    with started(home.run_sh, spec.base_url, tmp_path / "server.log", "--metrics") as proc:
        auth = _bearer(install.key)
        props = requests.get(f"{spec.base_url}/props", headers=auth, timeout=30).json()
        assert props["endpoint_metrics"] is True
        assert requests.get(f"{spec.base_url}/metrics", headers=auth, timeout=30).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


@pytest.mark.parametrize("missing", ["server", "model", "api_key_file"])
def test_a_missing_file_is_one_line_and_exit_1(install: Install, tmp_path: Path, missing: str) -> None:
    gone = install.home.root / "gone" / f"no-{missing}"
    spec = replace(install.spec, **{missing: gone})
    home = Home(tmp_path / "other home")
    render_start_scripts(spec, home)
    proc = subprocess.run([str(home.run_sh)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **HOSTILE_ENV})
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == f"run_qwen.sh: file not found: {gone} - run qwenkit install again\n"


def test_messages_follow_the_install_language(install: Install) -> None:
    console.set_language("zh")
    text = render_text(install.spec, "sh")
    assert "找不到文件" in text and "请重新运行 qwenkit install" in text


def test_library_path_only_on_linux(install: Install) -> None:
    assert "LD_LIBRARY_PATH=" in render_text(install.spec, "sh")
    mac = replace(install.spec, system="Darwin")
    assert "LD_LIBRARY_PATH" not in render_text(mac, "sh")


def test_rendering_is_deterministic(install: Install) -> None:
    """A rerun with the same plan rewrites the same bytes (no timestamps): upgrades show real differences only."""
    assert render_text(install.spec, "sh") == install.home.run_sh.read_text(encoding="utf-8")


# --- run_qwen.bat, on its text ---------------------------------------------------------------------------------

WIN_HOME = PureWindowsPath(r"C:\Users\张三\A&B (1)!\QwenClientKit")  # '%' with Chinese: refused (below)
WIN_MODEL = PureWindowsPath(r"D:\模型 50%&x\Qwen 100%\qwen^1!.gguf")  # outside the home


def _win_spec(**changes: object) -> LaunchSpec:
    engine = WIN_HOME / "engine" / "b10434-win-cuda-13"
    spec = LaunchSpec(home=WIN_HOME, system="Windows", engine_dir=engine,  # type: ignore[arg-type]
                      server=engine / "llama-server.exe", model=WIN_MODEL,  # type: ignore[arg-type]
                      mmproj=WIN_HOME / "models" / "unsloth" / "mmproj-F16.gguf",  # type: ignore[arg-type]
                      args=("-c", "32768", "-np", "1", "-fa", "on", "--n-cpu-moe", "30", "-ot",
                            r"blk\.(2|3)\.ffn_.*_exps=CPU", "--reasoning-budget", "-1"),
                      alias="qwen3.6-35b-a3b", api_key_file=WIN_HOME / "secrets" / "api-key")  # type: ignore[arg-type]
    return replace(spec, **changes)


@pytest.fixture
def bat(tmp_path: Path) -> tuple[bytes, str]:
    scripts = render_start_scripts(_win_spec(), Home(tmp_path))
    assert scripts.sh is None and scripts.bat == tmp_path / "run_qwen.bat"
    assert not (tmp_path / "run_qwen.sh").exists()
    raw = scripts.bat.read_bytes()
    return raw, raw.decode("utf-8")


def _code_lines(text: str) -> list[str]:
    return [ln for ln in text.split("\r\n") if ln and not ln.lower().startswith("rem ")]


def test_bat_encoding_and_line_endings(bat: tuple[bytes, str]) -> None:
    raw, text = bat
    assert not raw.startswith(b"\xef\xbb\xbf")  # no BOM: cmd.exe would read it as part of the first command
    assert raw.count(b"\n") == raw.count(b"\r\n") > 10 and b"\r\r" not in raw
    assert text.startswith("@echo off\r\n")


def test_bat_switches_to_utf8_and_disables_delayed_expansion_first(bat: tuple[bytes, str]) -> None:
    _, text = bat
    lines = text.split("\r\n")
    setlocal = lines.index("setlocal EnableExtensions DisableDelayedExpansion")
    chcp = lines.index("chcp 65001 >nul")
    first_path = next(i for i, ln in enumerate(lines) if "%~dp0" in ln or "D:\\" in ln)
    assert setlocal < chcp < first_path
    assert all(ln.isascii() for ln in lines[:chcp + 1])  # read before the code page switch


def test_bat_clears_llama_environment(bat: tuple[bytes, str]) -> None:
    lines = bat[1].split("\r\n")
    assert """set LLAMA_ARG_ >nul 2>nul && for /f "delims==" %%V in ('set LLAMA_ARG_') do set "%%V=\"""" in lines
    assert 'set "LLAMA_API_KEY="' in lines


def test_bat_in_home_paths_are_relative_and_ascii(bat: tuple[bytes, str]) -> None:
    _, text = bat
    assert '"%~dp0engine\\b10434-win-cuda-13\\llama-server.exe" ^' in text.split("\r\n")
    assert '"--mmproj" "%~dp0models\\unsloth\\mmproj-F16.gguf"' in text
    # the key file relative to the folder the server runs in: llama-server opens it with a narrow-string
    # std::ifstream, which Windows reads in the ANSI code page (LaunchSpec.key_file_arg)
    lines = text.split("\r\n")
    assert '  "--api-key-file" "secrets\\api-key" %*' in lines
    assert lines.index('pushd "%~dp0"') < lines.index('"%~dp0engine\\b10434-win-cuda-13\\llama-server.exe" ^')
    assert lines.index('set "QK_RC=%ERRORLEVEL%"') + 1 == lines.index("popd")
    assert "张三" not in text and "A&B" not in text and "QwenClientKit\\" not in text


def test_a_bat_home_with_percent_is_written_out_doubled(tmp_path: Path) -> None:
    """``%~dp0`` loses a ``%`` under Wine's cmd (and a ``%NAME%`` pair is a variable): a home holding one is named
    in the file itself, every ``%`` doubled, the folder ``pushd`` goes to included; nothing is relative to it."""
    home = PureWindowsPath(r"C:\Users\li\100% A&B!\QwenClientKit")
    engine = home / "engine" / "b10434-win-cpu-x64"
    spec = _win_spec(home=home, engine_dir=engine, server=engine / "llama-server.exe",
                     mmproj=home / "models" / "m.gguf", api_key_file=home / "secrets" / "api-key")
    lines = render_text(spec, "bat").split("\n")
    assert '"C:\\Users\\li\\100%% A&B!\\QwenClientKit\\engine\\b10434-win-cpu-x64\\llama-server.exe" ^' in lines
    assert 'pushd "C:\\Users\\li\\100%% A&B!\\QwenClientKit"' in lines
    assert not any("%~dp0" in line for line in lines)
    assert 'set "QK_FILE=C:\\Users\\li\\100%% A&B!\\QwenClientKit\\models\\m.gguf"' in lines


def test_a_bat_home_with_percent_and_chinese_is_refused(tmp_path: Path) -> None:
    """Written out, a non-ASCII home would be read in the ANSI code page where ``chcp 65001`` is refused (Wine):
    exit 2, one line naming both characters, before anything is written (``check_home`` asks the same rule before
    any download)."""
    home = PureWindowsPath(r"C:\Users\张三\100%\QwenClientKit")
    spec = _win_spec(home=home, server=home / "engine" / "llama-server.exe")
    with pytest.raises(UsageError) as caught:
        render_start_scripts(spec, Home(tmp_path))
    assert caught.value.exit_code == 2 and "'%'" in caught.value.message and "'张'" in caught.value.message
    assert caught.value.hint and "--home" in caught.value.hint
    assert not (tmp_path / "run_qwen.bat").exists()
    check_home(r"C:\Users\li\100%\QwenClientKit", "Windows")  # ASCII: fine
    check_home("/home/张三/100%", "Linux")  # run_qwen.sh quotes anything
    with pytest.raises(UsageError):
        check_home(home, "Windows")


def test_bat_values_outside_home_are_quoted_with_percent_doubled(bat: tuple[bytes, str]) -> None:
    _, text = bat
    assert r'"-m" "D:\模型 50%%&x\Qwen 100%%\qwen^1!.gguf"' in text
    assert r'"-ot" "blk\.(2|3)\.ffn_.*_exps=CPU"' in text
    assert '"--reasoning-budget" "-1"' in text
    # Every % left in the file is either doubled, a batch parameter or variable the template uses.
    singles = re.sub(r"%%|%~dp0|%\*|%%[CV]|%(QK_[A-Z]+|ERRORLEVEL)%", "", text)
    assert "%" not in singles


def test_bat_has_no_unquoted_special_characters(bat: tuple[bytes, str]) -> None:
    for line in _code_lines(bat[1]):
        assert line.count('"') % 2 == 0, line
        outside = re.sub(r'"[^"]*"', '""', line)
        outside = outside.replace(">&2", "").replace(" 2>nul && ", " ")  # the template's own, not a value's
        assert "&" not in outside and "|" not in outside, line


def test_bat_continuation_lines_start_with_a_space(bat: tuple[bytes, str]) -> None:
    # "^" at a line end also escapes the next line's first character: an escaped '"' would not open a quote.
    lines = bat[1].split("\r\n")
    continued = [lines[i + 1] for i, ln in enumerate(lines) if ln.endswith("^")]
    assert len(continued) >= 10
    assert all(ln.startswith(" ") for ln in continued)
    # the user's arguments end the last line: a line of their own that expands to nothing ends the command early
    # in Wine's cmd (test_bat_under_wine.py)
    assert continued[-1].startswith('  "--api-key-file" ') and continued[-1].endswith('" %*')
    assert "  %*" not in lines


def test_bat_runs_the_server_in_this_window(bat: tuple[bytes, str]) -> None:
    lines = _code_lines(bat[1])
    assert not any(ln.lower().startswith("start ") for ln in lines)
    assert "pause" not in bat[1].lower()
    assert "exit /b 1" in lines and "exit /b %QK_RC%" in lines


def test_bat_checks_each_file(bat: tuple[bytes, str]) -> None:
    lines = bat[1].split("\r\n")
    assert 'set "QK_FILE=%~dp0engine\\b10434-win-cuda-13\\llama-server.exe"' in lines
    assert r'set "QK_FILE=D:\模型 50%%&x\Qwen 100%%\qwen^1!.gguf"' in lines
    assert 'if not exist "%~dp0engine\\b10434-win-cuda-13\\llama-server.exe" goto :missing' in lines
    assert r'if not exist "D:\模型 50%%&x\Qwen 100%%\qwen^1!.gguf" goto :missing' in lines
    assert sum(line.startswith("if not exist ") and line.endswith(" goto :missing") for line in lines) == 4
    assert not any("%QK_FILE%" in line for line in lines if line.startswith("if "))  # Wine expands it again
    assert '>&2 echo run_qwen.bat: file not found: "%QK_FILE%" - run qwenkit install again' in lines


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bat_messages_are_safe_for_echo(lang: str) -> None:
    console.set_language(lang)
    text = render_text(_win_spec(), "bat")
    echo = next(ln for ln in text.split("\n") if ln.startswith(">&2 echo "))
    message = echo.replace('"%QK_FILE%"', "")
    assert not set('%&|<>^"!()').intersection(message.removeprefix(">&2 echo ")), message


def test_bat_holds_no_key_text() -> None:
    text = render_text(_win_spec(), "bat")
    assert "sk-qwenkit-" not in text
    assert '"--api-key" ' not in text and '"--api-key-file" ' in text  # the file, never the value
    assert [ln for ln in text.split("\n") if "LLAMA_API_KEY" in ln and not ln.startswith("rem ")] \
        == ['set "LLAMA_API_KEY="']


def test_bat_refuses_a_double_quote_in_a_value() -> None:
    spec = _win_spec(args=("--chat-template-kwargs", '{"enable_thinking":false}'))
    with pytest.raises(QuotingError):
        render_text(spec, "bat")


# --- helpers ---------------------------------------------------------------------------------------------------

def test_windows_relative() -> None:
    home = r"C:\Users\Ann\QwenClientKit"
    assert windows_relative(r"C:\Users\Ann\QwenClientKit\models\a.gguf", home) == r"models\a.gguf"
    assert windows_relative(r"c:\users\ann\qwenclientkit\models\a.gguf", home) == r"models\a.gguf"  # case-blind
    assert windows_relative(r"D:\models\a.gguf", home) is None
    assert windows_relative(r"C:\Users\Ann\QwenClientKit2\a.gguf", home) is None
    assert windows_relative(home, home) is None
    assert windows_relative("models\\a.gguf", home) is None  # not absolute
    assert windows_relative("-c", home) is None
    assert windows_relative(r"\\nas\share\Q\models\a.gguf", r"\\nas\share\Q") == r"models\a.gguf"


def test_group_words_keeps_negative_values_with_their_flag() -> None:
    assert group_words(["-m", "a b.gguf", "-c", "256", "--reasoning-budget", "-1", "--no-repack", "-ngl", "99"]) \
        == [["-m", "a b.gguf"], ["-c", "256"], ["--reasoning-budget", "-1"], ["--no-repack"], ["-ngl", "99"]]


def test_sh_quoting_round_trips(install: Install) -> None:
    """The rendered exec line, read back by a real shell, gives exactly LaunchSpec.argv() (plus "$@")."""
    text = render_text(install.spec, "sh")
    probe = text.replace("exec ", "printf '%s\\n' ", 1)
    out = subprocess.run(["sh", "-c", probe, "sh", "extra arg"], capture_output=True, check=True)
    assert out.stdout.decode("utf-8").split("\n")[:-1] == [*install.spec.argv(), "extra arg"]


def test_the_key_file_is_relative_to_the_home_only_on_windows(install: Install) -> None:
    """llama-server opens ``--api-key-file`` with a narrow-string ``std::ifstream`` (llama.cpp common/arg.cpp):
    on Windows the path goes relative to the home it runs in; a key outside the home, and every other system, keep
    the absolute path."""
    assert _win_spec().key_file_arg() == r"secrets\api-key"
    outside = _win_spec(api_key_file=PureWindowsPath(r"D:\keys\api-key"))
    assert outside.key_file_arg() == r"D:\keys\api-key"
    assert install.spec.key_file_arg() == str(install.home.api_key_file)
    assert install.spec.argv()[-1] == str(install.home.api_key_file)


def test_bat_names_the_kits_chat_template_relative_to_the_home(tmp_path: Path) -> None:
    """``--chat-template-file`` is read like the key file (``read_file``: a narrow ``std::ifstream``), so on Windows it
    is relative to the home the server runs in (``LaunchSpec.home_file_arg``); the script checks it exists."""
    template = WIN_HOME / "chat-templates" / "qwen3.5-0123456789abcdef.jinja"
    scripts = render_start_scripts(_win_spec(chat_template=template), Home(tmp_path))
    assert scripts.bat is not None
    text = scripts.bat.read_text(encoding="utf-8")
    assert '"--chat-template-file" "chat-templates\\qwen3.5-0123456789abcdef.jinja"' in text
    assert "%~dp0chat-templates\\qwen3.5-0123456789abcdef.jinja" in text  # the file check


def test_sh_passes_the_kits_chat_template_after_the_plan_flags(tmp_path: Path) -> None:
    home = Home(tmp_path / "h")
    template = home.chat_templates_dir / "qwen3.5-0123456789abcdef.jinja"
    spec = LaunchSpec(home=home.root, system="Linux", engine_dir=home.root / "engine",
                      server=home.root / "engine" / "llama-server", model=home.models_dir / "m.gguf", mmproj=None,
                      args=("-c", "4096", "--jinja"), alias="qwen", api_key_file=home.api_key_file,
                      chat_template=template)
    argv = spec.server_args()
    assert argv[argv.index("--jinja") + 1:argv.index("--alias")] == ["--chat-template-file", str(template),
                                                                    "--metrics"]
    scripts = render_start_scripts(spec, home)
    assert scripts.sh is not None and f"--chat-template-file {template}" in scripts.sh.read_text(encoding="utf-8")
