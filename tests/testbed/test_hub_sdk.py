"""The loopback hub is faithful: the real SDKs download from it unchanged, and its faults reach them.

huggingface_hub and modelscope read their endpoint variables at import, so every check runs the SDK in a
fresh interpreter (``sdk_run``) whose environment points only at the hub; the snippet prints one JSON line.
"""

from __future__ import annotations

import functools
import hashlib
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import last_json, seeded_bytes

pytestmark = pytest.mark.sdk

REPO = "acme/Qwen-Tiny-GGUF"
MIB = 1024 * 1024


@functools.cache
def content() -> dict[str, bytes]:
    """Seeded files: a regular git file, a small LFS .gguf and a 24 MiB LFS .gguf (resume scenarios)."""
    return {
        "config.json": b'{"architectures": ["Qwen3ForCausalLM"]}\n' + seeded_bytes(3000, 11),
        "Qwen-Tiny-Q4_K_M.gguf": seeded_bytes(6 * MIB + 123, 12),
        "sub/Qwen-Tiny-F16.gguf": seeded_bytes(24 * MIB + 7, 13),
    }


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def repo(hub: LoopbackHub) -> str:
    return hub.create_repo(REPO, content())


Runner = Callable[..., Any]


@pytest.fixture
def snippet(sdk_run: Callable[..., Any]) -> Runner:
    """Run SDK code with ``sha(path)``, ``json``, ``time`` and ``out`` (a dict printed as JSON at the end)."""
    prelude = textwrap.dedent(
        """
        import hashlib, json, os, sys, time
        from pathlib import Path
        def sha(p):
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                while b := fh.read(1 << 20):
                    h.update(b)
            return h.hexdigest()
        out = {}
        """
    )

    def run(code: str, *, timeout: float = 90, env: dict[str, str] | None = None) -> Any:
        body = prelude + textwrap.dedent(code) + "\nprint(json.dumps(out))\n"
        return last_json(sdk_run(body, timeout=timeout, env=env))

    return run


# ---- faithfulness ---------------------------------------------------------------------------------


def test_hf_downloads_are_byte_identical(hub: LoopbackHub, repo: str, snippet: Runner) -> None:
    out = snippet(
        f"""
        from huggingface_hub import HfApi, hf_hub_download, list_repo_files, snapshot_download
        repo, commit = {REPO!r}, {repo!r}
        out["small"] = sha(hf_hub_download(repo, "config.json"))
        out["lfs"] = sha(hf_hub_download(repo, "Qwen-Tiny-Q4_K_M.gguf"))
        out["small_at_commit"] = sha(hf_hub_download(repo, "config.json", revision=commit))
        out["lfs_at_commit"] = sha(hf_hub_download(repo, "Qwen-Tiny-Q4_K_M.gguf", revision=commit,
                                                   cache_dir=os.environ["HF_HOME"] + "/other"))
        out["files"] = sorted(list_repo_files(repo))
        info = HfApi().model_info(repo, files_metadata=True)
        out["sha"] = info.sha
        out["siblings"] = {{s.rfilename: [s.size, s.lfs.sha256 if s.lfs else None, s.blob_id]
                           for s in info.siblings}}
        snap = Path(snapshot_download(repo, cache_dir=os.environ["HF_HOME"] + "/snap"))
        out["snapshot"] = {{p.relative_to(snap).as_posix(): sha(p) for p in snap.rglob("*") if p.is_file()}}
        out["snapshot_commit"] = snap.name
        """
    )
    files = content()
    assert out["small"] == out["small_at_commit"] == sha256(files["config.json"])
    assert out["lfs"] == out["lfs_at_commit"] == sha256(files["Qwen-Tiny-Q4_K_M.gguf"])
    assert out["files"] == sorted(files)
    assert out["sha"] == out["snapshot_commit"] == repo
    for path, data in files.items():
        size, lfs_sha, blob_id = out["siblings"][path]
        assert size == len(data)
        assert lfs_sha == (sha256(data) if path.endswith(".gguf") else None)
        assert blob_id == hub.entry(REPO, path).git_sha1
    assert out["snapshot"] == {p: sha256(d) for p, d in files.items()}
    hub.wait_idle()
    # The LFS bytes came from the CDN origin (three downloads of the 6 MiB file, one of the 24 MiB file).
    assert hub.bytes_served("*.gguf", origin="cdn") == 3 * len(files["Qwen-Tiny-Q4_K_M.gguf"]) + len(
        files["sub/Qwen-Tiny-F16.gguf"]
    )
    assert hub.bytes_served("*.gguf", origin="hub") == 0


