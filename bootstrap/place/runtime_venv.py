"""The runtime venv (place stage, DESIGN.md §3): ``<home>/venv`` with the OpenAI SDK, this kit and an example.

Why it looks like this:
- A venv embeds its own absolute path (``pyvenv.cfg``, script shebangs), so it cannot be built elsewhere and renamed
  into place. It is created at its final path instead, and a stamp (``.qwenkit-venv.json``) written *last* marks it
  complete. A venv without a matching stamp (killed mid-install, other Python, other requirements) is removed and
  built again; one with a matching stamp is reused without running pip.
- Only the venv's own interpreter runs pip, with ``-I`` (ignores ``PYTHON*`` variables and the user site) and an
  environment stripped of variables that would redirect the install (``PIP_TARGET``, ``PIP_USER``, ``PYTHONHOME``…):
  the system Python is only ever asked to run ``-m venv``.
- An explicit source (``--index-url``, ``QWENKIT_PIP_INDEX_URL``, or offline wheels) is used alone: pip's config
  files are switched off (``PIP_CONFIG_FILE=os.devnull``, pip's documented way to load none) so an
  ``extra-index-url`` there cannot add another source. With no explicit source, pip runs as the user configured it
  (a ``pip.conf`` mirror is common where PyPI is slow).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bootstrap import __version__
from bootstrap.core import console, settings
from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.checkpoints import checkpoint
from bootstrap.core.console import info, join_names, t, warn
from bootstrap.core.display_text import masked_url
from bootstrap.core.errors import QwenKitError, SourceError, UnsupportedMachine
from bootstrap.core.file_formats import read_record
from bootstrap.core.fs_errors import os_reason
from bootstrap.core.home import Home
from bootstrap.core.log_files import roll_if_large
from bootstrap.core.processes import run_captured, run_command
from bootstrap.core.progress import Ticker
from bootstrap.core.resources import resource_dir
from bootstrap.core.templating import render_template, write_rendered
from bootstrap.detect.hardware import PythonInfo
from bootstrap.detect.probes.pythons import SUPPORTED, parse_version, probe_pythons, read_pythons

STAMP_NAME = ".qwenkit-venv.json"
STAMP_SCHEMA = 1
KIT_DIST = "qwenclientkit"
LOG_NAME = "venv-install.log"
PIP_DEBUG_LOG = "venv-pip-debug.log"
EXAMPLE_TEMPLATE = "agent.py.j2"
# What the venv downloads when pip resolves it from an index: the wheels of payload/requirements.txt and the kit's
# dependencies (pyproject.toml), measured in the test bed's wheelhouse for CPython 3.11 on Linux x86_64
# (tests/support/wheelhouse.py; one cryptography wheel of the two kept there). The exact figure is only known once
# pip has resolved against the index (the network); the confirmation screen shows this one, marked as an estimate,
# before any network access. Other platforms and Pythons differ by a few MB.
RECORDED_WHEELS_BYTES = 25_901_616
# Variables that point an interpreter or pip somewhere else (another prefix, a --user or --target install).
_DROP_VARS = frozenset({"PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONEXECUTABLE",
                        "VIRTUAL_ENV", "__PYVENV_LAUNCHER__"})
# pip settings about reaching the network (corporate proxy, CA, slow links) are kept; every other PIP_* is dropped.
_PIP_KEEP = frozenset({"PIP_CERT", "PIP_CLIENT_CERT", "PIP_PROXY", "PIP_TRUSTED_HOST", "PIP_TIMEOUT",
                       "PIP_DEFAULT_TIMEOUT", "PIP_RETRIES"})
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_KIT_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)
_PIP_TAIL = 40  # pip output lines kept for the error message
# Causes inside pip's "connection broken by '…'" warnings (urllib3 exception reprs).
_SSL_CAUSE = re.compile(r"(\[SSL[^\]]*\][^'\")]*)")
_ERRNO_CAUSE = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")
_NAMED_CAUSE = re.compile(r"\b(ConnectTimeout\w*|ReadTimeout\w*|ProxyError|ConnectionResetError)\b")


@dataclass(frozen=True)
class VenvResult:
    """What the venv step did: the venv's interpreter, or why there is none."""

    python: Path | None  # <venv>/bin/python (Scripts\\python.exe on Windows)
    created: bool
    reused: bool
    installed: tuple[str, ...]  # requirement names: ("openai", "qwenclientkit")
    example: Path | None
    skipped_reason: str | None


