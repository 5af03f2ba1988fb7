"""Parts of an install home that every user of the machine may change: what ``status`` and ``doctor`` warn about.

The server runs what the home holds — the start script, the engine binary beside its libraries, the service
definitions — as the home's owner. A home or start script that other users can write (POSIX ``o+w``) lets any of
them change what runs (or plant a link where the kit writes): a warning, not a refusal, since the owner may have
reasons and a shared machine's policy is theirs. Windows has no such mode bit (ACLs), so nothing is reported there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from bootstrap.core.home import Home


def guarded_paths(home: Home) -> list[Path]:
    """What the server runs or reads at start: the home, its start scripts, state and service folder, each engine
    folder and the servers in it."""
    paths = [home.root, home.run_sh, home.run_bat, home.state_file, home.services_dir, home.engines_dir]
    try:
        engines = sorted(p for p in home.engines_dir.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        engines = []
    for engine in engines:
        paths.append(engine)
        paths += sorted(engine.glob("llama-server*"))
    return paths


def world_writable(home: Home) -> list[Path]:
    """Those of ``guarded_paths`` that exist and that every user may write (``lstat``: a link's own mode is not
    its target's). Always empty on Windows."""
    if os.name == "nt":
        return []
    found = []
    for path in guarded_paths(home):
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue
        if not stat.S_ISLNK(mode) and mode & stat.S_IWOTH:
            found.append(path)
    return found
