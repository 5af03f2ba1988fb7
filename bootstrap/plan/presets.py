"""A model's preset: the system prompt and sampling a user keeps per model (docs/presets.md).

Ollama's Modelfile (``SYSTEM``, ``PARAMETER temperature …``) and LM Studio's per-model settings, here as
``qwenkit install MODEL --system "…" --temperature 0.6 …`` or ``--preset FILE`` (TOML, the same keys). Kept in the
install record and carried over by every rerun and upgrade; ``--clear-preset`` forgets it.

- Sampling becomes llama-server's own defaults (``--temp``, ``--top-p``, ``--top-k``, ``--min-p``,
  ``--repeat-penalty``, ``--presence-penalty``: ``set_sampling()`` options of b11434 ``common/arg.cpp``), replacing
  the catalog's recommended values in the start script and the router's preset. A request's own value wins there:
  llama-server reads each field of the request over those defaults (``params_from_json_cmpl`` in
  ``tools/server/server-schema.cpp``).
- llama-server has no system-prompt option (b11434: ``-sys``/``--system-prompt`` are ``llama-cli``'s only,
  ``set_examples`` without ``LLAMA_EXAMPLE_SERVER``), so the kit's front adds it (``register/router_front.py``): a
  chat request with no ``system`` (or ``developer``) message gets one first; a request with its own keeps it.

Every value is checked here (a range, a finite number; the system text any Unicode up to ``MAX_SYSTEM_CHARS``,
line breaks and tabs included, no other control character): a bad one is exit 2 with one line, before anything is
downloaded or stopped. The system text is never written into a script or the INI preset (neither can carry every
character): the front reads it from a JSON file (``render/start_scripts.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from bootstrap.core.console import join_names, t
from bootstrap.core.errors import UsageError
from bootstrap.core.file_formats import load_toml

MAX_SYSTEM_CHARS = 32_768
MAX_PRESET_BYTES = 256 << 10
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # all but tab and line feed (a CR LF file's CR is dropped)

# field → (llama-server flag, lowest, highest, whether the lowest itself is refused); ranges are what the engine
# accepts (repeat-penalty > 0, common/arg.cpp) narrowed to what a sampler is ever set to (OpenAI's -2..2 penalty).
_NUMBERS: dict[str, tuple[str, float, float, bool]] = {
    "temperature": ("--temp", 0.0, 5.0, False),
    "top_p": ("--top-p", 0.0, 1.0, False),
    "top_k": ("--top-k", 0, 100_000, False),
    "min_p": ("--min-p", 0.0, 1.0, False),
    "repeat_penalty": ("--repeat-penalty", 0.0, 10.0, True),
    "presence_penalty": ("--presence-penalty", -2.0, 2.0, False),
}
PRESET_KEYS = ("system", *_NUMBERS)


@dataclass(frozen=True)
class Preset:
    """A model's preset; None: not set (the catalog's recommendation, else the engine's default)."""

    system: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repeat_penalty: float | None = None
    presence_penalty: float | None = None

    @property
    def empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    def over(self, older: Preset | None) -> Preset:
        """This preset's values, ``older``'s where this one sets none (a rerun adds to what was kept)."""
        if older is None:
            return self
        return replace(older, **{f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)
                                 is not None})

    def flags(self) -> list[str]:
        """The sampling as llama-server's words (``--temp 0.6 --top-k 20``), in a fixed order."""
        out: list[str] = []
        for name, (flag, *_rest) in _NUMBERS.items():
            value = getattr(self, name)
            if value is not None:
                out += [flag, str(value) if name == "top_k" else f"{value:g}"]
        return out

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def shown(self) -> list[tuple[str, str]]:
        """(option, value) pairs as ``status`` shows them (the options that set them), the system text quoted on
        one line."""
        out = [("--" + k.replace("_", "-"), f"{v:g}" if isinstance(v, float) else str(v))
               for k, v in self.to_json().items() if k != "system"]
        if self.system:
            text = " ".join(self.system.split())
            out.append(("--system", repr(text if len(text) <= 60 else text[:59] + "…")))
        return out


def _bad(what: str, value: object, expected: str) -> UsageError:
    return UsageError(t("presets.err_value", what=what, value=str(value), expected=expected), t("presets.hint"))


def check_number(name: str, value: object, what: str | None = None) -> float | int:
    """One sampling value in its range (``_NUMBERS``); ``what`` names it in the error (the option or file key)."""
    _flag, low, high, open_low = _NUMBERS[name]
    label = what or "--" + name.replace("_", "-")
    integer = name == "top_k"
    typed = value  # the error shows what was typed, not what it was read as
    if isinstance(value, str):
        try:
            value = int(value) if integer else float(value)
        except ValueError:
            raise _bad(label, value, t("presets.expected_int" if integer else "presets.expected_number")) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise _bad(label, typed, t("presets.expected_int" if integer else "presets.expected_number"))
    number = float(value)
    if not math.isfinite(number) or number < low or number > high or (open_low and number <= low):
        key = "presets.expected_above" if open_low else "presets.expected_range"
        raise _bad(label, typed, t(key, low=f"{low:g}", high=f"{high:g}"))
    return int(value) if integer else number


def check_system(text: object, what: str = "--system") -> str:
    """The system text: any Unicode, quotes, ``%``, ``!``, line breaks and tabs; no other control character."""
    if not isinstance(text, str):
        raise _bad(what, text, t("presets.expected_text"))
    text = text.replace("\r\n", "\n")
    if _CONTROL.search(text) or len(text) > MAX_SYSTEM_CHARS:
        raise _bad(what, repr(text[:40]), t("presets.expected_system", max=MAX_SYSTEM_CHARS))
    return text


def preset_from(values: Mapping[str, Any], where: str | None = None) -> Preset:
    """A checked preset from ``{"system": …, "temperature": …}`` (command-line values or a file's keys: ``where``
    names the file in the errors). An unknown key is refused with the known ones."""
    known = PRESET_KEYS
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise UsageError(t("presets.err_key", path=where or "-", name=key, known=join_names(known)),
                             t("presets.hint"))
        if value is None:
            continue
        what = f"{where}: {key}" if where else None
        out[key] = check_system(value, what or "--system") if key == "system" else check_number(key, value, what)
    return Preset(**out)


def read_preset_file(path: Path) -> Preset:
    """``--preset FILE``: TOML with the preset's keys (docs/presets.md)."""
    def bad(detail: str) -> UsageError:
        return UsageError(t("presets.err_read", path=str(path), detail=detail), t("presets.hint"))

    return preset_from(load_toml(path, MAX_PRESET_BYTES, bad), str(path))


def preset_from_json(doc: Any) -> Preset | None:
    """A recorded preset (``state.json``); anything unreadable is a damaged record (``UsageError``)."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise UsageError(t("presets.err_record"), t("state.hint_damaged"))
    return preset_from(doc, "state.json preset")


def with_preset(args: tuple[str, ...] | list[str], preset: Preset | None) -> list[str]:
    """``args`` with the preset's sampling in place of the same settings (any spelling: ``engine_flags``)."""
    from bootstrap.plan.engine_flags import with_overrides

    return list(args) if preset is None else with_overrides(list(args), preset.flags())
