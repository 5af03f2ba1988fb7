"""The user READMEs (English and Chinese) and docs/ against the product they describe.

A README that drifts from the code misleads the people it is written for, so what it states as fact is checked
against the real thing: every ``qwenkit`` command it quotes parses with the real command line, every option it names
exists, the models table is the catalog (ids, quants, sizes as ``qwenkit models`` prints them, the default quant,
the vision projector each quant brings),
the "what fits" table is what ``qwenkit models --hardware`` chooses for the recorded machines, the exit-code tables
are ``ExitCode``, the developer commands are the ones CI runs, and every relative link (and anchor) resolves.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from bootstrap.app.cli import build_parser, client_args
from bootstrap.core.errors import ExitCode, QwenKitError
from bootstrap.core.sizes import human_size
from tests.support import testbed

ROOT = Path(__file__).resolve().parent.parent
READMES = {"en": ROOT / "README.md", "zh": ROOT / "README.zh-CN.md"}
DOCS = sorted((ROOT / "docs").glob("*.md"))
HARDWARE = ROOT / "tests" / "data" / "hardware"

# The machines of the "what fits" table, by the words that name them in each README's first column.
MACHINES = {"RTX 4060": "rtx4060_8gb_16gb", "RTX 3070": "rtx3070_8gb_32gb", "Tesla T4": "t4_16gb",
            "RTX 4090": "rtx4090_24gb", "Apple M2": "apple_m2_16gb", "no GPU": "no_gpu_16gb",
            "无显卡": "no_gpu_16gb", "RX 7900 XTX": "rx7900xtx_24gb_linux", "RX 6700 XT": "rx6700xt_12gb_windows",
            "Arc A750": "arc_a750_8gb_linux", "Radeon 780M": "radeon780m_igpu_windows"}
# How a cell of that table says the planner's verdict (``qwenkit models --json``: ``here``), per language.
CELL = {
    "en": {"none": "does not fit", "sep": ", ", "ctx": "{k}K context",
           "gpu": "all on GPU, fast", "hybrid": "GPU + CPU, medium", "cpu": "CPU only, slow"},
    "zh": {"none": "放不下", "sep": "，", "ctx": "上下文 {k}K",
           "gpu": "全部在 GPU 上，快", "hybrid": "GPU 与 CPU 混合，中等", "cpu": "仅 CPU，较慢"},
}
DEFAULT_MARK = {"en": " (default)", "zh": "（默认）"}
NOT_QWENKIT_OPTIONS = {"--ignore-missing", "--user",  # sha256sum / shasum and pip, quoted in "Get it"
                       "--skip-git-repo-check",  # the agent's own option after `qwenkit launch codex --`
                       "--modelfile",  # `ollama show --modelfile`, in the table for Ollama users
                       "--swa-full"}  # llama-server's own flag the plan adds, in "Long agent prompts survive restarts"
DEFAULT_CTX = 32_768


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@cache
def models_json(hardware: str | None) -> dict:
    """``qwenkit models [--hardware FILE] --json`` as a user runs it, with an empty home (no local headers)."""
    args = ["models", "--json"] + (["--hardware", str(HARDWARE / f"{hardware}.json")] if hardware else [])
    env = {**os.environ, "QWENKIT_HOME": str(ROOT / "tests" / "data" / "no-such-home"), "QWENKIT_LANG": "en"}
    env.pop("QWENKIT_CATALOG", None)
    proc = subprocess.run([sys.executable, "-m", "bootstrap", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def table_rows(markdown: str, header_start: str) -> list[list[str]]:
    """The body rows (cells stripped) of the first table whose header row starts with ``header_start``."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def quoted_commands(markdown: str) -> Iterator[str]:
    """Every ``qwenkit …`` command in an inline code span or at the start of a code-block line."""
    yield from re.findall(r"`(qwenkit [^`]+)`", markdown)
    for block in re.findall(r"```[a-z]*\n(.*?)```", markdown, flags=re.S):
        for line in block.splitlines():
            if line.startswith("qwenkit "):
                yield line.split("#", 1)[0].strip()


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of the parser and its subcommands, recursively."""
    found = set()
    for action in parser._actions:
        found.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= option_strings(sub)
    return found


def cell_for(here: dict | None, lang: str) -> str:
    words = CELL[lang]
    if here is None:
        return words["none"]
    parts = [here["quant"], words[here["speed_class"]]]
    if here["ctx"] != DEFAULT_CTX:
        parts.append(words["ctx"].format(k=here["ctx"] // 1024))
    return words["sep"].join(parts)


def projector_cell(mmproj: dict | None, lang: str) -> str:
    """The models table's projector column: the size downloaded beside any quant, "—" for a model without one."""
    if mmproj is None:
        return "—"
    if mmproj["size"] is None:
        return "? (size known at download)" if lang == "en" else "?（下载时才知道大小）"
    return ("" if mmproj["size_exact"] else "~") + human_size(mmproj["size"])


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("lang", sorted(READMES))
def test_each_readme_links_the_other_at_the_top(lang: str) -> None:
    other = next(p for key, p in READMES.items() if key != lang)
    assert f"]({other.name})" in "\n".join(text(READMES[lang]).splitlines()[:5])


