"""The MODEL argument of DESIGN.md §2: a catalog id with optional quant, a single hub file, or a local ``.gguf``.

``qwen3.6-35b-a3b``, ``qwen3.6-35b-a3b:UD-IQ4_XS``, ``hf:OWNER/REPO/PATH[@REVISION]``, ``ms:OWNER/REPO/PATH[@REV]``,
``./model.gguf``. Parsing is pure; whether the id or file exists is checked by the catalog and the sources.
``wanted_model``: MODEL given wins; a rerun without one means "the model installed here" (its recorded request, so
a catalog id keeps following the catalog); a first install without one takes the catalog's default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.input_checks import check_text

_HUB_PREFIXES = {"hf": "hf", "ms": "modelscope", "modelscope": "modelscope"}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_REPO_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


@dataclass(frozen=True)
class CatalogRef:
    """A catalog model, optionally with a quant name."""

    model_id: str
    quant: str | None = None


@dataclass(frozen=True)
class HubFileRef:
    """One file in a hub repo, optionally at a revision (branch, tag or commit)."""

    hub: str
    repo: str
    path: str
    revision: str | None = None


@dataclass(frozen=True)
class LocalFileRef:
    """A GGUF file already on disk."""

    path: Path


ModelRef = CatalogRef | HubFileRef | LocalFileRef


def _bad(text: str) -> UsageError:
    return UsageError(t("plan.err_bad_model_ref", model=text), t("plan.hint_model_ref"))


def _hub_file(hub: str, rest: str, text: str) -> HubFileRef:
    spec, _, revision = rest.partition("@")
    parts = spec.split("/")
    if len(parts) < 3 or not all(parts):
        raise _bad(text)
    owner, name, path_parts = parts[0], parts[1], parts[2:]
    if not (_REPO_PART.match(owner) and _REPO_PART.match(name)):
        raise _bad(text)
    if any(p in (".", "..") for p in path_parts) or "\\" in spec:
        raise _bad(text)
    if (revision and not _REVISION.match(revision)) or (not revision and "@" in rest):
        raise _bad(text)
    return HubFileRef(hub, f"{owner}/{name}", "/".join(path_parts), revision or None)


def _exists(value: str) -> bool:
    """Whether a file or folder of that name exists; a name the filesystem cannot even look up (too long, a link
    loop) does not."""
    try:
        return Path(value).exists()
    except (OSError, ValueError):
        return False


def parse_model_ref(text: str) -> ModelRef:
    """Parse MODEL; a malformed value (control characters, over ``MAX_TEXT`` long) is a ``UsageError`` (exit 2)."""
    value = check_text("MODEL", text).strip()
    if not value:
        raise _bad(text)
    prefix, sep, rest = value.partition(":")
    if sep and prefix.lower() in _HUB_PREFIXES and not _exists(value):
        return _hub_file(_HUB_PREFIXES[prefix.lower()], rest, text)
    if value.lower().endswith(".gguf") or _exists(value):
        return LocalFileRef(Path(value).expanduser())
    model_id, _, quant = value.partition(":")
    if not _ID.match(model_id) or (sep and not _ID.match(quant)):
        raise _bad(text)
    return CatalogRef(model_id, quant or None)


@dataclass(frozen=True)
class Wanted:
    """The model an install is for: the text recorded in ``state.json`` and what it names."""

    text: str
    ref: ModelRef


def wanted_model(model: str | None, installed: str | None) -> Wanted:
    """MODEL, else ``installed`` (the MODEL text the install in this home was made for), else the catalog's default."""
    text = model or installed
    if not text:
        from bootstrap.catalog.models import load_catalog

        text = load_catalog().default_model
    return Wanted(text, parse_model_ref(text))
