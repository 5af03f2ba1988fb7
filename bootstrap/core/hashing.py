"""SHA-256, the one digest every file the kit trusts is checked against: the pattern of a digest and the streamed
hash of a file. One home, so every stage reads files the same way (bounded memory, the same block size)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

SHA256_RE = re.compile(r"[0-9a-f]{64}")  # lower-case hex, as the hubs and ``sha256sum`` print it
BLOCK = 4 << 20  # 4 MiB: large enough that the hash, not the syscalls, sets the pace


def is_sha256(text: object) -> bool:
    """Whether ``text`` is a lower-case hex SHA-256 digest (64 characters, nothing else)."""
    return isinstance(text, str) and SHA256_RE.fullmatch(text) is not None


def sha256_bytes(data: bytes) -> str:
    """The digest of a few bytes already in memory (a rendered launcher, a small record)."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, on_block: Callable[[int], object] | None = None) -> str:
    """Streamed SHA-256 of a file (bounded memory); ``on_block(n)`` after each block, for a progress bar."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(BLOCK):
            digest.update(block)
            if on_block is not None:
                on_block(len(block))
    return digest.hexdigest()
