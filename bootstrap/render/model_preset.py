"""Render stage, several models: llama-server's router preset (``<home>/models.ini``) from one ``LaunchSpec``.

In router mode (llama.cpp b11434 ``tools/server/server-models.cpp``) one llama-server process answers on the
install's address and starts a child llama-server per model on a free 127.0.0.1 port, with the arguments of that
model's preset section; each request goes to the child its ``"model"`` field names. The preset holds every model's
tuned flags (the same words the single-model start script passes), so a model behaves the same alone or beside
others.

The INI dialect is llama.cpp's own (``common/preset.cpp`` ``parse_ini_from_file``): ``key = value`` lines, keys are
flag names without dashes, values run to the end of the line with no quoting and end at the first ``;`` or ``#``
(a comment), and a section name may not hold ``]``. So a value with ``;``, ``#`` or a line break cannot be written:
it is refused here (``PresetError``), never written into a file that would mean something else. Files inside the
home are written relative to it (the start scripts run the router there, and children inherit its folder), which
keeps the user's folder name — spaces, ``#``, Chinese — out of the file altogether.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath

from bootstrap import __version__
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.templating import RenderedFile, render_template
from bootstrap.plan.keep_alive import sleep_seconds
from bootstrap.plan.launch_spec import LaunchSpec, PresetModel
from bootstrap.render.command_words import group_words

PRESET_TEMPLATE = "models-preset.ini.j2"
_UNSAFE_VALUE = frozenset(";#\r\n\0")
_UNSAFE_NAME = frozenset("[]:;#=\r\n\0")  # ':' too: llama.cpp rewrites a tag after it (``canonical_tag``)


class PresetError(UsageError):
    """A value llama-server's preset file cannot carry (exit 2, before anything is downloaded or stopped)."""


def _value(text: str, what: str) -> str:
    if _UNSAFE_VALUE.intersection(text) or text != text.strip():
        raise PresetError(t("preset.bad_value", what=what, value=repr(text)), t("preset.hint_value"))
    return text


def check_name(name: str) -> str:
    """A model name usable as a preset section (and as the ``"model"`` clients send)."""
    if not name or _UNSAFE_NAME.intersection(name) or name != name.strip():
        raise PresetError(t("preset.bad_name", name=repr(name)), t("preset.hint_name"))
    return name


def _path(path: Path, spec: LaunchSpec) -> str:
    """A file as the preset names it: relative to the home (where the router runs) when inside it."""
    pure = PureWindowsPath if spec.system == "Windows" else PurePosixPath
    try:
        rel = pure(path).relative_to(pure(spec.home))
    except ValueError:
        return _value(str(path), t("preset.what_path"))
    return _value(str(rel), t("preset.what_path"))


def _flag_items(args: Sequence[str]) -> Iterator[tuple[str, str]]:
    """``--flag value`` → ``("flag", "value")``; a flag alone → ``("flag", "true")`` (llama.cpp's INI booleans; a
    ``--no-…`` flag is its option set false, ``parse_bool_arg``)."""
    for line in group_words(args):
        flag, values = line[0], line[1:]
        if len(values) > 1:
            raise PresetError(f"flag {flag} takes {len(values)} values; a preset line holds one",
                              "drop that flag or give it as one value")
        yield _value(flag.lstrip("-"), "a flag"), _value(values[0], f"the value of {flag}") if values else "true"


def _section(name: str, model: Path, mmproj: Path | None, args: Sequence[str], load: bool,
             spec: LaunchSpec, chat_template: Path | None = None, keep_alive_s: int = -1) -> dict[str, object]:
    folder = spec.model_cache_dirs().get(name)
    items: list[tuple[str, str]] = [("model", _path(model, spec))]
    if mmproj is not None:
        items.append(("mmproj", _path(mmproj, spec)))
    items += list(_flag_items(args))
    if chat_template is not None:  # relative to the home: the router's children run there
        items.append(("chat-template-file", _path(chat_template, spec)))
    if folder is not None:  # this model's own prompt cache (plan/prompt_cache.py key; docs/prompt-cache.md)
        items.append(("slot-save-path", _path(folder, spec)))
    sleep = sleep_seconds(keep_alive_s)  # keep-alive: the child frees the model after this idle time
    if sleep is not None:
        items.append(("sleep-idle-seconds", str(sleep)))
    items.append(("load-on-startup", "true" if load else "false"))
    return {"name": check_name(name), "items": items}


def render_preset_text(spec: LaunchSpec) -> str:
    """The preset for ``spec``: its default model first (loaded at start), then the others."""
    sections = [_section(spec.alias, spec.model, spec.mmproj, spec.args, True, spec, spec.chat_template,
                         spec.keep_alive_s)]
    names = {spec.alias}
    for other in spec.others:
        if other.name in names:
            raise PresetError(t("preset.same_name", name=other.name), t("library.hint_remove"))
        names.add(other.name)
        sections.append(_section(other.name, other.model, other.mmproj, other.args, other.load_on_startup, spec,
                                 other.chat_template, other.keep_alive_s))
    return render_template(PRESET_TEMPLATE, version=__version__, sections=sections)


def first_model(path: Path) -> str | None:
    """The default model of a preset written here (its first section), or None without a readable preset: what a
    probe of a router must name (the router answers 400 to a request that names none)."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                text = line.strip()
                if text.startswith("[") and text.endswith("]"):
                    return text[1:-1]
    except (OSError, UnicodeDecodeError):
        return None
    return None


def preset_file(spec: LaunchSpec, path: Path | None = None) -> RenderedFile:
    """``models.ini`` as written at ``path`` (by default the spec's own): private, it names every model file."""
    return RenderedFile(spec.preset_file if path is None else path, render_preset_text(spec),
                        newline="\r\n" if spec.system == "Windows" else "\n", mode=0o600)


def write_preset(spec: LaunchSpec, path: Path | None = None) -> Path:
    """Write ``models.ini`` (atomically) at ``path``, by default the spec's own; a bundle or test renders a Windows
    home's file from another OS into a local folder."""
    rendered = preset_file(spec, path)
    rendered.write()
    return rendered.path


__all__ = ["PresetError", "PresetModel", "check_name", "first_model", "preset_file", "render_preset_text",
           "write_preset"]