def test_modelscope_downloads_are_byte_identical(hub: LoopbackHub, repo: str, snippet: Runner) -> None:
    out = snippet(
        f"""
        from modelscope.hub.file_download import model_file_download
        from modelscope.hub.snapshot_download import snapshot_download
        out["small"] = sha(model_file_download({REPO!r}, "config.json"))
        out["lfs"] = sha(model_file_download({REPO!r}, "Qwen-Tiny-Q4_K_M.gguf"))
        snap = Path(snapshot_download({REPO!r}, cache_dir=os.environ["MODELSCOPE_CACHE"] + "/snap"))
        out["snapshot"] = {{p.relative_to(snap).as_posix(): sha(p) for p in snap.rglob("*")
                           if p.is_file() and not p.name.startswith(".")}}
        """
    )
    files = content()
    assert out["small"] == sha256(files["config.json"])
    assert out["lfs"] == sha256(files["Qwen-Tiny-Q4_K_M.gguf"])
    assert out["snapshot"] == {p: sha256(d) for p, d in files.items()}
    hub.wait_idle()
    paths = {r.path.split("?")[0] for r in hub.requests(origin="hub")}
    assert f"/api/v1/models/{REPO}/repo/files" in paths  # snapshot lists (and so knows Sha256)
    assert hub.bytes_served("sub/Qwen-Tiny-F16.gguf", origin="cdn") == len(files["sub/Qwen-Tiny-F16.gguf"])


def test_modelscope_walks_a_capped_listing(hub: LoopbackHub, snippet: Runner) -> None:
    files = {f"d{i}/f{j}.txt": b"%d-%d" % (i, j) for i in range(3) for j in range(4)}
    hub.create_repo("acme/wide", files)
    hub.ms_files_cap = 6  # so the SDK's re-walk at the cap is exercised without thousands of files
    out = snippet(
        """
        from modelscope_hub import constants
        constants.REPO_FILES_TRUNCATION_LIMIT = 6
        from modelscope_hub import _legacy_api
        _legacy_api.REPO_FILES_TRUNCATION_LIMIT = 6
        from modelscope.hub.snapshot_download import snapshot_download
        snap = Path(snapshot_download("acme/wide"))
        out["files"] = sorted(p.relative_to(snap).as_posix() for p in snap.rglob("*.txt"))
        """
    )
    assert out["files"] == sorted(files)
    hub.wait_idle()
    roots = [r.path for r in hub.requests(origin="hub") if "repo/files" in r.path and "Root=" in r.path]
    assert roots, "the SDK should have re-listed per directory"


# ---- faults reaching real clients -----------------------------------------------------------------


def test_hf_waits_on_429_retry_after(hub: LoopbackHub, repo: str, snippet: Runner) -> None:
    fault = hub.inject("status", path_glob="*Q4_K_M.gguf", origin="cdn", code=429, retry_after=1)
    out = snippet(
        f"""
        from huggingface_hub import hf_hub_download
        t0 = time.monotonic()
        out["sha"] = sha(hf_hub_download({REPO!r}, "Qwen-Tiny-Q4_K_M.gguf"))
        out["elapsed"] = time.monotonic() - t0
        """
    )
    assert out["sha"] == sha256(content()["Qwen-Tiny-Q4_K_M.gguf"])
    assert fault.hits == 1
    assert out["elapsed"] >= 0.95  # it honoured Retry-After: 1
    hub.wait_idle()
    assert [r.status for r in hub.requests(origin="cdn")] == [429, 200]


def test_hf_accepts_a_corrupted_byte(hub: LoopbackHub, repo: str, snippet: Runner) -> None:
    """huggingface_hub checks the byte count only: a flipped byte lands in the cache as the file."""
    data = content()["Qwen-Tiny-Q4_K_M.gguf"]
    hub.inject("corrupt", path_glob="*Q4_K_M.gguf", offset=4 * MIB + 5)
    out = snippet(
        f"""
        from huggingface_hub import hf_hub_download
        p = hf_hub_download({REPO!r}, "Qwen-Tiny-Q4_K_M.gguf")
        out["sha"] = sha(p)
        out["size"] = os.path.getsize(p)
        with open(p, "rb") as fh:
            fh.seek({4 * MIB + 5})
            out["byte"] = fh.read(1)[0]
        """
    )
    assert out["size"] == len(data)
    assert out["sha"] != sha256(data)  # accepted silently: this is why the product verifies sha256
    assert out["byte"] == data[4 * MIB + 5] ^ 0xFF


