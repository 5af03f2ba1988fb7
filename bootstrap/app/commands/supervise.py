"""``qwenkit supervise --home HOME SCRIPT`` (hidden): the start-script install's supervisor (``register/supervisor``).

Started by ``FallbackManager.start`` (``qwenkit service start``, an install without a service manager), detached,
with the start script it runs as its last argument; never meant to be typed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bootstrap.core.home import resolve_home
from bootstrap.core.log_files import max_bytes_from
from bootstrap.register.base import SERVER_LOG, safe_logs_dir
from bootstrap.register.fallback import script_argv
from bootstrap.register.supervisor import Supervisor, Watch


def run(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    log = home.logs_dir / SERVER_LOG
    safe_logs_dir(home, log)
    supervisor = Supervisor(script_argv(Path(args.script)), cwd=home.root, log=log,
                            watch=Watch.from_env(home.api_key_file), log_max_bytes=max_bytes_from(os.environ))
    return supervisor.run()
