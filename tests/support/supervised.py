"""Run ``register.supervisor.Supervisor`` over any command, as ``qwenkit supervise`` runs it over the start script.

    python -m tests.support.supervised LOG KEY_FILE -- COMMAND...

The watch's intervals come from ``QWENKIT_PROBE_INTERVAL`` / ``QWENKIT_PROBE_DEADLINE`` as in the product.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bootstrap.core.log_files import max_bytes_from
from bootstrap.register.supervisor import Supervisor, Watch


def main() -> int:
    split = sys.argv.index("--")
    log, key = sys.argv[1:split]
    supervisor = Supervisor(sys.argv[split + 1:], cwd=Path.cwd(), log=Path(log), watch=Watch.from_env(Path(key)),
                            log_max_bytes=max_bytes_from(os.environ))
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
