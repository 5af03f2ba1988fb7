"""No English leaks into a Chinese session: every command's common paths, run as a user runs them (the real CLI in a
subprocess under ``LANG=zh_CN.UTF-8``, the test bed's engine, model and loopback hub), print Chinese text only.

What is checked is the text a person reads (stderr, and stdout without ``--json``). A line fails on any ASCII word of
three or more letters left after taking out what is not prose: quoted literals ('qwenkit install', a typo'd value),
URLs, paths and file names, options (``--port``), environment variables, and the short allow-list below. It also
fails on the half-width punctuation Chinese does not use: an ASCII colon right after Chinese text, an ASCII ``(``,
``)``, ``,`` or ``;`` touching it (zh uses ：（），；), a space between two Chinese characters, and a hint line that
does not end as a Chinese sentence does (。！？).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bootstrap.catalog.models import load_catalog
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import MODEL_ID, InstallBed

# Words that stay in Latin letters in Chinese text, each for a reason:
ALLOWED = frozenset({
    # the product, the engine and the model hubs: names
    "QwenClientKit", "qwenkit", "Qwen", "llama", "cpp", "server", "params", "GGUF", "Hugging", "Face", "ModelScope",
    "OpenAI", "SDK", "Jinja",
    # the model titles and quants of the catalogs (real and test) and the recorded hardware: names
    "Tiny", "chat", "test", "Gemma", "NVIDIA", "GeForce", "RTX", "Tesla", "Apple", "CUDA", "Vulkan", "Metal",
    "AVX", "AMX", "Intel", "AMD", "Ryzen", "Core", "Xeon", "EPYC", "Radeon", "Arc", "Graphics", "UHD", "XTX",
    "Raphael", "UMA", "BIOS",
    # hardware and protocol acronyms that Chinese technical text writes in Latin letters
    "CPU", "GPU", "RAM", "VRAM", "DDR", "API", "HTTP", "HTTPS", "URL", "DNS", "TCP", "SHA", "JSON", "TOML", "TLS",
    "SSL", "MoE", "SWA",
    # units
    "GiB", "MiB", "KiB", "GHz",
    # terms with no settled Chinese word: token (词元 is rare), the KV cache, flash attention, venv and pip (tools)
    "token", "tokens", "flash", "attention", "venv", "pip",
    # operating systems and their service managers: names
    "Web",  # "Web 服务器" is how Chinese writes a web server
    "Linux", "Windows", "macOS", "Ubuntu", "Debian", "systemd", "launchd", "WinSW", "Python", "PowerShell",
    # the agent clients and the tools they come with (qwenkit launch): names
    "Claude", "Code", "Codex", "CLI", "OpenCode", "Aider", "Node", "npm", "Open", "WebUI", "Docker",
})
# The command words a user types (``qwenkit install``, ``service status``, ``bundle create``) and the --source values
# (``auto``, ``hf``, ``modelscope``): literals, named as typed.
COMMAND_WORDS = frozenset({"doctor", "plan", "models", "download", "install", "status", "logs", "service", "bundle",
                           "uninstall", "remove", "start", "stop", "restart", "create", "verify", "auto", "modelscope",
                           "curl", "team", "refresh", "users", "launch", "run",
                           # the clients 'launch' starts or prints settings for, named as typed
                           "claude", "codex", "opencode", "aider", "openwebui", "dify", "cherry", "studio",
                           "continue", "langchain", "llamaindex"})
_NOT_PROSE = [
    re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`"),  # quoted literals: commands to type, values the user gave
    re.compile(r"\{[^}]*\}"),  # argparse's choices ({on,off})
    re.compile(r"\w+://\S+"),  # URLs
    re.compile(r"(?:[A-Za-z]:)?[\w.~-]*[/\\][^\s，。；：（）]*"),  # paths (anything with a slash)
    re.compile(r"(?<![\w.])--?[A-Za-z][\w-]*"),  # options
    re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"),  # environment variables
    re.compile(r"\b[\w-]+(?:\.[\w-]+)+\b"),  # dotted names: files, hosts, versions (state.json, modelscope.cn)
    re.compile(r"(?<!\w)\.[a-z]+\b"),  # a file type (.gguf)
    re.compile(r"\bqwen[\w.:-]*|\b[\w.-]*-(?:Q|IQ|UD-|BF|F)\w*|\b(?:UD-)?I?Q\d\w*"),  # model ids and quants
    re.compile(r"\b[a-z]+(?:-[a-z0-9.]+)+\b"),  # hyphenated ids: engine builds (ubuntu-x64), managers, model ids
    re.compile(r"\b[A-Z]{2,}\b"),  # upper-case metavars and acronyms (MODEL, FILE, GPU): names, not sentences
]
# Lines that are not the kit's prose: a command line it prints to copy (``llama-server …``), the model's own reply
# in the verify report, and the code of the curl / Python snippets (between their first and last line).
_NOT_OURS = re.compile(r"^(?:\$ qwenkit |llama-server |  回复内容)")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_WORD = re.compile(r"[A-Za-z]{3,}")
_ASCII_COLON_AFTER_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]:")
_HALF_WIDTH_BY_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef] ?[(),;]|[(),;] ?[\u4e00-\u9fff]")
_SPACE_IN_CJK = re.compile(r"[\u4e00-\u9fff] [\u4e00-\u9fff]")
_COMMA_SPACE = re.compile(r", ")  # a list or a clause after an ASCII comma: 、 or ， in a Chinese line
_SPACE_AFTER_STOP = re.compile(r"[。；！？：] +\S")  # "内存不足。 上下文…": sentences run together in Chinese
# argparse's own syntax: an option column ("  -h, --help", "  --rpc IP:PORT,...") and its usage line
_OPTION_COLUMN = re.compile(r"^\s*(?:-{1,2}[\w-]+(?: [A-Z][\w.:,\[\]|]*)?(?:, )?)+\s")
_USAGE = "用法："
_LONE_ELLIPSIS = re.compile(r"(?<![…\w}\]])…(?!…)|(?<=[\u4e00-\u9fff])…(?!…)|\.\.\.")  # Chinese writes ……
_HINT = "提示："  # console.label("label.hint") in Chinese
_SENTENCE_END = ("。", "！", "？")


def _prose_lines(text: str) -> list[str]:
    """The lines to check: without command lines, the model's reply, and snippet code (from ``curl`` or
    ``# pip install`` to the next line of Chinese text)."""
    lines, in_code = [], False
    for line in text.splitlines():
        if line.startswith(("curl ", "# pip install")):
            in_code = True
        elif in_code and _CJK.match(line):
            in_code = False
        if not in_code and not _NOT_OURS.match(line):
            lines.append(line)
    return lines