@pytest.mark.parametrize("lang", sorted(READMES))
def test_quoted_commands_parse_with_the_real_command_line(lang: str) -> None:
    commands = list(quoted_commands(text(READMES[lang])))
    assert len(commands) >= 10, commands  # the README quotes commands throughout; finding few means a broken scan
    parser = build_parser()
    for command in commands:
        argv = [word.split("|")[0] for word in shlex.split(command)[1:]  # `--thinking on|off`: one of the choices
                if word != "--help"]  # `qwenkit install --help`: the command must exist; help itself would exit
        argv = client_args(argv)[0]  # `qwenkit launch … -- ARGS`: what follows `--` is the agent's
        try:
            parser.parse_args(argv)
        except QwenKitError as exc:
            pytest.fail(f"{lang} README quotes `{command}`: {exc}")


@pytest.mark.parametrize("lang", sorted(READMES))
def test_every_option_named_exists(lang: str) -> None:
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", text(READMES[lang]))) - NOT_QWENKIT_OPTIONS
    assert "--thinking" in named
    assert named <= option_strings(build_parser())


@pytest.mark.parametrize("lang", sorted(READMES))
def test_models_table_is_the_catalog(lang: str) -> None:
    catalog = {m["id"]: m for m in models_json(None)["models"]}
    rows = table_rows(text(READMES[lang]), "| model id" if lang == "en" else "| 模型 id")
    ids = [re.match(r"`([^`]+)`", row[0]).group(1) for row in rows]
    assert ids == list(catalog)
    for model_id, row in zip(ids, rows, strict=True):
        model = catalog[model_id]
        shown = [re.sub(r"\*\*", "", piece).strip() for piece in row[1].split("·")]
        expected = []
        for quant in model["quants"]:
            size = ("" if quant["size_exact"] else "~") + human_size(quant["size"])
            mark = DEFAULT_MARK[lang] if quant["default"] and len(model["quants"]) > 1 else ""
            expected.append(f"{quant['name']} {size}{mark}")
        assert shown == expected, model_id
        assert row[2] == projector_cell(model["mmproj"], lang), model_id
    assert ids[0] == models_json(None)["default_model"]
    assert ("default" if lang == "en" else "默认") in rows[0][0]


@pytest.mark.parametrize("lang", sorted(READMES))
def test_what_fits_table_is_what_the_planner_chooses(lang: str) -> None:
    markdown = text(READMES[lang])
    header = next(line for line in markdown.splitlines() if "| qwen3.6-35b-a3b | qwen3.6-27b |" in line)
    columns = [c.strip() for c in header.strip().strip("|").split("|")][1:]
    rows = table_rows(markdown, header)
    assert len(rows) == len(set(MACHINES.values()))
    # The note under the table names the model left out of it because it fits everywhere: "`id` (QUANT) fits …".
    after = markdown.split(header, 1)[1].split("\n\n", 2)[1]
    everywhere = re.match(r"`([^`]+)`\s?[(（]([^)）]+)[)）]", after)
    assert everywhere is not None, after
    for row in rows:
        profile = next(file for words, file in MACHINES.items() if words in row[0])
        here = {m["id"]: m["here"] for m in models_json(profile)["models"]}
        assert row[1:] == [cell_for(here[c], lang) for c in columns], (lang, profile)
        assert (here[everywhere[1]] or {}).get("quant") == everywhere[2], (lang, profile)


def test_exit_code_tables_list_every_exit_code() -> None:
    codes = sorted(code.value for code in ExitCode)
    for path, header in [(READMES["en"], "| exit code"), (READMES["zh"], "| 退出码"), (ROOT / "docs" / "cli.md",
                                                                                     "| exit code")]:
        assert [int(row[0]) for row in table_rows(text(path), header)] == codes, path.name


def test_developer_commands_are_the_ones_ci_runs() -> None:
    assert "bash scripts/test.sh" in text(ROOT / ".ci" / "run")
    for path in READMES.values():
        block = re.search(r"```bash\n(bash scripts/demo\.sh[^\n]*)\n(bash scripts/test\.sh[^\n]*)\n```", text(path))
        assert block is not None, path.name
    assert (ROOT / "scripts" / "demo.sh").is_file() and (ROOT / "scripts" / "test.sh").is_file()


@pytest.mark.parametrize("lang,pattern", [("en", r"first run ~(\d+) min, then ~(\d+) s"),
                                          ("zh", r"首次约 (\d+) 分钟，之后约 (\d+) 秒")])
