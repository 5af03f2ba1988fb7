"""Shared by the download-engine tests: mirrors on the loopback hub in both protocols, and the fast retry options."""

from __future__ import annotations

import json
from pathlib import Path

from bootstrap.fetch.download import FetchOptions
from bootstrap.fetch.records import Mirror, RemoteFile
from tests.support.hub import LoopbackHub

MIB = 1 << 20
REPO = "acme/model"
FILE = "model-Q4.gguf"
# Fast retries so faults cost little wall time; the engine's defaults are seconds.
FAST = FetchOptions(connections=8, quiet=True, stall_timeout=1.0, max_attempts=4, backoff_base=0.05,
                    backoff_cap=1.5)  # fmt: skip


def hf_mirror(hub: LoopbackHub, repo: str = REPO, path: str = FILE, rev: str | None = None) -> Mirror:
    """HF protocol: /resolve/<commit>/<path>, a 302 to the CDN origin for LFS files."""
    return Mirror("hf", hub.resolve_url(repo, path, rev or hub.commit_of(repo)))


def ms_mirror(hub: LoopbackHub, repo: str = REPO, path: str = FILE, rev: str = "master") -> Mirror:
    """ModelScope protocol: /api/v1/models/{o}/{n}/repo?Revision=&FilePath= (302 to the CDN for LFS)."""
    return Mirror("modelscope", f"{hub.endpoint}/api/v1/models/{repo}/repo?Revision={rev}&FilePath={path}")


def remote(hub: LoopbackHub, *mirrors: Mirror, repo: str = REPO, path: str = FILE, rev: str = "main") -> RemoteFile:
    entry = hub.entry(repo, path, rev)
    return RemoteFile(path, entry.size, entry.sha256, tuple(mirrors))


def state_of(partial: Path, sha256: str) -> dict:
    return json.loads((partial / f"{sha256}.json").read_text())
