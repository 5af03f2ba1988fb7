"""``python -m bootstrap``: the same entry point as the ``qwenkit`` console script."""

import sys

from bootstrap.app.cli import main

if __name__ == "__main__":
    sys.exit(main())
