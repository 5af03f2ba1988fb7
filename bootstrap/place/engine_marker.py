"""The marker of an installed engine folder, and finding an engine already in place for the pins.

Kept apart from ``engine`` (download, extraction) so a rerun that only checks whether anything changed imports
none of the network code: this module reads one small JSON file per engine folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bootstrap.catalog.engine_pins import EngineAsset, EnginePins, assets_for, load_pins
from bootstrap.core.file_formats import read_record
from bootstrap.core.home import Home

MARKER = ".qwenkit-engine.json"
MARKER_SCHEMA = 1


@dataclass(frozen=True)
class InstalledEngine:
    """An engine in place: where its binaries are and which verified assets it came from."""

    build: int
    variant: str
    dir: Path
    server: Path
    fit_params: Path | None
    assets: tuple[tuple[str, str, int], ...]  # (name, sha256, size), main archive first
    reused: bool


def server_name(variant: str) -> str:
    return "llama-server.exe" if variant.startswith("win-") else "llama-server"


def fit_name(variant: str) -> str:
    return "llama-fit-params.exe" if variant.startswith("win-") else "llama-fit-params"


def read_marker(folder: Path) -> dict[str, Any] | None:
    data = read_record(folder / MARKER)
    return data if isinstance(data, dict) else None


def marker_matches(marker: dict[str, Any] | None, pins: EnginePins, variant: str,
                    assets: tuple[EngineAsset, ...]) -> bool:
    """The folder holds exactly what the pins ask for: same build, variant, asset names, pinned hashes."""
    if not marker or marker.get("schema") != MARKER_SCHEMA:
        return False
    if marker.get("build") != pins.build or marker.get("variant") != variant:
        return False
    recorded = marker.get("assets")
    if not isinstance(recorded, list) or len(recorded) != len(assets):
        return False
    for asset, rec in zip(assets, recorded, strict=True):
        if not isinstance(rec, dict) or rec.get("name") != asset.name:
            return False
        if asset.sha256 is not None and rec.get("sha256") != asset.sha256:
            return False
    return True


def installed_from(folder: Path, pins: EnginePins, variant: str, marker: dict[str, Any], *,
               reused: bool) -> InstalledEngine:
    fit = folder / fit_name(variant)
    assets = tuple((str(a["name"]), str(a["sha256"]), int(a["size"])) for a in marker["assets"])
    return InstalledEngine(pins.build, variant, folder, folder / server_name(variant), fit if fit.is_file() else None,
                           assets, reused)


def find_installed(home: Home, variant: str, pins: EnginePins | None = None) -> InstalledEngine | None:
    """The engine already in place for these pins, or None (no network, no process started)."""
    pins = pins or load_pins()
    assets = assets_for(pins, variant)
    folder = home.engine_dir(f"b{pins.build}", variant)
    marker = read_marker(folder)
    if marker_matches(marker, pins, variant, assets) and (folder / server_name(variant)).is_file():
        assert marker is not None
        return installed_from(folder, pins, variant, marker, reused=True)
    return None
