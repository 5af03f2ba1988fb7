"""The model catalog (``payload/catalog.toml``, DESIGN.md §4): which models, which quants, from which repos.

Parsed once into small immutable records; every malformed entry is a one-line ``UsageError`` naming the field, so an
intranet admin who edits a catalog (``QWENKIT_CATALOG``) gets told exactly what is wrong.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bootstrap.catalog.model_names import NameIndex, Reading, name_key
from bootstrap.core import settings
from bootstrap.core.console import join_names, language, t
from bootstrap.core.errors import UsageError
from bootstrap.core.file_formats import load_document
from bootstrap.core.resources import resource_dir
from bootstrap.core.suggest import did_you_mean

CATALOG_SCHEMA = 1
HUBS = ("hf", "modelscope")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_HINT = re.compile(r"[0-9a-fA-F]{4,63}(?:…|\.\.\.)[0-9a-fA-F]{4,63}")  # "ac0e2c1189e0…3e31a61", as published
# Every key each table may hold: a misspelt key ("sha265", "size_exat") is an error, not silently ignored, as in
# the engine pins and the answers file.
# Repos and file paths become URL paths and folders under <home>/models: no dot segments, no absolute paths.
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_PATH_BAD = re.compile("[\x00-\x1f\x7f\\\\:]")  # control characters, backslash, drive colon
_TOP_KEYS = frozenset({"schema", "default_model", "models"})
_MODEL_KEYS = frozenset({"id", "aliases", "title", "title_zh", "architecture", "repos", "quants", "default_quant",
                         "mmproj", "fallbacks", "thinking_default", "thinks", "shape", "sampling", "sampling_thinking",
                         "server_args", "mtp_variant"})
_REPO_KEYS = frozenset({"hub", "repo", "revision"})
_FILE_KEYS = frozenset({"file", "size", "size_exact", "sha256", "sha256_hint"})
_SAMPLING_KEYS = frozenset({"temperature", "top_p", "top_k", "min_p", "presence_penalty"})


@dataclass(frozen=True)
class ModelFile:
    """One file in a repo. ``size`` is exact only when ``size_exact``; sha256 normally comes from the hub listing."""

    path: str
    size: int | None = None
    size_exact: bool = False
    sha256: str | None = None
    sha256_hint: str | None = None

    def matches_hint(self, sha256: str) -> bool:
        """Whether a listed sha256 agrees with the published ``prefix…suffix`` hint (True when there is none)."""
        if self.sha256 and sha256.lower() != self.sha256.lower():
            return False
        if not self.sha256_hint:
            return True
        prefix, _, suffix = self.sha256_hint.replace("...", "…").partition("…")
        value = sha256.lower()
        return value.startswith(prefix.lower()) and value.endswith(suffix.lower())


@dataclass(frozen=True)
class Quant:
    """A quantization of a model: its name (``UD-Q4_K_XL``) and its file."""

    name: str
    file: ModelFile


@dataclass(frozen=True)
class RepoRef:
    """A repo on one hub; ``revision`` pins it (else the branch is resolved to a commit once per install)."""

    hub: str
    repo: str
    revision: str | None = None


@dataclass(frozen=True)
class ModelShape:
    """Hyper-parameters that size KV and recurrent state, for planning with no GGUF header at hand."""

    n_layer: int
    n_embd: int
    n_vocab: int
    n_ctx_train: int
    n_head: int
    n_head_kv: int
    key_length: int
    value_length: int
    n_expert: int
    n_expert_used: int
    full_attention_interval: int
    recurrent_bytes_per_seq: int
    expert_share: float
    token_embd_share: float
    output_share: float
    n_ff: int = 0
    n_ff_exp: int = 0
    ssm_conv_dim: int = 0
    ssm_v_heads: int = 0
    block_count: int = 0  # blocks in the file when more than n_layer (an MTP block counts; -ngl counts it too)
    # Files that carry the MTP head ("-MTP-GGUF" repos): the share of the file's bytes in the nextn block(s),
    # loaded only with --spec-type draft-mtp. 0: the files hold no head (whatever block_count says).
    mtp_share: float = 0.0


@dataclass(frozen=True)
class Sampling:
    """Recommended sampling (model card); written into the start script as server defaults."""

    temperature: float
    top_p: float
    top_k: int
    min_p: float
    presence_penalty: float


@dataclass(frozen=True)
class CatalogModel:
    """One model of the catalog."""

    id: str
    title: str
    architecture: str
    repos: tuple[RepoRef, ...]
    quants: tuple[Quant, ...]
    default_quant: str
    mmproj: ModelFile | None
    fallbacks: tuple[str, ...]
    thinking_default: bool
    shape: ModelShape | None
    sampling: Sampling | None
    sampling_thinking: Sampling | None
    # Extra llama-server flags this model needs (a base model without a chat template: ``--chat-template gemma``).
    server_args: tuple[str, ...] = ()
    # The id of the same model's files with an MTP head (a separate entry: another repo). The planner prefers them
    # where the head can draft on the GPU, and this entry's files everywhere else.
    mtp_variant: str | None = None
    # The model has a thinking mode (its chat template reads ``enable_thinking``): only then do the plan, the report
    # and ``status`` speak of thinking. Catalog key ``thinks``; by default, when the entry gives thinking-mode
    # sampling or thinks by default.
    thinks: bool = False
    # Other names users type for it (Ollama's ``qwen3.6:35b``, the upstream ``Qwen/Qwen3.6-35B-A3B``):
    # ``model_names`` (docs/model-names.md).
    aliases: tuple[str, ...] = ()

    @property
    def embedding(self) -> bool:
        """An embedding model (RAG): served with ``--embeddings`` beside a chat model, never the default."""
        return "--embeddings" in self.server_args or "--embedding" in self.server_args

    def quant(self, name: str | None) -> Quant:
        """The named quant (case-insensitive), or the default one."""
        wanted = (name or self.default_quant).lower()
        for quant in self.quants:
            if quant.name.lower() == wanted:
                return quant
        names = [q.name for q in self.quants]
        raise UsageError(t("plan.err_unknown_quant", quant=name or self.default_quant, model=self.id,
                           available=join_names(names)),
                         did_you_mean(wanted, names) or t("plan.hint_quant", model=self.id))

    def quants_from_default_down(self) -> tuple[Quant, ...]:
        """The default quant and every smaller one, in the order the planner tries them."""
        names = [q.name for q in self.quants]
        return self.quants[names.index(self.default_quant):]


@dataclass(frozen=True)
class Catalog:
    """The whole catalog."""

    default_model: str
    models: tuple[CatalogModel, ...]
    path: Path

    @functools.cached_property
    def names(self) -> NameIndex:
        """Every name each model answers to (``model_names``)."""
        return NameIndex(self.models)

    def model(self, model_id: str | None) -> CatalogModel:
        """The model with this id (case-insensitive), or the default model."""
        wanted = (model_id or self.default_model).lower()
        for model in self.models:
            if model.id.lower() == wanted:
                return model
        raise self.unknown(model_id or self.default_model)

    def unknown(self, text: str) -> UsageError:
        """Exit 2 for a name no model answers to: the catalog's ids, and the closest names as the hint."""
        close = self.names.suggestions(text)
        hint = t("hint.did_you_mean", names=join_names(f"'{c}'" for c in close)) if close else None
        return UsageError(t("plan.err_unknown_model", model=text, available=join_names(m.id for m in self.models)),
                          hint or t("plan.hint_models"))

    def resolve(self, text: str) -> Reading | None:
        """The model (and quant) ``text`` names, by every name users type (``model_names``); None when it names
        none; two readings is a ``UsageError`` listing them (exit 2), never a guess."""
        readings = self.names.readings(text)
        if len(readings) > 1:
            raise UsageError(t("names.err_ambiguous", model=text, readings=join_names(r.text() for r in readings)),
                             t("names.hint_ambiguous"))
        return readings[0] if readings else None


