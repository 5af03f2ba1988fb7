"""Render stage, start scripts: ``run_qwen.sh`` (Linux, macOS) and ``run_qwen.bat`` (Windows) from one LaunchSpec.

The text lives in ``templates/run_qwen.{sh,bat}.j2``; this module only prepares values: the words of the command
line (grouped one flag per line for people reading the script), which paths lie inside the home (the .bat names
those relative to its own folder, ``%~dp0``), and the localized error lines. Quoting is the templates' filters'
job (``bootstrap.core.templating``). Only the script for ``spec.system`` is written; ``render_text`` renders
either one, for tests and for bundles built for another OS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePath, PureWindowsPath
from typing import Literal

from bootstrap import __version__
from bootstrap.core import console
from bootstrap.core.errors import UsageError
from bootstrap.core.home import Home
from bootstrap.core.templating import QuotingError, RenderedFile, render_template
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.render.command_words import group_words

Which = Literal["sh", "bat"]
SH_TEMPLATE = "run_qwen.sh.j2"
BAT_TEMPLATE = "run_qwen.bat.j2"
# The .bat echoes its messages unquoted (quotes would be printed), so they may not hold cmd.exe's special
# characters; ( ) would end a block if one is ever added around the echo.
_BAT_ECHO_UNSAFE = frozenset('%&|<>^"!()\r\n')


@dataclass(frozen=True)
class StartScripts:
    """The start script written for this system (the other one is ``None``)."""

    sh: Path | None
    bat: Path | None

    @property
    def script(self) -> Path:
        """The one script that starts the server on this system."""
        found = self.sh or self.bat
        if found is None:  # unreachable: render_start_scripts always writes one
            raise ValueError("no start script was written")
        return found


@dataclass(frozen=True)
class BatWord:
    """One argument of the .bat command line: ``text`` is relative to the home when ``in_home``."""

    text: str
    in_home: bool


def windows_relative(value: str, home: str) -> str | None:
    """``value`` relative to ``home`` with backslashes, when it is an absolute Windows path inside it, else None.

    Windows paths compare case-insensitively (``PureWindowsPath``); a path equal to the home is not "inside": it
    would render as ``"%~dp0"``, whose trailing backslash escapes the closing quote for the program's argv parser.
    """
    path = PureWindowsPath(value)
    root = PureWindowsPath(home)
    if not (path.drive and path.root) or not (root.drive and root.root):
        return None
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    text = str(rel)
    return None if text in ("", ".") else text


def bat_names_home(home: str) -> bool:
    """Whether ``run_qwen.bat`` names the home's files relative to its own folder (``%~dp0``): yes, unless the
    home's path holds a ``%``. cmd.exe does not carry that one through ``%~dp0`` everywhere (Wine's cmd drops it; a
    ``%NAME%`` pair is a variable to expand), so the script then writes the home's path itself, ``%`` doubled,
    which needs it to be ASCII: cmd reads a batch file's bytes in the ANSI code page wherever ``chcp 65001`` is
    refused (Wine). A Windows home with ``%`` and a non-ASCII character is refused before anything is downloaded
    (``check_home``): this one rule is what the check and the rendering both ask."""
    if "%" not in home:
        return True
    if not home.isascii():
        char = next(c for c in home if not c.isascii())
        raise UsageError(console.t("start.err_home_percent", home=home, char=char),
                         console.t("start.hint_home_percent"))
    return False


def check_home(home: PurePath | str, system: str) -> None:
    """Exit 2 for a home this system's start script cannot name (``bat_names_home``); run before any download."""
    if system == "Windows":
        bat_names_home(str(home))


def _bat_word(value: object, home: str) -> BatWord:
    text = str(value)
    rel = windows_relative(text, home) if bat_names_home(home) else None
    return BatWord(rel, True) if rel is not None else BatWord(text, False)


def _checked_files(spec: LaunchSpec) -> list[Path]:
    """Files the script checks before starting: a clear line beats llama-server's own error deep in its log."""
    files = [Path(spec.kit[0])] if spec.fronted else []
    files += [spec.server, spec.model]
    if spec.mmproj is not None:
        files.append(spec.mmproj)
    if spec.chat_template is not None:
        files.append(spec.chat_template)
    for other in spec.others:
        files += [other.model] + [f for f in (other.mmproj, other.chat_template) if f is not None]
    if spec.router:
        files.append(spec.preset_file)
    if spec.fronted and spec.system_prompts:
        files.append(spec.system_prompts_file)
    files.append(spec.api_key_file)
    return files


