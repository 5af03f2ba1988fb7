"""The ``qwenkit`` command on the user's PATH after an install: the register stage making the kit callable from a shell.

The conventions of pipx, uv and rustup: one small launcher in the user's bin folder — ``~/.local/bin`` on Linux and
macOS (pipx's and uv's default; the XDG folder for user executables), ``%USERPROFILE%\\.local\\bin`` on Windows (also
theirs) — with ``QWENKIT_BIN_DIR`` (or ``XDG_BIN_HOME``) to choose another. Windows gets the folder added to the
*user* PATH (``register.user_path``); on Linux and macOS the folder is created and, when the shell does not search
it, the user is told the one line to add for their shell (changing someone's shell files unasked is what these tools
avoid too).

What the launcher runs must outlive whatever installed it (a setup deleted after the double-click, a USB drive):
1. the runtime venv's own ``qwenkit`` (``<home>/venv``: the kit installed there from its wheel, offline from a
   bundle too, DESIGN.md §3) — the usual case;
2. else, when this is the frozen setup (no Python 3.10–3.13 on the machine, or ``--no-venv``), a copy of the setup
   kept in ``<home>/app``; given no arguments the launcher asks it for ``--help`` (a bare setup would install);
3. else this interpreter with ``-m bootstrap`` (pip or pipx installed the kit, and no runtime venv was made);
never a source checkout, which only works with its ``PYTHONPATH``.

The launcher sets ``QWENKIT_HOME`` (unless already set) so ``qwenkit status`` finds a home given with ``--home``.
A file at the launcher's path that no install of ours wrote (pipx's ``qwenkit``…) is never replaced; ours carries a
marker line, and its path and SHA-256 go into ``state.json`` (``LauncherRecord``) so that ``uninstall`` removes it only
while it is exactly what this home wrote. When a different ``qwenkit`` comes first on PATH, the report says which
one runs.

Several homes share the one launcher folder and its PATH entry: the entry was added by whichever install came first,
and the last uninstall must take it out. So the fact that an install of ours added it is kept in the folder itself
(``PATH_MARK``), not only in the home that added it, and any uninstall that leaves the folder holding nothing else
removes the entry (and the mark); an entry the user had before any install of ours has no mark and stays.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath

from bootstrap.core import settings
from bootstrap.core.atomic_file import copy_atomic, write_atomic
from bootstrap.core.console import t
from bootstrap.core.hashing import sha256_bytes
from bootstrap.core.home import Home
from bootstrap.register import user_path
from bootstrap.register.launcher_record import LauncherRecord
from bootstrap.register.user_path import Broadcast, UserEnvironment

MARKER = "qwenclientkit-launcher"
PATH_MARK = ".qwenclientkit-path-entry"  # in the launcher folder: an install of ours put it on the user PATH
_PATH_MARK_TEXT = ("QwenClientKit put this folder on your user PATH. The uninstall that leaves it holding nothing\r\n"
                   "else takes the entry out again, and this file with it.\r\n")
SH_TEMPLATE = "qwenkit.sh.j2"
CMD_TEMPLATE = "qwenkit.cmd.j2"
# What Windows' PATHEXT finds before our .cmd: a qwenkit.exe there (pipx's, uv's) would run instead.
_WINDOWS_NAMES = ("qwenkit.com", "qwenkit.exe", "qwenkit.bat", "qwenkit.cmd")
_CHECKOUT = Path(__file__).resolve().parents[2]  # bootstrap/register/shell_command.py → the repository root


@dataclass(frozen=True)
class LauncherTarget:
    """The program the launcher runs, with the words before the user's."""

    program: Path
    args: tuple[str, ...] = ()
    no_args: tuple[str, ...] = ()  # given when the user gives none
    kind: str = "venv"  # "venv" | "frozen" | "interpreter"


@dataclass(frozen=True)
class CommandOnPath:
    """The outcome: the launcher written (or why not), and what a typed ``qwenkit`` runs now."""

    record: LauncherRecord | None
    launcher: Path | None
    runs: Path | None  # what PATH finds for "qwenkit" in this process (None: nothing)
    line: str  # the one sentence the report says
    command: str  # how to call qwenkit in the next message: "qwenkit" when PATH finds ours, else the full path


def user_bin_dir(system: str, env: Mapping[str, str], user_home: Path) -> Path:
    """``QWENKIT_BIN_DIR``, else ``~/.local/bin`` (Windows: ``%USERPROFILE%\\.local\\bin``)."""
    chosen = settings.bin_dir(env)
    if chosen:
        return Path(chosen).expanduser()
    base = settings.user_profile(env) if system == "Windows" else None
    return Path(base or user_home) / ".local" / "bin"


def launcher_name(system: str) -> str:
    return "qwenkit.cmd" if system == "Windows" else "qwenkit"


