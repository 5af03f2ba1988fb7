"""Content-addressed store behind the loopback hub: blobs, commits, branches, release assets.

Blobs live on disk under ``root/blobs/<sha256>`` so files of hundreds of MB are never held in memory;
commits are immutable maps of path -> :class:`FileEntry`, so an old commit keeps serving its bytes after
``main`` moves (which is what a client resuming a stale partial meets on a real hub).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 1 << 20
DEFAULT_LFS_THRESHOLD = 1 << 20
DEFAULT_LFS_PATTERNS: tuple[str, ...] = ("*.gguf",)
DEFAULT_BRANCH = "main"


def git_blob_sha1(data: bytes) -> str:
    """Git's object id for a regular file: sha1 over ``blob <n>\\0`` + bytes (what HF sends as ETag)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The git-lfs pointer file a real repo stores in place of a large file (its sha1 is the tree oid)."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class FileEntry:
    """One file of one commit, with every digest a hub protocol exposes."""

    path: str
    size: int
    sha256: str
    git_sha1: str  # of the content for regular files, of the pointer file for LFS files
    lfs: bool
    pointer_size: int = 0


@dataclass(frozen=True)
class Commit:
    """An immutable snapshot of a repo."""

    sha: str
    parent: str | None
    files: Mapping[str, FileEntry]
    created_at: float


@dataclass
class Repo:
    """A repo: its commits (all kept) and its movable refs."""

    repo_id: str
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    gated: bool = False


@dataclass(frozen=True)
class ReleaseAsset:
    """A release asset (engine archive) served like GitHub's ``releases/download``."""

    owner_repo: str
    tag: str
    name: str
    size: int
    sha256: str


