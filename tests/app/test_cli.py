"""The command-line contract of DESIGN.md §2: version, help, exit codes, one-line errors, zh/en."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from bootstrap import __version__
from bootstrap.app import cli
from bootstrap.core import console
from bootstrap.core.errors import (
    ExitCode,
    IntegrityError,
    QwenKitError,
    ServerError,
    SourceError,
    UnsupportedMachine,
    UsageError,
    exit_code_for,
)
from bootstrap.core.messages import MESSAGES

CONTRACT = ["doctor", "plan", "models", "download", "install", "status", "logs", "service", "bundle", "uninstall",
            "launch"]
# A minimal invocation of each command that parses (its arguments are part of the contract).
INVOCATIONS = {
    "doctor": ["doctor", "--json"],
    "plan": ["plan", "qwen3.6-35b-a3b", "--hardware", "hw.json", "--ctx", "8192", "--json"],
    "models": ["models", "--hardware", "hw.json", "--json"],
    "download": ["download", "hf:unsloth/Qwen3.6-35B-A3B-GGUF/mmproj-F16.gguf", "--source", "hf", "--dest", "d"],
    "install": ["install", "qwen3.6-35b-a3b:UD-IQ4_XS", "--source", "modelscope", "--home", "h", "--host",
                "127.0.0.1", "--port", "8081", "--no-service", "--yes", "--thinking", "off"],
    "status": ["status", "--json"],
    "logs": ["logs", "-f", "-n", "20"],
    "service": ["service", "status"],
    "bundle": ["bundle", "create", "--out", "usb", "--platform", "linux-x64", "--platform", "windows-x64-cpu"],
    "uninstall": ["uninstall", "--keep-models", "--yes"],
    "launch": ["launch", "claude", "--model", "m", "--yes"],
}


def run_cli(*args: str, lang: str = "en_US.UTF-8") -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it: a fresh interpreter, ``python -m bootstrap``."""
    env = {**os.environ, "LANG": lang, "LC_ALL": lang, "QWENKIT_LANG": ""}
    return subprocess.run([sys.executable, "-m", "bootstrap", *args], capture_output=True, text=True, env=env,
                          timeout=60)


pytestmark = pytest.mark.usefixtures("english")


def test_version_matches_package() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"qwenkit {__version__}"


def test_console_script_is_installed() -> None:
    exe = os.path.join(os.path.dirname(sys.executable), "qwenkit")
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and __version__ in proc.stdout


def test_help_lists_every_command_of_the_contract() -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    for name in CONTRACT:
        assert f"\n    {name} " in proc.stdout, name
    assert "selfcheck" not in proc.stdout  # internal command stays hidden


@pytest.mark.parametrize("name", CONTRACT)
def test_every_command_of_the_contract_parses(name: str) -> None:
    args = cli.build_parser().parse_args(INVOCATIONS[name])
    assert args.command == name and name in cli.COMMANDS


@pytest.mark.parametrize("argv", [["plan", "--ctx", "lots"], ["service", "reload"], ["bundle"],
                                  ["frobnicate"], ["install", "--port"]])
def test_bad_usage_is_one_line_and_exit_2(argv: list[str]) -> None:
    proc = run_cli(*argv)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    error_lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(error_lines) == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("hint: ") and last.endswith("Run 'qwenkit --help' for usage.")  # maybe a guess first