def _punctuation(line: str, literals: tuple[str, ...]) -> list[str]:
    """Half-width punctuation in Chinese prose (quoted literals and ``literals`` — a home named by the user — are
    not prose), and a hint that is not a finished sentence."""
    prose = line
    for literal in sorted(literals, key=len, reverse=True):  # "Qwen3.6-35B-A3B (MTP)" before "Qwen3.6-35B-A3B"
        prose = prose.replace(literal, "_")
    prose = _NOT_PROSE[0].sub("_", prose)
    problems = []
    if _ASCII_COLON_AFTER_CJK.search(line):
        problems.append("':' after Chinese")
    if _HALF_WIDTH_BY_CJK.search(prose):
        problems.append("half-width (),; by Chinese")
    if _SPACE_IN_CJK.search(prose):
        problems.append("a space between Chinese characters")
    text = _OPTION_COLUMN.sub("", prose)
    if _CJK.search(text) and _COMMA_SPACE.search(text) and not line.startswith(_USAGE):
        problems.append("a half-width comma in a Chinese line")
    if _SPACE_AFTER_STOP.search(text):
        problems.append("a space after a Chinese stop")
    if _CJK.search(text) and _LONE_ELLIPSIS.search(text) and not line.startswith(_USAGE):
        problems.append("an ellipsis that is not ……")
    if line.startswith(_HINT) and not line.rstrip().endswith(_SENTENCE_END):
        problems.append("a hint without 。")
    return problems


