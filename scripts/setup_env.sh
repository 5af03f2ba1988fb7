# Sourced by scripts/test.sh and scripts/demo.sh: everything a fresh machine needs, installed idempotently.
# - system tools: cmake + g++ (fallback engine build), binutils (PyInstaller's objdump), systemd-analyze, curl (the verify snippet test);
# - .venv with this kit and its test/build extras from the package index.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

missing=()
for tool in cmake g++ objdump systemd-analyze curl; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing system packages for: ${missing[*]}" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ make binutils systemd curl >/dev/null
  else
    echo "setup: missing tools: ${missing[*]} (install cmake, g++, binutils, systemd and curl, then rerun)" >&2
    exit 3
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,build]'
