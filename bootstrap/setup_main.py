"""Entry point of the frozen ``QwenClientKit-Setup``: a double-click (no arguments) means ``install``."""

from __future__ import annotations

import sys

from bootstrap.cli import main


def setup_main() -> int:
    """Run the CLI, defaulting to ``install`` as DESIGN.md §2 says for the frozen setup."""
    return main(sys.argv[1:] or ["install"])


if __name__ == "__main__":
    sys.exit(setup_main())