class HubStore:
    """Repos and blobs under one root directory; all mutation goes through one lock."""

    def __init__(
        self,
        root: Path,
        *,
        lfs_threshold: int = DEFAULT_LFS_THRESHOLD,
        lfs_patterns: Iterable[str] = DEFAULT_LFS_PATTERNS,
    ) -> None:
        self.root = Path(root)
        self.blob_dir = self.root / "blobs"
        self.tmp_dir = self.root / "tmp"
        self.blob_dir.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        self.lfs_threshold = lfs_threshold
        self.lfs_patterns = tuple(lfs_patterns)
        self.repos: dict[str, Repo] = {}
        self.assets: dict[tuple[str, str, str], ReleaseAsset] = {}
        self._by_sha256: dict[str, tuple[str, str]] = {}
        self._counter = 0
        self.lock = threading.RLock()

    # ---- blobs -------------------------------------------------------------------------------------
    def blob_path(self, sha256: str) -> Path:
        return self.blob_dir / sha256

    def _ingest(self, content: bytes | Path) -> tuple[str, str, int]:
        """Put content into the blob store; return (sha256, git sha1 of content, size).

        Path inputs are hashed in 1 MiB chunks and hard-linked (or copied) into the store, never read whole.
        """
        if isinstance(content, bytes | bytearray | memoryview):
            data = bytes(content)
            sha = hashlib.sha256(data).hexdigest()
            target = self.blob_path(sha)
            if not target.exists():
                fd, tmp = tempfile.mkstemp(dir=self.tmp_dir)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, target)
            return sha, git_blob_sha1(data), len(data)
        src = Path(content)
        size = src.stat().st_size
        h256 = hashlib.sha256()
        h1 = hashlib.sha1(b"blob %d\0" % size)
        with src.open("rb") as fh:
            while block := fh.read(CHUNK):
                h256.update(block)
                h1.update(block)
        sha = h256.hexdigest()
        target = self.blob_path(sha)
        if not target.exists():
            tmp = self.tmp_dir / f"{sha}.{threading.get_ident()}.tmp"
            tmp.unlink(missing_ok=True)
            try:
                os.link(src, tmp)
            except OSError:
                shutil.copyfile(src, tmp)
            os.replace(tmp, target)
        return sha, h1.hexdigest(), size

    def is_lfs(self, path: str, size: int) -> bool:
        name = path.rsplit("/", 1)[-1]
        return size >= self.lfs_threshold or any(fnmatch.fnmatch(name, p) for p in self.lfs_patterns)

    def _entry(self, path: str, content: bytes | Path) -> FileEntry:
        sha, sha1, size = self._ingest(content)
        if self.is_lfs(path, size):
            pointer = lfs_pointer(sha, size)
            return FileEntry(path, size, sha, git_blob_sha1(pointer), True, len(pointer))
        return FileEntry(path, size, sha, sha1, False)

    # ---- repos and commits -------------------------------------------------------------------------
    def create_repo(self, repo_id: str, files: Mapping[str, bytes | Path], *, gated: bool = False) -> str:
        with self.lock:
            if repo_id in self.repos:
                raise ValueError(f"repo {repo_id} exists")
            if repo_id.count("/") != 1:
                raise ValueError(f"repo id must be owner/name: {repo_id!r}")
            self.repos[repo_id] = Repo(repo_id, gated=gated)
            return self.commit(repo_id, files)

    def commit(
        self,
        repo_id: str,
        files: Mapping[str, bytes | Path],
        delete: Iterable[str] = (),
        *,
        branch: str = DEFAULT_BRANCH,
    ) -> str:
        """Add a commit on ``branch`` (files added/replaced, ``delete`` removed); old commits stay."""
        new_entries = {p.strip("/"): self._entry(p.strip("/"), c) for p, c in files.items()}
        with self.lock:
            repo = self.repos[repo_id]
            parent = repo.branches.get(branch)
            tree = dict(repo.commits[parent].files) if parent else {}
            for p in delete:
                tree.pop(p.strip("/"), None)
            tree.update(new_entries)
            self._counter += 1
            seed = f"{repo_id}\n{parent}\n{self._counter}\n{time.time_ns()}\n" + "\n".join(
                f"{e.path} {e.sha256}" for e in sorted(tree.values(), key=lambda e: e.path)
            )
            sha = hashlib.sha1(seed.encode()).hexdigest()
            repo.commits[sha] = Commit(sha, parent, dict(tree), time.time())
            repo.branches[branch] = sha
            for e in new_entries.values():
                self._by_sha256.setdefault(e.sha256, (repo_id, e.path))
            return sha

    def tag(self, repo_id: str, name: str, rev: str = DEFAULT_BRANCH) -> str:
        with self.lock:
            commit = self.resolve(repo_id, rev)
            if commit is None:
                raise KeyError(rev)
            self.repos[repo_id].tags[name] = commit.sha
            return commit.sha

    def resolve(self, repo_id: str, rev: str) -> Commit | None:
        """Branch, tag or full 40-hex commit sha -> commit (None when unknown)."""
        with self.lock:
            repo = self.repos.get(repo_id)
            if repo is None:
                return None
            sha = repo.branches.get(rev) or repo.tags.get(rev) or rev
            return repo.commits.get(sha)

    def entry(self, repo_id: str, path: str, rev: str = DEFAULT_BRANCH) -> FileEntry:
        commit = self.resolve(repo_id, rev)
        if commit is None:
            raise KeyError(f"{repo_id}@{rev}")
        return commit.files[path.strip("/")]

    def locate_sha256(self, sha256: str) -> tuple[str, str] | None:
        """Some (repo_id, path) that first carried this blob; lets the CDN name a file for fault matching."""
        return self._by_sha256.get(sha256)

    def mutate_file(self, repo_id: str, path: str) -> str:
        """Upstream change: commit new bytes of the same size for ``path`` on main (every byte XOR 0xA5)."""
        with self.lock:
            old = self.entry(repo_id, path)
            table = bytes(b ^ 0xA5 for b in range(256))
            fd, tmp = tempfile.mkstemp(dir=self.tmp_dir)
            with os.fdopen(fd, "wb") as out, self.blob_path(old.sha256).open("rb") as src:
                while block := src.read(CHUNK):
                    out.write(block.translate(table))
            try:
                return self.commit(repo_id, {path: Path(tmp)})
            finally:
                Path(tmp).unlink(missing_ok=True)

    # ---- trees ------------------------------------------------------------------------------------
    @staticmethod
    def directories(files: Iterable[str]) -> set[str]:
        dirs: set[str] = set()
        for p in files:
            parts = p.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        return dirs

    def list_tree(self, commit: Commit, root: str = "", *, recursive: bool) -> list[tuple[str, FileEntry | None]]:
        """Entries under ``root`` as (path, entry or None for a directory), sorted by path.

        Raises KeyError when ``root`` is neither empty nor a directory of the commit.
        """
        root = root.strip("/")
        dirs = self.directories(commit.files)
        if root and root not in dirs:
            raise KeyError(root)
        prefix = f"{root}/" if root else ""
        out: list[tuple[str, FileEntry | None]] = []
        for d in dirs:
            if d.startswith(prefix) and (recursive or "/" not in d[len(prefix) :]):
                out.append((d, None))
        for p, e in commit.files.items():
            if p.startswith(prefix) and (recursive or "/" not in p[len(prefix) :]):
                out.append((p, e))
        out.sort(key=lambda t: t[0])
        return out

    # ---- release assets ---------------------------------------------------------------------------
    def add_release_asset(self, owner_repo: str, tag: str, content: bytes | Path, name: str | None = None) -> str:
        if name is None:
            if not isinstance(content, Path):
                raise ValueError("name is required for bytes content")
            name = content.name
        sha, _, size = self._ingest(content)
        with self.lock:
            self.assets[(owner_repo, tag, name)] = ReleaseAsset(owner_repo, tag, name, size, sha)
        return sha

    def release_assets(self, owner_repo: str, tag: str) -> list[ReleaseAsset]:
        """The assets of one release, by name (what the GitHub release API lists)."""
        with self.lock:
            found = [a for (o, t, _n), a in self.assets.items() if o == owner_repo and t == tag]
        return sorted(found, key=lambda a: a.name)
