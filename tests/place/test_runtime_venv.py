"""The runtime venv (place stage): a real venv built offline from a real wheelhouse, reused, rebuilt, refused.

One venv is shared by the module (installing ~40 wheels takes ~20 s on two cores); the test that rebuilds it runs
last and leaves it complete. The agent example talks to the test bed's real llama-server.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap import __version__
from bootstrap.core.console import set_language
from bootstrap.core.errors import ExitCode, SourceError, UnsupportedMachine
from bootstrap.core.home import Home
from bootstrap.core.templating import render_template
from bootstrap.detect.hardware import PythonInfo
from bootstrap.place import runtime_venv as pyenv
from bootstrap.place.runtime_venv import (
    LOG_NAME,
    STAMP_NAME,
    VenvResult,
    child_env,
    default_kit_source,
    ensure_venv,
    find_python,
    kit_version,
    network_cause,
    no_python_reason,
    read_stamp,
    requirement_names,
    venv_python,
    venv_script,
)
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.verify.chat import agent_command, render_snippets
from tests.support.llama import LlamaServer, free_port
from tests.support.wheelhouse import REPO, kit_wheel, provide_wheelhouse

# The venv under test is built from the interpreter running the tests: the wheelhouse was downloaded for it.
PY = PythonInfo(path=sys.executable, version=platform.python_version())
SERVER_ARGS = ["-c", "512", "-np", "1", "-t", "2"]
PINNED_OPENAI = next(line.split("==")[1].strip() for line in (REPO / "payload" / "requirements.txt").read_text(
    encoding="utf-8").splitlines() if line.startswith("openai=="))
# Recorded from pip 26.3 against a closed loopback port (this machine, 2026-11-30).
RECORDED_REFUSED = (
    "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken "
    "by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7fcc426eee50>: Failed to "
    "establish a new connection: [Errno 111] Connection refused')': /simple/openai/"
)


def pip_runs(home: Home) -> int:
    """How many times pip (or venv) was started for this home: each start writes one ``# … run:`` log line."""
    log = home.logs_dir / LOG_NAME
    if not log.is_file():
        return 0
    return sum(1 for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("# ") and " run: " in line)


def run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def wheels() -> Path:
    return provide_wheelhouse()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, wheels: Path) -> tuple[Home, VenvResult]:
    """One venv for the module, in a home whose path holds a space and Chinese characters."""
    home = Home(tmp_path_factory.mktemp("pyenv") / "我的 模型")
    result = ensure_venv(home, python=PY, endpoint="http://127.0.0.1:8080/v1", api_key_file=home.api_key_file,
                         model="qwen", find_links=wheels, kit_source=kit_wheel(wheels))
    return home, result


def test_offline_install_into_spaced_chinese_home(built: tuple[Home, VenvResult], wheels: Path) -> None:
    home, result = built
    assert result.created and not result.reused and result.skipped_reason is None
    assert result.installed == ("openai", "qwenclientkit")
    assert result.python == venv_python(home.venv_dir)
    probe = run([str(result.python), "-c",
                 "import json, sys, openai; print(json.dumps([sys.prefix, openai.__file__, openai.__version__]))"])
    assert probe.returncode == 0, probe.stderr
    prefix, openai_file, openai_version = json.loads(probe.stdout)
    assert Path(prefix) == home.venv_dir and Path(prefix) != Path(sys.prefix)
    assert Path(openai_file).is_relative_to(home.venv_dir)  # not the system's or the test venv's copy
    assert openai_version == PINNED_OPENAI
    version = run([str(venv_script(home.venv_dir, "qwenkit")), "--version"])
    assert version.returncode == 0 and version.stdout.strip() == f"qwenkit {__version__}"
    cfg = (home.venv_dir / "pyvenv.cfg").read_text(encoding="utf-8")
    assert "include-system-site-packages = false" in cfg
    # Offline means offline: the only pip run used the wheelhouse alone.
    log = (home.logs_dir / LOG_NAME).read_text(encoding="utf-8")
    assert "--no-index --find-links" in log and str(wheels) in log
    assert read_stamp(home.venv_dir) == {"schema": 1, "python": PY.version, "kit": __version__,
                                         "requirements_sha256": read_stamp(home.venv_dir)["requirements_sha256"]}


