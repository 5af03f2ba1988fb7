"""The names users type for a catalog model (``catalog/model_names.py``, docs/model-names.md), against the shipped
catalog: Ollama's tags, hub repo ids, case and separator variants, a quant after the name, and what is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.catalog.model_names import name_key
from bootstrap.catalog.model_ref import CatalogRef, installed_name, parse_model_ref, wanted_model
from bootstrap.catalog.models import load_catalog
from bootstrap.core import console
from bootstrap.core.errors import ExitCode, UsageError

pytestmark = pytest.mark.usefixtures("english")
TWO_CORES = str(Path(__file__).resolve().parents[1] / "data" / "hardware" / "no_gpu_2core_24gb.json")


@pytest.mark.parametrize(("typed", "model_id", "quant"), [
    # the id as every release took it, any case; id:QUANT
    ("qwen3.6-35b-a3b", "qwen3.6-35b-a3b", None),
    ("QWEN3.6-35B-A3B-MTP", "qwen3.6-35b-a3b-mtp", None),
    ("qwen3.6-35b-a3b:UD-IQ4_XS", "qwen3.6-35b-a3b", "UD-IQ4_XS"),
    ("qwen3.5-4b:q4_k_m", "qwen3.5-4b", "Q4_K_M"),
    # Ollama's tags (the catalog's alias for the short 35b one), with Ollama's quant suffix too
    ("qwen3.6:35b", "qwen3.6-35b-a3b", None),
    ("qwen3.6:35b-a3b", "qwen3.6-35b-a3b", None),
    ("qwen3.6:27b", "qwen3.6-27b", None),
    ("qwen3.5:4b", "qwen3.5-4b", None),
    ("qwen3.5:9b", "qwen3.5-9b", None),
    ("qwen3-embedding:0.6b", "qwen3-embedding-0.6b", None),
    ("qwen3.5:4b-q4_K_M", "qwen3.5-4b", "Q4_K_M"),
    ("qwen3.6:35b:UD-Q2_K_XL", "qwen3.6-35b-a3b", "UD-Q2_K_XL"),
    # Hugging Face / ModelScope repo ids: the GGUF repo, the upstream model, Ollama's hf.co/… form, a pasted URL
    ("unsloth/Qwen3.6-35B-A3B-GGUF", "qwen3.6-35b-a3b", None),
    ("Qwen/Qwen3.6-35B-A3B", "qwen3.6-35b-a3b", None),
    ("Qwen/Qwen3-Embedding-0.6B-GGUF", "qwen3-embedding-0.6b", None),
    ("Qwen/Qwen3-Embedding-0.6B", "qwen3-embedding-0.6b", None),
    ("unsloth/Qwen3.6-35B-A3B-MTP-GGUF", "qwen3.6-35b-a3b-mtp", None),
    ("ggml-org/Qwen3.6-35B-A3B-MTP-GGUF", "qwen3.6-35b-a3b-mtp-ggml", None),
    ("hf.co/unsloth/Qwen3.5-4B-GGUF:Q4_K_M", "qwen3.5-4b", "Q4_K_M"),
    ("https://huggingface.co/unsloth/Qwen3.5-9B-GGUF", "qwen3.5-9b", None),
    ("https://modelscope.cn/models/unsloth/Qwen3.5-9B-GGUF", "qwen3.5-9b", None),
    ("hf:unsloth/Qwen3.5-4B-GGUF", "qwen3.5-4b", None),
    ("ms:unsloth/Qwen3.6-27B-GGUF", "qwen3.6-27b", None),
    # case, separators, full-width characters an input method types
    ("Qwen3.5-4B", "qwen3.5-4b", None),
    ("qwen3_5_4b", "qwen3.5-4b", None),
    ("qwen3.5 4b", "qwen3.5-4b", None),
    ("  Qwen3.6 27B  ", "qwen3.6-27b", None),
    ("ｑｗｅｎ３.５：４ｂ", "qwen3.5-4b", None),
    ("Qwen3.5-4B-GGUF", "qwen3.5-4b", None),
])
def test_names_users_type_resolve_to_one_catalog_model(typed: str, model_id: str, quant: str | None) -> None:
    assert parse_model_ref(typed) == CatalogRef(model_id, quant)


def test_the_recorded_text_is_the_catalog_id_whatever_was_typed() -> None:
    assert wanted_model("Qwen/Qwen3.6-35B-A3B", None).text == "qwen3.6-35b-a3b"
    assert wanted_model("qwen3.5:4b-q4_k_m", None).text == "qwen3.5-4b:Q4_K_M"
    assert wanted_model("./x/模型.gguf", None).text == "./x/模型.gguf"  # a file: as typed


@pytest.mark.parametrize(("typed", "close"), [
    ("qwen3", "'qwen3.6-35b-a3b'"),          # a family: its models
    ("qwen3:4b", "'qwen3.5-4b'"),            # Ollama's older Qwen3 4B: not in the catalog, the nearest is offered
    ("qwen3.5:14b", "'qwen3.5-4b'"),
    ("Qwen/Qwen3.5-4", "'qwen3.5-4b'"),
])
def test_unknown_name_is_exit_2_with_the_closest_ids(typed: str, close: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_model_ref(typed)
    assert exc.value.exit_code == ExitCode.USAGE
    assert f"Unknown model '{typed}'" in exc.value.message and "\n" not in exc.value.message
    assert close in (exc.value.hint or "")


def test_unknown_name_hint_in_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "language", lambda: "zh")
    with pytest.raises(UsageError) as exc:
        parse_model_ref("qwen3:4b")
    assert exc.value.message.startswith("未知模型 'qwen3:4b'") and "您是不是想输入" in (exc.value.hint or "")


def test_a_name_two_models_answer_to_is_exit_2_listing_both() -> None:
    """The MTP repos of unsloth and ggml-org share a name: that name alone never picks one of them."""
    with pytest.raises(UsageError) as exc:
        parse_model_ref("Qwen3.6-35B-A3B-MTP-GGUF")
    assert exc.value.exit_code == ExitCode.USAGE
    assert "qwen3.6-35b-a3b-mtp, qwen3.6-35b-a3b-mtp-ggml" in exc.value.message
    assert "qwenkit models" in (exc.value.hint or "")


def test_a_name_read_two_ways_is_ambiguous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``m:big`` is model ``m`` with quant ``big`` and also model ``m-big``'s Ollama spelling: exit 2, both named."""
    path = tmp_path / "catalog.toml"
    block = ('[[models]]\nid = "{id}"\narchitecture = "llama"\nrepos = [{{hub = "hf", repo = "o/{id}"}}]\n'
             'quants = [{{name = "{q}", file = "{id}.gguf"}}]\n')
    path.write_text('schema = 1\ndefault_model = "m"\n' + block.format(id="m", q="big")
                    + block.format(id="m-big", q="Q8_0"), encoding="utf-8")
    monkeypatch.setenv("QWENKIT_CATALOG", str(path))
    with pytest.raises(UsageError) as exc:
        parse_model_ref("M:big")
    assert "m:big, m-big" in exc.value.message or "m-big, m:big" in exc.value.message
    assert parse_model_ref("m") == CatalogRef("m") and parse_model_ref("m-big") == CatalogRef("m-big")


