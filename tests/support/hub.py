"""Loopback model hub: Hugging Face + ModelScope protocols, a CDN origin, release assets, fault injection.

The product's fetch stage and the real SDKs (``huggingface_hub``, ``modelscope``) talk to it unchanged through
``HF_ENDPOINT`` / ``MODELSCOPE_ENDPOINT``, so tests exercise real HTTP, real redirects across origins and real
broken connections on 127.0.0.1 instead of mocks. Protocol facts: ``docs/hubs.md``.

Run standalone (scripts, benchmarks)::

    python -m tests.support.hub --root DIR --tree SRC [--port P] [--cdn-port C]

prints ``{"endpoint": ..., "cdn_endpoint": ..., ...}`` as one JSON line and serves until killed.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from tests.support.hub_faults import FAULT_KINDS, FaultHandle, FaultRegistry
from tests.support.hub_http import LogRecord, Server, parse_range
from tests.support.hub_routes import SETTINGS, Handler
from tests.support.hub_store import (
    DEFAULT_BRANCH,
    DEFAULT_LFS_PATTERNS,
    DEFAULT_LFS_THRESHOLD,
    FileEntry,
    HubStore,
)

__all__ = ["FAULT_KINDS", "SETTINGS", "FaultHandle", "LogRecord", "LoopbackHub", "parse_range"]


class LoopbackHub:
    """Hugging Face + ModelScope hub and a CDN origin on 127.0.0.1, for tests.

    Hub origin ``http://127.0.0.1:H`` (APIs, resolve, releases); CDN origin ``http://localhost:C`` (another
    hostname, as huggingface.co's LFS CDN and GitHub's asset host are) serving ``/lfs/<sha256>`` and
    ``/assets/<sha256>`` behind 302s with a ``?sig=`` query.
    """

    def __init__(
        self,
        root: Path,
        *,
        port: int = 0,
        cdn_port: int = 0,
        lfs_threshold: int = DEFAULT_LFS_THRESHOLD,
        lfs_patterns: Iterable[str] = DEFAULT_LFS_PATTERNS,
        tree_page_size: int = 1000,
        ms_files_cap: int = 3000,
        lfs_mode: str = "redirect",
        ms_linked_etag: bool = True,
        release_digests: bool = True,
    ) -> None:
        self.store = HubStore(Path(root), lfs_threshold=lfs_threshold, lfs_patterns=lfs_patterns)
        self.faults = FaultRegistry()
        self.log: list[LogRecord] = []
        self.tree_page_size = tree_page_size
        self.ms_files_cap = ms_files_cap
        if lfs_mode not in ("redirect", "direct"):
            raise ValueError("lfs_mode is 'redirect' or 'direct'")
        self.lfs_mode = lfs_mode
        self.ms_linked_etag = ms_linked_etag
        self.release_digests = release_digests  # False: the release API omits "digest" (assets before mid-2025)
        self._ports = (port, cdn_port)
        self._servers: list[Server] = []
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._key = os.urandom(16)
        self._log_lock = threading.Lock()
        self._idle = threading.Condition()
        self._in_flight = 0

    # ---- lifecycle --------------------------------------------------------------------------------
    def start(self) -> LoopbackHub:
        if self._servers:
            return self
        self._stopping.clear()
        self._servers = [
            Server(("127.0.0.1", self._ports[0]), self, "hub", Handler),
            Server(("127.0.0.1", self._ports[1]), self, "cdn", Handler),
        ]
        for srv in self._servers:
            t = threading.Thread(
                target=srv.serve_forever, kwargs={"poll_interval": 0.1}, name=f"hub-{srv.origin}", daemon=True
            )
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        """Stop both origins, cut open connections and wake any stalled or throttled response."""
        self._stopping.set()
        for srv in self._servers:
            srv.shutdown()
            srv.cut_connections()
            srv.server_close()
        for t in self._threads:
            t.join(timeout=5)
        self._servers, self._threads = [], []

    def __enter__(self) -> LoopbackHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._servers[0].server_address[1]

    @property
    def cdn_port(self) -> int:
        return self._servers[1].server_address[1]

    @property
    def endpoint(self) -> str:
        """Hub URL for ``HF_ENDPOINT`` / ``MODELSCOPE_ENDPOINT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdn_endpoint(self) -> str:
        return f"http://localhost:{self.cdn_port}"

    # ---- content ----------------------------------------------------------------------------------
    def create_repo(self, repo_id: str, files: Mapping[str, bytes | Path], *, gated: bool = False) -> str:
        """New repo with one commit on ``main``; returns the commit sha."""
        return self.store.create_repo(repo_id, files, gated=gated)

    def commit(self, repo_id: str, files: Mapping[str, bytes | Path], delete: Iterable[str] = ()) -> str:
        """New commit on ``main`` (old commits and their blobs stay served); returns its sha."""
        return self.store.commit(repo_id, files, delete)

    def tag(self, repo_id: str, name: str, rev: str = DEFAULT_BRANCH) -> str:
        return self.store.tag(repo_id, name, rev)

    def create_repos_from_tree(self, src: Path) -> dict[str, str]:
        """Serve ``src/{owner}/{name}/**`` as repos (one commit each); returns repo -> commit.

        Files are hard-linked into the blob store where possible (no copy of multi-GB trees), so do not
        rewrite a source file in place afterwards; replace it (new inode) or commit it again.
        """
        out: dict[str, str] = {}
        for owner in sorted(p for p in Path(src).iterdir() if p.is_dir()):
            for repo in sorted(p for p in owner.iterdir() if p.is_dir()):
                files = {
                    f.relative_to(repo).as_posix(): f
                    for f in sorted(repo.rglob("*"))
                    if f.is_file() and ".git" not in f.relative_to(repo).parts
                }
                out[f"{owner.name}/{repo.name}"] = self.create_repo(f"{owner.name}/{repo.name}", files)
        return out

    serve_tree = create_repos_from_tree

    def add_release_asset(self, owner_repo: str, tag: str, path: Path | bytes, name: str | None = None) -> str:
        """Serve an asset at ``/{owner}/{repo}/releases/download/{tag}/{name}``; returns its sha256."""
        return self.store.add_release_asset(owner_repo, tag, path, name)

    def release_url(self, owner_repo: str, tag: str, name: str) -> str:
        return f"{self.endpoint}/{owner_repo}/releases/download/{quote(tag)}/{quote(name)}"

    def release_base(self, owner_repo: str) -> str:
        """The ``…/releases/download`` base for ``QWENKIT_ENGINE_URL``."""
        return f"{self.endpoint}/{owner_repo}/releases/download"

    def release_api_url(self, owner_repo: str, tag: str) -> str:
        """GitHub-Enterprise-style release-by-tag API: ``/api/v3/repos/{owner}/{repo}/releases/tags/{tag}``."""
        return f"{self.endpoint}/api/v3/repos/{owner_repo}/releases/tags/{quote(tag, safe='')}"

    def resolve_url(self, repo_id: str, path: str, rev: str = DEFAULT_BRANCH) -> str:
        return f"{self.endpoint}/{repo_id}/resolve/{quote(rev, safe='')}/{quote(path)}"

    def sha256_of(self, repo_id: str, path: str, rev: str = DEFAULT_BRANCH) -> str:
        return self.store.entry(repo_id, path, rev).sha256

    def entry(self, repo_id: str, path: str, rev: str = DEFAULT_BRANCH) -> FileEntry:
        return self.store.entry(repo_id, path, rev)

    def commit_of(self, repo_id: str, rev: str = DEFAULT_BRANCH) -> str:
        commit = self.store.resolve(repo_id, rev)
        if commit is None:
            raise KeyError(f"{repo_id}@{rev}")
        return commit.sha

    def read_file(self, repo_id: str, path: str, rev: str = DEFAULT_BRANCH) -> bytes:
        """The exact bytes of a file (small files; for comparisons in tests)."""
        return self.store.blob_path(self.sha256_of(repo_id, path, rev)).read_bytes()

    def sign(self, sha256: str) -> str:
        return hmac.new(self._key, sha256.encode(), hashlib.sha256).hexdigest()[:32]

    def cdn_url(
        self, sha256: str, repo_id: str | None = None, path: str | None = None, *, kind: str = "lfs",
        name: str | None = None,
    ) -> str:  # fmt: skip
        q = {"sig": self.sign(sha256)}
        if repo_id and path:
            q.update({"repo": repo_id, "path": path})
        if name:
            q["name"] = name
        return f"{self.cdn_endpoint}/{kind}/{sha256}?{urlencode(q)}"

    # ---- faults and log ---------------------------------------------------------------------------
    def inject(self, kind: str, *, path_glob: str = "*", times: int | None = 1, **params: Any) -> FaultHandle:
        """Arm a fault for the next ``times`` matching requests (None: until removed).

        Extra keywords: ``scope`` ("file" byte routes, "api" listings/info matched on the URL path, "any"),
        ``method``, ``origin`` ("hub"/"cdn"), and the kind's parameters (see ``FAULT_KINDS``).
        """
        return self.faults.add(kind, path_glob=path_glob, times=times, **params)

    def clear_faults(self) -> None:
        self.faults.clear()

    def _busy(self, delta: int) -> None:
        with self._idle:
            self._in_flight += delta
            self._idle.notify_all()

    def wait_idle(self, timeout: float = 10, *, besides: int = 0) -> None:
        """Block until no request is being answered (``besides``: the caller's own, for a control route): ``log``
        is final (a request is logged after its answer is sent, a cut response after the cut)."""
        with self._idle:
            if not self._idle.wait_for(lambda: self._in_flight <= besides, timeout):
                raise TimeoutError(f"{self._in_flight} request(s) still in flight after {timeout} s")

    def _record(self, rec: LogRecord) -> None:
        with self._log_lock:
            self.log.append(rec)

    def clear_log(self) -> None:
        with self._log_lock:
            self.log.clear()

    def bytes_served(self, file_glob: str = "*", *, origin: str | None = None) -> int:
        """Body bytes of byte routes whose file matches ``file_glob`` (what a test counts re-downloads by)."""
        with self._log_lock:
            return sum(
                r.bytes
                for r in self.log
                if r.file is not None
                and fnmatch.fnmatchcase(r.file, file_glob)
                and (origin is None or r.origin == origin)
            )

    def requests(self, *, origin: str | None = None, file_glob: str | None = None) -> list[LogRecord]:
        with self._log_lock:
            return [
                r
                for r in self.log
                if (origin is None or r.origin == origin)
                and (file_glob is None or (r.file is not None and fnmatch.fnmatchcase(r.file, file_glob)))
            ]


