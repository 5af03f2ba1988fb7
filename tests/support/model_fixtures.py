"""Pytest fixtures that hand out tiny random GGUF models (``tests/support/tiny_gguf.py``).

Loaded by ``tests/conftest.py`` through ``pytest_plugins``. Models are written on demand (well under a second
each) into pytest's temporary directories, never into the repository or the shared test bed cache.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.tiny_gguf import ARCHES, write_model


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One default-shaped model per architecture (``arch -> Path``), written once per session.

    Treat the files as read-only: other tests in the session share them.
    """
    root = tmp_path_factory.mktemp("tiny-models")
    return {arch: write_model(arch, root / f"tiny-{arch}.gguf") for arch in ARCHES}


@pytest.fixture
def make_tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Factory ``make_tiny_model(arch, *, seed=0, **overrides) -> Path`` for models with a non-default shape.

    Each call writes a new file in a fresh temporary directory, so a test may make several shapes.
    """
    root = tmp_path_factory.mktemp("tiny-model")
    counter = iter(range(1_000_000))

    def make(arch: str, *, seed: int = 0, **overrides: Any) -> Path:
        return write_model(arch, root / f"tiny-{arch}-{next(counter)}.gguf", seed=seed, **overrides)

    return make
