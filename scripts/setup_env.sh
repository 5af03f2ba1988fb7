# Sourced by scripts/test.sh and scripts/demo.sh: everything a fresh machine needs, installed idempotently.
# - system tools: cmake + g++ (fallback engine build), binutils (PyInstaller's objdump), systemd-analyze, curl (the
#   verify snippet test), Node.js 20.19+ with npm (the engine's web UI build, Vite 7), Debian's chromium (the
#   real-browser test, tests/e2e/test_browser.py; QWENKIT_TEST_NO_BROWSER=1 opts out of it), Wine and mingw-w64 (the
#   start script run by a real cmd.exe, tests/render/test_bat_under_wine.py; the Windows llama-server.exe cross-built
#   with mingw-w64's posix g++; the setup.exe built by a Windows CPython; QWENKIT_TEST_NO_WINE=1 opts out);
#   iproute2's ip (the LAN of network namespaces, tests/support/lan.py); nginx and its njs module (the team gateway,
#   which routes each request by its model with a script, docs/team-endpoint.md);
# - .venv with this kit and its test/build extras from the package index (Python playwright drives
#   /usr/bin/chromium; it never downloads a browser of its own).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

declare -A package_of=([cmake]="cmake" [g++]="g++ make" [objdump]="binutils" [systemd-analyze]="systemd"
                       [curl]="curl" [npm]="nodejs npm" [chromium]="chromium" [wine]="wine64 wine" [ip]="iproute2" [nginx]="nginx"
                       [x86_64-w64-mingw32-gcc]="gcc-mingw-w64-x86-64"
                       [x86_64-w64-mingw32-g++-posix]="g++-mingw-w64-x86-64-posix")
tools=(cmake g++ objdump systemd-analyze curl npm ip nginx)
[ "${QWENKIT_TEST_NO_BROWSER:-}" = 1 ] || tools+=(chromium)
[ "${QWENKIT_TEST_NO_WINE:-}" = 1 ] || tools+=(wine x86_64-w64-mingw32-gcc x86_64-w64-mingw32-g++-posix)
missing=()
packages=()
for tool in "${tools[@]}"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    missing+=("$tool")
    packages+=(${package_of[$tool]})
  fi
done
# nginx's njs module (Debian's libnginx-mod-http-js): the team gateway's routing by model.
if [ ! -f /usr/lib/nginx/modules/ngx_http_js_module.so ]; then
  missing+=("nginx's njs module")
  packages+=(libnginx-mod-http-js)
fi
# The zh_CN locale's source: tests/e2e/test_windows_setup.py compiles it (localedef) for a Chinese Windows under Wine.
if [ "${QWENKIT_TEST_NO_WINE:-}" != 1 ] && [ ! -f /usr/share/i18n/locales/zh_CN ]; then
  missing+=("zh_CN locale source")
  packages+=(locales)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing system packages for: ${missing[*]}" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
  else
    echo "setup: missing tools: ${missing[*]} (install the packages ${packages[*]}, then rerun)" >&2
    exit 3
  fi
fi
# Vite 7 (the web UI's build tool) needs Node.js 20.19+; Debian 12's own nodejs is 18.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
  echo "setup: Node.js $(node --version) is too old for the web UI build (Vite 7 needs 20.19+); install a newer one" >&2
  exit 3
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,build]'
