"""The names users type for a catalog model, resolved to its id (and quant) in one place (docs/model-names.md).

People bring names from elsewhere: Ollama's ``qwen3.5:4b`` and ``qwen3.6:35b``, Hugging Face and ModelScope repo ids
(``Qwen/Qwen3.6-35B-A3B``, ``unsloth/Qwen3.6-35B-A3B-GGUF``, Ollama's ``hf.co/OWNER/REPO:QUANT``), and the id in
another case or with other separators (``Qwen3.5-4B``, ``qwen3_5_4b``, ``qwen3.5 4b``). Each catalog model answers to:

- tier 0: its id, any case (what every earlier release accepted; always wins);
- tier 1: its id, its ``aliases`` (catalog key) and its repos' full ids, compared by ``name_key`` (case, width and
  the separators ``. _ - : / space`` ignored), so Ollama's ``family:size`` spelling is the id's own key;
- tier 2: names derived from its repos: the repo's name alone, without ``-GGUF``, and ``Qwen/<that>`` (the
  upstream model the GGUF repo converts).

The first tier with a match decides; two models at that tier is ambiguous (never a silent guess). A quant rides after
the name, split at ``:`` (the kit's ``id:QUANT``), ``-`` or a space (Ollama's ``4b-q4_K_M``): every split whose
first part names a model whose quant list holds the second part is a reading, and so is the whole text as a name;
more than one different reading is ambiguous too (exit 2, listing them).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

_SEPARATORS = re.compile(r"[\s._\-:/]+")
_QUANT_SPLIT = re.compile(r"[:\- ]")
# A hub's web address or Ollama's Hugging Face prefix before OWNER/REPO (``ollama run hf.co/unsloth/…-GGUF:Q4_K_M``).
_HUB_PREFIX = re.compile(r"^(?:https?://)?(?:www\.)?(?:hf\.co|huggingface\.co|modelscope\.cn/models|modelscope\.cn)/",
                         re.IGNORECASE)
TIERS = 3


class _Repo(Protocol):
    repo: str


class _Quant(Protocol):
    name: str


class NamedModel(Protocol):
    """What the index reads of a catalog model (``catalog.models.CatalogModel``)."""

    @property
    def id(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...
    @property
    def repos(self) -> Sequence[_Repo]: ...
    @property
    def quants(self) -> Sequence[_Quant]: ...


def name_key(text: str) -> str:
    """``Qwen3.5-4B``, ``qwen3_5_4b``, ``qwen3.5 4b``, ``qwen3.5:4b``, ``ｑｗｅｎ３.５：４ｂ`` → ``qwen354b``: NFKC
    (full-width letters and colons an input method types), case-folded, separators dropped."""
    return _SEPARATORS.sub("", unicodedata.normalize("NFKC", text).casefold())


def _derived(repo: str) -> list[str]:
    """Tier-2 names of one repo: ``unsloth/Qwen3.6-35B-A3B-GGUF`` → its name, its name without ``-GGUF`` and the
    upstream ``Qwen/Qwen3.6-35B-A3B``."""
    name = repo.rpartition("/")[2]
    out = [name]
    bare = re.sub(r"[-_.]gguf$", "", name, flags=re.IGNORECASE)
    if bare != name:
        out += [bare, f"Qwen/{bare}"]
    return out


@dataclass(frozen=True)
class Reading:
    """One way to read a typed name: a catalog id and the quant named with it (None: the model's default)."""

    model_id: str
    quant: str | None = None

    def text(self) -> str:
        return self.model_id if self.quant is None else f"{self.model_id}:{self.quant}"


class NameIndex:
    """Every name of every catalog model, by tier and key."""

    def __init__(self, models: Iterable[NamedModel]) -> None:
        self.models = tuple(models)
        self._tiers: list[dict[str, list[str]]] = [{} for _ in range(TIERS)]
        for model in self.models:
            self._add(0, model.id.casefold(), model.id)
            for name in (model.id, *model.aliases, *(r.repo for r in model.repos)):
                self._add(1, name_key(name), model.id)
            for repo in model.repos:
                for name in _derived(repo.repo):
                    self._add(2, name_key(name), model.id)
        self._quants = {m.id: {q.name.casefold(): q.name for q in m.quants} for m in self.models}

    def _add(self, tier: int, key: str, model_id: str) -> None:
        ids = self._tiers[tier].setdefault(key, [])
        if model_id not in ids:
            ids.append(model_id)

    def models_named(self, text: str) -> tuple[str, ...]:
        """The ids ``text`` names at its best tier (empty: none; more than one: ambiguous)."""
        bare = _HUB_PREFIX.sub("", text.strip())
        for tier, key in enumerate((bare.casefold(), name_key(bare), name_key(bare))):
            ids = self._tiers[tier].get(key)
            if ids:
                return tuple(ids)
        return ()

    def quant_of(self, model_id: str, text: str) -> str | None:
        """The quant of ``model_id`` that ``text`` names (any case), as the catalog spells it; None when none."""
        return self._quants.get(model_id, {}).get(unicodedata.normalize("NFKC", text).strip().casefold())

    def readings(self, text: str) -> tuple[Reading, ...]:
        """Every reading of ``text`` (see the module docstring); an exact id wins alone."""
        exact = self._tiers[0].get(text.strip().casefold())
        if exact:
            return (Reading(exact[0]),)
        found = [Reading(i) for i in self.models_named(text)]
        for match in _QUANT_SPLIT.finditer(text):
            head, tail = text[:match.start()], text[match.end():]
            if not head.strip() or not tail.strip():
                continue
            for model_id in self.models_named(head):
                quant = self.quant_of(model_id, tail)
                if quant is not None:
                    found.append(Reading(model_id, quant))
        return tuple(dict.fromkeys(found))

    def suggestions(self, text: str, limit: int = 4) -> list[str]:
        """Ids close to ``text``: those whose names start with what was typed (``qwen3`` → the Qwen3.x models),
        then the closest by ``difflib`` over every name's key (``qwen3:4b`` → ``qwen3.5-4b``)."""
        key = name_key(_HUB_PREFIX.sub("", text))
        if not key:
            return []
        by_key: dict[str, str] = {}
        for tier in self._tiers[1:]:
            for name, ids in tier.items():
                for model_id in ids:
                    by_key.setdefault(name, model_id)
        starts = [m.id for m in self.models if any(k.startswith(key) for k, i in by_key.items() if i == m.id)]
        close = [by_key[k] for k in difflib.get_close_matches(key, list(by_key), n=limit * 3, cutoff=0.6)]
        return list(dict.fromkeys([*starts, *close]))[:limit]