def _messages(which: Which) -> dict[str, str]:
    texts = {"not_found": console.t("start.not_found"), "reinstall": console.t("start.reinstall")}
    if which == "bat":
        for text in texts.values():
            if _BAT_ECHO_UNSAFE.intersection(text):
                raise QuotingError(f"bat: a message holds a character cmd.exe would interpret: {text!r}")
    return texts


def _made_folders(spec: LaunchSpec) -> list[Path]:
    """Folders the script makes before starting: llama-server refuses to start when ``--slot-save-path`` is not a
    directory (llama.cpp ``common/arg.cpp``), and a user may have deleted the prompt cache."""
    return spec.cache_dirs()  # router mode: each model's (models.ini slot-save-path)


def render_text(spec: LaunchSpec, which: Which) -> str:
    """The text of ``run_qwen.sh`` (``"sh"``) or ``run_qwen.bat`` (``"bat"``) for ``spec``, with ``\\n`` endings."""
    common = {"version": __version__, "base_url": spec.base_url, "system": spec.system, "router": spec.router,
              "env": sorted(spec.child_env().items()), **_messages(which)}
    program, *words = spec.argv()  # llama-server, or the kit's front that starts the router (several models)
    lines = group_words(words)
    if which == "sh":
        return render_template(SH_TEMPLATE, server=program, engine_dir=str(spec.engine_dir),
                               home=str(spec.home), checks=[str(p) for p in _checked_files(spec)], lines=lines,
                               folders=[str(p) for p in _made_folders(spec)], **common)
    if which == "bat":
        home = str(spec.home)
        return render_template(BAT_TEMPLATE, folder=None if bat_names_home(home) else home,
                               server=_bat_word(program, home),
                               checks=[_bat_word(p, home) for p in _checked_files(spec)],
                               folders=[_bat_word(p, home) for p in _made_folders(spec)],
                               lines=[[_bat_word(w, home) for w in line] for line in lines], **common)
    raise ValueError(f"unknown start script kind: {which!r}")


def start_files(spec: LaunchSpec, home: Home) -> list[RenderedFile]:
    """What ``render_start_scripts`` writes for ``spec``, in that order: the router's preset first (a script is never
    left naming a preset that is not there), then this system's start script."""
    files = []
    if spec.router:
        from bootstrap.render.model_preset import preset_file

        files.append(preset_file(spec, home.root / spec.preset_file.name))
    if spec.fronted and spec.system_prompts:
        files.append(system_prompts_file(spec, home.root / spec.system_prompts_file.name))
    if spec.system == "Windows":
        files.append(RenderedFile(home.run_bat, render_text(spec, "bat"), newline="\r\n", mode=0o644))
    else:
        files.append(RenderedFile(home.run_sh, render_text(spec, "sh"), newline="\n", mode=0o755))
    return files


def system_prompts_file(spec: LaunchSpec, path: Path) -> RenderedFile:
    """The front's system prompts (model name → text) as JSON: any character a user typed survives, where neither a
    shell script, a batch file nor llama.cpp's INI dialect could carry every one (``plan/presets.py``)."""
    import json

    text = json.dumps(dict(spec.system_prompts), ensure_ascii=False, indent=2) + "\n"
    return RenderedFile(path, text, newline="\n", mode=0o600)


def drop_unused_prompts(spec: LaunchSpec, home: Home) -> None:
    """A system prompts file no start names any more (a preset cleared) is deleted: the user's text is not left
    behind in the home."""
    if not (spec.fronted and spec.system_prompts):
        (home.root / spec.system_prompts_file.name).unlink(missing_ok=True)


def render_start_scripts(spec: LaunchSpec, home: Home) -> StartScripts:
    """Write this system's start script into the home (atomically) and say where it is.

    ``run_qwen.sh`` is executable (0755) with ``\\n`` endings; ``run_qwen.bat`` is UTF-8 without BOM and has
    ``\\r\\n`` endings (cmd.exe misreads labels and ``goto`` in LF-only files).
    """
    for rendered in start_files(spec, home):
        rendered.write()
    drop_unused_prompts(spec, home)
    if spec.system == "Windows":
        return StartScripts(sh=None, bat=home.run_bat)
    return StartScripts(sh=home.run_sh, bat=None)
