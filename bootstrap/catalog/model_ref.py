"""The MODEL argument of DESIGN.md §2: a catalog id with optional quant, a single hub file, or a local ``.gguf``.

``qwen3.6-35b-a3b``, ``qwen3.6-35b-a3b:UD-IQ4_XS``, ``hf:OWNER/REPO/PATH[@REVISION]``, ``ms:OWNER/REPO/PATH[@REV]``,
``./model.gguf``. A catalog model may be named as users type it elsewhere (``qwen3.5:4b``, ``Qwen/Qwen3.6-35B-A3B``,
``Qwen3.5-4B``): this is the one place every command's MODEL goes through, and it resolves such a name against the
catalog (``catalog.model_names``, docs/model-names.md) to the id and quant; an unknown or ambiguous name is exit 2
here. Whether a hub file or a local file exists is checked by the sources.
``wanted_model``: MODEL given wins; a rerun without one means "the model installed here" (its recorded request, so
a catalog id keeps following the catalog); a first install without one takes the catalog's default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
        if rest.count("/") == 1 and "@" not in rest:  # a repo, no file: a catalog model's repo names that model
            return _catalog_repo(rest, text)
        return _hub_file(_HUB_PREFIXES[prefix.lower()], rest, text)
    if value.lower().endswith(".gguf") or _exists(value):
        return LocalFileRef(Path(value).expanduser())
    return _catalog_ref(value)


def _catalog_repo(repo: str, text: str) -> CatalogRef:
    """``hf:unsloth/Qwen3.5-4B-GGUF``: the catalog model published there, else the usual "not a model" (a hub
    file needs its path)."""
    from bootstrap.catalog.models import current_catalog

    reading = current_catalog().resolve(repo)
    if reading is None:
        raise _bad(text)
    return CatalogRef(reading.model_id, reading.quant)


def _catalog_ref(value: str) -> CatalogRef:
    """The catalog model ``value`` names (``Catalog.resolve``). A known model with a quant it lacks keeps that quant
    (the catalog's lookup says which exist, with the closest); a name no model answers to is exit 2 now, with the
    closest catalog ids as the hint."""
    from bootstrap.catalog.models import current_catalog

    catalog = current_catalog()
    reading = catalog.resolve(value)
    if reading is not None:
        return CatalogRef(reading.model_id, reading.quant)
    head, sep, quant = value.rpartition(":")
    known = catalog.resolve(head) if sep and head.strip() else None
    if known is not None and known.quant is None and _ID.match(quant.strip()):
        return CatalogRef(known.model_id, quant.strip())
    raise catalog.unknown(value)


def model_text(ref: ModelRef, typed: str) -> str:
    """How MODEL is recorded and compared: a catalog model as ``id[:QUANT]`` whatever name was typed, anything
    else as typed."""
    if isinstance(ref, CatalogRef):
        return ref.model_id if ref.quant is None else f"{ref.model_id}:{ref.quant}"
    return typed


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
    ref = parse_model_ref(text)
    return Wanted(model_text(ref, text), ref)


def installed_name(text: str, names: Sequence[str]) -> str:
    """The installed model ``text`` names (``remove``, ``logs --model``, ``launch --model`` …): itself when a model
    is installed under that name, else the installed catalog model it names another way (``qwen3.5:4b``,
    ``Qwen/Qwen3.5-4B`` → ``qwen3.5-4b``); as typed when neither, so the caller says it is unknown with the
    installed names."""
    if text in names:
        return text
    try:
        ref = parse_model_ref(text)
    except UsageError:
        return text
    return ref.model_id if isinstance(ref, CatalogRef) and ref.model_id in names else text
