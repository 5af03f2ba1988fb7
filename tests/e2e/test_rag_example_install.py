"""``venv/examples/rag.py`` asks the embedding model the install holds (issue 41), through the real CLI.

An install with its runtime venv (built offline from the wheelhouse, as an install builds it), then ``qwenkit
install tiny-embed`` beside the default: rag.py, rendered again with the add, names ``tiny-embed`` (it named the
catalog's ``qwen3-embedding-0.6b`` whatever the home held, so it failed with "no embedding model" on a home that
had one), and run as a user runs it — no ``--embed-model``, no variable — it embeds through the router and asks the
chat model. Removing the model renders it back to the suggestion.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from tests.support.install_bed import MODEL_FILE, MODEL_REPO, InstallBed, catalog_text, model_block
from tests.support.llama import free_port
from tests.support.tiny_gguf import write_model

EMBED_ID, EMBED_REPO, EMBED_FILE = "tiny-embed", "qwenkit-test/tiny-embed-GGUF", "tiny-embed-Q8_0.gguf"


def test_rag_example_asks_the_installed_embedding_model(wheel_bed: InstallBed, tmp_path: Path) -> None:
    bed = wheel_bed
    chat = write_model("llama", tmp_path / "src" / MODEL_FILE, dtype="q8_0", n_layer=4)
    embed = write_model("llama", tmp_path / "src" / EMBED_FILE, dtype="q8_0", n_layer=2, pooling=3, seed=3)
    rev, rev_embed = bed.hub.commit(MODEL_REPO, {MODEL_FILE: chat}), bed.hub.create_repo(EMBED_REPO,
                                                                                        {EMBED_FILE: embed})
    # room for rag.py's answer (its MAX_TOKENS) beside the passages: the tiny model's whole trained context
    bed.catalog.write_text(catalog_text(rev, server_args=("-c", "4096", "-t", "2"))
                           + model_block(rev_embed, model_id=EMBED_ID, repo=EMBED_REPO, file=EMBED_FILE,
                                         title="Tiny embeddings (test)", server_args=("-t", "2")), encoding="utf-8")
    first = bed.install("--port", str(free_port()))
    assert first.returncode == 0, first.stderr[-3000:]
    rag = bed.home.examples_dir / "rag.py"
    assert 'or "qwen3-embedding-0.6b"' in rag.read_text(encoding="utf-8")  # none installed: the suggestion

    added = bed.run("install", EMBED_ID, "--yes")
    assert added.returncode == 0, added.stderr[-3000:]
    text = rag.read_text(encoding="utf-8")
    assert f'EMBED_MODEL = os.environ.get("QWENKIT_EMBED_MODEL") or "{EMBED_ID}"' in text
    assert "qwen3-embedding-0.6b" not in text
    python = bed.home.venv_dir / "bin" / "python"
    assert f"{shlex.quote(str(python))} {shlex.quote(str(rag))}" in added.stdout  # the report: the venv's Python

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("QWENKIT_", "OPENAI_"))}
    proc = subprocess.run([str(python), str(rag), "Where does photosynthesis happen?"], capture_output=True,
                          text=True, timeout=600, env=clean, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sum(line.startswith("[retrieved ") for line in proc.stdout.splitlines()) == 2

    removed = bed.run("remove", EMBED_ID, "--yes")
    assert removed.returncode == 0, removed.stderr[-3000:]
    assert 'or "qwen3-embedding-0.6b"' in rag.read_text(encoding="utf-8")