def test_rerun_reuses_without_pip(built: tuple[Home, VenvResult], wheels: Path) -> None:
    home, _ = built
    stamp = home.venv_dir / STAMP_NAME
    before = (pip_runs(home), stamp.stat().st_mtime_ns)
    assert before[0] == 2  # venv + pip, once each
    again = ensure_venv(home, python=PY, endpoint="http://127.0.0.1:9999/v1", api_key_file=home.api_key_file,
                        model="qwen", find_links=wheels, kit_source=kit_wheel(wheels))
    assert again.reused and not again.created
    assert (pip_runs(home), stamp.stat().st_mtime_ns) == before
    # The example follows the endpoint of this run even when the venv is reused.
    assert again.example is not None and '"http://127.0.0.1:9999/v1"' in again.example.read_text(encoding="utf-8")


def test_agent_example_runs_against_llama_server(built: tuple[Home, VenvResult], wheels: Path, llama_server: Path,
                                                 tiny_models: dict[str, Path]) -> None:
    home, result = built
    assert result.python is not None
    home.secrets_dir.mkdir(parents=True, exist_ok=True)
    home.api_key_file.write_text("sk-local-test-key\n", encoding="utf-8")
    with LlamaServer(llama_server, tiny_models["llama"], [*SERVER_ARGS, "--api-key-file", str(home.api_key_file)]
                     ) as srv:
        shown = ensure_venv(home, python=PY, endpoint=f"{srv.base_url}/v1", api_key_file=home.api_key_file,
                            model="qwen", find_links=wheels, kit_source=kit_wheel(wheels))
        assert shown.example == home.examples_dir / "agent.py"
        env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
        answered = run([str(result.python), str(shown.example)], env=env)
        assert answered.returncode == 0, answered.stderr
        assert answered.stdout.strip()  # the (random) model's answer

        # QWENKIT_API_KEY overrides the key file: a wrong key is refused by the server (401 from the SDK).
        refused = run([str(result.python), str(shown.example)], env={**env, "QWENKIT_API_KEY": "wrong"})
        assert refused.returncode != 0 and "401" in refused.stderr

        # QWENKIT_BASE_URL overrides the rendered endpoint.
        dead = ensure_venv(home, python=PY, endpoint=f"http://127.0.0.1:{free_port()}/v1",
                           api_key_file=home.api_key_file, model="qwen", find_links=wheels,
                           kit_source=kit_wheel(wheels))
        assert dead.example is not None
        moved = run([str(result.python), str(dead.example)], env={**env, "QWENKIT_BASE_URL": f"{srv.base_url}/v1"})
        assert moved.returncode == 0, moved.stderr

        # The report's Python snippet, pasted into a shell as printed: it names this venv's interpreter (a system
        # Python lacks the openai package) and runs against the server.
        spec = LaunchSpec(home=home.root, system=platform.system(), engine_dir=llama_server.parent,
                          server=llama_server, model=tiny_models["llama"], mmproj=None, args=("--reasoning", "off"),
                          alias="qwen", api_key_file=home.api_key_file, port=srv.port)
        _, snippet = render_snippets(spec, max_tokens=8)
        assert snippet.startswith(shlex.quote(str(result.python)) + " - <<'PY'\n") and "max_tokens=8" in snippet
        pasted = run(["sh", "-c", snippet], env=env)
        assert pasted.returncode == 0, pasted.stderr
        assert pasted.stdout.strip()
        assert agent_command(spec) == f"{shlex.quote(str(result.python))} {shlex.quote(str(shown.example))}"

    # The tool itself (the tiny random model never calls it): what the loop would send back to the model.
    tool = run([str(result.python), "-c",
                "import runpy, sys; f = runpy.run_path(sys.argv[1], run_name='agent')['run_tool'];"
                "print(f('add', '{\"a\": 1234, \"b\": 5678}')); print(f('add', '{\"a\": 1}')); print(f('x', '{}'))",
                str(shown.example)])
    assert tool.returncode == 0, tool.stderr
    lines = tool.stdout.splitlines()
    assert lines[0] == "6912.0"
    assert lines[1].startswith("error: bad arguments") and lines[2] == "error: unknown tool 'x'"


