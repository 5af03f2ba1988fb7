#!/usr/bin/env bash
# The main job on the built-in offline demo source (engine asset + Gemma 3 270M on a loopback hub).
set -euo pipefail
source "$(dirname "$0")/setup_env.sh"
exec .venv/bin/python scripts/demo.py "$@"
