"""``qwenkit run`` / ``qwenkit chat`` (issue 40): the chat in the terminal, driven as a user drives it.

One install for the module, made by the real CLI from the loopback hub with the test bed's engine: the default model
is the tiny Qwen chat model (the Qwen3.5/3.6 family's real template and tokenizer: it answers "Hello from the tiny
model.", with thinking on it reasons "Let me think" first; tests/support/qwen_chat_model.py), and beside it a tiny
random llama served with ``--ignore-eos`` and a 16k context, whose answers run on for thousands of tokens: the one
to stop with Ctrl-C. Two models make the server llama-server's router behind the kit's front, so ``/model`` switches
between them as a real several-model install does.

The interactive sessions run in a real pseudo-terminal (pexpect), in English and Chinese: the answer streamed,
history kept (the prompt's token count of the next turn holds the previous turn), ``/think on|off|hide``,
``/clear``, ``/model``, multi-line input, Ctrl-C mid-answer (the stream closed, the server no longer generating,
the prompt back and the next question answered), Ctrl-C at the prompt, Ctrl-D exits 0. Pipes and one-shot questions
run as subprocesses: the answer alone on stdout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
import requests

from bootstrap.core.home import Home
from bootstrap.register.managers import FallbackManager
from tests.app.test_zh_output import leaks
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import (
    QWEN_MODEL_FILE,
    QWEN_MODEL_ID,
    QWEN_MODEL_REPO,
    InstallBed,
    model_block,
    qwen_catalog_text,
    serve_engine,
    write_chat_model,
)
from tests.support.llama import free_port
from tests.support.qwen_chat_model import qwen_chat_model

LONG_ID, LONG_REPO, LONG_FILE = "tiny-long", "qwenkit-test/tiny-long-GGUF", "tiny-long-Q8_0.gguf"
ANSWER = "Hello from the tiny model."
PROMPT = ">>> "
WAIT_S = 180  # a model loaded by the router on two busy cores
COMMAND_COLUMN = re.compile(r"^  /\w+(?: \S+)? +")
ANSI = re.compile(r"\x1b\[\d+m")
STATS = re.compile(r"(?:prompt|提示词) (\d+) (?:tokens|个 token)")


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path) -> Iterator[InstallBed]:
    root = tmp_path_factory.mktemp("terminal-chat")
    with LoopbackHub(root / "hub") as hub:
        qwen_rev = hub.create_repo(QWEN_MODEL_REPO, {QWEN_MODEL_FILE: qwen_chat_model()})
        long_rev = hub.create_repo(LONG_REPO, {LONG_FILE: write_chat_model(root / "src" / LONG_FILE, seed=5)})
        bed = InstallBed(hub, Home(root / "Qwen 对话 home"), root / "catalog.toml", serve_engine(hub, engine_asset))
        bed.catalog.write_text(
            qwen_catalog_text(qwen_rev, server_args=("-c", "4096", "-t", "2"))
            + model_block(long_rev, model_id=LONG_ID, repo=LONG_REPO, file=LONG_FILE, title="Tiny long (test)",
                          server_args=("-c", "16384", "-t", "2", "--ignore-eos")), encoding="utf-8")
        try:
            first = bed.install("--no-venv", "--port", str(free_port()))
            assert first.returncode == 0, first.stderr[-3000:]
            second = bed.run("install", LONG_ID, "--yes", env=bed.env())
            assert second.returncode == 0, second.stderr[-3000:]
            yield bed
        finally:
            FallbackManager(bed.home).stop()


def chat_env(bed: InstallBed, lang: str) -> dict[str, str]:
    env = bed.env()
    for name in ("QWENKIT_LANG", "LC_ALL", "LC_MESSAGES", "LANGUAGE", "NO_COLOR"):
        env.pop(name, None)
    env["LANG"] = "zh_CN.UTF-8" if lang == "zh" else "en_US.UTF-8"
    env["TERM"] = "xterm"
    return env


def spawn(bed: InstallBed, *argv: str, lang: str = "en", sigint_ignored: bool = False,
          **extra: str) -> pexpect.spawn:
    """``qwenkit run ARGV`` in a pseudo-terminal of its own (stdin, stdout and stderr all the terminal); with
    ``sigint_ignored`` started as a shell without job control starts its ``&`` jobs (SIGINT ignored)."""
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    child = pexpect.spawn(sys.executable, ["-m", "bootstrap", "run", *argv], cwd=str(REPO_ROOT),
                          env={**chat_env(bed, lang), **extra}, encoding="utf-8", timeout=WAIT_S,
                          dimensions=(40, 200), preexec_fn=ignore)
    child.logfile_read = open(os.devnull, "w")  # noqa: SIM115 - the transcript is kept in .before
    return child


def ask(child: pexpect.spawn, line: str) -> str:
    """Type ``line`` and return what the terminal showed until the next prompt."""
    child.sendline(line)
    child.expect_exact(PROMPT)
    return str(child.before)


def quit_with_ctrl_d(child: pexpect.spawn) -> int:
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, child.signalstatus
    return int(child.exitstatus)


def prompt_tokens(shown: str) -> int:
    found = STATS.findall(shown)
    assert found, shown
    return int(found[-1])


def key(bed: InstallBed) -> str:
    return bed.home.api_key_file.read_text(encoding="utf-8").strip()


def port(bed: InstallBed) -> int:
    return int(json.loads(bed.home.state_file.read_text(encoding="utf-8"))["server"]["port"])


def generating(bed: InstallBed, model: str) -> bool:
    """Whether a slot of ``model`` is generating now (the router's ``/slots?model=``, llama.cpp
    ``tools/server/README.md``)."""
    with requests.Session() as session:
        session.trust_env = False
        resp = session.get(f"http://127.0.0.1:{port(bed)}/slots", params={"model": model},
                           headers={"Authorization": f"Bearer {key(bed)}"}, timeout=30)
    assert resp.status_code == 200, resp.text
    return any(slot.get("is_processing") for slot in resp.json())


def stop_long_answer(bed: InstallBed, child: pexpect.spawn, stopped: str) -> None:
    """Ask the long model, wait until its answer streams, Ctrl-C: the answer stops (``stopped`` said), the server no
    longer generates for it, and the prompt is back."""
    child.sendline("Tell me a very long story.")
    child.expect(r"story\.\r\n")  # the line echoed
    child.expect(r"[\s\S]{200}")  # the answer streaming: 200 characters of it on screen
    assert generating(bed, LONG_ID)
    child.sendcontrol("c")
    child.expect_exact(stopped)
    child.expect_exact(PROMPT)
    assert child.isalive()
    deadline = time.monotonic() + 60
    while generating(bed, LONG_ID):  # the closed stream ends the generation (16k tokens would take minutes)
        assert time.monotonic() < deadline, "the server still generates for a stopped answer"
        time.sleep(0.5)


def test_terminal_chat_session_in_english(bed: InstallBed) -> None:
    child = spawn(bed, "--verbose")
    child.expect_exact(f"Chatting with {QWEN_MODEL_ID} at http://127.0.0.1:")
    child.expect_exact(PROMPT)

    first = ask(child, "hello")
    assert ANSWER in first and "Thinking" not in first
    second = ask(child, "hello")  # the same question: its prompt holds the first turn too
    assert ANSWER in second
    assert prompt_tokens(second) > prompt_tokens(first) + 5, (first, second)

    shown = ask(child, "/think on")
    assert "Thinking: on; reasoning shown." in shown
    thought = ask(child, "hello")
    # the reasoning dimmed (each streamed piece), between the two lines Ollama shows, then the answer
    assert "\x1b[2mThinking...\x1b[0m" in thought and "\x1b[2mLet\x1b[0m" in thought, thought
    assert "\x1b[2m...done thinking.\x1b[0m" in thought
    assert f"Thinking...\r\nLet me think\r\n...done thinking.\r\n\r\n{ANSWER}" in ANSI.sub("", thought), thought
    assert "reasoning hidden" in ask(child, "/think hide")
    hidden = ask(child, "hello")
    assert ANSWER in hidden and "Let me think" not in hidden and "Thinking" not in hidden
    assert "Thinking: off; reasoning hidden." in ask(child, "/think off")
    assert "Let me think" not in ask(child, "/think show") + ask(child, "hello")

    assert "Conversation cleared" in ask(child, "/clear")
    fresh = ask(child, "hello")  # the conversation forgotten: the prompt is the first turn's again
    assert prompt_tokens(fresh) == prompt_tokens(first), (first, fresh)

    # several lines: a """ block and a trailing backslash each send one message (one answer)
    child.sendline('"""first line')
    child.sendline("second line")
    multi = ask(child, 'third line"""')
    assert multi.count(ANSWER) == 1 and "... " in multi
    child.sendline("one \\")
    assert ask(child, "two").count(ANSWER) == 1

    unknown = ANSI.sub("", ask(child, "/model nosuch"))  # the error label in red
    assert f"error: the model 'nosuch' is not installed here (installed: {QWEN_MODEL_ID}, {LONG_ID})" in unknown
    assert "unknown command /frobnicate: /help lists them" in ask(child, "/frobnicate")
    assert "/think on|off" in ask(child, "/help")
    assert f"Now chatting with {LONG_ID}" in ask(child, f"/model {LONG_ID}")
    stop_long_answer(bed, child, "(answer stopped)")
    assert f"Now chatting with {QWEN_MODEL_ID}" in ask(child, f"/model {QWEN_MODEL_ID}")
    assert ANSWER in ask(child, "are you still there?")  # alive, and the stopped turn did not break the history

    child.sendcontrol("c")  # at the prompt: says how to quit, does not quit
    child.expect_exact("('Ctrl+C' again, /bye or 'Ctrl+D' quits)")
    child.expect_exact(PROMPT)
    assert child.isalive()
    assert quit_with_ctrl_d(child) == 0


