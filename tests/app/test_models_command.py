"""``qwenkit models``: the catalog and what fits, run as a user runs it, offline, on recorded hardware profiles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.catalog.models import load_catalog

HARDWARE = Path(__file__).resolve().parents[1] / "data" / "hardware"


def run_models(*args: str, home: Path, lang: str = "en_US.UTF-8", **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "LANG": lang, "LC_ALL": lang, "QWENKIT_LANG": "", "QWENKIT_HOME": str(home),
               # No network: a hub it tried to reach would fail the command.
               "QWENKIT_HF_ENDPOINT": "http://127.0.0.1:9", "QWENKIT_MODELSCOPE_ENDPOINT": "http://127.0.0.1:9",
               **env}
    return subprocess.run([sys.executable, "-m", "bootstrap", "models", *args], capture_output=True, text=True,
                          env=environ, timeout=120)


def test_json_lists_the_catalog_and_what_fits(tmp_path: Path) -> None:
    proc = run_models("--hardware", str(HARDWARE / "no_gpu_16gb.json"), "--json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    catalog = load_catalog()
    assert [m["id"] for m in doc["models"]] == [m.id for m in catalog.models]
    assert doc["default_model"] == catalog.default_model
    by_id = {m["id"]: m for m in doc["models"]}
    big = by_id["qwen3.6-35b-a3b"]
    assert big["default"] and [q["name"] for q in big["quants"] if q["default"]] == ["UD-Q4_K_XL"]
    assert {q["name"]: q["size"] for q in big["quants"]}["UD-Q4_K_M"] == 22_134_528_992
    # 16 GB and no GPU: the 35B does not fit, the 4B does, on the CPU.
    assert big["fits"] is False and big["here"] is None
    small = by_id["qwen3.5-4b"]
    assert small["fits"] is True and small["here"]["quant"] == "Q4_K_M" and small["here"]["speed_class"] == "cpu"
    assert doc["budget"]["gpu_name"] is None and doc["budget"]["gpu_bytes"] == 0


def test_the_chosen_quant_is_the_one_plan_chooses(tmp_path: Path) -> None:
    hw = str(HARDWARE / "rtx3070_8gb_32gb.json")
    models = json.loads(run_models("--hardware", hw, "--json", home=tmp_path).stdout)
    env = {**os.environ, "QWENKIT_HOME": str(tmp_path), "QWENKIT_LANG": "en"}
    plan = json.loads(subprocess.run([sys.executable, "-m", "bootstrap", "plan", "--hardware", hw, "--json"],
                                     capture_output=True, text=True, env=env, timeout=120, check=True).stdout)
    default = next(m for m in models["models"] if m["default"])
    assert default["here"]["quant"] == plan["model"]["quant"]
    assert default["here"]["ctx"] == plan["settings"]["ctx"]


@pytest.mark.parametrize(("lang", "lines"), [
    ("en_US.UTF-8", ["Catalog models; this machine: the CPU only,", "qwen3.6-35b-a3b  Qwen3.6-35B-A3B (default model)",
                     "Here: does not fit", "default · chosen here", "Here: Q4_K_M with 32768 tokens of context, slow"]),
    ("zh_CN.UTF-8", ["目录中的模型；本机：仅 CPU", "qwen3.6-35b-a3b  Qwen3.6-35B-A3B（默认模型）", "本机：放不下",
                     "默认 · 本机选用", "本机：Q4_K_M，上下文 32768 token，较慢"]),
])
def test_human_listing_in_both_languages(tmp_path: Path, lang: str, lines: list[str]) -> None:
    proc = run_models("--hardware", str(HARDWARE / "no_gpu_16gb.json"), home=tmp_path, lang=lang)
    # the listing is the command's output: stdout ('qwenkit models | less'), nothing of it on stderr
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    for line in lines:
        assert line in proc.stdout, line


def test_a_model_without_shape_facts_has_no_verdict_offline(tmp_path: Path) -> None:
    text = (Path(load_catalog().path).read_text(encoding="utf-8")
            + '\n[[models]]\nid = "own-model"\narchitecture = "llama"\nrepos = [{hub = "hf", repo = "me/own"}]\n'
              'quants = [{name = "Q4_0", file = "own.gguf", size = 1000000000}]\n')
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(text, encoding="utf-8")
    proc = run_models("--hardware", str(HARDWARE / "rtx4090_24gb.json"), "--json", home=tmp_path / "home",
                      QWENKIT_CATALOG=str(catalog))
    assert proc.returncode == 0, proc.stderr
    own = json.loads(proc.stdout)["models"][-1]
    assert own["id"] == "own-model" and own["fits"] is None and own["here"] is None
    human = run_models("--hardware", str(HARDWARE / "rtx4090_24gb.json"), home=tmp_path / "home",
                       QWENKIT_CATALOG=str(catalog))
    assert "Here: unknown without its file" in human.stdout


@pytest.mark.parametrize(("lang", "ctx_line", "speed_line", "here_line"), [
    ("en_US.UTF-8", "context 8192 tokens: the longest input one embedding takes",
     "Speed: input is read at ~", "Here: Q8_0, inputs of up to 8192 tokens (served beside a chat model)."),
    ("zh_CN.UTF-8", "上下文 8192 token：单次向量嵌入可接受的最长输入", "速度：读入输入约",
     "本机：Q8_0，单次输入最多 8192 token（在对话模型旁提供服务）。"),
])
def test_plan_and_models_agree_on_an_embedding_model(tmp_path: Path, lang: str, ctx_line: str, speed_line: str,
                                                     here_line: str) -> None:
    """Issue 41: ``plan qwen3-embedding-0.6b`` said "context 8192 tokens: as asked (--ctx)" with no --ctx and
    printed a generation speed, while ``models`` said 32768 tokens of context and a speed class: both now plan it
    as ``install MODEL`` serves it (install/library.plan_embedding)."""
    hw = str(HARDWARE / "no_gpu_16gb.json")
    env = {**os.environ, "LANG": lang, "LC_ALL": lang, "QWENKIT_LANG": "", "QWENKIT_HOME": str(tmp_path),
           "QWENKIT_HF_ENDPOINT": "http://127.0.0.1:9", "QWENKIT_MODELSCOPE_ENDPOINT": "http://127.0.0.1:9"}
    plan = subprocess.run([sys.executable, "-m", "bootstrap", "plan", "qwen3-embedding-0.6b", "--hardware", hw],
                          capture_output=True, text=True, env=env, timeout=120)
    assert plan.returncode == 0, plan.stderr
    assert ctx_line in plan.stdout and speed_line in plan.stdout
    assert "--ctx" not in plan.stdout.split("llama-server")[0]  # nobody asked for a context
    assert "tokens/s for short prompts" not in plan.stdout and "短提示词" not in plan.stdout  # it generates nothing
    models = run_models("--hardware", hw, home=tmp_path, lang=lang)
    assert models.returncode == 0, models.stderr
    block = models.stdout.split("qwen3-embedding-0.6b", 1)[1].split("\n\n", 1)[0]
    assert here_line in block and "32768" not in block
    doc = json.loads(run_models("--hardware", hw, "--json", home=tmp_path).stdout)
    embed = next(m for m in doc["models"] if m["id"] == "qwen3-embedding-0.6b")
    planned = json.loads(subprocess.run([sys.executable, "-m", "bootstrap", "plan", "qwen3-embedding-0.6b",
                                         "--hardware", hw, "--json"], capture_output=True, text=True,
                                        env={**env, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}, timeout=120).stdout)
    assert embed["here"]["ctx"] == planned["settings"]["ctx"] == 8192 and embed["here"]["speed_class"] is None
    assert planned["role"] == "embedding"
