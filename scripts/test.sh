#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up .venv, provision the test bed (cached), run pytest.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m slow` for the slow tests.
set -euo pipefail
source "$(dirname "$0")/setup_env.sh"
.venv/bin/python scripts/provision_testbed.py
exec .venv/bin/python -m pytest "$@"
