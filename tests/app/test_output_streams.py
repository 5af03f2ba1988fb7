"""Where a command's words go, through the real CLI (``python -m bootstrap`` in a subprocess), as git, pip and uv do it:
the primary output on stdout (``| less``, ``| grep``, ``> file`` get it), progress, warnings, errors and questions on
stderr; and the terminal's own failures are never an internal error:

- stdout's reader gone (``| head -1``): the command ends quietly with 141 (128 + SIGPIPE, what a shell reports for
  git there); no line on stderr, no "Exception ignored" at exit;
- stdout that cannot take the bytes (``> /dev/full``, ``>&-``): one error line on stderr, not exit 0;
- no stdin (``<&-``): not a terminal, so ``install`` asks for ``--yes`` (exit 2) instead of failing on ``isatty``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from bootstrap.core.console import OUTPUT_CLOSED_EXIT
from bootstrap.core.errors import ExitCode
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import InstallBed
from tests.support.paths import TEST_DATA

HARDWARE = str(TEST_DATA / "hardware" / "no_gpu_16gb.json")


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    env.update(QWENKIT_LANG="en", QWENKIT_HOME=str(home), PYTHONPATH=str(REPO_ROOT), **extra)
    return env


def _run(argv: list[str], env: Mapping[str, str], **streams: object) -> subprocess.CompletedProcess[str]:
    kwargs: dict[str, object] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "stdin": subprocess.DEVNULL}
    kwargs.update(streams)
    return subprocess.run([sys.executable, "-m", "bootstrap", *argv], env=dict(env), cwd=REPO_ROOT, text=True,
                          timeout=120, check=False, **kwargs)  # type: ignore[call-overload]


def _into_closed_pipe(argv: list[str], env: Mapping[str, str], *, both: bool = False
                      ) -> subprocess.CompletedProcess[str]:
    """``qwenkit ARGV | head -0``: stdout is a pipe whose reader has already gone (``both``: ``2>&1`` as well)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        streams: dict[str, object] = {"stdout": write_end}
        streams["stderr"] = write_end if both else subprocess.PIPE
        return _run(argv, env, **streams)
    finally:
        os.close(write_end)