class _Fields:
    """Typed access to one TOML table, raising one-line errors that name the field."""

    def __init__(self, table: Any, where: str, path: Path) -> None:
        if not isinstance(table, Mapping):
            raise self._error(path, where, "a table")
        self.table, self.where, self.path = table, where, path

    @staticmethod
    def _error(path: Path, where: str, expected: str) -> UsageError:
        return UsageError(t("plan.err_catalog_field", path=str(path), field=where, expected=expected))

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., expected: str = "") -> Any:
        if key not in self.table:
            if default is ...:
                raise self._error(self.path, f"{self.where}.{key}", expected or getattr(kind, "__name__", "value"))
            return default
        value = self.table[key]
        bad_bool = isinstance(value, bool) and kind in (int, float, (int, float))
        if not isinstance(value, kind) or bad_bool:
            raise self._error(self.path, f"{self.where}.{key}", expected or getattr(kind, "__name__", "value"))
        return value

    def count(self, key: str, default: Any = ...) -> Any:
        value = self.get(key, int, default, expected="a non-negative integer")
        if value is not None and value is not default and value < 0:
            raise self._error(self.path, f"{self.where}.{key}", "a non-negative integer")
        return value

    def sub(self, key: str) -> _Fields | None:
        return _Fields(self.table[key], f"{self.where}.{key}", self.path) if key in self.table else None

    def only(self, known: frozenset[str]) -> _Fields:
        """Refuse a key this table cannot hold (the first, sorted, is named)."""
        unknown = sorted(set(self.table) - known)
        if unknown:
            raise UsageError(t("plan.err_catalog_key", path=str(self.path), field=f"{self.where}.{unknown[0]}",
                               known=join_names(sorted(known))))
        return self

    def text(self, key: str, expected: str, valid: Callable[[str], bool]) -> str:
        """A required string that ``valid`` accepts."""
        value = self.get(key, str, expected=expected)
        if not valid(value):
            raise self._error(self.path, f"{self.where}.{key}", expected)
        return value

    def digest(self, key: str, pattern: re.Pattern[str], expected: str) -> str | None:
        """An optional hex digest (or published hint), lower-cased; anything else is refused at load."""
        value = self.get(key, str, None, expected=expected)
        if value is not None and not pattern.fullmatch(value):
            raise self._error(self.path, f"{self.where}.{key}", expected)
        return None if value is None else value.lower()


