"""The only module that reads environment variables (DESIGN.md §2), each with its default and meaning.

Values are read when a function is called, not at import, so tests and the frozen setup can set them first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

HF_DEFAULT_ENDPOINT = "https://huggingface.co"
MODELSCOPE_DEFAULT_ENDPOINT = "https://modelscope.cn"
ENGINE_DEFAULT_URL = "https://github.com/ggml-org/llama.cpp/releases/download"
API_KEY_ENV = "QWENKIT_API_KEY"


def first_set(env: Mapping[str, str], *names: str) -> str | None:
    """The first non-empty value among ``names`` (also used on recorded environments, e.g. the network probe)."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def hf_endpoint(env: Mapping[str, str] = os.environ) -> str:
    """``QWENKIT_HF_ENDPOINT``, else ``HF_ENDPOINT`` (mirrors such as hf-mirror), else huggingface.co."""
    return (first_set(env, "QWENKIT_HF_ENDPOINT", "HF_ENDPOINT") or HF_DEFAULT_ENDPOINT).rstrip("/")


def hf_mirrors(env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """``QWENKIT_HF_MIRRORS``: comma-separated HF-compatible endpoints (``https://hf-mirror.com,…``) tried like extra
    Hugging Face sources, after huggingface.co (or ``HF_ENDPOINT``), by ``--source auto`` and ``--source hf``."""
    listed = (first_set(env, "QWENKIT_HF_MIRRORS") or "").split(",")
    return tuple(dict.fromkeys(u.strip().rstrip("/") for u in listed if u.strip()))


def time_zone(env: Mapping[str, str] = os.environ, localtime: str = "/etc/localtime") -> str | None:
    """``TZ`` (``Asia/Shanghai``, ``:Asia/Shanghai``), else the zone ``/etc/localtime`` links to
    (``…/zoneinfo/Asia/Shanghai``, tzfile(5) and systemd's timedatectl set it so); None when neither says."""
    value = first_set(env, "TZ")
    if value:
        return value.lstrip(":")
    try:
        target = os.readlink(localtime)
    except OSError:
        return None
    _, found, zone = target.partition("zoneinfo/")
    return zone if found and zone else None


def modelscope_endpoint(env: Mapping[str, str] = os.environ) -> str:
    """``QWENKIT_MODELSCOPE_ENDPOINT``, else ``MODELSCOPE_ENDPOINT``, else modelscope.cn."""
    return (first_set(env, "QWENKIT_MODELSCOPE_ENDPOINT", "MODELSCOPE_ENDPOINT")
            or MODELSCOPE_DEFAULT_ENDPOINT).rstrip("/")


def engine_url(env: Mapping[str, str] = os.environ) -> str:
    """``QWENKIT_ENGINE_URL``: base URL of llama.cpp release assets (``…/releases/download`` on GitHub)."""
    return (first_set(env, "QWENKIT_ENGINE_URL") or ENGINE_DEFAULT_URL).rstrip("/")


def home_override(env: Mapping[str, str] = os.environ) -> str | None:
    """``QWENKIT_HOME``: the install home, overriding the per-OS default."""
    return first_set(env, "QWENKIT_HOME")


def catalog_override(env: Mapping[str, str] = os.environ) -> str | None:
    """``QWENKIT_CATALOG``: a catalog.toml to use instead of the shipped one (intranet catalogs, tests, the demo)."""
    return first_set(env, "QWENKIT_CATALOG")


def engines_override(env: Mapping[str, str] = os.environ) -> str | None:
    """``QWENKIT_ENGINES``: an engines.toml to use instead of the shipped one (a mirror's pinned sha256, tests)."""
    return first_set(env, "QWENKIT_ENGINES")


def pip_index_url(env: Mapping[str, str] = os.environ) -> str | None:
    """``QWENKIT_PIP_INDEX_URL``, else ``PIP_INDEX_URL``: the package index for the runtime venv (a domestic mirror)."""
    return first_set(env, "QWENKIT_PIP_INDEX_URL", "PIP_INDEX_URL")


def engine_child_env(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment for llama.cpp processes: without ``LLAMA_ARG_*`` and ``LLAMA_API_KEY``, which llama.cpp
    reads for every flag not given on the command line (llama.cpp ``common/arg.cpp``), so a stray one would silently
    change the server we start or probe."""
    return {k: v for k, v in env.items() if not k.startswith("LLAMA_ARG_") and k != "LLAMA_API_KEY"}


def cuda_toolkit_env(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``CUDA_PATH`` / ``CUDA_HOME`` (NVIDIA's installers set one): where a CUDA toolkit may live."""
    return {name: env[name] for name in ("CUDA_PATH", "CUDA_HOME") if env.get(name, "").strip()}


def hf_token(env: Mapping[str, str] = os.environ) -> str | None:
    """``HF_TOKEN`` for gated or private repos; sent only to the Hugging Face endpoint."""
    return first_set(env, "HF_TOKEN")


def no_color(env: Mapping[str, str] = os.environ) -> bool:
    """``NO_COLOR`` (any value, https://no-color.org) turns colour off."""
    return "NO_COLOR" in env


def language_hint(env: Mapping[str, str] = os.environ) -> str | None:
    """``QWENKIT_LANG`` (``zh`` or ``en``) forces the UI language; else the POSIX locale variables."""
    return first_set(env, "QWENKIT_LANG", "LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE")


def kill_at(env: Mapping[str, str] = os.environ) -> str | None:
    """``QWENKIT_KILL_AT``: a test hook: the installer kills itself (SIGKILL) when it reaches the named step, so the
    crash-safety harness can interrupt it at exact points (``bootstrap/core/checkpoints.py``). Never set by users."""
    return first_set(env, "QWENKIT_KILL_AT")


def wheels_dir(env: Mapping[str, str] = os.environ) -> str | None:
    """``QWENKIT_WHEELS``: a folder of wheels to build the runtime venv from with no package index (offline
    machines; a bundle points it at its own ``wheels/<platform>``)."""
    return first_set(env, "QWENKIT_WHEELS")


def bin_dir(env: Mapping[str, str] = os.environ) -> str | None:
    """The folder the ``qwenkit`` launcher goes in: ``QWENKIT_BIN_DIR`` (as ``PIPX_BIN_DIR`` / ``UV_TOOL_BIN_DIR``
    name theirs), else ``XDG_BIN_HOME`` when absolute (uv honours it too); None: the default ``~/.local/bin``, on
    Windows ``%USERPROFILE%\\.local\\bin`` (``register.shell_command``)."""
    chosen = first_set(env, "QWENKIT_BIN_DIR")
    if chosen:
        return chosen
    xdg = first_set(env, "XDG_BIN_HOME")
    return xdg if xdg and os.path.isabs(xdg) else None


def user_profile(env: Mapping[str, str] = os.environ) -> str | None:
    """``USERPROFILE``: the Windows user's folder (``C:\\Users\\<name>``), where ``.local\\bin`` lives."""
    return first_set(env, "USERPROFILE")


def login_shell(env: Mapping[str, str] = os.environ) -> str | None:
    """``SHELL``: the user's login shell, to name the one line that puts a folder on PATH (bash, zsh, fish…)."""
    return first_set(env, "SHELL")


def search_path(env: Mapping[str, str] = os.environ) -> str:
    """``PATH`` as this process sees it (where a typed ``qwenkit`` is looked up)."""
    return env.get("PATH", "")


def api_key(env: Mapping[str, str] = os.environ) -> str | None:
    """``QWENKIT_API_KEY``: a user's key for ``qwenkit launch --endpoint URL`` (a team gateway's user key), read
    from the environment so it is never an argument in the process list. ``launch`` also gives it to the clients
    that read their key from a variable they are told the name of (Codex ``env_key``, OpenCode ``{env:…}``)."""
    return first_set(env, API_KEY_ENV)


def _positive(env: Mapping[str, str], name: str) -> float | None:
    """A positive finite number from ``name``; None when unset or not one (the caller's default then holds)."""
    value = first_set(env, name)
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and 0 < number < float("inf") else None


def min_rate(env: Mapping[str, str] = os.environ) -> float | None:
    """``QWENKIT_MIN_RATE``: bytes per second a download connection must average over ``QWENKIT_RATE_WINDOW``, or it
    is cut and retried (default ``fetch.http_session.MIN_RATE``, 1024)."""
    return _positive(env, "QWENKIT_MIN_RATE")


def rate_window(env: Mapping[str, str] = os.environ) -> float | None:
    """``QWENKIT_RATE_WINDOW``: seconds over which that rate is averaged (default ``fetch.http_session.RATE_WINDOW``,
    30)."""
    return _positive(env, "QWENKIT_RATE_WINDOW")


def segment_deadline(env: Mapping[str, str] = os.environ) -> float | None:
    """``QWENKIT_SEGMENT_DEADLINE``: seconds one download request may last before it is closed and the rest asked
    for again (default ``fetch.http_session.SEGMENT_DEADLINE``, 600)."""
    return _positive(env, "QWENKIT_SEGMENT_DEADLINE")


def meta_deadline(env: Mapping[str, str] = os.environ) -> float | None:
    """``QWENKIT_META_DEADLINE``: seconds one metadata request (a listing, a manifest, a probe) may take in all
    (default ``fetch.http_session.META_DEADLINE``, 30)."""
    return _positive(env, "QWENKIT_META_DEADLINE")


@contextmanager
def overridden(values: Mapping[str, str]) -> Iterator[None]:
    """Set variables for the duration of one run, then restore them: an install from an offline bundle makes the
    bundle's catalog, engine pins and engine folder the ones in force (``QWENKIT_CATALOG``, ``QWENKIT_ENGINES``,
    ``QWENKIT_ENGINE_URL``) for itself and the processes it starts, exactly as an admin's own files would be."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
