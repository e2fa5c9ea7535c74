#!/usr/bin/env bash
# Instructions per delivery of the in-process fan-out (one event to N in-memory streams),
# counted by callgrind: repeatable for the same binary and inputs, however busy the machine.
# Usage: bash bench/callgrind.sh [BUILD_DIR] [STREAMS] [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-release}"
streams="${2:-10000}"
rounds="${3:-20}"
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
if [ ! -x "$build/bench/mcpfan_fanout_cost" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMCPFAN_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target mcpfan_fanout_cost >/dev/null
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Two runs that differ only in the measured rounds: their difference is the cost of
# `rounds` fan-outs, with the warm-up and every fixed cost cancelled out.
count() {  # rounds -> instructions collected inside measured_fanout
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1" --toggle-collect='*measured_fanout*' \
    "$build/bench/mcpfan_fanout_cost" "$streams" "$1" >/dev/null 2>"$out/log.$1"
  callgrind_annotate "$out/cg.$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}'
}
base=$(count 0)
full=$(count "$rounds")
deliveries=$((streams * rounds))
echo "callgrind: $((full - base)) instructions for $rounds fan-outs to $streams streams"
awk -v i="$((full - base))" -v d="$deliveries" 'BEGIN { printf "callgrind: %.1f instructions per delivery\n", i / d }'