def test_an_alias_that_spells_another_model_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "catalog.toml"
    block = ('[[models]]\nid = "{id}"\naliases = [{aliases}]\narchitecture = "llama"\n'
             'repos = [{{hub = "hf", repo = "o/{id}"}}]\nquants = [{{name = "Q8_0", file = "{id}.gguf"}}]\n')
    path.write_text('schema = 1\ndefault_model = "a"\n' + block.format(id="a", aliases='"x:1b"')
                    + block.format(id="x-1b", aliases=""), encoding="utf-8")
    with pytest.raises(UsageError) as exc:
        load_catalog(path)
    assert "aliases" in exc.value.message and "'x-1b'" in exc.value.message


def test_a_known_model_with_an_unknown_quant_keeps_the_catalog_error() -> None:
    ref = parse_model_ref("qwen3.5:4b:Q9_X")
    assert ref == CatalogRef("qwen3.5-4b", "Q9_X")
    with pytest.raises(UsageError) as exc:
        load_catalog().model(ref.model_id).quant(ref.quant)
    assert "has no quant 'Q9_X'" in exc.value.message


def test_installed_names_are_found_by_any_catalog_name() -> None:
    installed = ("qwen3.6-35b-a3b", "qwen3.5-4b", "my-file")
    assert installed_name("qwen3.5:4b", installed) == "qwen3.5-4b"
    assert installed_name("Qwen/Qwen3.6-35B-A3B", installed) == "qwen3.6-35b-a3b"
    assert installed_name("my-file", installed) == "my-file"
    assert installed_name("qwen3.5:9b", installed) == "qwen3.5:9b"  # in the catalog, not installed: as typed
    assert installed_name("nonsense!", installed) == "nonsense!"


def test_name_key_ignores_case_width_and_separators() -> None:
    assert {name_key(t) for t in ("Qwen3.5-4B", "qwen3_5_4b", "qwen3.5 4b", "QWEN3.5:4B", "ｑｗｅｎ３.５-４ｂ")} == {
        "qwen354b"}


def _plan_cli(*args: str, home: Path, lang: str = "en_US.UTF-8") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LANG": lang, "LC_ALL": lang, "QWENKIT_LANG": "", "QWENKIT_HOME": str(home),
           "QWENKIT_HF_ENDPOINT": "http://127.0.0.1:9", "QWENKIT_MODELSCOPE_ENDPOINT": "http://127.0.0.1:9"}
    env.pop("QWENKIT_CATALOG", None)
    return subprocess.run([sys.executable, "-m", "bootstrap", "plan", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_plan_takes_ollama_and_hub_names_and_says_unknown_in_one_line(tmp_path: Path) -> None:
    """Through the real CLI, offline: the names a user brings plan the catalog model; an unknown one is exit 2 with
    one line and the hint (Chinese too)."""
    for typed, model_id in (("qwen3.5:4b", "qwen3.5-4b"), ("Qwen/Qwen3.6-35B-A3B", "qwen3.6-35b-a3b")):
        proc = _plan_cli(typed, "--hardware", TWO_CORES, "--json", home=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["model"]["id"] == model_id
    proc = _plan_cli("qwen3:4b", "--hardware", TWO_CORES, home=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Unknown model 'qwen3:4b'" in proc.stderr and "Did you mean 'qwen3.5-4b'" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2
    zh = _plan_cli("qwen3", "--hardware", TWO_CORES, home=tmp_path, lang="zh_CN.UTF-8")
    assert zh.returncode == 2 and "未知模型 'qwen3'" in zh.stderr and "您是不是想输入" in zh.stderr
    both = _plan_cli("Qwen3.6-35B-A3B-MTP-GGUF", "--hardware", TWO_CORES, home=tmp_path)
    assert both.returncode == 2 and "qwen3.6-35b-a3b-mtp, qwen3.6-35b-a3b-mtp-ggml" in both.stderr
