#!/usr/bin/env bash
# Builds mcpfan (Release) and starts it in the foreground on 127.0.0.1:8080 with the
# in-memory engine; extra arguments go to mcpfan (e.g. --workers 4, --listen 127.0.0.1:9000).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/tools/setup.sh"
cmake -S "$root" -B "$root/build-release" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMCPFAN_BUILD_TESTS=OFF -DMCPFAN_BUILD_BENCH=OFF >/dev/null
cmake --build "$root/build-release" --target mcpfan
# The default address unless the caller names one (mcpfan accepts --listen once).
listen=(--listen 127.0.0.1:8080)
for a in "$@"; do
  case "$a" in --listen|--listen=*) listen=() ;; esac
done
exec "$root/build-release/tools/mcpfan/mcpfan" "${listen[@]}" "$@"
