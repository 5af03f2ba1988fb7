"""The real Gemma 3 270M file: served by the loopback hub, fetched by huggingface_hub, loaded by llama-server.

Expected numbers are the measured ones in ``docs/test-bed.md`` ("Gemma 3 270M").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import testbed
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import last_json
from tests.support.llama import LlamaServer
from tests.support.llama_log import KV_LINE, print_info


def test_gemma_is_the_published_file(gemma_gguf: Path) -> None:
    assert gemma_gguf.stat().st_size == testbed.GEMMA_SIZE == 253_113_024
    assert testbed.sha256_file(gemma_gguf) == testbed.GEMMA_SHA256


def test_gemma_loads_and_answers_chat(llama_server: Path, gemma_gguf: Path) -> None:
    args = ["-c", "4096", "-np", "1", "-t", "2", "-lv", "4", "--no-jinja", "--chat-template", "gemma"]
    with LlamaServer(llama_server, gemma_gguf, args) as srv:
        body = srv.chat("The capital of France is", max_tokens=8)
        log = srv.log()
    assert body["choices"][0]["message"]["content"].strip()
    assert body["usage"]["completion_tokens"] > 0 and body["timings"]["predicted_n"] > 0
    info = print_info(log)
    assert info["arch"] == "gemma3" and info["n_layer"] == "18" and info["n_swa"] == "512"
    # global layers 5, 11, 17 hold the whole context; the 15 SWA layers hold n_swa + n_ubatch = 1024 cells
    kv = sorted((int(m[2]), int(m[1]), float(m[0])) for m in KV_LINE.findall(log))
    assert kv == [(3, 4096, 12.0), (15, 1024, 15.0)]


@pytest.mark.sdk
def test_gemma_downloads_from_the_hub_with_huggingface_hub(gemma_gguf: Path, hub: LoopbackHub, sdk_run,
                                                           tmp_path: Path) -> None:
    """The 253 MB file goes through the CDN redirect like a real LFS file and arrives byte-identical."""
    commit = hub.create_repo("google/gemma-3-270m-GGUF", {gemma_gguf.name: gemma_gguf})
    proc = sdk_run(
        "import json, huggingface_hub as h\n"
        f"p = h.hf_hub_download('google/gemma-3-270m-GGUF', {gemma_gguf.name!r}, local_dir={str(tmp_path / 'dl')!r})\n"
        "print(json.dumps({'path': p}))\n"
    )
    got = Path(last_json(proc)["path"])
    assert testbed.sha256_file(got) == testbed.GEMMA_SHA256
    assert hub.commit_of("google/gemma-3-270m-GGUF") == commit
    assert hub.bytes_served(gemma_gguf.name, origin="cdn") == testbed.GEMMA_SIZE
