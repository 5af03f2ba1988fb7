"""A test bed for whole installs: the loopback hub serving the engine release and a model repo, a catalog naming
that repo at a pinned revision, a home whose path has a space and Chinese characters, and a runner for
``qwenkit install`` (source checkout or frozen setup) in a subprocess with the product's environment pointed at it.

Everything is real: the engine asset is the test bed's llama-server packed as upstream's archive, the model is a
real GGUF, the installer runs as a separate process (so the crash harness can kill it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bootstrap.core.home import Home
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.tiny_gguf import write_model

ENGINE_REPO = "ggml-org/llama.cpp"
ENGINE_TAG = "b10434"
MODEL_REPO = "qwenkit-test/tiny-chat-GGUF"
MODEL_FILE = "tiny-chat-Q8_0.gguf"
MODEL_ID = "tiny-chat"
# Small and quick on two shared cores; a real model would pick a far larger context.
SERVER_ARGS = ("-c", "512", "-t", "2")
# The tiny model with an MTP head (a qwen35moe with a real nextn block), for speculative-decoding installs.
MTP_MODEL_REPO = "qwenkit-test/tiny-mtp-GGUF"
MTP_MODEL_FILE = "tiny-mtp-Q8_0.gguf"
MTP_MODEL_ID = "tiny-mtp"
# The test bed has no GPU, where the planner never turns the head on: the catalog entry's server_args do, as a
# catalog may for any model (engine_flags.with_overrides).
MTP_ARGS = ("--spec-type", "draft-mtp", "--spec-draft-n-max", "2")
# The tiny model with the Qwen3.5/3.6 family's chat template and tokenizer (tests/support/qwen_chat_model.py), for
# installs that serve tools, JSON schemas, thinking and the agent clients' protocols.
QWEN_MODEL_REPO = "qwenkit-test/tiny-qwen-chat-GGUF"
QWEN_MODEL_FILE = "tiny-qwen-chat-Q8_0.gguf"
QWEN_MODEL_ID = "tiny-qwen-chat"
# The tiny embedding model (last-token pooling, as Qwen3-Embedding's), for installs that add one beside the default.
EMBED_MODEL_REPO = "qwenkit-test/tiny-embed-GGUF"
EMBED_MODEL_FILE = "tiny-embed-Q8_0.gguf"
EMBED_MODEL_ID = "tiny-embed"


def write_chat_model(path: Path, *, seed: int = 0) -> Path:
    """The catalog's tiny chat model: a llama whose matrices are Q8_0 (as its file name says), so every install
    test runs the quantized kernels a real model does (12 layers: about 1.4 MB, so the few header reads an upgrade
    makes stay small beside it)."""
    return write_model("llama", path, seed=seed, dtype="q8_0", n_layer=12)


def write_embed_model(path: Path, *, seed: int = 3) -> Path:
    """The catalog's tiny embedding model: a 2-layer llama whose header declares last-token pooling, Q8_0."""
    return write_model("llama", path, seed=seed, dtype="q8_0", n_layer=2, pooling=3)


def embed_block(revision: str) -> str:
    """The tiny embedding model's ``[[models]]`` entry pinned to ``revision`` (``model_block``)."""
    return model_block(revision, model_id=EMBED_MODEL_ID, repo=EMBED_MODEL_REPO, file=EMBED_MODEL_FILE,
                       title="Tiny embeddings (test)", server_args=("-t", "2"))


def write_mtp_model(path: Path, *, seed: int = 0) -> Path:
    """The tiny chat model with an MTP head: Qwen3.6's architecture (qwen35moe) with one nextn block, Q8_0
    matrices (tests/support/tiny_gguf.py ``mtp_layers``)."""
    return write_model("qwen35moe", path, seed=seed, dtype="q8_0", mtp_layers=1)


def mtp_catalog_text(revision: str, *, draft: bool = True) -> str:
    """A one-model catalog for the tiny MTP model pinned to ``revision``; ``draft``: its server_args turn the head
    on (``--spec-type draft-mtp --spec-draft-n-max 2``)."""
    return catalog_text(revision, model_id=MTP_MODEL_ID, repo=MTP_MODEL_REPO, file=MTP_MODEL_FILE,
                        title="Tiny MTP chat (test)", architecture="qwen35moe",
                        server_args=(*SERVER_ARGS, *(MTP_ARGS if draft else ())))