def _is_repo_path(path: str) -> bool:
    """``file.gguf`` or ``sub/file.gguf``: parts without dot segments, separators or control characters."""
    return (0 < len(path) <= 1024 and not _PATH_BAD.search(path)
            and all(part not in ("", ".", "..") for part in path.split("/")))


def _model_file(fields: _Fields, also: frozenset[str] = frozenset()) -> ModelFile:
    fields.only(_FILE_KEYS | also)
    return ModelFile(
        path=fields.text("file", "a relative file path in the repo", _is_repo_path),
        size=fields.count("size", None),
        size_exact=fields.get("size_exact", bool, False),
        sha256=fields.digest("sha256", _SHA256, "64 hex digits"),
        sha256_hint=fields.digest("sha256_hint", _HINT, "hex digits…hex digits"),
    )


def _sampling(fields: _Fields | None) -> Sampling | None:
    if fields is None:
        return None
    fields.only(_SAMPLING_KEYS)
    num = (int, float)
    return Sampling(float(fields.get("temperature", num)), float(fields.get("top_p", num)),
                    int(fields.get("top_k", int)), float(fields.get("min_p", num)),
                    float(fields.get("presence_penalty", num)))


def _shape(fields: _Fields | None) -> ModelShape | None:
    if fields is None:
        return None
    fields.only(frozenset(f.name for f in dataclasses.fields(ModelShape)))
    ints = {name: fields.count(name) for name in (
        "n_layer", "n_embd", "n_vocab", "n_ctx_train", "n_head", "n_head_kv", "key_length", "value_length",
        "n_expert", "n_expert_used", "full_attention_interval", "recurrent_bytes_per_seq")}
    shares = {name: float(fields.get(name, (int, float))) for name in
              ("expert_share", "token_embd_share", "output_share")}
    optional = {name: fields.count(name, 0) for name in ("n_ff", "n_ff_exp", "ssm_conv_dim", "ssm_v_heads",
                                                         "block_count")}
    mtp_share = float(fields.get("mtp_share", (int, float), 0.0))
    if not 0.0 <= mtp_share < 1.0:
        raise _Fields._error(fields.path, f"{fields.where}.mtp_share", "a share from 0 up to 1")
    return ModelShape(**ints, **shares, **optional, mtp_share=mtp_share)


def _model(fields: _Fields) -> CatalogModel:
    fields.only(_MODEL_KEYS)
    model_id = fields.get("id", str)
    repos = []
    for i, entry in enumerate(fields.get("repos", list)):
        repo = _Fields(entry, f"{fields.where}.repos[{i}]", fields.path).only(_REPO_KEYS)
        hub = repo.get("hub", str)
        if hub not in HUBS:
            raise _Fields._error(fields.path, f"{repo.where}.hub", " or ".join(HUBS))
        repos.append(RepoRef(hub, repo.text("repo", "OWNER/NAME", lambda v: bool(_REPO.fullmatch(v))),
                             repo.get("revision", str, None)))
    quants = tuple(Quant(q.get("name", str), _model_file(q, also=frozenset({"name"}))) for q in
                   (_Fields(e, f"{fields.where}.quants[{i}]", fields.path)
                    for i, e in enumerate(fields.get("quants", list))))
    if not quants:
        raise _Fields._error(fields.path, f"{fields.where}.quants", "at least one quant")
    default_quant = fields.get("default_quant", str, quants[0].name)
    if default_quant not in {q.name for q in quants}:
        raise _Fields._error(fields.path, f"{fields.where}.default_quant", "one of the quants' names")
    mmproj = fields.sub("mmproj")
    return CatalogModel(
        id=model_id,
        title=_title(fields, model_id),
        architecture=fields.get("architecture", str),
        repos=tuple(repos),
        quants=quants,
        default_quant=default_quant,
        mmproj=_model_file(mmproj) if mmproj else None,
        fallbacks=_strings(fields, "fallbacks"),
        thinking_default=fields.get("thinking_default", bool, False),
        shape=_shape(fields.sub("shape")),
        sampling=_sampling(fields.sub("sampling")),
        sampling_thinking=_sampling(fields.sub("sampling_thinking")),
        server_args=_strings(fields, "server_args"),
        mtp_variant=fields.get("mtp_variant", str, None),
        thinks=fields.get("thinks", bool, fields.sub("sampling_thinking") is not None
                          or fields.get("thinking_default", bool, False)),
        aliases=_strings(fields, "aliases"),
    )


