"""Small hand-made bundles for resolver tests: real files and a real manifest pair (``bundle_manifest.write``).

Whole bundles are made by ``qwenkit bundle create`` in the bundle tests; these only need a model file or two.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from bootstrap import __version__
from bootstrap.catalog import bundle_manifest
from bootstrap.catalog.bundle_manifest import BundleFile, Manifest


def model_bundle(root: Path, repo: str, files: Sequence[tuple[str, bytes]], *, tamper: bool = False) -> Manifest:
    """A bundle holding ``files`` (name, bytes) of ``repo``; ``tamper`` flips the last byte of each after listing."""
    entries = []
    for name, data in files:
        rel = f"payload/models/{repo}/{name}"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data[:-1] + bytes([data[-1] ^ 1]) if tamper else data)
        entries.append(BundleFile(rel, len(data), hashlib.sha256(data).hexdigest(), "model", repo, "0" * 40))
    manifest = Manifest("2026-11-30T00:00:00Z", __version__, (), (), (), {}, {}, tuple(entries))
    bundle_manifest.write(root, manifest)
    return manifest
