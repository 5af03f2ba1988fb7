"""A bed for offline bundles: the loopback hub serving the engine release, a tiny model and the real Gemma file, a
two-model catalog pinned to their commits, and ``qwenkit bundle create`` run against it in a subprocess.

The environment given to ``create`` is the connected machine's; installs from the bundle get none of it (no hub
endpoint, no catalog, no engine URL): whatever they need must come from the bundle.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support import testbed
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import MODEL_FILE, MODEL_ID, MODEL_REPO, model_block, serve_engine
from tests.support.testbed import GEMMA_FILE

GEMMA_ID = "gemma-3-270m"
GEMMA_REPO = "qwenkit-test/gemma-3-270m-GGUF"
# A base model without a chat template (docs/test-bed.md): llama.cpp's built-in gemma template.
GEMMA_ARGS = ("--no-jinja", "--chat-template", "gemma", "-c", "1024", "-t", "2")


def gemma_jinja_args(ctx: int = 4096) -> tuple[str, ...]:
    """Gemma with Jinja and llama.cpp's Gemma template file (the model has none; the Anthropic endpoint's system
    prompt goes through Jinja), one slot, two threads: what the prompt-cache test and bench install."""
    template = testbed.engine_sources() / "models" / "templates" / "google-gemma-2-2b-it.jinja"
    return ("--chat-template-file", str(template), "-c", str(ctx), "-np", "1", "-t", "2")


def gemma_catalog(gemma_revision: str, *others: str, ctx: int = 4096) -> str:
    """A catalog whose default is Gemma (``gemma_jinja_args``), then ``others`` (``model_block`` entries)."""
    return (f'schema = 1\ndefault_model = "{GEMMA_ID}"\n'
            + model_block(gemma_revision, model_id=GEMMA_ID, repo=GEMMA_REPO, file=GEMMA_FILE,
                          server_args=gemma_jinja_args(ctx), title="Gemma 3 270M (test)", architecture="gemma3",
                          quant="Q4_K_M")
            + "".join(others))


def two_model_catalog(gemma_revision: str, tiny_revision: str) -> str:
    """Gemma (the default: it gives a real answer) and the tiny random-weight llama model."""
    return (f'schema = 1\ndefault_model = "{GEMMA_ID}"\n'
            + model_block(gemma_revision, model_id=GEMMA_ID, repo=GEMMA_REPO, file=GEMMA_FILE,
                          server_args=GEMMA_ARGS, title="Gemma 3 270M (test)", architecture="gemma3",
                          quant="Q4_K_M")
            + model_block(tiny_revision))


@dataclass
class BundleBed:
    hub: LoopbackHub
    catalog: Path
    engine_url: str
    wheels: Path

    def create_env(self, **extra: str) -> dict[str, str]:
        """The connected machine: hub endpoints, catalog, engine URL, and the wheelhouse as the package index."""
        env = clean_env()
        env.update({"QWENKIT_CATALOG": str(self.catalog), "QWENKIT_HF_ENDPOINT": self.hub.endpoint,
                    "QWENKIT_MODELSCOPE_ENDPOINT": self.hub.endpoint, "QWENKIT_ENGINE_URL": self.engine_url,
                    "QWENKIT_WHEELS": str(self.wheels)})
        env.update(extra)
        return env

    def create(self, out: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``qwenkit bundle create --out OUT`` both models for linux-x64 and this Python."""
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        return qwenkit("bundle", "create", "--out", str(out), GEMMA_ID, MODEL_ID, "--platform", "linux-x64",
                       "--python", version, *argv, env=env or self.create_env())


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any QWENKIT_/LLAMA_ARG_/proxy setting: an offline machine's."""
    drop = ("QWENKIT_", "LLAMA_ARG_", "HF_", "MODELSCOPE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env.update({"QWENKIT_LANG": "en", "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1",
                "NO_PROXY": "127.0.0.1,localhost"})
    env.update(extra)
    return env


def qwenkit(*argv: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bootstrap", *argv], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)


def make_bed(hub: LoopbackHub, engine_asset: Path, gemma: Path, tiny: Path, catalog: Path, wheels: Path) -> BundleBed:
    """Serve the engine and both repos on ``hub`` and write the catalog pinning them."""
    engine_url = serve_engine(hub, engine_asset)
    gemma_rev = hub.create_repo(GEMMA_REPO, {GEMMA_FILE: gemma})
    tiny_rev = hub.create_repo(MODEL_REPO, {MODEL_FILE: tiny})
    catalog.write_text(two_model_catalog(gemma_rev, tiny_rev), encoding="utf-8")
    return BundleBed(hub, catalog, engine_url, wheels)
