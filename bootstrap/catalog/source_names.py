"""The names ``--source`` gives the hubs (kept apart from ``sources``, which is heavy: a rerun checks this first)."""

from __future__ import annotations

# name → hub
SOURCE_NAMES = {"hf": "hf", "huggingface": "hf", "modelscope": "modelscope", "ms": "modelscope"}


def is_hub_source(source: str) -> bool:
    """``auto`` or a hub's name: not a mirror, not a bundle."""
    key = source.strip().lower()
    return key == "auto" or key in SOURCE_NAMES


def is_url(text: str) -> bool:
    """An ``http(s)://`` URL (a mirror or a served bundle), as opposed to a hub name or a folder."""
    return text.lower().startswith(("http://", "https://"))
