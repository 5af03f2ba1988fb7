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
