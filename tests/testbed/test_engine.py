"""The test bed's engine: it serves, and its packed release asset looks and unpacks like upstream's."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.support import standin, testbed
from tests.support.llama import LlamaServer


def test_asset_is_named_and_laid_out_like_upstream(engine_asset: Path) -> None:
    assert engine_asset.name == "llama-b10434-bin-ubuntu-vulkan-x64.tar.gz"
    with tarfile.open(engine_asset) as tf:
        members = tf.getmembers()
    assert {m.name.split("/")[0] for m in members} == {"llama-b10434"}
    server = next(m for m in members if m.name == "llama-b10434/llama-server")
    assert server.isfile() and server.mode & 0o111
    for link in (m for m in members if m.issym()):
        # in-folder relative links only (what a safe extractor must accept), never pointing outside
        assert "/" not in link.linkname and not link.linkname.startswith(".."), link.name
        assert any(m.name == f"llama-b10434/{link.linkname}" and m.isfile() for m in members), link.name


def test_asset_is_reproducible(engine_bin_dir: Path, engine_asset: Path, tmp_path: Path) -> None:
    copy = tmp_path / "bin"
    shutil.copytree(engine_bin_dir, copy)  # new mtimes, same contents
    again = testbed.release_asset(copy, out_dir=tmp_path / "out")
    assert again != engine_asset and testbed.sha256_file(again) == testbed.sha256_file(engine_asset)


def test_unpacked_asset_runs_version(engine_asset: Path, tmp_path: Path) -> None:
    bin_dir = testbed.unpack_asset(engine_asset, tmp_path / "unpacked")
    assert bin_dir == tmp_path / "unpacked" / "llama-b10434"
    proc = subprocess.run([str(bin_dir / "llama-server"), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "version:" in proc.stderr + proc.stdout  # llama-server prints its version on stderr


def test_unpacked_asset_serves_a_model(engine_asset: Path, tiny_models: dict[str, Path], tmp_path: Path) -> None:
    bin_dir = testbed.unpack_asset(engine_asset, tmp_path / "unpacked")
    with LlamaServer(bin_dir / "llama-server", tiny_models["llama"], ["-c", "256", "-np", "1", "-t", "2"]) as srv:
        body = srv.chat("hello", max_tokens=4)
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["usage"]["completion_tokens"] > 0


def test_api_key_is_enforced(llama_server: Path, tiny_models: dict[str, Path]) -> None:
    import requests

    with LlamaServer(llama_server, tiny_models["llama"], ["-c", "256", "-np", "1", "-t", "2"],
                     api_key="test-key-123") as srv:
        denied = requests.post(f"{srv.base_url}/v1/chat/completions", json={"messages": [
            {"role": "user", "content": "hi"}], "max_tokens": 1}, timeout=30)
        assert denied.status_code == 401
        assert srv.chat("hi", max_tokens=2)["choices"]
        assert requests.get(f"{srv.base_url}/health", timeout=10).status_code == 200  # stays public


@pytest.mark.slow
def test_fallback_build_from_source(tmp_path: Path) -> None:
    """The from-source path on its own (about 8 minutes on 2 cores; reuses the cached build tree)."""
    out = testbed.provision_engine_from_source(tmp_path / "bin")
    proc = subprocess.run([str(out / "llama-server"), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "build 11434" in proc.stderr + proc.stdout


def test_prebuilt_wheel_packs_like_upstream(tmp_path: Path) -> None:
    """The prebuilt wheel's bin/ (what the asset holds on CPUs that run it) packs with in-folder symlinks.

    Runs ``--version`` only: on AVX2-only CPUs this build dies with SIGILL at the first matrix multiplication.
    """
    bin_dir = testbed.provision_engine_from_wheel(tmp_path / "wheel-bin")
    asset = testbed.release_asset(bin_dir, out_dir=tmp_path / "out")
    with tarfile.open(asset) as tf:
        links = {m.name.rsplit("/", 1)[1]: m.linkname for m in tf.getmembers() if m.issym()}
    assert links["libllama.so"] == "libllama.so.0.1.0" and links["libggml.so.0"] == "libggml.so.0.20.0"
    unpacked = testbed.unpack_asset(asset, tmp_path / "unpacked")
    assert (unpacked / "libllama.so").resolve() == (unpacked / "libllama.so.0.1.0").resolve()
    proc = subprocess.run([str(unpacked / "llama-server"), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "build 1," in proc.stderr + proc.stdout


# ---- the acceptance rule (DESIGN.md §6): only an engine that serves quantized weights on this CPU ------------
def test_acceptance_rejects_an_engine_that_serves_f32_but_dies_on_quantized(
        engine_bin_dir: Path, tiny_models: dict[str, Path], tmp_path: Path) -> None:
    """The failure seen with the prebuilt wheel on an AVX-512 CPU without AMX, on any machine: a tiny F32 model
    is served (the old smoke test passed), the first quantized model kills the server with SIGILL."""
    folder = standin.engine_folder(tmp_path / "bin", engine_bin_dir, standin.sigill_on_quantized())
    with LlamaServer(folder / "llama-server", tiny_models["llama"], ["-c", "256", "-np", "1", "-t", "2"]) as srv:
        assert srv.chat("hi", max_tokens=2)["choices"]
    verdict = testbed.accept_engine(folder)
    assert not verdict.ok
    assert verdict.reason == "tiny llama Q4_0/Q8_0: killed by SIGILL"


def test_acceptance_requires_every_tool_the_tests_run(engine_bin_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    shutil.copy2(engine_bin_dir / "llama-server", folder / "llama-server")  # a working server, no fit tool
    verdict = testbed.accept_engine(folder)
    assert not verdict.ok and verdict.reason.startswith("missing llama-fit-params")


def test_acceptance_requires_the_web_ui(engine_bin_dir: Path, tmp_path: Path) -> None:
    """An engine built without its web UI (the cache before the UI was built in) is rejected, so it is rebuilt."""
    folder = standin.engine_folder(tmp_path / "bin", engine_bin_dir, standin.without_web_ui())
    verdict = testbed.accept_engine(folder)
    assert not verdict.ok
    assert verdict.reason.startswith("web UI: GET / answered 404"), verdict.reason


def test_the_accepted_engine_serves_its_web_ui_under_the_key(llama_server: Path, tiny_models: dict[str, Path]
                                                             ) -> None:
    assert testbed.web_ui_problem(llama_server, tiny_models["llama"]) is None


def test_the_accepted_engine_passes_the_rule_and_is_stamped_for_this_cpu(engine_bin_dir: Path) -> None:
    assert testbed.accept_engine(engine_bin_dir).ok
    assert (engine_bin_dir / testbed.STAMP).read_text().startswith(testbed.ACCEPT_RULE)


def test_a_rejected_cache_is_replaced_by_the_next_candidate(engine_bin_dir: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache holding an engine accepted under an older rule (here: the SIGILL stand-in) is checked again,
    rejected with its reason, and the next candidate is provisioned and accepted."""
    cache = tmp_path / "cache"
    standin.engine_folder(cache / "engine" / "bin", engine_bin_dir, standin.sigill_on_quantized())
    (cache / "engine" / "bin" / ".smoke-ok").write_text("old rule")
    monkeypatch.setenv("QWENKIT_TESTBED_CACHE", str(cache))
    monkeypatch.setenv("QWENKIT_TESTBED_ENGINE", "source")
    built: list[Path] = []

    def build(final: Path) -> Path:  # the from-source candidate, taken from the already accepted build
        built.append(final)
        shutil.rmtree(final)
        shutil.copytree(engine_bin_dir, final, ignore=shutil.ignore_patterns(".*"))
        return final

    monkeypatch.setattr(testbed, "provision_engine_from_source", build)
    chosen = testbed.engine_dir()
    assert built == [chosen] and not (chosen / standin.REAL).exists()
    assert testbed.accept_engine(chosen).ok and (chosen / testbed.STAMP).is_file()
