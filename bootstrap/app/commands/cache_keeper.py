"""``qwenkit cache-keeper --home HOME [--detach]`` (hidden): the prompt cache's restore and periodic save for a
one-model install run by systemd (``register/cache_keeper``).

Started by the unit's ``ExecStartPost=`` after each start of the server (``--detach``: it starts itself again in
its own session and returns 0 at once, so the start is not held up); never meant to be typed. A home whose server
keeps no prompt cache: nothing is done, nothing written, 0.
"""

from __future__ import annotations

import argparse
import os
import platform

from bootstrap.core.errors import QwenKitError
from bootstrap.core.home import resolve_home
from bootstrap.record.state import launch_spec, load_state
from bootstrap.register import periodic_save
from bootstrap.register.cache_keeper import ENV_GONE, GONE_S, Keeper, detach, keeps_cache
from bootstrap.register.shell_command import kit_command


def run(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    try:
        state = load_state(home)
        spec = None if state is None else launch_spec(state, home)
    except QwenKitError:  # a record that does not read: ``status`` says so; the keeper has nothing to keep
        return 0
    if spec is None or not keeps_cache(spec):
        return 0
    if args.detach:
        detach(home, kit_command(home, platform.system()))
        return 0
    return Keeper(spec, gone_s=periodic_save.seconds(os.environ, ENV_GONE, GONE_S)).run()
