"""What runs the kit on a target machine, whatever made the bundle: the launchers and ``README.txt``.

A bundle made by a frozen setup carries that setup (and any given with ``--setup``); one made by a pip- or
pipx-installed kit carries none. Either way the bundle holds the kit's own wheel and its dependencies for each target
(``payload/wheels/<folder>/``, ``bundle.wheels``), so three small files make it runnable anywhere a Python of the
bundled versions is:

- ``payload/launch.py`` (``templates/bundle-launch.py.j2``, standard library only): checks the wheels against
  ``payload/SHA256SUMS`` while copying them out, makes a temporary venv, ``pip install --no-index`` the kit, and runs
  ``qwenkit install --bundle <bundle>`` with the user's options;
- ``install.sh`` (Linux, macOS) and ``install.bat`` (Windows): find such a Python and hand over to it.

``README.txt`` then says, for each OS the bundle holds, exactly what to run there: the setup built for that OS when
the bundle has one, else the launcher (with the Python it needs). Its sentences are the ``options.readme_*``
messages, English then Chinese, whatever the UI language.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bootstrap.bundle.root_files import README
from bootstrap.bundle.selection import Want
from bootstrap.catalog.bundle_platforms import TargetPlatform, wheels_folder
from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.messages import MESSAGES
from bootstrap.core.templating import render_template
from bootstrap.place.runtime_venv import KIT_DIST

LAUNCH_PY = "payload/launch.py"
INSTALL_SH = "install.sh"
INSTALL_BAT = "install.bat"
NAMES = (INSTALL_SH, INSTALL_BAT)  # root names a --setup may not take
OS_ORDER = ("Windows", "Linux", "Darwin")
OS_NAMES = {"Windows": "Windows", "Linux": "Linux", "Darwin": "macOS"}
LAUNCH_MESSAGES = ("python", "platform", "damaged", "preparing", "venv", "pip")
_ECHO_UNSAFE = set("&|<>^%\"")  # what an unquoted cmd.exe echo would read as syntax


@dataclass(frozen=True)
class Setup:
    """A setup executable at the bundle root and the OS it runs on (None: not known from its bytes)."""

    name: str
    system: str | None


def _both(key: str, **fields: object) -> list[str]:
    texts = MESSAGES[key]
    return [texts["en"].format(**fields), texts["zh"].format(**fields)]


def _systems(targets: Sequence[TargetPlatform]) -> list[str]:
    return [s for s in OS_ORDER if any(tp.system == s for tp in targets)]


def _wheels_map(targets: Sequence[TargetPlatform]) -> dict[str, str]:
    """``"<platform.system()>-<arch>"`` → the wheels folder a machine of that kind takes (``wheels_folder``), for the
    folders this bundle holds."""
    held = {tp.wheels for tp in targets}
    found = {}
    for system in OS_ORDER:
        for arch, machine in (("x64", "x86_64"), ("arm64", "arm64")):
            folder = wheels_folder(system, machine)
            if folder in held:
                found[f"{system}-{arch}"] = folder
    return found


def _want(rel: str, text: str, *, platform: str | None, newline: str = "\n") -> tuple[Want, bytes]:
    data = text.replace("\r\n", "\n").replace("\n", newline).encode("utf-8")
    return Want(rel, "setup", len(data), hashlib.sha256(data).hexdigest(), platform=platform), data


def launcher_files(targets: Sequence[TargetPlatform], pythons: Sequence[str]) -> list[tuple[Want, bytes]]:
    """The launchers this bundle needs (``payload/launch.py`` and the script of each OS it holds), with their bytes."""
    systems = _systems(targets)
    messages = {key: [MESSAGES[f"options.launch_{key}"][lang] for lang in ("en", "zh")] for key in LAUNCH_MESSAGES}
    launch = render_template("bundle-launch.py.j2", kit=KIT_DIST, pythons=list(pythons),
                             wheels=_wheels_map(targets), messages=messages)
    files = [_want(LAUNCH_PY, launch, platform=None)]
    no_python = _both("options.launch_no_python", wanted="/".join(pythons))
    if "Linux" in systems or "Darwin" in systems:
        text = render_template("bundle-install.sh.j2", pythons=list(pythons), no_python=no_python)
        files.append(_want(INSTALL_SH, text, platform=None))
    if "Windows" in systems:
        if any(_ECHO_UNSAFE & set(line) for line in no_python):
            raise ValueError(f"a message cmd.exe cannot echo: {no_python!r}")
        text = render_template("bundle-install.bat.j2", pythons=list(pythons), no_python=no_python)
        files.append(_want(INSTALL_BAT, text, platform="Windows", newline="\r\n"))
    return files


def write_launchers(out: Path, files: Sequence[tuple[Want, bytes]]) -> list[Want]:
    """Write the launchers (atomically; modes are set with every other file by ``create.publish_modes``)."""
    for want, data in files:
        (out / want.rel).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out / want.rel, data, mode=0o644)
    return [want for want, _ in files]


def _how(system: str, setups: Sequence[Setup], pythons: str, lang: str) -> str:
    """The README line for one OS: its setup when the bundle has one, else the launcher and the Python it needs."""
    name = OS_NAMES[system]
    own = [s.name for s in setups if s.system == system]
    if own and system == "Windows":
        key, fields = "options.readme_os_setup_windows", {"setup": own[0]}
    elif own:
        key, fields = "options.readme_os_setup", {"setup": own[0]}
    elif system == "Windows":
        key, fields = "options.readme_os_bat", {"pythons": pythons}
    else:
        key, fields = "options.readme_os_sh", {"pythons": pythons}
    return MESSAGES[key][lang].format(os=name, **fields)


def readme_text(targets: Sequence[TargetPlatform], pythons: Sequence[str], setups: Sequence[Setup]) -> str:
    """README.txt: what the folder is and, per OS it holds, what to run — in English, then in Chinese."""
    listed = "/".join(pythons)
    parts = []
    for lang in ("en", "zh"):
        lines = [MESSAGES["options.readme_head"][lang], MESSAGES["options.readme_install"][lang]]
        lines += [_how(system, setups, listed, lang) for system in _systems(targets)]
        lines.append(MESSAGES["options.readme_options"][lang])
        if any(s.system == "Linux" for s in setups):
            lines.append(MESSAGES["options.readme_noexec"][lang])
        lines.append(MESSAGES["options.readme_tail"][lang])
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def write_readme(out: Path, text: str) -> Want:
    data = text.encode("utf-8")
    write_atomic(out / README, data, mode=0o644)
    return Want(README, "doc", len(data), hashlib.sha256(data).hexdigest())
