#!/usr/bin/env bash
# A/B of two mcpfan binaries on the 10,000-stream burst: alternating runs of a fresh server
# each, printing server CPU per delivery (µs) and publish -> last delivery median (ms).
#   bash bench/ab_burst.sh OLD_MCPFAN NEW_MCPFAN [RUNS_EACH=4] [LOADGEN=build-release/tools/mcpfan-load/mcpfan-load]
set -euo pipefail
old=$1 new=$2 runs=${3:-4}
load=${4:-build-release/tools/mcpfan-load/mcpfan-load}
ulimit -n 20000
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() {  # binary label
  "$1" --listen 127.0.0.1:0 --workers 2 2>"$log" &
  local pid=$! port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  "$load" --kind listen --target "http://127.0.0.1:$port" --streams 10000 --scenario burst --rounds 30 \
      --server-pid "$pid" --no-metrics --timeout-s 120 2>/dev/null | tail -1 |
    python3 -c "import json,sys; j=json.loads(sys.stdin.read()); print('$2', j['server']['cpu_us_per_delivery'], j['burst']['last_delivery_ms']['median'])"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  sleep 1
}
for _ in $(seq "$runs"); do
  run "$old" old
  run "$new" new
done