def test_hf_fails_at_once_on_reset_and_resumes_in_process_after_fin(
    hub: LoopbackHub, repo: str, snippet: Runner
) -> None:
    data = content()["sub/Qwen-Tiny-F16.gguf"]
    hub.inject("reset", path_glob="sub/*.gguf", after=3 * MIB)
    out = snippet(
        f"""
        from huggingface_hub import hf_hub_download
        try:
            hf_hub_download({REPO!r}, "sub/Qwen-Tiny-F16.gguf")
            out["result"] = "ok"
        except Exception as exc:
            out["result"] = type(exc).__name__
        blobs = Path(os.environ["HF_HOME"], "hub", "models--acme--Qwen-Tiny-GGUF", "blobs")
        out["left"] = sorted(p.name for p in blobs.iterdir()) if blobs.exists() else []
        """
    )
    assert out["result"] != "ok"
    assert not [n for n in out["left"] if n.endswith(".incomplete")]  # the partial is deleted
    hub.wait_idle()
    hub.clear_log()
    hub.inject("close", path_glob="sub/*.gguf", after=15 * MIB)
    out = snippet(
        f"""
        from huggingface_hub import hf_hub_download
        out["sha"] = sha(hf_hub_download({REPO!r}, "sub/Qwen-Tiny-F16.gguf"))
        """
    )
    assert out["sha"] == sha256(data)
    hub.wait_idle()
    cdn = hub.requests(origin="cdn")
    assert len(cdn) == 2 and cdn[0].bytes == 15 * MIB
    assert cdn[1].range is not None and cdn[1].status == 206  # resumed in-process with a Range request
    resumed_from = int(cdn[1].range.split("=")[1].split("-")[0])
    assert resumed_from == 10 * MIB  # hf 2.4.0 keeps whole 10 MiB chunks only (docs/hubs.md)
    assert resumed_from + cdn[1].bytes == len(data)


def test_hf_refuses_a_hub_without_commit_header(hub: LoopbackHub, repo: str, snippet: Runner) -> None:
    hub.inject("no_commit_header", path_glob="config.json", times=None)
    out = snippet(
        f"""
        from huggingface_hub import hf_hub_download
        try:
            hf_hub_download({REPO!r}, "config.json")
            out["result"] = "ok"
        except Exception as exc:
            out["result"] = type(exc).__name__
            out["message"] = str(exc)
        """
    )
    assert out["result"] != "ok"
    assert "Hugging Face Hub" in out["message"] or "X-Repo-Commit" in out["message"]


def test_modelscope_resumes_after_close(hub: LoopbackHub, repo: str, snippet: Runner) -> None:
    data = content()["Qwen-Tiny-Q4_K_M.gguf"]
    hub.inject("close", path_glob="*Q4_K_M.gguf", after=2 * MIB + 1)
    out = snippet(
        f"""
        from modelscope.hub.file_download import model_file_download
        out["sha"] = sha(model_file_download({REPO!r}, "Qwen-Tiny-Q4_K_M.gguf"))
        """
    )
    assert out["sha"] == sha256(data)
    hub.wait_idle()
    cdn = hub.requests(origin="cdn", file_glob="*Q4_K_M.gguf")
    assert [(r.range, r.status, r.bytes) for r in cdn] == [
        (None, 200, 2 * MIB + 1),
        (f"bytes={2 * MIB + 1}-", 206, len(data) - 2 * MIB - 1),
    ]


def test_modelscope_snapshot_rejects_a_corrupted_byte(hub: LoopbackHub, repo: str, snippet: Runner) -> None:
    data = content()["Qwen-Tiny-Q4_K_M.gguf"]
    fault = hub.inject("corrupt", path_glob="*Q4_K_M.gguf", offset=123)
    out = snippet(
        f"""
        from modelscope.hub.snapshot_download import snapshot_download
        snap = Path(snapshot_download({REPO!r}, allow_patterns=["*Q4_K_M.gguf"]))
        out["sha"] = sha(snap / "Qwen-Tiny-Q4_K_M.gguf")
        """
    )
    assert fault.hits == 1
    assert out["sha"] == sha256(data)  # it hashed against the listing's Sha256 and downloaded again
    hub.wait_idle()
    assert hub.bytes_served("*Q4_K_M.gguf", origin="cdn") == 2 * len(data)


@pytest.mark.parametrize("linked_etag", [True, False])
def test_modelscope_single_file_under_upstream_change(
    hub: LoopbackHub, repo: str, snippet: Runner, linked_etag: bool
) -> None:
    """An upstream change mid-download: with X-Linked-ETag the SDK restarts; without it, silent corruption."""
    old = content()["Qwen-Tiny-Q4_K_M.gguf"]
    hub.ms_linked_etag = linked_etag
    hub.inject("mutate", path_glob="*Q4_K_M.gguf", after=3 * MIB)
    out = snippet(
        f"""
        from modelscope.hub.file_download import model_file_download
        try:
            out["sha"] = sha(model_file_download({REPO!r}, "Qwen-Tiny-Q4_K_M.gguf"))
        except Exception as exc:
            out["error"] = type(exc).__name__
        """
    )
    new_sha = hub.sha256_of(REPO, "Qwen-Tiny-Q4_K_M.gguf")
    assert new_sha != sha256(old) and hub.commit_of(REPO) != repo
    if linked_etag:
        assert out.get("sha") == new_sha
    else:
        assert "sha" in out and out["sha"] not in (new_sha, sha256(old))  # hash matches neither file
