"""A hand-built install home for tests of the install stage's bookkeeping (freshness, cleanup): real files on disk,
an engine folder with its marker, and the ``InstallState`` that records them with their stat identity.

Nothing here runs an engine or downloads: it is the state a verified install leaves, made in milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from bootstrap.catalog.engine_pins import assets_for, load_pins
from bootstrap.core.home import Home
from bootstrap.place.engine_marker import MARKER, MARKER_SCHEMA, server_name
from bootstrap.record.state import (
    EngineRecord,
    FileRecord,
    InstallState,
    RequestRecord,
    ServerRecord,
    relative_to_home,
)

VARIANT = "ubuntu-x64"


def place_engine(home: Home, *, variant: str = VARIANT, build: int | None = None) -> Path:
    """An engine folder for the pinned build (or ``build``) with a marker naming the pinned assets, and a stand-in
    ``llama-server`` file: what ``engine_marker.find_installed`` accepts."""
    pins = load_pins()
    number = pins.build if build is None else build
    folder = home.engine_dir(f"b{number}", variant)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / server_name(variant)).write_bytes(b"\x7fELF stand-in\n")
    marker = {"schema": MARKER_SCHEMA, "build": number, "tag": pins.tag, "repo": pins.repo, "variant": variant,
              "assets": [{"name": a.name, "sha256": a.sha256 or "0" * 64, "size": a.size or 1}
                         for a in assets_for(pins, variant)]}
    (folder / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    return folder


def file_record(home: Home, path: Path, sha256: str, *, role: str = "model", source: str = "hf",
                revision: str | None = None) -> FileRecord:
    """The record of a file as the deploy stage writes it: relative path, size, and its stat identity now."""
    st = path.stat()
    return FileRecord(role, relative_to_home(home, path), st.st_size, sha256, source, revision,
                      mtime_ns=st.st_mtime_ns, inode=st.st_ino)


def install_state(home: Home, engine: Path, files: Sequence[FileRecord], *, model: str, model_id: str,
                  quant: str, variant: str = VARIANT, build: int | None = None) -> InstallState:
    """A state record for ``files`` served by the engine folder ``engine``."""
    number = load_pins().build if build is None else build
    return InstallState(
        system="Linux", model_id=model_id, quant=quant,
        engine=EngineRecord(number, variant, relative_to_home(home, engine),
                            relative_to_home(home, engine / server_name(variant)), f"version: {number}"),
        files=tuple(files),
        server=ServerRecord("127.0.0.1", 8080, model_id, ("-c", "512"), ("-c", "512")),
        request=RequestRecord(model, "auto"),
    )


def write_scripts(home: Home) -> None:
    """The start script and the API key file, whose absence alone makes a rerun redo the install."""
    home.root.mkdir(parents=True, exist_ok=True)
    home.run_sh.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    home.secrets_dir.mkdir(parents=True, exist_ok=True)
    home.api_key_file.write_text("sk-local-test\n", encoding="utf-8")