@pytest.mark.parametrize(("argv", "error"), [
    (["install", "--ctx", "\u00b2", "--yes"], "error: Argument --ctx: invalid int value '\u00b2'."),
    (["install", "--ctx", "4096\u00b2", "--yes"], "error: Argument --ctx: invalid int value '4096\u00b2'."),
    (["install", "--rpc", "10.0.0.1:\u00b2", "--yes"], "error: 10.0.0.1:\u00b2 is not IP:PORT"),
    (["plan", "--rpc", "10.0.0.1:5005\u00b9"], "error: 10.0.0.1:5005\u00b9 is not IP:PORT"),
])
def test_look_alike_digits_are_bad_input_not_a_crash(argv: list[str], error: str, tmp_path: Path) -> None:
    """``str.isdigit()`` accepts superscript digits that ``int()`` refuses: a number typed with one was an internal
    error (exit 1, "ValueError: invalid literal for int()"). It is bad input (exit 2), refused before a home is
    made (``input_checks.decimal_int``, the one test before every ``int()`` of outside text)."""
    home = tmp_path / "home"
    env = {**os.environ, "LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8", "QWENKIT_LANG": "", "QWENKIT_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "bootstrap", *argv], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == error and lines[1].startswith("hint: ") and len(lines) == 2, proc.stderr
    assert not home.exists()


@pytest.mark.parametrize(("argv", "lang", "error", "hint"), [
    (["instal"], "en_US.UTF-8", "error: Unknown command 'instal'.",
     "hint: Did you mean 'install', 'uninstall'? Run 'qwenkit --help' for usage."),
    (["instal"], "zh_CN.UTF-8", "错误：未知命令 'instal'。",
     "提示：您是不是想输入 'install'、'uninstall'？运行 'qwenkit --help' 查看用法。"),
    (["selfchek"], "en_US.UTF-8", "error: Unknown command 'selfchek'.", "hint: Run 'qwenkit --help' for usage."),
    (["service", "stat"], "en_US.UTF-8",
     "error: Argument ACTION: invalid choice 'stat' (choose from install, start, stop, restart, status, uninstall).",
     "hint: Did you mean 'start', 'status', 'restart'? Run 'qwenkit --help' for usage."),
    (["service", "stat"], "zh_CN.UTF-8",
     "错误：参数 ACTION：无效的选择 'stat'（可选：install、start、stop、restart、status、uninstall）。",
     "提示：您是不是想输入 'start'、'status'、'restart'？运行 'qwenkit --help' 查看用法。"),
    (["install", "--port"], "zh_CN.UTF-8", "错误：参数 --port 需要一个值。", "提示：运行 'qwenkit --help' 查看用法。"),
    (["plan", "--ctx", "lots"], "zh_CN.UTF-8", "错误：参数 --ctx：无效的整数值 'lots'。",
     "提示：运行 'qwenkit --help' 查看用法。"),
    (["bundle"], "zh_CN.UTF-8", "错误：缺少必需的参数：ACTION。", "提示：运行 'qwenkit --help' 查看用法。"),
    (["install", "--no"], "zh_CN.UTF-8", "错误：选项 --no 有歧义：可能是 --no-service, --no-venv。",
     "提示：运行 'qwenkit --help' 查看用法。"),
    (["status", "--json=1"], "zh_CN.UTF-8", "错误：参数 --json 不接受取值（收到 '1'）。",
     "提示：运行 'qwenkit --help' 查看用法。"),
    (["status", "extra"], "zh_CN.UTF-8", "错误：无法识别的参数：extra。", "提示：运行 'qwenkit --help' 查看用法。"),
])
def test_usage_errors_are_localized_and_suggest(argv: list[str], lang: str, error: str, hint: str) -> None:
    proc = run_cli(*argv, lang=lang)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [error, hint]


@pytest.mark.parametrize(("argv", "answers", "expected"), [
    ([], {}, None), (["--thinking", "on"], {}, True), (["--thinking", "off"], {"thinking": True}, False),
    ([], {"thinking": False}, False),
])
def test_install_thinking_from_the_command_line_or_the_answers_file(argv: list[str], answers: dict[str, bool],
                                                                    expected: bool | None) -> None:
    from bootstrap.app.commands import install

    args = cli.build_parser().parse_args(["install", *argv])
    request, _ = install._request(args, answers)
    assert request.thinking is expected


def test_no_command_prints_help_and_exits_2() -> None:
    proc = run_cli()
    assert proc.returncode == 2
    assert "usage: qwenkit" in proc.stderr and "error: No command given." in proc.stderr


def test_chinese_locale_speaks_chinese() -> None:
    proc = run_cli("bundle", "verify", "x", lang="zh_CN.UTF-8")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == "错误：x 不是离线安装包（缺少 payload/manifest.json）"
    help_zh = run_cli("--help", lang="zh_CN.UTF-8").stdout
    assert help_zh.startswith("用法：qwenkit") and "下载模型" in help_zh and "\n选项：\n" in help_zh
    assert "usage:" not in help_zh and "options:" not in help_zh and "show this help" not in help_zh


def test_qwenkit_lang_overrides_locale() -> None:
    env = {**os.environ, "LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8", "QWENKIT_LANG": "zh"}
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "bundle", "verify", "x"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.stderr.startswith("错误：")


@pytest.mark.parametrize(("hint", "langid", "expected"), [
    ("zh_CN.UTF-8", None, "zh"), ("zh_TW", None, "zh"), ("zh-Hans", None, "zh"),
    ("Chinese (Simplified)_China", None, "zh"),
    ("en_US.UTF-8", None, "en"), ("de_DE", 0x0804, "en"), ("C", None, "en"), ("C.UTF-8", 0x0804, "zh"),
    (None, 0x0804, "zh"), (None, 0x0404, "zh"), (None, 0x0409, "en"), (None, None, "en"),
])
def test_language_detection(hint: str | None, langid: int | None, expected: str) -> None:
    assert console.language_from(hint, langid) == expected


def test_every_message_has_english_and_chinese() -> None:
    for key, texts in MESSAGES.items():
        assert set(texts) == {"en", "zh"}, key
        assert texts["en"].isascii(), key
        assert any("\u4e00" <= ch <= "\u9fff" for ch in texts["zh"]), key
        # the same {fields} in both languages, so formatting never raises in one of them
        assert sorted(_fields(texts["en"])) == sorted(_fields(texts["zh"])), key


def test_every_chinese_hint_ends_as_a_sentence() -> None:
    """A hint is a sentence a person acts on: in Chinese it ends with 。 (or ？/！), also for hints no run of the zh
    output test happens to print (issue 24: hints without 。)."""
    hints = {key: texts["zh"] for key, texts in MESSAGES.items()
             if key.rsplit(".", 1)[-1].startswith("hint") and key != "label.hint"}
    assert len(hints) > 50  # the catalogue's hints are many: few found means a broken scan
    assert [key for key, zh in hints.items() if not zh.rstrip().endswith(("。", "？", "！"))] == []


def test_every_message_key_in_the_code_exists() -> None:
    """A key missing from ``MESSAGES`` prints as the bare key: every literal ``t("…")`` must name a message."""
    import re

    root = Path(cli.__file__).resolve().parents[1]
    missing = [(path.relative_to(root).as_posix(), key) for path in sorted(root.rglob("*.py"))
               for key in re.findall(r'\bt\(\s*"([a-z_]+\.[A-Za-z0-9_.]+)"', path.read_text(encoding="utf-8"))
               if key not in MESSAGES]
    assert missing == []


def test_every_plan_reason_has_its_printed_topic() -> None:
    """``plan`` prints each reason under ``t(f"plan.topic_{topic}")``: a topic without its message was an internal
    error for every plan with RPC workers (``cache_ram``, ``rpc``)."""
    import re

    root = Path(cli.__file__).resolve().parents[1]
    topics = {topic for path in sorted(root.rglob("*.py"))
              for topic in re.findall(r'\bReason\(\s*"([a-z_]+)"', path.read_text(encoding="utf-8"))}
    assert len(topics) > 10  # the planner's topics are many: few found means a broken scan
    assert sorted(topic for topic in topics if f"plan.topic_{topic}" not in MESSAGES) == []


def _fields(text: str) -> list[str]:
    import string

    return [name for _, name, _, _ in string.Formatter().parse(text) if name]


def test_exit_codes_match_design() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 6, 130, 141]  # 141: stdout's reader gone (| head)
    cases = {UsageError: 2, UnsupportedMachine: 3, SourceError: 4, IntegrityError: 5,
             ServerError: 6, QwenKitError: 1}
    for cls, code in cases.items():
        assert exit_code_for(cls("x")) == code, cls
    assert exit_code_for(KeyboardInterrupt()) == 130
    assert exit_code_for(ValueError("bug")) == 1