def venv_python(venv: Path) -> Path:
    """The venv's interpreter (``Scripts\\python.exe`` on Windows, ``bin/python`` elsewhere)."""
    return venv / "Scripts" / "python.exe" if os.name == "nt" else venv / "bin" / "python"


def venv_script(venv: Path, name: str) -> Path:
    """A console script the venv installs (``qwenkit``)."""
    return venv / "Scripts" / f"{name}.exe" if os.name == "nt" else venv / "bin" / name


def requirements_file() -> Path:
    return resource_dir("payload") / "requirements.txt"


def requirement_names(text: str) -> tuple[str, ...]:
    """Distribution names of a requirements file (comments, options and blank lines skipped)."""
    names = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        m = _REQ_NAME.match(line) if line and not line.startswith("-") else None
        if m:
            names.append(m.group(1))
    return tuple(names)


# ---- finding an interpreter ------------------------------------------------------------------------------------


def _version_key(info_: PythonInfo) -> tuple[int, int, int]:
    return parse_version(info_.version) or (0, 0, 0)


def _is_own_frozen_executable(path: str) -> bool:
    """The frozen setup is not a Python that can make venvs, whatever it is named."""
    if not getattr(sys, "frozen", False):
        return False
    try:
        return Path(path).resolve() == Path(sys.executable).resolve()
    except OSError:
        return True


def _can_make_venv(path: str) -> bool:
    """Debian/Ubuntu ship Python without ``ensurepip`` unless python3-venv is installed: such a Python cannot."""
    return run_command([path, "-I", "-c", "import venv, ensurepip"], timeout=15).returncode == 0


def find_python(candidates: Sequence[PythonInfo] | None = None) -> PythonInfo | None:
    """The newest Python 3.10–3.13 that can create a venv; ``None`` when there is none.

    ``candidates`` defaults to what the detect probe finds (PATH, ``py -0p``, common install folders).
    """
    if candidates is None:
        candidates = probe_pythons(read_pythons(platform.system(), os.environ))
    usable = [c for c in candidates
              if (v := parse_version(c.version)) and v[:2] in SUPPORTED and not _is_own_frozen_executable(c.path)]
    for candidate in sorted(usable, key=_version_key, reverse=True):
        if _can_make_venv(candidate.path):
            return candidate
    return None


def venv_python_for(pythons: Sequence[PythonInfo], versions: Sequence[str] = ()) -> PythonInfo | None:
    """The Python the runtime venv is made with, among the machine's ``pythons`` (``versions``: only these
    ``major.minor``, the ones an offline bundle has wheels for); ``None``: no venv is made. The install's
    confirmation screen and its place stage both ask this, so the screen says what the install then does."""
    return find_python([p for p in pythons if not versions or p.version.rpartition(".")[0] in versions])


def no_python_reason(system: str | None = None) -> str:
    """One line: what the venv would add, how to get a Python, and that the server works without it."""
    system = system or platform.system()
    how = {"Windows": "pyenv.how_windows", "Darwin": "pyenv.how_macos"}.get(system, "pyenv.how_linux")
    return t("pyenv.no_python", how=t(how))


# ---- the kit ---------------------------------------------------------------------------------------------------


def _kit_wheel_in(folder: Path | None) -> Path | None:
    """This version's kit wheel in ``folder`` (or one level down), else the newest kit wheel there."""
    if folder is None or not folder.is_dir():
        return None
    wheels = sorted([*folder.glob(f"{KIT_DIST}-*.whl"), *folder.glob(f"*/{KIT_DIST}-*.whl")])
    exact = [w for w in wheels if w.name.startswith(f"{KIT_DIST}-{__version__}-")]
    return (exact or wheels)[-1] if (exact or wheels) else None