def venv_command(venv: Path, system: str) -> Path:
    """The ``qwenkit`` console script pip writes into a venv."""
    return venv / "Scripts" / "qwenkit.exe" if system == "Windows" else venv / "bin" / "qwenkit"


def choose_target(home: Home, system: str, *, frozen: bool, executable: Path) -> LauncherTarget | str:
    """What the launcher runs (see the module docstring), or why there is nothing that outlives this run."""
    in_venv = venv_command(home.venv_dir, system)
    if in_venv.is_file():
        return LauncherTarget(in_venv)
    if frozen:
        return LauncherTarget(home.app_dir / executable.name, no_args=("--help",), kind="frozen")
    if (_CHECKOUT / "pyproject.toml").is_file():
        return t("path.skip_checkout", venv=home.venv_dir)
    return LauncherTarget(executable, args=("-m", "bootstrap"), kind="interpreter")


def invoked_as(executable: Path, *, frozen: bool, argv0: str | None = None) -> str:
    """How this very run was started, for the closing "Rerun '… install'" when no launcher was written (a path
    that does not exist would send the user nowhere): the setup program, the ``qwenkit`` script that ran, or
    ``<python> -m bootstrap``."""
    if frozen:
        return str(executable)
    script = Path(sys.argv[0] if argv0 is None else argv0)
    if script.name.lower().startswith("qwenkit") and script.is_file():
        return str(script.absolute())
    return f"{executable} -m bootstrap"


def kit_command(home: Home, system: str, *, frozen: bool | None = None,
                executable: Path | None = None) -> tuple[str, ...]:
    """The words that run this kit from a start script (the router's front, ``register/router_front.py``), by the
    launcher's rule (module docstring): the runtime venv's ``qwenkit`` when it holds this very version of the kit
    (an older one there may lack the front: a model added before the venv was refreshed), else the frozen setup's
    copy in the home (made now when missing), else this interpreter with ``-m bootstrap`` (pip or pipx installed
    the kit; a source checkout only with its ``PYTHONPATH``, as the tests run it)."""
    from bootstrap import __version__
    from bootstrap.place.runtime_venv import read_stamp

    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    executable = Path(sys.executable) if executable is None else executable
    in_venv = venv_command(home.venv_dir, system)
    stamp = read_stamp(home.venv_dir) or {}
    if in_venv.is_file() and stamp.get("kit") == __version__:
        return (str(in_venv),)
    if frozen:
        return (str(kept_program(home, executable)),)
    return (str(executable), "-m", "bootstrap")


def kept_program(home: Home, executable: Path | None = None) -> Path:
    """The running setup's copy in the home (``app/``), made now when it is not there: what long-lived processes
    run. Where it cannot be made (a full disk), the setup itself."""
    executable = Path(sys.executable) if executable is None else executable
    target = home.app_dir / executable.name
    try:
        keep_frozen_copy(executable, target)
    except OSError:
        return executable
    return target


def keep_frozen_copy(executable: Path, target: Path) -> None:
    """Copy the running setup into the home (a one-file build; a folder build's whole folder), unless the copy there
    already has its size and time, or is this very program."""
    if executable.resolve() == target.resolve():
        return
    meipass = getattr(sys, "_MEIPASS", None)
    if meipass and Path(meipass).resolve().is_relative_to(executable.resolve().parent):  # --onedir
        shutil.copytree(executable.resolve().parent, target.parent, dirs_exist_ok=True, copy_function=_copy_plain)
        return
    try:
        same = (target.stat().st_size, int(target.stat().st_mtime)) == (executable.stat().st_size,
                                                                         int(executable.stat().st_mtime))
    except OSError:
        same = False
    if not same:
        copy_atomic(executable, target)


def _copy_plain(source: str, target: str) -> str:
    """``copytree``'s copy without ``CopyFile2`` (``atomic_file.copy_atomic``)."""
    copy_atomic(Path(source), Path(target))
    return target


def render_launcher(system: str, target: LauncherTarget, home: Home) -> str:
    from bootstrap.core.templating import render_template  # Jinja only when a launcher is written

    name = CMD_TEMPLATE if system == "Windows" else SH_TEMPLATE
    return render_template(name, marker=MARKER, home=str(home.root), program=str(target.program),
                           args=list(target.args), no_args=list(target.no_args))


