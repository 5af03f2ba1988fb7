"""Every user-facing sentence, in English and Simplified Chinese, keyed by a short id.

Kept apart from ``console`` so the catalogue can be reviewed (and tested for completeness) as one table.
Each stage owns one module (``doctor``, ``gguf``, ``plan``, ``fetch``, ``sources``…) whose ``MESSAGES`` dict is
merged here; a key defined twice is a bug caught at import.
"""

from __future__ import annotations

from types import ModuleType

from bootstrap.core.messages import (
    bundle,
    bundle_create,
    core,
    deploy,
    doctor,
    engine,
    failure,
    fetch,
    gguf,
    inputs,
    install,
    launcher,
    memory,
    plan,
    pyenv,
    render,
    service,
    setup,
    sources,
    state,
    uninstall,
    verify,
)

# Static imports (not importlib) so PyInstaller sees every part.
_PARTS: tuple[ModuleType, ...] = (core, inputs, doctor, gguf, memory, plan, fetch, sources, engine, failure, state,
                                  pyenv, deploy, render, verify, service, launcher, install, uninstall, setup, bundle,
                                  bundle_create)


def _merge() -> dict[str, dict[str, str]]:
    merged: dict[str, dict[str, str]] = {}
    for part in _PARTS:
        for key, texts in part.MESSAGES.items():
            if key in merged:
                raise RuntimeError(f"message key {key!r} defined twice ({part.__name__})")
            merged[key] = texts
    return merged


MESSAGES: dict[str, dict[str, str]] = _merge()