def _with_closed(fd: int, argv: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``qwenkit ARGV <&-`` (fd 0) or ``>&-`` (fd 1): the descriptor closed before the program starts (sh closes
    it, then execs the interpreter; the arguments travel as arguments, no command line is built)."""
    redirect = {0: "<&-", 1: ">&-"}[fd]
    return subprocess.run(["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m", "bootstrap", *argv],
                          env=dict(env), cwd=REPO_ROOT, text=True, timeout=120, check=False,
                          stdout=subprocess.PIPE if fd != 1 else None, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL if fd != 0 else None)


def test_models_table_goes_to_stdout_and_through_a_pipe(tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    listing = _run(["models", "--hardware", HARDWARE], env)
    assert listing.returncode == 0 and listing.stderr == "", listing.stderr
    assert "qwen3.6-35b-a3b  Qwen3.6-35B-A3B" in listing.stdout
    # `qwenkit models | cat`: a real pipe to a real reader gets the whole table
    producer = subprocess.Popen([sys.executable, "-m", "bootstrap", "models", "--hardware", HARDWARE], env=env,
                                cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert producer.stdout is not None
    cat = subprocess.run(["cat"], stdin=producer.stdout, capture_output=True, text=True, timeout=120, check=False)
    producer.stdout.close()
    assert producer.wait(timeout=120) == 0
    assert cat.stdout == listing.stdout


def test_doctor_into_a_file_has_the_table(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    with report.open("w", encoding="utf-8") as file:
        proc = _run(["doctor"], _env(tmp_path / "home"), stdout=file)
    assert proc.returncode == 0, proc.stderr
    text = report.read_text(encoding="utf-8")
    assert re.search(r"^check +verdict +details$", text, re.M) and re.search(r"^CPU +(ok|WARN|FAIL) ", text, re.M)
    assert "Verdicts: " in text
    assert "verdict" not in proc.stderr  # stderr: only the engine warning, when there is one


def test_plan_and_json_keep_their_streams(tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    human = _run(["plan", "--hardware", HARDWARE], env)
    assert human.returncode == 0 and human.stdout.startswith("Plan: ") and "llama-server -m " in human.stdout
    assert "Plan: " not in human.stderr
    as_json = _run(["plan", "--hardware", HARDWARE, "--json"], env)
    assert as_json.returncode == 0 and as_json.stdout.lstrip().startswith("{") and as_json.stdout.rstrip()[-1] == "}"


def test_json_is_kept_whole_on_a_code_page_without_chinese(tmp_path: Path) -> None:
    """A redirected stdout on Windows uses the ANSI code page (cp1252 on an English system; seen in the setup.exe
    under Wine): a ``--json`` document is data and stays exact, escaped by JSON itself."""
    env = {**_env(tmp_path / "home", PYTHONIOENCODING="cp1252"), "QWENKIT_LANG": "zh"}
    zh = _run(["plan", "--hardware", HARDWARE, "--json"], {**env, "PYTHONIOENCODING": "utf-8"})
    narrow = _run(["plan", "--hardware", HARDWARE, "--json"], env)
    assert zh.returncode == narrow.returncode == 0
    assert narrow.stdout.isascii() and "?" not in "".join(r["text"] for r in json.loads(narrow.stdout)["reasons"])
    assert json.loads(narrow.stdout)["reasons"] == json.loads(zh.stdout)["reasons"]
    assert not zh.stdout.isascii()  # where the stream can hold it, the document is written as it reads


def test_text_on_a_code_page_without_chinese_is_escaped_alike_on_both_streams(tmp_path: Path) -> None:
    """Chinese a stream's code page cannot hold becomes ``\\u5f20`` on stdout and on stderr alike (one rule for
    both: ``console._encodable``). Before, stdout showed ``?`` (Python's ``strict`` handler, replaced by the kit)
    while stderr showed the escapes (Python's ``backslashreplace``)."""
    env = {**_env(tmp_path / "home"), "QWENKIT_LANG": "zh"}
    for argv, stream in ((["plan", "--hardware", HARDWARE], "stdout"), (["plan", "no-such-model"], "stderr")):
        wide = _run(argv, {**env, "PYTHONIOENCODING": "utf-8"})
        narrow = _run(argv, {**env, "PYTHONIOENCODING": "cp1252"}, encoding="cp1252")
        assert wide.returncode == narrow.returncode
        text = getattr(wide, stream)
        assert not text.isascii(), text  # Chinese to show
        assert getattr(narrow, stream) == text.encode("cp1252", "backslashreplace").decode("cp1252"), stream


@pytest.mark.parametrize("argv", [["models", "--hardware", HARDWARE], ["models", "--hardware", HARDWARE, "--json"],
                                  ["doctor"], ["--help"], ["status"]])
@pytest.mark.parametrize("both", [False, True], ids=["stdout", "2>&1"])
def test_a_reader_gone_ends_quietly(tmp_path: Path, argv: list[str], both: bool) -> None:
    """``| head -1`` once head has exited: quiet, 141 — not "internal error" (exit 1) nor a traceback at exit."""
    home = tmp_path / "home"
    if argv == ["status"]:
        pytest.importorskip("psutil")
        home.mkdir()
    proc = _into_closed_pipe(argv, _env(home), both=both)
    if argv == ["status"]:  # nothing installed: an error on stderr only, nothing for stdout to lose
        assert proc.returncode == ExitCode.USAGE
        return
    assert proc.returncode == OUTPUT_CLOSED_EXIT, proc.stderr
    assert (proc.stderr or "") == ""


@pytest.mark.parametrize("argv", [["models", "--hardware", HARDWARE], ["doctor"], ["plan", "--hardware", HARDWARE],
                                  ["models", "--hardware", HARDWARE, "--json"]])
def test_a_full_device_is_an_error_not_exit_0(tmp_path: Path, argv: list[str]) -> None:
    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("no /dev/full on this system")
    with full.open("w", encoding="utf-8") as device:
        proc = _run(argv, _env(tmp_path / "home"), stdout=device)
    assert proc.returncode == ExitCode.UNSUPPORTED, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "error: could not write the output to stdout: No space left on device", proc.stderr
    assert lines[1].startswith("hint: ") and len(lines) == 2 and "Traceback" not in proc.stderr


def test_a_closed_stdout_is_an_error(tmp_path: Path) -> None:
    proc = _with_closed(1, ["models", "--hardware", HARDWARE], _env(tmp_path / "home"))
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert proc.stderr.startswith("error: could not write the output to stdout: ") and "Traceback" not in proc.stderr


@pytest.mark.parametrize("argv", [["install"], ["uninstall"]])
def test_no_stdin_means_not_interactive(make_bed: Callable[..., InstallBed], argv: list[str]) -> None:
    """``qwenkit install <&-``: no terminal to ask on, so the answer is ``--yes`` (exit 2), before any download."""
    bed = make_bed()
    if argv == ["uninstall"]:  # something to uninstall, so the question would come
        assert bed.install("--no-venv").returncode == 0
    proc = _with_closed(0, argv, bed.env())
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "--yes" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "isatty" not in proc.stderr


def test_installed_status_greps_and_install_report_is_output(make_bed: Callable[..., InstallBed]) -> None:
    bed = make_bed()
    installed = bed.install("--no-venv")
    assert installed.returncode == 0, installed.stderr
    # the report (endpoint, key, snippets) is the install's output; the steps before it are progress
    assert "The server answers:" in installed.stdout and "curl -sS " in installed.stdout
    assert "The server answers:" not in installed.stderr and "curl -sS " not in installed.stderr
    status = bed.run("status")
    assert status.returncode == 0, status.stderr
    grep = subprocess.run(["grep", "endpoint"], input=status.stdout, capture_output=True, text=True, check=False,
                          timeout=30)
    assert grep.returncode == 0 and "/v1" in grep.stdout  # `qwenkit status | grep endpoint`
    assert "healthy: tiny-chat answers at" in status.stdout
    # stderr: warnings only (a slow measurement on two shared cores is one)
    assert all(line.startswith("warning: ") for line in status.stderr.splitlines()), status.stderr
    # and into a closed pipe with 2>&1 (`status 2>&1 | head -1` once head is done): quiet, 141
    closed = _into_closed_pipe(["status"], bed.env(), both=True)
    assert closed.returncode == OUTPUT_CLOSED_EXIT

    # A slow measurement is the install's: said with its time under the speed lines while the server runs (issue
    # 41: status repeated it as a warning of now), and not above a stopped one's error.
    state = json.loads(bed.home.state_file.read_text(encoding="utf-8"))
    state["speed"]["verdict"] = "slow"
    bed.home.state_file.write_text(json.dumps(state), encoding="utf-8")
    slow = bed.run("status")
    assert "the server generates" in slow.stdout and "the server generates" not in slow.stderr
    assert "speed      as measured at " in slow.stdout
    assert bed.run("service", "stop").returncode == 0
    stopped = bed.run("status")
    assert stopped.returncode == ExitCode.SERVER
    assert stopped.stderr.splitlines()[0].startswith("error: "), stopped.stderr  # the error first, nothing stale
    assert "tokens/s" not in stopped.stderr + stopped.stdout