def default_kit_source(find_links: Path | None = None) -> Path | None:
    """The kit to install: its wheel among the offline wheels, or shipped in ``payload/wheels`` (bundles, frozen
    setup), else this source checkout (online only: building it needs hatchling from the index)."""
    try:
        wheels_dir = resource_dir("payload") / "wheels"
    except QwenKitError:
        wheels_dir = None
    wheel = _kit_wheel_in(find_links) or _kit_wheel_in(wheels_dir)
    if wheel is not None:
        return wheel
    root = Path(__file__).resolve().parents[2]  # the checkout: bootstrap/place/runtime_venv.py → repo root
    if (root / "pyproject.toml").is_file() and (root / "bootstrap" / "__init__.py").is_file():
        return root
    return None


def kit_version(source: Path) -> str:
    """Version of a kit wheel (from its file name, PEP 427) or source checkout (``bootstrap/__init__.py``)."""
    if source.suffix == ".whl":
        parts = source.name.split("-")
        return parts[1] if len(parts) >= 5 else source.name
    try:
        m = _KIT_VERSION.search((source / "bootstrap" / "__init__.py").read_text(encoding="utf-8"))
    except OSError:
        m = None
    return m.group(1) if m else __version__


# ---- the stamp ---------------------------------------------------------------------------------------------------


def _wanted_stamp(python: PythonInfo, requirements: bytes, kit: str | None) -> dict[str, object]:
    return {"schema": STAMP_SCHEMA, "python": python.version,
            "requirements_sha256": hashlib.sha256(requirements).hexdigest(), "kit": kit}


def venv_current(venv: Path) -> bool:
    """Whether the venv in place was completed for today's pinned requirements (a rerun downloads nothing for it;
    a new kit version or Python only reinstalls what changed)."""
    stamp = read_stamp(venv)
    wanted = hashlib.sha256(requirements_file().read_bytes()).hexdigest()
    return stamp is not None and stamp.get("requirements_sha256") == wanted and venv_python(venv).is_file()


def wheels_bytes(folder: Path) -> int:
    """The wheels an offline venv installs from (``QWENKIT_WHEELS``, a bundle's ``wheels/<platform>``): their
    total size, an upper bound of what is copied."""
    return sum(p.stat().st_size for p in folder.rglob("*.whl") if p.is_file())


def read_stamp(venv: Path) -> dict[str, object] | None:
    """The completion stamp, or ``None`` when missing or unreadable (both mean: not complete)."""
    doc = read_record(venv / STAMP_NAME)
    return doc if isinstance(doc, dict) else None


def _matches(stamp: dict[str, object] | None, wanted: dict[str, object]) -> bool:
    return stamp is not None and all(stamp.get(k) == v for k, v in wanted.items())


# ---- child processes ---------------------------------------------------------------------------------------------


def child_env(base: Mapping[str, str], *, isolate_config: bool, frozen: bool = False) -> dict[str, str]:
    """The environment for ``venv``/``pip``: ``base`` without variables that would redirect the install.

    A PyInstaller setup points ``LD_LIBRARY_PATH`` at its own bundled libraries and keeps the user's value in
    ``LD_LIBRARY_PATH_ORIG`` (PyInstaller manual, "Runtime information"); a child Python must get the original.
    """
    env = {k: v for k, v in base.items()
           if k not in _DROP_VARS and not (k.startswith("PIP_") and k not in _PIP_KEEP)}
    if frozen:
        original = env.pop("LD_LIBRARY_PATH_ORIG", None)
        env.pop("LD_LIBRARY_PATH", None)
        if original:
            env["LD_LIBRARY_PATH"] = original
    if isolate_config:
        env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _log(home: Home, line: str) -> None:
    """A line in the venv's log; every pip run starts with one, which rolls the log once it is large (the kit's
    own logs stay bounded as the server's do: ``core/log_files``)."""
    home.logs_dir.mkdir(parents=True, exist_ok=True)
    roll_if_large(home.logs_dir / LOG_NAME)
    with open(home.logs_dir / LOG_NAME, "a", encoding="utf-8") as fh:
        fh.write(line.rstrip("\n") + "\n")


def _stamp_line(argv: Sequence[str]) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    shown = [masked_url(a) for a in argv]  # a mirror URL may carry a token
    return f"# {now} run: {shlex.join(shown)}"


