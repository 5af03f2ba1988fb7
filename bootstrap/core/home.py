"""The install home (DESIGN.md §3): its default location per OS and every path inside it, in one place.

Nothing else builds paths into the home; stages receive a ``Home`` and ask it.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from bootstrap.core import settings
from bootstrap.core.fs_errors import mapped
from bootstrap.core.input_checks import check_text

APP_DIR_WINDOWS_MAC = "QwenClientKit"
APP_DIR_LINUX = "qwenclientkit"


def default_home(system: str, env: Mapping[str, str], user_home: PurePath) -> PurePath:
    """The per-OS default home, computed from data so it can be checked for other OSes.

    Windows: ``%LOCALAPPDATA%\\QwenClientKit``, unless that path holds non-ASCII characters (older llama.cpp
    builds and some tools fail on them, llama.cpp #18571), then ``%SystemDrive%\\QwenClientKit``.
    Linux: ``$XDG_DATA_HOME/qwenclientkit`` (default ``~/.local/share``). macOS:
    ``~/Library/Application Support/QwenClientKit``.
    """
    if system == "Windows":
        local = env.get("LOCALAPPDATA") or str(PureWindowsPath(user_home, "AppData", "Local"))
        candidate = PureWindowsPath(local, APP_DIR_WINDOWS_MAC)
        if not str(candidate).isascii():
            drive = env.get("SystemDrive") or "C:"
            candidate = PureWindowsPath(drive + "\\", APP_DIR_WINDOWS_MAC)
        return candidate
    if system == "Darwin":
        return PurePosixPath(user_home, "Library", "Application Support", APP_DIR_WINDOWS_MAC)
    xdg = env.get("XDG_DATA_HOME")
    base = PurePosixPath(xdg) if xdg and PurePosixPath(xdg).is_absolute() else PurePosixPath(user_home,
                                                                                             ".local", "share")
    return base / APP_DIR_LINUX


PRESET_NAME = "models.ini"  # the router preset beside the start scripts (render/model_preset.py)
SYSTEM_PROMPTS_NAME = "system-prompts.json"  # the front's system prompt per model (plan/presets.py)
PROMPT_CACHE_NAME = "prompt-cache"  # saved slots across restarts (plan/prompt_cache.py)


@dataclass(frozen=True)
class Home:
    """Every location inside one install home."""

    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def lock_file(self) -> Path:
        return self.root / ".lock"

    @property
    def engines_dir(self) -> Path:
        return self.root / "engine"

    @property
    def models_dir(self) -> Path:
        return self.root / "models"

    @property
    def partial_dir(self) -> Path:
        return self.root / "cache" / "partial"

    @property
    def venv_dir(self) -> Path:
        return self.root / "venv"

    @property
    def secrets_dir(self) -> Path:
        """Owner-only (0700) folder holding the API key."""
        return self.root / "secrets"

    @property
    def api_key_file(self) -> Path:
        return self.secrets_dir / "api-key"

    @property
    def prompt_cache_dir(self) -> Path:
        """The prompt cache's saved slots, one folder per model, engine build and template (plan/prompt_cache.py)."""
        return self.root / PROMPT_CACHE_NAME

    @property
    def system_prompts_file(self) -> Path:
        """The front's system prompt per model (plan/presets.py)."""
        return self.root / SYSTEM_PROMPTS_NAME

    @property
    def chat_templates_dir(self) -> Path:
        """The chat templates the kit serves models with instead of their own (``place/chat_template.py``)."""
        return self.root / "chat-templates"

    @property
    def examples_dir(self) -> Path:
        """``venv/examples``: the agent example ships inside the runtime venv."""
        return self.venv_dir / "examples"

    @property
    def services_dir(self) -> Path:
        """Rendered service definitions (unit, plist, XML) kept in the home; the OS gets a copy or a link."""
        return self.root / "service"

    @property
    def run_dir(self) -> Path:
        """Runtime files of a server started without a service manager (pid file)."""
        return self.root / "run"

    @property
    def staging_dir(self) -> Path:
        """Where archives are unpacked and checked before an atomic rename into place (same filesystem)."""
        return self.root / "cache" / "staging"

    @property
    def bundle_dir(self) -> Path:
        """The offline bundle last installed from: its manifest, catalog and engine pins (reruns need no drive)."""
        return self.root / "bundle"

    @property
    def bundle_pending_dir(self) -> Path:
        """A newly opened bundle's records, until the install from it has passed every check
        (``install.from_bundle.commit_records`` then makes them ``bundle/``)."""
        return self.root / "cache" / "bundle-new"

    @property
    def wheels_cache(self) -> Path:
        """A bundle's wheels for this machine, verified, while the runtime venv is built from them."""
        return self.root / "cache" / "wheels"

    @property
    def team_dir(self) -> Path:
        """The team gateway's own folder (``qwenkit team``): its record, keys, nginx configuration, logs."""
        return self.root / "team"

    @property
    def agents_dir(self) -> Path:
        """What ``qwenkit launch`` keeps: the record of the client configs ``--config`` edited, files it gives a
        client (``bootstrap/agents/``)."""
        return self.root / "agents"

    @property
    def run_sh(self) -> Path:
        return self.root / "run_qwen.sh"

    @property
    def preset_file(self) -> Path:
        """llama-server's router preset, when several models are installed (docs/several-models.md)."""
        return self.root / PRESET_NAME

    @property
    def run_bat(self) -> Path:
        return self.root / "run_qwen.bat"

    def start_script(self, system: str) -> Path:
        """The one start script an install for ``system`` (``platform.system()``) renders and runs."""
        return self.run_bat if system == "Windows" else self.run_sh

    @property
    def app_dir(self) -> Path:
        """A copy of the frozen setup the ``qwenkit`` launcher runs when the runtime venv holds no kit (the setup
        itself may be deleted, or sit on a USB drive that goes away)."""
        return self.root / "app"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def engine_dir(self, build: str, variant: str) -> Path:
        """``engine/<build>-<variant>/``, e.g. ``engine/b10434-ubuntu-vulkan-x64``."""
        return self.engines_dir / f"{build}-{variant}"


def resolve_home(cli_value: str | None = None) -> Home:
    """``--home``, else ``QWENKIT_HOME``, else the per-OS default; always absolute.

    The path is checked before anything is created: no control character (a newline cannot be written into the
    start scripts or unit files that name the home) and no absurd length (``input_checks``).
    """
    option = "--home" if cli_value else "QWENKIT_HOME"
    chosen = cli_value or settings.home_override()
    if chosen:
        check_text(option, chosen)
        with mapped(chosen, writing=False):  # resolve() meets the filesystem: ENAMETOOLONG, ELOOP…
            root = Path(chosen).expanduser().resolve()
    else:
        option = "XDG_DATA_HOME"
        root = Path(default_home(platform.system(), os.environ, Path.home()))
    check_text(option, str(root))
    return Home(root)
