"""The pinned llama.cpp build and its release assets per variant (``payload/engines.toml``, DESIGN.md §4).

Parsed once into small immutable records; a malformed file (an intranet admin's ``QWENKIT_ENGINES`` copy) is a
one-line ``UsageError`` naming the key, never a traceback. The file also carries the variant-selection rules as
data; ``engine_variant`` applies them and a test keeps the two in step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bootstrap.core import settings
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.file_formats import load_document
from bootstrap.core.hashing import is_sha256
from bootstrap.core.resources import resource_dir

PINS_SCHEMA = 1
KINDS = ("tar.gz", "zip", "exe")
# A repo and a tag become URL path segments (``…/<owner>/<repo>/releases/download/<tag>/<name>``) and folder names:
# no "." or ".." segment (RFC 3986 §5.2.4 would collapse them, escaping the release), no separators.
_REPO_RE = re.compile(r"(?!\.\.?/)[A-Za-z0-9._-]+/(?!\.\.?$)[A-Za-z0-9._-]+")
_TAG_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")  # git refs: no component begins with "." (git-check-ref-format)
# An asset name becomes a URL path segment and a file name: no separators, no leading dot.
_NAME_RE = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*")

# The release builds the kit knows, by the names llama.cpp's release assets use (DESIGN.md §4).
VARIANTS = ("win-cuda-12.4", "win-cuda-13", "win-vulkan", "win-cpu", "ubuntu-x64", "ubuntu-vulkan-x64",
            "macos-arm64", "macos-x64")


@dataclass(frozen=True)
class EngineAsset:
    """One release file. ``sha256``/``size`` None: taken from the release API's digest at install time."""

    variant: str  # a VARIANTS name, or "winsw"
    name: str
    sha256: str | None
    size: int | None
    kind: str  # "tar.gz" | "zip" | "exe"
    repo: str = "ggml-org/llama.cpp"  # owner/name of the GitHub repo releasing it
    tag: str = ""


@dataclass(frozen=True)
class EngineRules:
    """The variant-selection thresholds stated in engines.toml (docs/engine.md, "NVIDIA driver floors")."""

    cuda12_min_driver: int
    cuda13_min_driver: int
    cuda13_min_cc: tuple[int, int]
    linux_nvidia: str


@dataclass(frozen=True)
class EnginePins:
    """The pinned build; ``assets[variant]`` is the main archive first, then extras (the CUDA runtime)."""

    build: int
    tag: str
    repo: str
    assets: Mapping[str, tuple[EngineAsset, ...]]
    winsw: EngineAsset | None
    rules: EngineRules | None = None
    path: Path | None = None  # the file they were read from (for messages)


def pins_path() -> Path:
    """``QWENKIT_ENGINES`` when set, else the shipped ``payload/engines.toml``."""
    override = settings.engines_override()
    return Path(override) if override else resource_dir("payload") / "engines.toml"


def _bad(path: Path, key: str, expected: str) -> UsageError:
    return UsageError(t("engine.err_pins_key", path=str(path), field=key, expected=expected),
                      t("engine.hint_pins"))


def _kind_of(name: str) -> str | None:
    for kind in KINDS:
        if name.lower().endswith("." + kind):
            return kind
    return None


def _asset(path: Path, key: str, raw: Any, variant: str, repo: str, tag: str) -> EngineAsset:
    if not isinstance(raw, Mapping):
        raise _bad(path, key, "a table { name = … }")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise _bad(path, f"{key}.name", "a file name")
    sha = raw.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not is_sha256(sha.lower())):
        raise _bad(path, f"{key}.sha256", "64 hex digits")
    size = raw.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        raise _bad(path, f"{key}.size", "a positive integer (bytes)")
    kind = raw.get("kind", _kind_of(name))
    if kind not in KINDS:
        raise _bad(path, f"{key}.kind", " | ".join(KINDS))
    unknown = set(raw) - {"name", "sha256", "size", "kind"}
    if unknown:
        raise _bad(path, f"{key}.{sorted(unknown)[0]}", "one of name, sha256, size, kind")
    return EngineAsset(variant, name, sha.lower() if sha else None, size, kind, repo, tag)


def _str(path: Path, table: Mapping[str, Any], key: str, prefix: str, pattern: re.Pattern[str] | None = None,
         expected: str | None = None) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value or (pattern is not None and not pattern.fullmatch(value)):
        described = expected or ("a string" if pattern is None else f"text like {pattern.pattern}")
        raise _bad(path, f"{prefix}{key}", described)
    return value