def _create_venv(home: Home, python: PythonInfo, env: dict[str, str]) -> None:
    make_venv(python.path, home.venv_dir, env, log=lambda text: _log(home, text))


def make_venv(python: str, venv: Path, env: dict[str, str], *, log: Callable[[str], None] | None = None) -> None:
    """``python -I -m venv VENV`` (pip included, from ensurepip); ``UnsupportedMachine`` (exit 3) saying why not.

    Also the throwaway venv whose pip a frozen setup uses to fetch a bundle's wheels (``bundle.wheels``).
    """
    argv = [python, "-I", "-m", "venv", str(venv)]
    if log is not None:
        log(_stamp_line(argv))
    try:
        proc = run_captured(argv, timeout=600, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = (str(exc) or type(exc).__name__).splitlines()[0]
        raise UnsupportedMachine(t("pyenv.venv_failed", python=python, detail=detail),
                                 t("pyenv.venv_failed_hint")) from exc
    if log is not None:
        log(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not venv_python(venv).is_file():
        detail = last_error((proc.stdout + proc.stderr).splitlines()) or f"exit {proc.returncode}"
        raise UnsupportedMachine(t("pyenv.venv_failed", python=python, detail=detail),
                                 t("pyenv.venv_failed_hint"))


def last_error(lines: Sequence[str]) -> str | None:
    """pip's own summary: its last ``ERROR:`` line, else the last non-empty line."""
    errors = [ln.strip() for ln in lines if ln.strip().startswith("ERROR:")]
    if errors:
        return errors[-1].removeprefix("ERROR:").strip()
    rest = [ln.strip() for ln in lines if ln.strip()]
    return rest[-1] if rest else None


# pip lines worth showing with --verbose: one per package fetched, the final summary, and problems. The rest
# ("Processing <wheel>", "Requirement already satisfied", "Looking in links") goes to the log only (~40 lines for
# openai + kit). Without --verbose one line says what pip is at (rewritten in place on a terminal): a failure names
# pip's own error, and the log keeps every line.
_SHOWN_PIP_LINES = ("Collecting ", "Downloading ", "Successfully installed", "ERROR", "WARNING", "error:")


def _shown(line: str) -> bool:
    return line.strip().startswith(_SHOWN_PIP_LINES)


def _run_pip(home: Home, argv: list[str], env: dict[str, str], *, quiet: bool) -> tuple[int, list[str]]:
    """Run pip and log every line; the lines that matter are shown with ``--verbose``, else one line says what pip
    is at (none when quiet). The exit status and the last lines."""
    _log(home, _stamp_line(argv))
    tail: deque[str] = deque(maxlen=_PIP_TAIL)
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          env=env, text=True, encoding="utf-8", errors="replace", bufsize=1) as proc:
        ticker = Ticker() if not quiet and not console.verbose() else None
        collected = 0
        try:
            assert proc.stdout is not None
            with open(home.logs_dir / LOG_NAME, "a", encoding="utf-8") as log:
                for line in proc.stdout:
                    line = line.rstrip("\r\n")
                    log.write(line + "\n")
                    tail.append(line)
                    if quiet or not _shown(line):
                        continue
                    if ticker is not None:
                        if line.strip().startswith("Collecting "):
                            collected += 1
                            name = line.split()[1]
                            ticker.tick(lambda name=name, n=collected: t("pyenv.pip_at", name=name, count=n))
                    else:
                        console.detail(f"  {line.strip()}")
            proc.wait()
        except BaseException:
            proc.kill()
            raise
        finally:
            if ticker is not None:
                ticker.close(clear=True)  # "Python environment ready" follows
    return proc.returncode, list(tail)


@dataclass(frozen=True)
class _PipSource:
    """Where pip takes packages from, and how to name it in messages."""

    args: tuple[str, ...]
    isolate_config: bool  # an explicit source is used alone (pip's config files off)
    label: str
    offline_dir: Path | None


def _pip_source(index_url: str | None, find_links: Path | None) -> _PipSource:
    if find_links is not None:
        return _PipSource(("--no-index", "--find-links", str(find_links)), True, str(find_links), find_links)
    index = index_url or settings.pip_index_url()
    if index:
        return _PipSource(("--index-url", index), True, masked_url(index), None)  # no token in messages
    return _PipSource((), False, t("pyenv.source_default"), None)


def network_cause(lines: Sequence[str]) -> str | None:
    """The connection error behind pip's retries (``Connection refused``, a TLS failure…), if that was the cause.

    pip reports an unreachable index only as ``WARNING: Retrying (…) after connection broken by '…'`` lines and
    then a misleading "No matching distribution found"; the cause sits inside the last such warning.
    """
    for line in reversed(lines):
        if "Retrying" not in line and "Could not fetch URL" not in line:
            continue
        m = _SSL_CAUSE.search(line) or _ERRNO_CAUSE.search(line) or _NAMED_CAUSE.search(line)
        return m.group(1).strip() if m else line.strip().removeprefix("WARNING:").strip()
    return None


def _read_tail(path: Path, limit: int = 1 << 20) -> list[str]:
    """The last ``limit`` bytes of a log as lines (a debug log can be long; only its end matters)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - limit))
            return fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def _install(home: Home, python: PythonInfo, requirements: Path, kit: Path | None, source: _PipSource,
             env: dict[str, str], names: tuple[str, ...], *, quiet: bool) -> None:
    vpy = venv_python(home.venv_dir)
    # pip's own debug log: the only place a connection error shows when pip does not retry (PIP_RETRIES=0).
    debug_log = home.logs_dir / PIP_DEBUG_LOG
    debug_log.unlink(missing_ok=True)
    # --no-compile: byte-compiling every module of every package is most of the install time (measured here:
    # 38 s with it, 15 s without, same wheels); Python compiles lazily on first import only what is used.
    argv = [str(vpy), "-I", "-X", "utf8", "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
            "--progress-bar", "off", "--no-compile", "--log", str(debug_log), *source.args, "-r", str(requirements)]
    if kit is not None:
        argv.append(str(kit))
    info(t("pyenv.installing", names=join_names(names), source=source.label))
    try:
        code, tail = _run_pip(home, argv, env, quiet=quiet)
    except OSError as exc:
        code, tail = -1, [str(exc)]
    if code == 0:
        return
    if source.offline_dir is not None:
        raise SourceError(t("pyenv.pip_failed", detail=last_error(tail) or f"pip exit {code}"),
                          t("pyenv.pip_failed_hint_offline", path=source.offline_dir, version=python.version))
    cause = network_cause(tail) or network_cause(_read_tail(debug_log))
    message = (t("pyenv.index_unreachable", index=source.label, cause=cause) if cause
               else t("pyenv.pip_failed", detail=last_error(tail) or f"pip exit {code}"))
    raise SourceError(message, t("pyenv.pip_failed_hint_index", index=source.label))


def _remove_venv(venv: Path) -> None:
    """Remove an incomplete venv (never following a link out of the home)."""
    if venv.is_symlink() or venv.is_file():
        venv.unlink()
    elif venv.exists():
        shutil.rmtree(venv)


def _outside(python: PythonInfo, venv: Path) -> PythonInfo:
    """The base interpreter when ``python`` lives in the venv about to be removed (``qwenkit`` run from it).

    ``pyvenv.cfg`` names the base (``executable =``, written by Python 3.11+; ``home =`` is its folder).
    """
    try:
        Path(python.path).absolute().relative_to(venv.absolute())
    except ValueError:
        return python
    base: str | None = None
    try:
        cfg = dict(line.split("=", 1) for line in (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
                   if "=" in line)
        cfg = {k.strip(): v.strip() for k, v in cfg.items()}
        base = cfg.get("executable")
        if not base and "home" in cfg and (Path(cfg["home"]) / Path(python.path).name).is_file():
            base = str(Path(cfg["home"]) / Path(python.path).name)
    except OSError:
        pass
    return PythonInfo(path=base or os.path.realpath(python.path), version=python.version)


DEFAULT_EMBED_MODEL = "qwen3-embedding-0.6b"  # what rag.py suggests installing while the home has none


def render_examples(home: Home, *, endpoint: str, api_key_file: Path, model: str,
                    embed_model: str | None = None) -> Path:
    """``venv/examples/``: agent.py (tools, streaming), rag.py (embeddings and chat, two models behind the one
    endpoint: ``embed_model``, the home's embedding model, else the catalog's suggestion) and roles.py (thinking on
    or off per request), from the same values; each rewritten only when its text changes (endpoint, models, key
    path). Returns agent.py, the one the report names."""
    for template in (EXAMPLE_TEMPLATE, "rag.py.j2", "roles.py.j2"):
        path = home.examples_dir / template.removesuffix(".j2")
        text = render_template(template, endpoint=endpoint, api_key_file=str(api_key_file), model=model,
                               embed_model=embed_model or DEFAULT_EMBED_MODEL, embed_installed=embed_model is not None)
        try:
            if path.read_text(encoding="utf-8") == text:
                continue
        except OSError:
            pass
        write_rendered(path, text, mode=0o644)
    return home.examples_dir / EXAMPLE_TEMPLATE.removesuffix(".j2")


# ---- the step ----------------------------------------------------------------------------------------------------


def ensure_venv(home: Home, *, python: PythonInfo | None, endpoint: str, api_key_file: Path, model: str,
                index_url: str | None = None, find_links: Path | None = None, kit_source: Path | None = None,
                quiet: bool = False, embed_model: str | None = None) -> VenvResult:
    """Create (or reuse) ``<home>/venv``: the pinned requirements, the kit, ``examples/agent.py``.

    ``python`` comes from ``find_python()``; with ``None`` nothing is created and ``skipped_reason`` says why and
    how to fix it (the server does not need the venv). ``endpoint`` is the OpenAI ``base_url`` (``…/v1``).
    Raises ``SourceError`` (exit 4) when pip fails, ``UnsupportedMachine`` (exit 3) when ``venv`` itself fails.
    """
    if python is None:
        return VenvResult(python=None, created=False, reused=False, installed=(), example=None,
                          skipped_reason=no_python_reason())
    kit = kit_source if kit_source is not None else default_kit_source(find_links)
    if kit is None:
        warn(t("pyenv.kit_missing"))
    requirements = requirements_file()
    req_bytes = requirements.read_bytes()
    names = requirement_names(req_bytes.decode("utf-8")) + ((KIT_DIST,) if kit is not None else ())
    wanted = _wanted_stamp(python, req_bytes, kit_version(kit) if kit is not None else None)
    venv = home.venv_dir
    vpy = venv_python(venv)

    if _matches(read_stamp(venv), wanted) and vpy.is_file():
        example = render_examples(home, endpoint=endpoint, api_key_file=api_key_file, model=model,
                                  embed_model=embed_model)
        info(t("pyenv.reused", path=venv))
        return VenvResult(python=vpy, created=False, reused=True, installed=names, example=example,
                          skipped_reason=None)

    if os.path.lexists(venv):
        info(t("pyenv.stale"))
        python = _outside(python, venv)  # read before the venv (and its pyvenv.cfg) goes
        try:
            _remove_venv(venv)
        except OSError as exc:  # Windows: a program still runs from it
            raise UnsupportedMachine(t("pyenv.remove_failed", path=venv, detail=os_reason(exc)),
                                     t("pyenv.remove_failed_hint")) from exc
    source = _pip_source(index_url, find_links)
    env = child_env(os.environ, isolate_config=source.isolate_config, frozen=bool(getattr(sys, "frozen", False)))
    info(t("pyenv.creating", version=python.version, path=venv))
    home.root.mkdir(parents=True, exist_ok=True)
    _create_venv(home, python, env)
    checkpoint("venv-created")
    _install(home, python, requirements, kit, source, env, names, quiet=quiet)
    example = render_examples(home, endpoint=endpoint, api_key_file=api_key_file, model=model,
                              embed_model=embed_model)
    # Last: the stamp is what makes this venv count as complete.
    write_atomic(venv / STAMP_NAME, (json.dumps(wanted, indent=2) + "\n").encode("utf-8"), mode=0o644)
    checkpoint("venv-ready")
    info(t("pyenv.ready", path=venv))
    return VenvResult(python=vpy, created=True, reused=False, installed=names, example=example,
                      skipped_reason=None)