def leaks(text: str, literals: tuple[str, ...] = ()) -> list[str]:
    """Each line with English prose left in it, or half-width punctuation in Chinese (``_punctuation``);
    ``literals`` (a home whose name has spaces) are taken out first."""
    found = []
    for line in _prose_lines(text):
        rest = line
        for literal in literals:
            rest = rest.replace(literal, " ")
        for pattern in _NOT_PROSE:
            rest = pattern.sub(" ", rest)
        words = [w for w in _WORD.findall(rest) if w not in ALLOWED and w not in COMMAND_WORDS]
        problems = _punctuation(line, literals)
        if words or problems:
            found.append(f"{line!r} -> {words + problems}")
    return found


def test_the_checker_catches_english_and_ascii_colons() -> None:
    assert leaks("错误：无法连接下载源 hf（huggingface.co）：域名解析失败") == []
    assert leaks("  内存          内存 0.1 / 9.5 GiB；不使用 GPU") == []
    assert leaks("运行 'qwenkit install --verify' 重新校验 /tmp/x y/state.json") == []
    assert leaks("服务状态：not running") and leaks("错误: 未知命令") and leaks("  variant   ubuntu-x64")


def test_the_checker_catches_half_width_punctuation_and_unfinished_hints() -> None:
    assert leaks("方案：Tiny chat Q8_0，运行于处理器（CPU）") == []
    assert leaks("提示：请运行 'qwenkit install --yes'。") == []
    assert leaks("已删除：state.json、run_qwen.sh") == []
    assert leaks("方案：Tiny chat Q8_0，运行于 处理器（CPU）")  # a space between two Chinese characters
    # issue 41's: lists and clauses with ASCII commas, a space after a stop, a lone ellipsis
    assert leaks("删除：state.json, run_qwen.sh") and leaks("服务       进程 17398, /health 200")
    assert leaks("正在安装 openai, qwenclientkit") and leaks("内存不足。 上下文检查点") and leaks("正在加载模型… 3 秒")
    assert leaks("SHA-256 ab12cd…，清单为 ef34…") == []  # a hash cut short: not prose
    assert leaks("Qwen3.6-27B (dense)，本机放不下")  # a title left in English
    assert leaks("内存不足(需要 2.0 GiB)") and leaks("已删除：引擎,模型") and leaks("失败;请重试")
    assert leaks("提示：请运行 qwenkit install")  # a hint without 。