_AS_REPO = "OWNER/NAME (letters, digits, '.', '_', '-'; no '.' or '..' part)"
_AS_TAG = "a release tag (letters, digits, '.', '_', '-', not starting with '.')"


def _int(path: Path, table: Mapping[str, Any], key: str, prefix: str) -> int:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(path, f"{prefix}{key}", "a non-negative integer")
    return value


def _rules(path: Path, raw: Any) -> EngineRules | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _bad(path, "rules", "a table")
    cc_text = _str(path, raw, "cuda13_min_cc", "rules.", re.compile(r"\d+\.\d+"))
    major, minor = cc_text.split(".")
    linux_nvidia = _str(path, raw, "linux_nvidia", "rules.")
    if linux_nvidia not in VARIANTS:
        raise _bad(path, "rules.linux_nvidia", "a variant name")
    return EngineRules(_int(path, raw, "cuda12_min_driver", "rules."), _int(path, raw, "cuda13_min_driver", "rules."),
                       (int(major), int(minor)), linux_nvidia)


def parse_pins(data: Mapping[str, Any], path: Path) -> EnginePins:
    """Validate a parsed engines.toml."""
    schema = data.get("schema", PINS_SCHEMA)
    if schema != PINS_SCHEMA:
        raise _bad(path, "schema", str(PINS_SCHEMA))
    engine = data.get("engine")
    if not isinstance(engine, Mapping):
        raise _bad(path, "engine", "a table with repo, build, tag")
    repo = _str(path, engine, "repo", "engine.", _REPO_RE, _AS_REPO)
    build = _int(path, engine, "build", "engine.")
    tag = _str(path, engine, "tag", "engine.", _TAG_RE, _AS_TAG)
    variants = data.get("variants")
    if not isinstance(variants, Mapping) or not variants:
        raise _bad(path, "variants", "one table per variant")
    assets: dict[str, tuple[EngineAsset, ...]] = {}
    for variant, table in variants.items():
        key = f"variants.{variant}"
        if variant not in VARIANTS:
            raise _bad(path, key, "one of " + ", ".join(VARIANTS))
        listed = table.get("assets") if isinstance(table, Mapping) else None
        if not isinstance(listed, list) or not listed:
            raise _bad(path, f"{key}.assets", "a non-empty list")
        parsed = tuple(_asset(path, f"{key}.assets[{i}]", raw, variant, repo, tag) for i, raw in enumerate(listed))
        if parsed[0].kind == "exe" or len({a.name for a in parsed}) != len(parsed):
            raise _bad(path, f"{key}.assets", "an archive first, no name twice")
        assets[variant] = parsed
    winsw = None
    raw_winsw = data.get("winsw")
    if raw_winsw is not None:
        if not isinstance(raw_winsw, Mapping):
            raise _bad(path, "winsw", "a table")
        w_repo = _str(path, raw_winsw, "repo", "winsw.", _REPO_RE, _AS_REPO)
        w_tag = _str(path, raw_winsw, "tag", "winsw.", _TAG_RE, _AS_TAG)
        fields = {k: v for k, v in raw_winsw.items() if k in ("name", "sha256", "size", "kind")}
        winsw = _asset(path, "winsw", fields, "winsw", w_repo, w_tag)
    return EnginePins(build, tag, repo, MappingProxyType(assets), winsw, _rules(path, data.get("rules")), path)


MAX_PINS_BYTES = 1 << 20  # the shipped pins are ~3 KiB


def pins_document(path: Path | None = None) -> dict[str, Any]:
    """The engine pins as read (``QWENKIT_ENGINES`` or the shipped file; JSON in a bundle's records), bounded by
    ``file_formats``; not validated (``load_pins`` does that)."""
    where = Path(path) if path else pins_path()

    def bad(detail: str) -> UsageError:
        return UsageError(t("engine.err_pins_read", path=str(where), detail=detail), t("engine.hint_pins"))

    return load_document(where, MAX_PINS_BYTES, bad)


def load_pins(path: Path | None = None) -> EnginePins:
    """Read and validate the engine pins."""
    path = Path(path) if path else pins_path()
    return parse_pins(pins_document(path), path)


def assets_for(pins: EnginePins, variant: str) -> tuple[EngineAsset, ...]:
    """The assets of ``variant`` (main archive first); ``UsageError`` when the pins do not cover it."""
    found = pins.assets.get(variant)
    if not found:
        where = str(pins.path) if pins.path else "engines.toml"
        raise UsageError(t("engine.err_variant", variant=variant, path=where,
                           known=", ".join(sorted(pins.assets)) or "-"), t("engine.hint_pins"))
    return found