def is_ours(path: Path, prior: LauncherRecord | None) -> bool:
    """A launcher some install of ours wrote: the one this home recorded, or any carrying the marker line."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if prior is not None and Path(prior.path) == path and sha256_bytes(data) == prior.sha256:
        return True
    return path.is_file() and not path.is_symlink() and MARKER.encode() in data[:1024]


KIT_ENTRY = b"from bootstrap.app.cli import main"  # what pip's console script for the kit imports (pyproject.toml)
KIT_DIST = "qwenclientkit"


def installed_by(path: Path) -> str | None:
    """Which tool put ``path`` there when it is this kit's own ``qwenkit`` (pip's console script of the
    ``qwenclientkit`` package): "pipx" (a link into ``…/pipx/venvs/qwenclientkit/``, pipx's layout on Linux and
    macOS, or the script inside it), "uv" (``…/uv/tools/qwenclientkit/``), else "pip"; None for any other file.
    Such a command runs this kit as ours would: nothing needs replacing, and uninstall names the tool that removes
    it."""
    try:
        real = Path(os.path.realpath(path))
        with open(real, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    if KIT_ENTRY not in head:
        return None
    parts = [part.lower() for part in real.parts]
    for tool, marker in (("pipx", "pipx"), ("uv", "uv")):
        for i, part in enumerate(parts[:-2]):
            if part == marker and parts[i + 1] in ("venvs", "tools") and parts[i + 2] == KIT_DIST:
                return tool
    return "pip"


def _foreign(folder: Path, system: str, prior: LauncherRecord | None) -> Path | None:
    """A qwenkit in ``folder`` that is not ours (pipx's link, uv's exe…), which must be left alone."""
    names = _WINDOWS_NAMES if system == "Windows" else ("qwenkit",)
    for name in names:
        path = folder / name
        if os.path.lexists(path) and not is_ours(path, prior):
            return path
    return None


def which_qwenkit(search_path: str) -> Path | None:
    found = shutil.which("qwenkit", path=search_path)
    return Path(found) if found else None


def _same(a: Path | None, b: Path) -> bool:
    if a is None:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def put_on_path(home: Home, system: str, *, prior: LauncherRecord | None = None, frozen: bool | None = None,
                executable: Path | None = None, env: Mapping[str, str] = os.environ,
                user_home: Path | None = None, registry: UserEnvironment | None = None,
                broadcast: Broadcast | None = None) -> CommandOnPath:
    """Write (or refresh) the launcher and, on Windows, put its folder on the user PATH; never raises for a folder
    that cannot be written (the install succeeded: the report says why there is no command)."""
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    executable = Path(sys.executable) if executable is None else executable
    folder = user_bin_dir(system, env, Path.home() if user_home is None else user_home)
    launcher = folder / launcher_name(system)
    search = settings.search_path(env)
    target = choose_target(home, system, frozen=frozen, executable=executable)
    if isinstance(target, str):
        runs = which_qwenkit(search)
        return CommandOnPath(None, None, runs, t("path.skipped", reason=target),
                             "qwenkit" if runs else invoked_as(executable, frozen=frozen))
    other = _foreign(folder, system, prior)
    if other is not None:
        runs = which_qwenkit(search)
        tool = installed_by(other)
        if tool is not None:  # this kit's own command (pipx, uv, pip): it runs this kit, left as it is
            return CommandOnPath(None, None, runs, _kit_command_line(tool, other, home, system, env, user_home),
                                 "qwenkit" if runs else str(other))
        line = t("path.foreign", path=other, runs=runs or "-")
        return CommandOnPath(None, None, runs, line, "qwenkit" if runs else str(other))
    try:
        if target.kind == "frozen":
            keep_frozen_copy(executable, target.program)
        text = render_launcher(system, target, home)
        newline = "\r\n" if system == "Windows" else "\n"
        data = text.replace("\r\n", "\n").replace("\n", newline).encode("utf-8")
        if not launcher.is_file() or launcher.read_bytes() != data:
            from bootstrap.core.templating import write_rendered

            write_rendered(launcher, text, newline=newline, mode=0o755)
    except OSError as exc:
        runs = which_qwenkit(search)
        return CommandOnPath(None, None, runs, t("path.write_failed", path=launcher, detail=exc.strerror or exc),
                             "qwenkit" if runs else invoked_as(executable, frozen=frozen))
    added = prior.path_entry if prior is not None and Path(prior.path) == launcher else None
    if system == "Windows":
        try:
            if user_path.add_to_user_path(str(folder), registry or user_path.windows_environment(),
                                          broadcast or user_path.broadcast_environment_change, env):
                added = str(folder)
        except OSError as exc:
            return _report(launcher, data, target, added, search, system, folder, env, user_home,
                           failed=exc.strerror or str(exc))
        if added is not None:  # the entry is ours: whichever home uninstalls last must find that out (above)
            _mark_path_entry(folder)
    return _report(launcher, data, target, added, search, system, folder, env, user_home)


def _kit_command_line(tool: str, command: Path, home: Home, system: str, env: Mapping[str, str],
                      user_home: Path | None) -> str:
    """Nothing to say when the tool's ``qwenkit`` finds this home by itself (the default one, or ``QWENKIT_HOME``
    names it); else how it finds this one."""
    from bootstrap.core.home import default_home

    default = Path(default_home(system, env, Path.home() if user_home is None else user_home))
    named = settings.home_override(env)
    if _same(home.root, default) or (named and _same(Path(named), home.root)):
        return ""
    return t("path.kit_command_home", tool=tool, path=command, home=home.root)


def _mark_path_entry(folder: Path) -> None:
    """Write ``PATH_MARK`` once; a folder that cannot take it leaves the entry to this home's own record."""
    mark = folder / PATH_MARK
    if not mark.is_file():
        with contextlib.suppress(OSError):
            write_atomic(mark, _PATH_MARK_TEXT.encode("ascii"))