@pytest.fixture
def zh_bed(make_bed: Callable[..., InstallBed]) -> Iterator[tuple[InstallBed, dict[str, str]]]:
    bed = make_bed()
    env = bed.env()
    for name in ("QWENKIT_LANG", "LC_ALL", "LC_MESSAGES", "LANGUAGE"):
        env.pop(name, None)
    env["LANG"] = "zh_CN.UTF-8"
    yield bed, env


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _text(bed: InstallBed, env: dict[str, str], *argv: str, codes: tuple[int, ...] = (0,)) -> str:
    proc = bed.run(*argv, env=env)
    assert proc.returncode in codes, (argv, proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    return f"$ qwenkit {' '.join(argv)}\n{proc.stdout}{proc.stderr}"


def test_every_command_speaks_chinese(zh_bed: tuple[InstallBed, dict[str, str]], tmp_path: Path) -> None:
    bed, env = zh_bed
    real_catalog = {k: v for k, v in env.items() if k != "QWENKIT_CATALOG"}  # the shipped catalog: shape facts
    dead = f"http://127.0.0.1:{_dead_port()}"
    outputs = [_text(bed, env, "--help")]
    for command in ("doctor", "plan", "models", "download", "install", "status", "service", "bundle", "remove",
                    "uninstall", "team", "launch", "run"):
        outputs.append(_text(bed, env, command, "--help"))
    outputs += [
        _text(bed, env, "doctor"),
        _text(bed, env, "plan"),
        *(_text(bed, real_catalog, "plan", "--hardware", str(p))
          for p in sorted((REPO_ROOT / "tests" / "data" / "hardware").glob("*.json"))),
        _text(bed, env, "models"),
        _text(bed, env, "status", codes=(2,)),
        _text(bed, env, "instal", codes=(2,)),
        _text(bed, env, "install", "--prot", "1", codes=(2,)),
        _text(bed, env, "plan", "--ctx", "lots", codes=(2,)),
        _text(bed, env, "service", "stat", codes=(2,)),
        _text(bed, env, "install", "--yes", "--home", "/proc/qwenkit-none", codes=(2,)),  # the OS's reason
        _text(bed, env, "install", "--answers", str(tmp_path / "missing.toml"), codes=(2,)),
        _text(bed, {**env, "QWENKIT_HF_ENDPOINT": dead, "QWENKIT_MODELSCOPE_ENDPOINT": dead},
              "download", MODEL_ID, "--dest", str(tmp_path / "dl"), codes=(4,)),
        # --thinking on: the tiny model has no thinking mode of its own; named, its lines and snippet comments show
        _text(bed, env, "install", "--yes", "--no-service", "--no-venv", "--thinking", "on"),
        _text(bed, env, "status"),
        # the tiny model has no chat template (--no-jinja): an agent client is refused with the install's reason
        _text(bed, _with_stand_in(env, tmp_path, "claude"), "launch", "claude", "--yes", "--", "-p", "hi",
              codes=(2,)),
        _text(bed, {**env, "PATH": str(tmp_path)}, "launch", "codex", codes=(3,)),  # not installed: how to get it
        _text(bed, env, "launch", "--print", "openwebui"),
        _text(bed, env, "launch", "claude", "--restore"),
        _text(bed, env, "service", "status", codes=(0, 3, 6)),
        _text(bed, env, "service", "stop"),
        _text(bed, _with_stand_in(env, tmp_path, "claude"), "launch", "claude", codes=(6,)),  # no server: say so
        _text(bed, env, "status", codes=(0, 6)),  # installed, the server down: what is wrong and how to start it
        _text(bed, env, "service", "status", codes=(0, 3, 6)),
        _text(bed, env, "uninstall", "--yes"),
        _text(bed, env, "status", codes=(2,)),
        _text(bed, env, "team", "status", codes=(6,)),  # no gateway yet: it says so and how to add a member
        _text(bed, env, "team", "start", codes=(2,)),
        _text(bed, env, "team", "add-member", dead, "--key-file", str(tmp_path / "missing-key"), codes=(2,)),
        _text(bed, env, "team", "add-member", "ftp://pc/x", "--key-file", "-", codes=(2,)),
    ]
    text = "\n".join(outputs)
    print(text)  # what a Chinese user saw, for the report
    assert "    # 按请求开启思考模式：extra_body=" in text  # the snippet's comments are read: Chinese (its code is not)
    doctor_json = bed.run("doctor", "--json", env=env)
    assert doctor_json.returncode == 0, doctor_json.stderr
    # names are not prose: the home (a space and Chinese in it), the catalog's titles ("Qwen3.6-35B-A3B (MTP)") and
    # what the machine reports about itself (CPU brand, GPU names, paths)
    titles = zh_titles()  # as a Chinese user sees them: "Qwen3.6-27B (dense)" is not a name to let through
    found = leaks(text, literals=(str(bed.home.root), *titles, *hardware_names(doctor_json.stdout)))
    assert found == [], "\n".join(found)


def zh_titles() -> tuple[str, ...]:
    """The catalog's titles as the Chinese UI shows them (``title_zh`` where an entry has one)."""
    from bootstrap.core import settings

    with settings.overridden({"QWENKIT_LANG": "zh"}):
        return tuple(m.title for m in load_catalog(REPO_ROOT / "payload" / "catalog.toml").models)


def test_every_error_with_a_hint_has_it_in_chinese_too(zh_bed: tuple[InstallBed, dict[str, str]]) -> None:
    """Issue 41: an unknown model had "Did you mean" in English and no 提示 line in Chinese. Each error below is
    run in both languages (the shipped catalog): where English gives a hint Chinese gives one too, and an unknown
    model or quant always has one."""
    bed, zh = zh_bed
    zh = {k: v for k, v in zh.items() if k != "QWENKIT_CATALOG"}
    en = {**zh, "LANG": "en_US.UTF-8"}
    cases = [("plan", "qwen3.6-27"), ("plan", "frobnicate"), ("plan", "qwen3.6-27b:Q9"),
             ("install", "nosuch", "--yes"), ("remove", "nosuch", "--yes"), ("logs", "--model", "nosuch"),
             ("service", "stat"), ("instal",)]
    for argv in cases:
        said = {}
        for name, env in (("en", en), ("zh", zh)):
            proc = bed.run(*argv, env=env)
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, (argv, proc.stderr)
            said[name] = proc.stderr.splitlines()
        assert any(line.startswith("hint: ") for line in said["en"]), (argv, said["en"])
        assert any(line.startswith(_HINT) for line in said["zh"]), (argv, said["zh"])


def _with_stand_in(env: dict[str, str], folder: Path, name: str) -> dict[str, str]:
    """``env`` with a program called ``name`` first on PATH (launch refuses before it would start it)."""
    program = folder / "stand-in" / name
    program.parent.mkdir(exist_ok=True)
    program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    program.chmod(0o755)
    return {**env, "PATH": f"{program.parent}{os.pathsep}{env.get('PATH', '')}"}


def hardware_names(doctor_json: str) -> tuple[str, ...]:
    """What machines report about themselves, from this machine's ``doctor --json`` (and the recorded profiles
    ``plan --hardware`` is given): CPU brand, GPU names, kernel release, paths. They are the machine's words, not
    the kit's prose: a CPU whose brand is "Intel(R) Xeon(R) Processor" must not fail this test. Longest first, so
    a name inside another is taken out with it."""
    docs = [json.loads(doctor_json)]
    docs += [json.loads(p.read_text(encoding="utf-8")) for p in (REPO_ROOT / "tests" / "data" / "hardware").glob(
        "*.json")]
    names = set()
    for doc in docs:
        os_info, cpu = doc.get("os", {}), doc.get("cpu", {})
        names |= {os_info.get("release"), os_info.get("version"), cpu.get("brand"), doc.get("disk", {}).get("path"),
                  doc.get("network", {}).get("ca_bundle")}
        names |= {gpu.get("name") for gpu in doc.get("gpus", [])}
        names |= {python.get("path") for python in doc.get("pythons", [])}
    return tuple(sorted((n for n in names if isinstance(n, str) and n.strip()), key=len, reverse=True))


def test_names_the_hardware_reports_are_not_leaks(zh_bed: tuple[InstallBed, dict[str, str]], tmp_path: Path) -> None:
    """A machine whose CPU calls itself "Intel(R) Xeon(R) Processor" (the brand of the machine issue 24 ran on):
    ``doctor`` in Chinese prints the brand as the machine states it, and the check takes it out as a name. The brand
    is the machine's own ``/proc/cpuinfo`` with only that line changed, bind-mounted in a user and mount namespace
    (the narrowest boundary: the file the CPU probe reads)."""
    bed, env = zh_bed
    brand = "Intel(R) Xeon(R) Processor"
    fake = tmp_path / "cpuinfo"
    fake.write_text(re.sub(r"(?m)^(model name\s*:).*$", rf"\1 {brand}", Path("/proc/cpuinfo").read_text()))
    mount = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
             'mount --bind "$1" /proc/cpuinfo && shift && exec "$@"', "sh", str(fake)]
    probe = subprocess.run([*mount, "grep", "-m1", "model name", "/proc/cpuinfo"], capture_output=True, text=True,
                           check=False)
    if probe.returncode != 0:
        pytest.skip(f"no user and mount namespace here: {probe.stderr.strip()}")
    doctor = [*mount, *bed.command(), "doctor"]
    shown = subprocess.run(doctor, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    as_json = subprocess.run([*doctor, "--json"], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                             timeout=120, check=False)
    assert shown.returncode == 0 and as_json.returncode == 0, shown.stderr + as_json.stderr
    assert json.loads(as_json.stdout)["cpu"]["brand"] == brand
    text = shown.stdout + shown.stderr
    assert brand in text
    assert any("Processor" in line for line in leaks(text))  # what the check used to report
    assert leaks(text, literals=(str(bed.home.root), *hardware_names(as_json.stdout))) == []