def _fake_command(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """A command module that raises ``exc``: exercises the entry point's error boundary end to end."""
    module = types.ModuleType("bootstrap.app.commands._raises")

    def run(args: object) -> int:
        raise exc

    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bootstrap.app.commands._raises", module)
    monkeypatch.setitem(cli.COMMANDS, "status", "_raises")


@pytest.mark.parametrize(("exc", "code", "first_line"), [
    (SourceError("huggingface.co unreachable", "Rerun to resume."), 4, "error: huggingface.co unreachable"),
    (IntegrityError("sha256 mismatch for x.gguf"), 5, "error: sha256 mismatch for x.gguf"),
    (KeyboardInterrupt(), 130, "Interrupted; rerun the same command to continue (downloads resume)."),
    (ZeroDivisionError("division by zero"), 1, "error: Internal error: ZeroDivisionError: division by zero"),
])
def test_error_boundary(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                        exc: BaseException, code: int, first_line: str) -> None:
    _fake_command(monkeypatch, exc)
    assert cli.main(["status"]) == code
    err = capsys.readouterr().err
    assert err.splitlines()[0] == first_line
    assert "Traceback" not in err


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _fake_command(monkeypatch, ZeroDivisionError("division by zero"))
    assert cli.main(["--debug", "status"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "ZeroDivisionError" in err
