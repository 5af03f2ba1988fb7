"""Pytest fixtures that hand out tiny random GGUF models (``tests/support/tiny_gguf.py``).

Loaded by ``tests/conftest.py`` through ``pytest_plugins``. Models are written on demand (well under a second
each) into pytest's temporary directories, never into the repository; the one exception is the Qwen chat model
(``qwen_chat_gguf``), built once from the pinned llama.cpp sources into the shared test bed cache.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.qwen_chat_model import qwen_chat_model
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


@pytest.fixture(scope="session")
def qwen_chat_gguf() -> Path:
    """The tiny model with the Qwen3.5/3.6 family's real chat template and tokenizer (``qwen_chat_model.py``):
    tool calls, JSON schemas and thinking switches work with it. Cached in the test bed cache; read-only."""
    return qwen_chat_model()
