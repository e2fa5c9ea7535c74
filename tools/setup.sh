#!/usr/bin/env bash
# Installs what mcpfan needs to build and test, from Debian's packages, if anything is missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libuv1-dev libsimdjson-dev libconcurrentqueue-dev
      libhttp-parser-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev curl
      libjwt-dev libssl-dev openssl liburing-dev
      libnats-dev nats-server  # the optional NATS backplane, and the real server its tests start
      nginx                    # the gateway routing test (tools/gateway) runs Debian's nginx
      libnginx-mod-nchan       # loadgen_peers_targeted: mcpfan-load's targeted scenario against nginx+nchan
      chromium                 # the status page's browser test (tests/interop/status_page)
      clang libclang-rt-14-dev)  # clang + its runtime: the libFuzzer targets
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The interop tests need Node.js and npm; the machine image usually ships them.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