def qwen_catalog_text(revision: str, *, server_args: Sequence[str] = SERVER_ARGS) -> str:
    """A one-model catalog for the Qwen chat model pinned to ``revision``: it thinks (``thinks = true``), so the
    server gets ``--reasoning off``, as for the shipped catalog's Qwen3.6 entries."""
    return catalog_text(revision, model_id=QWEN_MODEL_ID, repo=QWEN_MODEL_REPO, file=QWEN_MODEL_FILE,
                        title="Tiny Qwen chat (test)", architecture="qwen35moe", server_args=server_args,
                        thinks=True)


def serve_engine(hub: LoopbackHub, engine_asset: Path, *, variants: Mapping[str, Path] | None = None) -> str:
    """Serve the test bed's llama-server as the pinned release, under both Linux asset names (a machine without a
    GPU gets ubuntu-x64, one with a GPU the Vulkan build); ``variants`` serves other archives (stand-in builds)
    under some names. Returns the value for ``QWENKIT_ENGINE_URL``."""
    for variant in ("ubuntu-vulkan-x64", "ubuntu-x64"):
        asset = (variants or {}).get(variant, engine_asset)
        hub.add_release_asset(ENGINE_REPO, ENGINE_TAG, asset, f"llama-{ENGINE_TAG}-bin-{variant}.tar.gz")
    return f"{hub.endpoint}/{ENGINE_REPO}/releases/download"


def model_block(revision: str, *, model_id: str = MODEL_ID, repo: str = MODEL_REPO, file: str = MODEL_FILE,
                server_args: Sequence[str] = SERVER_ARGS, title: str = "Tiny chat (test)",
                architecture: str = "llama", quant: str = "Q8_0", thinks: bool | None = None) -> str:
    """One ``[[models]]`` entry pinned to ``revision`` on both hubs (no shape: the planner reads the header);
    ``thinks``: the catalog's ``thinks`` key (the server then gets ``--reasoning off``)."""
    args = ", ".join(f'"{a}"' for a in server_args)
    thinking = "" if thinks is None else f"thinks = {str(thinks).lower()}\n"
    return f'''
[[models]]
id = "{model_id}"
title = "{title}"
architecture = "{architecture}"
default_quant = "{quant}"
repos = [
  {{ hub = "hf", repo = "{repo}", revision = "{revision}" }},
  {{ hub = "modelscope", repo = "{repo}", revision = "{revision}" }},
]
quants = [ {{ name = "{quant}", file = "{file}" }} ]
server_args = [{args}]
{thinking}'''


def catalog_text(revision: str, *, model_id: str = MODEL_ID, **fields: object) -> str:
    """A one-model catalog pinned to ``revision`` on both hubs (``model_block``'s fields)."""
    return f'schema = 1\ndefault_model = "{model_id}"\n' + model_block(revision, model_id=model_id,
                                                                        **fields)  # type: ignore[arg-type]


@dataclass
class InstallBed:
    """The hub, a catalog file, a home and the environment that points the product at them."""

    hub: LoopbackHub
    home: Home
    catalog: Path
    engine_url: str
    wheels: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    def pin(self, revision: str, **kwargs: object) -> None:
        """Point the catalog at ``revision`` (what an updated catalog does)."""
        self.catalog.write_text(catalog_text(revision, **kwargs), encoding="utf-8")  # type: ignore[arg-type]

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("QWENKIT_", "LLAMA_ARG_"))}
        env.update({
            "QWENKIT_HOME": str(self.home.root), "QWENKIT_CATALOG": str(self.catalog),
            "QWENKIT_HF_ENDPOINT": self.hub.endpoint, "QWENKIT_MODELSCOPE_ENDPOINT": self.hub.endpoint,
            "QWENKIT_ENGINE_URL": self.engine_url, "QWENKIT_LANG": "en", "NO_PROXY": "127.0.0.1,localhost",
            "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1",
        })
        if self.wheels is not None:
            env["QWENKIT_WHEELS"] = str(self.wheels)
        env.update(self.extra_env)
        env.update(extra)
        return env

    def command(self, exe: Path | None = None) -> list[str]:
        return [str(exe)] if exe is not None else [sys.executable, "-m", "bootstrap"]

    def run(self, *argv: str, exe: Path | None = None, timeout: float = 600,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``qwenkit ARGV`` (or the frozen setup) to completion."""
        return subprocess.run([*self.command(exe), *argv], cwd=REPO_ROOT, env=dict(env or self.env()),
                              capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)

    def install(self, *argv: str, exe: Path | None = None, timeout: float = 600,
                **extra_env: str) -> subprocess.CompletedProcess[str]:
        return self.run("install", "--yes", "--no-service", *argv, exe=exe, timeout=timeout,
                        env=self.env(**extra_env))


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The one error line the CLI printed (never a traceback), without its ``error: `` prefix."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0].removeprefix("error: ")
