#!/usr/bin/env bash
# Builds mcpfan (Release) and starts it in the foreground on 127.0.0.1:8080 with the
# in-memory engine; extra arguments go to mcpfan (e.g. --workers 4, --listen 127.0.0.1:9000).
# Installs only what building and running the server needs (tools/setup.sh server, the list in
# tools/deps/server.txt) and configures without tests and benchmarks, which would need more
# (the test command, tools/run-tests.sh, installs those).
# MCPFAN_BUILD_DIR: where to build (default: build-release in the source tree).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MCPFAN_BUILD_DIR:-$root/build-release}"
bash "$root/tools/setup.sh" server
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMCPFAN_BUILD_TESTS=OFF -DMCPFAN_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target mcpfan
# The default address unless the caller names one (mcpfan accepts --listen once).
listen=(--listen 127.0.0.1:8080)
for a in "$@"; do
  case "$a" in --listen|--listen=*) listen=() ;; esac
done
exec "$build/tools/mcpfan/mcpfan" "${listen[@]}" "$@"