def _report(launcher: Path, data: bytes, target: LauncherTarget, added: str | None, search: str, system: str,
            folder: Path, env: Mapping[str, str], user_home: Path | None, failed: str | None = None) -> CommandOnPath:
    """The one sentence: on PATH, on PATH from the next terminal (Windows), behind another qwenkit, or the line to
    add."""
    record = LauncherRecord(str(launcher), sha256_bytes(data), str(target.program), added)
    runs = which_qwenkit(search)
    if _same(runs, launcher):
        return CommandOnPath(record, launcher, runs, t("path.on_path", path=launcher), "qwenkit")
    if runs is not None:
        return CommandOnPath(record, launcher, runs, t("path.shadowed", other=runs, path=launcher), str(launcher))
    if system == "Windows":
        if failed is not None:
            line = t("path.registry_failed", folder=folder, detail=failed)
        else:
            line = t("path.new_terminal", path=launcher)
        return CommandOnPath(record, launcher, None, line, str(launcher))
    shell = user_path.shell_line(PurePath(folder), settings.login_shell(env),
                                 PurePath(Path.home() if user_home is None else user_home))
    return CommandOnPath(record, launcher, None, t("path.add_line", folder=folder, line=shell), str(launcher))


def kit_command_note(env: Mapping[str, str] = os.environ) -> str:
    """After an uninstall: when the ``qwenkit`` on PATH is this kit's own, put there by pipx, uv or pip (not a
    launcher of ours, which uninstall removes), the one line that removes it; "" otherwise."""
    runs = which_qwenkit(settings.search_path(env))
    tool = installed_by(runs) if runs is not None else None
    if tool is None:
        return ""
    remove = {"pipx": f"pipx uninstall {KIT_DIST}", "uv": f"uv tool uninstall {KIT_DIST}",
              "pip": f"pip uninstall {KIT_DIST}"}[tool]
    return t("path.remove_with_tool", path=runs, tool=tool, command=remove)


def remove_launcher(record: LauncherRecord, system: str, *, env: Mapping[str, str] = os.environ,
                    registry: UserEnvironment | None = None, broadcast: Broadcast | None = None) -> list[str]:
    """Undo ``put_on_path``: the launcher while it is exactly what was written, and the PATH entry this install
    added. Returns the sentences to report (nothing is raised: the rest of the uninstall goes on)."""
    said: list[str] = []
    path = Path(record.path)
    deleted = ""
    try:
        if path.is_file() and not path.is_symlink() and sha256_bytes(path.read_bytes()) == record.sha256:
            path.unlink()
            deleted = path.name.lower()
            said.append(t("path.removed", path=path))
        elif os.path.lexists(path):
            said.append(t("path.kept_changed", path=path))
    except OSError as exc:
        said.append(t("path.remove_failed", path=path, detail=exc.strerror or exc))
    # The folder is shared (pipx and uv put their commands there too, other homes their launcher): its PATH entry
    # goes only when it holds nothing else, and only when an install of ours added it (this home's record, or the
    # folder's PATH_MARK: another home may have added it). Our launcher may still be listed after its deletion: a
    # file deleted while a program has it open (cmd.exe running it: ``qwenkit uninstall`` typed as a command)
    # stays until that program closes it.
    folder = Path(record.path_entry) if record.path_entry else path.parent
    mark = folder / PATH_MARK
    if system != "Windows" or not (record.path_entry or mark.is_file()):
        return said
    if folder.is_dir() and any(entry.name.lower() not in (deleted, PATH_MARK) for entry in folder.iterdir()):
        if record.path_entry:
            said.append(t("path.entry_kept", folder=folder))
        return said
    try:
        if user_path.remove_from_user_path(str(folder), registry or user_path.windows_environment(),
                                           broadcast or user_path.broadcast_environment_change, env):
            said.append(t("path.entry_removed", folder=folder))
        mark.unlink(missing_ok=True)
    except OSError as exc:
        said.append(t("path.registry_failed", folder=folder, detail=exc.strerror or exc))
    return said