def test_agent_example_help_prints_usage_and_asks_nothing(built: tuple[Home, VenvResult], wheels: Path) -> None:
    """``agent.py --help`` was sent to the model as the question; now it is the usage (exit 0), with the endpoint it
    would use, and no request is made (the endpoint here does not exist). ``--`` still passes a question that starts
    with a dash, and an unknown option is a usage error (exit 2)."""
    home, result = built
    assert result.python is not None
    dead = f"http://127.0.0.1:{free_port()}/v1"
    shown = ensure_venv(home, python=PY, endpoint=dead, api_key_file=home.api_key_file, model="qwen",
                        find_links=wheels, kit_source=kit_wheel(wheels))
    assert shown.example is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    for flag in ("--help", "-h"):
        helped = run([str(result.python), str(shown.example), flag], env=env)
        assert helped.returncode == 0, helped.stderr
        assert helped.stdout.startswith("usage: agent.py [-h] [question ...]") and dead in helped.stdout
        assert helped.stderr == ""
    asked = run([str(result.python), str(shown.example), "--", "--help"], env={**env, "QWENKIT_API_KEY": "k"})
    assert asked.returncode == 1 and "APIConnectionError" in asked.stderr  # asked the (absent) server
    wrong = run([str(result.python), str(shown.example), "--verbose"], env=env)
    assert wrong.returncode == 2 and "unrecognized arguments: --verbose" in wrong.stderr


