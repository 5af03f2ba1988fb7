"""Where the tests' fixed files are, from any test folder: the repository root and ``tests/data``."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_DATA = REPO_ROOT / "tests" / "data"