def _strings(fields: _Fields, key: str) -> tuple[str, ...]:
    values = fields.get(key, list, [])
    if not all(isinstance(v, str) for v in values):
        raise _Fields._error(fields.path, f"{fields.where}.{key}", "a list of strings")
    return tuple(values)


def parse_catalog(data: Mapping[str, Any], path: Path) -> Catalog:
    """Validate a parsed catalog document."""
    top = _Fields(data, "catalog", path).only(_TOP_KEYS)
    if top.get("schema", int) != CATALOG_SCHEMA:
        raise _Fields._error(path, "schema", f"{CATALOG_SCHEMA}")
    models = tuple(_model(_Fields(m, f"models[{i}]", path)) for i, m in enumerate(top.get("models", list)))
    ids = [m.id.lower() for m in models]
    if len(set(ids)) != len(ids):
        raise _Fields._error(path, "models", "unique ids")
    _unique_names(models, path)
    catalog = Catalog(top.get("default_model", str), models, path)
    catalog.model(None)  # the default must exist
    for model in models:
        for fallback in model.fallbacks:
            catalog.model(fallback)
        if model.mtp_variant is not None:
            catalog.model(model.mtp_variant)
    return catalog


def _unique_names(models: tuple[CatalogModel, ...], path: Path) -> None:
    """An alias may not spell another model's id or alias (``model_names.name_key``): the name would be ambiguous
    for every user of this catalog, so it is refused where it is written."""
    owner: dict[str, str] = {}
    for i, model in enumerate(models):
        for name in (model.id, *model.aliases):
            key = name_key(name)
            if not key or owner.setdefault(key, model.id) != model.id:
                raise _Fields._error(path, f"models[{i}].aliases", f"names no other model has ('{name}')")


def catalog_path() -> Path:
    """``QWENKIT_CATALOG`` when set, else the shipped ``payload/catalog.toml``."""
    override = settings.catalog_override()
    return Path(override) if override else resource_dir("payload") / "catalog.toml"


MAX_CATALOG_BYTES = 16 << 20  # the shipped catalog is ~10 KiB; an intranet's own stays far below this


def catalog_document(path: Path | None = None) -> dict[str, Any]:
    """The catalog as read (TOML; JSON for the copy an offline bundle carries, ``install.from_bundle``), bounded by
    ``file_formats``; not validated (``load_catalog`` does that)."""
    where = path or catalog_path()

    def bad(detail: str) -> UsageError:
        return UsageError(t("plan.err_catalog_read", path=str(where), detail=detail))

    return load_document(where, MAX_CATALOG_BYTES, bad)


def _title(fields: _Fields, model_id: str) -> str:
    """The title in the UI language: ``title_zh`` (a Chinese title, e.g. "Qwen3.6-27B（稠密）" for "Qwen3.6-27B
    (dense)") when the UI speaks Chinese and the entry has one, else ``title``."""
    title = fields.get("title", str, model_id)
    return fields.get("title_zh", str, title) if language() == "zh" else title


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and validate the catalog."""
    path = path or catalog_path()
    return parse_catalog(catalog_document(path), path)


_LOADED: dict[tuple[str, int, int, str], Catalog] = {}


def current_catalog() -> Catalog:
    """``load_catalog()`` read once per catalog file as it is now (path, size, mtime) and UI language: MODEL is
    resolved several times in one run (``model_ref``), and a no-op rerun must stay quick. A changed file is read
    again; an unreadable one is ``load_catalog``'s error."""
    path = catalog_path()
    try:
        st = path.stat()
    except OSError:
        return load_catalog(path)
    key = (str(path), st.st_size, st.st_mtime_ns, language())
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = load_catalog(path)
    return _LOADED[key]