def test_unreachable_index_is_one_line_exit_4(tmp_path: Path, wheels: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Home(tmp_path / "bad index")
    monkeypatch.setenv("PIP_RETRIES", "0")  # a network setting we pass through; pip's 5 retries would add ~8 s
    # Leaks that would make the install succeed if they reached pip: the explicit index must be used alone.
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", wheels.as_uri())
    port = free_port()
    index = f"http://mirror-user:s3cret@127.0.0.1:{port}/simple"  # a mirror token must not reach messages or logs
    with pytest.raises(SourceError) as caught:
        ensure_venv(home, python=PY, endpoint="http://127.0.0.1:8080/v1", api_key_file=home.api_key_file,
                    model="qwen", index_url=index, kit_source=kit_wheel(wheels), quiet=True)
    err = caught.value
    assert err.exit_code == ExitCode.SOURCE
    assert "\n" not in err.message and "Traceback" not in err.message
    assert f"http://mirror-user:***@127.0.0.1:{port}/simple" in err.message and "Connection refused" in err.message
    assert err.hint and f"127.0.0.1:{port}" in err.hint
    assert "s3cret" not in err.message + err.hint + (home.logs_dir / LOG_NAME).read_text(encoding="utf-8")
    assert not (home.venv_dir / STAMP_NAME).exists()  # incomplete: a rerun starts it again


def test_python_that_cannot_run_is_exit_3_one_line(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    gone = PythonInfo(path=str(tmp_path / "removed" / "python3.12"), version="3.12.4")
    with pytest.raises(UnsupportedMachine) as caught:
        ensure_venv(home, python=gone, endpoint="http://127.0.0.1:8080/v1", api_key_file=home.api_key_file,
                    model="qwen", kit_source=REPO, quiet=True)
    assert caught.value.exit_code == ExitCode.UNSUPPORTED and "\n" not in caught.value.message
    assert gone.path in caught.value.message


def test_no_python_skips_with_a_reason(tmp_path: Path) -> None:
    assert find_python([]) is None
    assert find_python([PythonInfo(path=str(tmp_path / "python3.12"), version="3.12.4")]) is None  # not there
    home = Home(tmp_path / "home")
    result = ensure_venv(home, python=None, endpoint="http://127.0.0.1:8080/v1", api_key_file=home.api_key_file,
                         model="qwen")
    assert result == VenvResult(python=None, created=False, reused=False, installed=(), example=None,
                                skipped_reason=result.skipped_reason)
    assert result.skipped_reason and "\n" not in result.skipped_reason
    assert not home.root.exists()
    try:
        for lang, words in (("en", ("3.10-3.13", "OpenAI SDK", "qwenkit", "server works without it")),
                            ("zh", ("3.10–3.13", "OpenAI SDK", "qwenkit", "服务器也能正常运行"))):
            set_language(lang)
            assert all(w in no_python_reason("Linux") for w in (*words, "apt install python3"))
            assert "winget install Python.Python.3.12" in no_python_reason("Windows")
            assert "python.org" in no_python_reason("Darwin")
    finally:
        set_language(None)


def test_find_python_prefers_newest_that_can_make_a_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = PythonInfo(path=str(tmp_path / "python3.13"), version="3.13.1")  # newest, but cannot run
    too_old = PythonInfo(path=sys.executable, version="3.9.18")
    assert find_python([too_old, PY, missing]) == PY
    # The frozen setup never picks itself, even when it sits among the candidates.
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert find_python([PY]) is None


def test_child_env_drops_redirects_keeps_network_settings() -> None:
    base = {"PATH": "/usr/bin", "PYTHONPATH": "/x", "PYTHONHOME": "/y", "VIRTUAL_ENV": "/v", "PIP_USER": "1",
            "PIP_TARGET": "/t", "PIP_INDEX_URL": "http://other/simple", "PIP_PROXY": "http://proxy:3128",
            "PIP_CERT": "/ca.pem", "HTTPS_PROXY": "http://proxy:3128", "LD_LIBRARY_PATH": "/_MEI123",
            "LD_LIBRARY_PATH_ORIG": "/opt/lib"}
    env = child_env(base, isolate_config=True, frozen=True)
    assert env == {"PATH": "/usr/bin", "PIP_PROXY": "http://proxy:3128", "PIP_CERT": "/ca.pem",
                   "HTTPS_PROXY": "http://proxy:3128", "LD_LIBRARY_PATH": "/opt/lib", "PIP_CONFIG_FILE": os.devnull}
    plain = child_env(base, isolate_config=False)
    assert "PIP_CONFIG_FILE" not in plain and plain["LD_LIBRARY_PATH"] == "/_MEI123"


def test_network_cause_from_recorded_pip_output() -> None:
    assert network_cause([RECORDED_REFUSED, "ERROR: No matching distribution found for openai"]) == \
        "Connection refused"
    assert network_cause(["ERROR: No matching distribution found for nothere==1.0"]) is None


def test_example_template_quotes_hostile_values() -> None:
    path = 'C:\\Users\\王 "x"\\it\'s {here} $HOME %TEMP%\\secrets\\api-key'
    text = render_template("agent.py.j2", endpoint="http://127.0.0.1:8080/v1", api_key_file=path,
                           model='qwen "3.6"\'s')
    compile(text, "agent.py", "exec")
    values = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = node.value
    assert ast.literal_eval(values["MODEL"]) == 'qwen "3.6"\'s'
    key_call = values["API_KEY_FILE"]
    assert isinstance(key_call, ast.Call) and ast.literal_eval(key_call.args[0]) == path


def test_kit_source_and_requirements() -> None:
    assert default_kit_source() == REPO  # a checkout without payload/wheels installs itself from source
    assert kit_version(REPO) == __version__
    assert kit_version(Path("qwenclientkit-1.2.3-py3-none-any.whl")) == "1.2.3"
    assert requirement_names("# c\nopenai==2.54.0  # sdk\n--find-links x\n\nfoo[bar]>=1\n") == ("openai", "foo")


def test_missing_stamp_recreates_from_the_venvs_own_python(built: tuple[Home, VenvResult], wheels: Path) -> None:
    """A kill before the stamp was written: the next run starts over, even when run by the venv's own Python."""
    home, result = built
    assert result.python is not None
    (home.venv_dir / STAMP_NAME).unlink()
    leftover = home.venv_dir / "half-installed.txt"
    leftover.write_text("from the killed run")
    runs = pip_runs(home)
    own = PythonInfo(path=str(result.python), version=PY.version)  # `<venv>/bin/qwenkit install` runs this one
    again = ensure_venv(home, python=own, endpoint="http://127.0.0.1:8080/v1", api_key_file=home.api_key_file,
                        model="qwen", find_links=wheels, kit_source=kit_wheel(wheels), quiet=True)
    assert again.created and not again.reused
    assert not leftover.exists() and (home.venv_dir / STAMP_NAME).is_file()
    assert pip_runs(home) == runs + 2
    version = run([str(venv_script(home.venv_dir, "qwenkit")), "--version"])
    assert version.returncode == 0 and version.stdout.strip() == f"qwenkit {__version__}"


def test_only_pip_lines_that_matter_are_shown() -> None:
    """Recorded pip 25 lines (offline install of openai + the kit): one line per package fetched online, the summary
    and problems reach the console; the ~40 'Processing <wheel>' lines stay in the log."""
    recorded = {
        "Looking in links: /root/.cache/qwenkit-testbed/wheels/90a8d906bab18799": False,
        "Processing /root/.cache/qwenkit-testbed/wheels/x/openai-2.54.0-py3-none-any.whl": False,
        "Requirement already satisfied: setuptools in /h/venv/lib/python3.11/site-packages (65.5.0)": False,
        "Installing collected packages: py-cpuinfo, nvidia-ml-py, urllib3": False,
        "Collecting openai==2.54.0 (from -r requirements.txt (line 6))": True,
        "  Downloading openai-2.54.0-py3-none-any.whl.metadata (29 kB)": True,
        "Successfully installed openai-2.54.0 qwenclientkit-0.1.0": True,
        "ERROR: Could not find a version that satisfies the requirement openai==2.54.0": True,
        "WARNING: Retrying (Retry(total=4...)) after connection broken": True,
    }
    assert {line: pyenv._shown(line) for line in recorded} == recorded