def test_ctrl_c_works_where_the_parent_ignores_sigint(bed: InstallBed) -> None:
    """A chat started from a background job of a shell without job control (SIGINT ignored, inherited) still stops
    an answer and quits on Ctrl-C. Before, Python installed no KeyboardInterrupt there: the answer ran to its end
    (seen in a full suite run started so)."""
    child = spawn(bed, "--verbose", sigint_ignored=True)
    child.expect_exact(PROMPT)
    assert f"Now chatting with {LONG_ID}" in ask(child, f"/model {LONG_ID}")
    stop_long_answer(bed, child, "(answer stopped)")
    child.sendcontrol("c")
    child.expect_exact("('Ctrl+C' again, /bye or 'Ctrl+D' quits)")
    child.expect_exact(PROMPT)
    child.sendcontrol("c")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, (child.exitstatus, child.signalstatus)


def test_terminal_chat_session_in_chinese(bed: InstallBed) -> None:
    child = spawn(bed, "--verbose", lang="zh", NO_COLOR="1")
    child.expect_exact(f"正在与 {QWEN_MODEL_ID} 对话（http://127.0.0.1:")
    child.expect_exact(PROMPT)
    banner = str(child.before) + str(child.after)
    said = [banner]
    first = ask(child, "你好")
    assert ANSWER in first and "提示词" in first
    second = ask(child, "你好")
    assert prompt_tokens(second) > prompt_tokens(first) + 5, (first, second)

    said.append(ask(child, "/think on"))
    assert "思考模式：开启；推理过程显示。" in said[-1]
    thought = ask(child, "你好")
    assert "思考中……" in thought and "Let me think" in thought and "……思考结束。" in thought
    assert "\x1b[" not in thought  # NO_COLOR: no styles
    said.append(ask(child, "/think off"))
    said.append(ask(child, "/clear"))
    assert "对话已清空" in said[-1]
    said.append(ask(child, "/help"))
    said.append(ask(child, "/model nosuch"))
    assert "错误：这里没有安装模型“nosuch”" in said[-1]
    said.append(ask(child, "/nosuch"))
    said.append(ask(child, f"/model {LONG_ID}"))
    stop_long_answer(bed, child, "（回答已停止）")
    said.append(ask(child, f"/model {QWEN_MODEL_ID}"))
    assert ANSWER in ask(child, "还在吗？")
    child.sendcontrol("c")
    child.expect_exact("（再按一次 'Ctrl+C'、输入 /bye 或按 'Ctrl+D' 即可退出）")
    said.append(str(child.before) + str(child.after))
    child.expect_exact(PROMPT)
    child.sendcontrol("c")  # twice in a row: quits
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    # what was typed is not checked, nor the command column of /help (syntax to type, as argparse's option column)
    lines = [COMMAND_COLUMN.sub("", line) for block in said for line in block.splitlines()
             if not line.startswith(("/", PROMPT))]
    found = leaks("\n".join(lines), literals=(QWEN_MODEL_ID, LONG_ID, "nosuch"))
    assert found == [], "\n".join(found)