def _iter_assets(specs: Iterable[str]) -> Iterator[tuple[str, str, Path]]:
    for spec in specs:
        owner_repo, tag, path = spec.split(":", 2)
        yield owner_repo, tag, Path(path)


def main(argv: list[str] | None = None) -> int:
    """Serve a directory tree until SIGTERM/SIGINT; print the endpoints as one JSON line."""
    ap = argparse.ArgumentParser(prog="python -m tests.support.hub", description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True, help="hub state (blob store) directory")
    ap.add_argument("--tree", type=Path, help="serve SRC/{owner}/{name}/** as repos")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--cdn-port", type=int, default=0)
    ap.add_argument("--asset", action="append", default=[], metavar="OWNER/REPO:TAG:PATH")
    ap.add_argument("--lfs-threshold", type=int, default=DEFAULT_LFS_THRESHOLD)
    ap.add_argument("--tree-page-size", type=int, default=1000)
    args = ap.parse_args(argv)
    hub = LoopbackHub(
        args.root,
        port=args.port,
        cdn_port=args.cdn_port,
        lfs_threshold=args.lfs_threshold,
        tree_page_size=args.tree_page_size,
    )
    repos = hub.create_repos_from_tree(args.tree) if args.tree else {}
    assets = {hub.release_url(o, t, p.name): hub.add_release_asset(o, t, p) for o, t, p in _iter_assets(args.asset)}
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with hub:
        line = {"endpoint": hub.endpoint, "cdn_endpoint": hub.cdn_endpoint, "repos": repos, "assets": assets}
        print(json.dumps(line), flush=True)
        while not done.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