def test_the_demo_durations_say_what_a_first_run_costs(lang: str, pattern: str) -> None:
    """The demo's first run on an empty cache builds llama-server and its web UI: the README's cold figure cannot
    be less than what the test bed itself says those builds take, and the cached run is far shorter."""
    found = re.search(pattern, text(READMES[lang]))
    assert found is not None, lang
    cold_min, warm_s = int(found.group(1)), int(found.group(2))
    assert cold_min >= testbed.ENGINE_BUILD_MIN[0] + testbed.UI_BUILD_MIN[0]
    assert warm_s < 60 * cold_min / 10


@pytest.mark.parametrize("path", [*READMES.values(), *DOCS], ids=lambda p: p.name)
def test_relative_links_resolve(path: Path) -> None:
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(#[^)\s]*)?\)", text(path)):
        if target.startswith(("http://", "https://", "../../releases")):
            continue  # absolute, or GitHub's Releases page of whichever repository hosts this
        linked = (path.parent / target).resolve() if target else path
        assert linked.exists(), f"{path.name}: {target}"
        if anchor and linked.suffix == ".md":
            headings = {github_anchor(line) for line in text(linked).splitlines() if line.startswith("#")}
            assert anchor[1:] in headings, f"{path.name}: {target}{anchor}"


# The chat page's own words that the READMEs and the install report quote for entering the key, and where each
# stands in the web UI sources of the pinned llama.cpp (tools/ui): the page a user meets must say them.
PAGE_WORDS = {
    "Server Connection Error": "src/lib/components/app/server/ServerErrorSplash.svelte",
    "Enter API Key": "src/lib/components/app/server/ServerErrorSplash.svelte",
    "Access denied": "src/lib/constants/error.constants.ts",
}


def test_the_key_steps_quote_the_pages_own_words() -> None:
    """Issue 24: the README said one path to the key setting, the product another. Both now quote the page of the
    pinned build: the red splash, its button, and the setting under the General section."""
    from bootstrap.core.console import set_language, t
    from tests.support import testbed

    ui = testbed.engine_sources() / "tools" / "ui"
    for words, source in PAGE_WORDS.items():
        assert words in (ui / source).read_text(encoding="utf-8"), (words, source)
    settings = (ui / "src/lib/constants/settings.constants.ts").read_text(encoding="utf-8")
    # SETTINGS_REGISTRY lists sections as {settings: [...], slug, title}: the block that ends with General's title
    general = settings[settings.index("SETTINGS_REGISTRY"):settings.index("title: SETTINGS_SECTION_TITLES.GENERAL")]
    assert "title: SETTINGS_SECTION_TITLES." not in general  # no other section before it
    assert "label: 'API Key'" in general  # the key is a General setting
    for lang in ("en", "zh"):
        set_language(lang)
        try:
            said = t("verify.web_key", path="KEYFILE")
        finally:
            set_language(None)
        readme = text(READMES[lang])
        for words in PAGE_WORDS:
            assert words in said and words in readme, (lang, words)
        assert "Settings > General > API Key" in said
        assert "*Settings* → *General* → *API Key*" in readme


# What the troubleshooting section quotes of the product, per language: the plan's own lines for the recorded
# machine without a GPU ("…" stands for what the quote leaves out), and the slow-speed warning's template.
PLAN_QUOTES = {"en": ["Plan: … on the CPU",
                      "Speed: an estimate of about 6.1 tokens/s, likely 4.8-7.3, for short prompts …"],
               "zh": ["方案：……，运行于处理器（CPU）", "速度：估算短提示词约 6.1 token/秒，大致在 4.8–7.3 之间……"]}
SLOW_QUOTES = {"en": "generates … tokens/s, far below the predicted", "zh": "远低于预测"}


def _quote_pattern(quote: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in re.split(r"…+", quote)))


@pytest.mark.parametrize("lang", sorted(READMES))
def test_troubleshooting_quotes_what_the_product_says(lang: str) -> None:
    """Issue 24: the README quoted "Speed: slow (CPU only…)" while the plan printed "Speed: ~2.3 tokens/s". Each
    quote must appear in the README and match a line the real ``plan`` prints (the no-GPU machine, this language),
    or the warning's own words."""
    from bootstrap.core.console import set_language, t

    readme = text(READMES[lang])
    env = {**os.environ, "QWENKIT_HOME": str(ROOT / "tests" / "data" / "no-such-home"), "QWENKIT_LANG": lang}
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "plan", "--hardware",
                           str(HARDWARE / "no_gpu_16gb.json")], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for quote in PLAN_QUOTES[lang]:
        assert quote in readme, quote
        assert any(_quote_pattern(quote).match(line) for line in lines), (quote, lines[:3])
    set_language(lang)
    try:
        warning = t("speed.slow", measured="2.0", low="4.8", causes="-")
    finally:
        set_language(None)
    assert SLOW_QUOTES[lang] in readme and _quote_pattern(SLOW_QUOTES[lang]).search(warning), warning