def run_cli(bed: InstallBed, *argv: str, stdin: str | None = None, lang: str = "en",
            command: str = "run") -> subprocess.CompletedProcess[str]:
    """``qwenkit run ARGV`` with stdin a pipe holding ``stdin`` (or /dev/null), stdout and stderr pipes."""
    env = chat_env(bed, lang)
    return subprocess.run([sys.executable, "-m", "bootstrap", command, *argv], cwd=REPO_ROOT, env=env,
                          input=stdin if stdin is not None else "", capture_output=True, text=True, timeout=WAIT_S,
                          check=False)


def test_run_command_in_a_pipe_prints_the_answer_only(bed: InstallBed) -> None:
    proc = run_cli(bed, stdin="hello\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ANSWER + "\n"
    assert proc.stderr == ""  # no banner, no prompt
    thinking = run_cli(bed, "--think", "on", stdin="hello\n")  # reasoning is never written into a pipe
    assert thinking.returncode == 0, thinking.stderr
    assert thinking.stdout == ANSWER + "\n" and "think" not in thinking.stderr.lower()


def test_run_command_one_shot_and_the_chat_alias(bed: InstallBed) -> None:
    proc = run_cli(bed, QWEN_MODEL_ID, "What", "is", "this?")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, ANSWER + "\n", "")
    alias = run_cli(bed, QWEN_MODEL_ID, "你好", command="chat", lang="zh", stdin="更多内容")
    assert (alias.returncode, alias.stdout) == (0, ANSWER + "\n"), alias.stderr


