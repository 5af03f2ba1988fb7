"""What the confirmation screen shows: the whole install in a few facts, worked out before any network access.

The plan is made from the catalog (or a local file's header) and this machine's profile; everything here comes from
the plan, the pins, the home and recorded sizes, so the screen can be printed — and a person can say no — before a
byte is asked of any source. The download is broken into its parts (model, vision projector, engine, runtime venv),
each either to download (with its size, or an estimate), already in the home (a rerun), or not part of this install.

- model / mmproj: the catalog's sizes; a file already in the home at its place with that size is "already here"
  (the fetch stage still checks it against the hub's sha256), bytes a partial download holds are not counted.
- engine: the pinned assets' sizes when ``engines.toml`` states them; upstream publishes none and the release API
  is the network, so otherwise the size is said to be unknown until the download (the total is then "at least").
- venv: the wheel folder's size when one is given (offline), else ``runtime_venv.RECORDED_WHEELS_BYTES``, a figure
  measured for the pinned requirements and marked as an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bootstrap.catalog.engine_pins import assets_for, load_pins
from bootstrap.catalog.model_ref import CatalogRef, HubFileRef, ModelRef
from bootstrap.catalog.models import ModelFile, load_catalog
from bootstrap.core.home import Home
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.fetch.partial import resumable_bytes
from bootstrap.place.engine_marker import find_installed
from bootstrap.place.runtime_venv import RECORDED_WHEELS_BYTES, venv_current, venv_python_for, wheels_bytes
from bootstrap.plan.launch_spec import ctx_of, thinking_of
from bootstrap.plan.planner import Plan
from bootstrap.record.state import InstallState


@dataclass(frozen=True)
class Part:
    """One part of the download."""

    name: str  # "model" | "mmproj" | "engine" | "venv"
    state: str  # "download" | "here" (already in the home) | "local" (the user's own file) | "skipped" (--no-venv)
    # | "no_wheels" (a bundle without wheels for this machine: no venv) | "no_python" (no Python to make it with)
    size: int | None  # bytes to download; None: not known before the download
    estimated: bool = False  # a recorded estimate, not the exact count


@dataclass(frozen=True)
class Proposal:
    """What the confirmation screen shows before anything is downloaded or changed."""

    hardware: HardwareProfile
    plan: Plan
    previous: InstallState | None
    parts: tuple[Part, ...]
    port: int
    port_asked: int  # the port asked for (or recorded, or the default): differs from ``port`` when it was taken
    manager: str  # the service manager's name ("systemd-user", "launchd"…), or "script": the start script only
    thinking: bool | None  # whether the server thinks by default; None: the engine has no such switch
    ctx: int  # the context the server runs with (the plan's, or the catalog entry's own server_args)
    reasons: tuple[str, ...] = ()  # why a rerun is not a no-op (empty on a first install)
    measures_speed: bool = False  # the install measures this machine's speed before the download (install/measure.py)
    keep_alive: int | None = None  # install --keep-alive in force (seconds, -1: never); None: the default

    @property
    def download_bytes(self) -> int:
        """Bytes known to be downloaded (the parts whose size is unknown are not counted)."""
        return sum(p.size or 0 for p in self.parts if p.state == "download")

    @property
    def size_unknown(self) -> bool:
        return any(p.state == "download" and p.size is None for p in self.parts)

    @property
    def estimated(self) -> bool:
        return any(p.state == "download" and p.estimated for p in self.parts)


def make_proposal(home: Home, plan: Plan, ref: ModelRef, hardware: HardwareProfile, previous: InstallState | None,
                  *, port: int, port_asked: int, manager: str, venv: bool, wheels_dir: Path | None,
                  bundle_wheels: int | None = None, reasons: tuple[str, ...] = (), ctx: int | None = None,
                  measures_speed: bool = False, python_versions: tuple[str, ...] = (),
                  keep_alive: int | None = None) -> Proposal:
    """``bundle_wheels``: from an offline bundle, the bytes of this machine's wheels in its manifest (0: it has
    none, so no venv is made), and ``python_versions`` the Pythons they are for. ``ctx``: the context the user asked
    for (``--ctx``), which wins over the catalog's."""
    parts = (*_model_parts(home, plan, ref), _engine_part(home, plan),
             _venv_part(home, venv, wheels_dir, bundle_wheels, hardware, python_versions))
    # What runs: the plan's flags, then the catalog entry's own server_args (installer._deploy_options adds them).
    args = (*plan.args, *(load_catalog().model(plan.model_id).server_args if isinstance(ref, CatalogRef) else ()))
    return Proposal(hardware, plan, previous, parts, port, port_asked, manager, thinking_of(args),
                    ctx or ctx_of(args) or plan.settings.ctx, reasons, measures_speed, keep_alive)


def _file_part(name: str, home: Home, final: Path, file: ModelFile | None, size: int) -> Part:
    """A model file: here when a file of its size is at its place, else what is left to download."""
    if final.is_file() and final.stat().st_size == size:
        return Part(name, "here", 0)
    sha = file.sha256 if file is not None else None
    held = resumable_bytes(home.partial_dir, sha, size) if sha else 0
    rounded = file is not None and file.size is not None and not file.size_exact  # else exact: a header read
    return Part(name, "download", size - held, estimated=rounded)


def _model_parts(home: Home, plan: Plan, ref: ModelRef) -> list[Part]:
    if isinstance(ref, CatalogRef):
        entry = load_catalog().model(plan.model_id)
        quant = entry.quant(plan.quant)
        base = home.models_dir / entry.repos[0].repo
        parts = [_file_part("model", home, base / quant.file.path, quant.file, plan.file_size)]
        if entry.mmproj is not None and entry.mmproj.size:
            parts.append(_file_part("mmproj", home, base / entry.mmproj.path, entry.mmproj, entry.mmproj.size))
        return parts
    if isinstance(ref, HubFileRef):
        return [_file_part("model", home, home.models_dir / ref.repo / ref.path, None, plan.file_size)]
    return [Part("model", "local", 0)]  # a .gguf on this machine: used where it is


def _engine_part(home: Home, plan: Plan) -> Part:
    pins = load_pins()
    if find_installed(home, plan.variant.name, pins) is not None:
        return Part("engine", "here", 0)
    sizes = [a.size for a in assets_for(pins, plan.variant.name)]
    return Part("engine", "download", None if None in sizes else sum(s or 0 for s in sizes))


def _venv_part(home: Home, venv: bool, wheels_dir: Path | None, bundle_wheels: int | None,
               hardware: HardwareProfile, python_versions: tuple[str, ...]) -> Part:
    if not venv:
        return Part("venv", "skipped", 0)
    if bundle_wheels == 0:
        return Part("venv", "no_wheels", 0)
    if venv_python_for(hardware.pythons, python_versions) is None:  # as the place stage asks it (deploy._venv)
        return Part("venv", "no_python", 0)
    if venv_current(home.venv_dir):
        return Part("venv", "here", 0)
    if bundle_wheels is not None:
        return Part("venv", "download", bundle_wheels)
    if wheels_dir is not None and wheels_dir.is_dir():
        return Part("venv", "download", wheels_bytes(wheels_dir))
    return Part("venv", "download", RECORDED_WHEELS_BYTES, estimated=True)