def test_run_command_refuses_an_unknown_model_and_an_empty_question(bed: InstallBed) -> None:
    proc = run_cli(bed, "qwen-nosuch", "hello")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[0] == (f"error: the model 'qwen-nosuch' is not installed here (installed: "
                                           f"{QWEN_MODEL_ID}, {LONG_ID})")
    assert proc.stdout == ""
    zh = run_cli(bed, "qwen-nosuch", lang="zh")
    assert zh.returncode == 2 and "错误：这里没有安装模型“qwen-nosuch”" in zh.stderr and "提示：" in zh.stderr
    assert leaks(zh.stderr, literals=(QWEN_MODEL_ID, LONG_ID)) == []
    empty = run_cli(bed, stdin="")
    assert empty.returncode == 2 and "error: nothing to ask: stdin was empty" in empty.stderr


def test_run_command_with_a_refused_key_says_so(bed: InstallBed) -> None:
    """The key file no longer matches the running server (replaced by hand): one line, exit 2, and the file is
    put back for the other tests."""
    original = bed.home.api_key_file.read_bytes()
    try:
        bed.home.api_key_file.write_text("sk-not-the-servers-key\n", encoding="utf-8")
        proc = run_cli(bed, stdin="hello")
    finally:
        bed.home.api_key_file.write_bytes(original)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "refused the key (HTTP 401)" in proc.stderr and proc.stdout == ""
    # the server runs: the hint is the restart that gives it the file's key, not "start it" (was launch's hint)
    assert "hint: The key file and the running server disagree: 'qwenkit service restart'" in proc.stderr


def test_run_command_with_the_server_down_exits_6(bed: InstallBed) -> None:
    stop = bed.run("service", "stop", env=bed.env())
    assert stop.returncode == 0, stop.stderr
    try:
        proc = run_cli(bed, stdin="hello")
        zh = run_cli(bed, stdin="你好", lang="zh")
    finally:
        start = bed.run("service", "start", env=bed.env())
        assert start.returncode == 0, start.stderr
    assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stderr
    assert "does not answer" in proc.stderr and "hint: Start it with 'qwenkit service start'" in proc.stderr
    assert zh.returncode == 6 and "'qwenkit service start'" in zh.stderr
    assert leaks(zh.stderr) == []
