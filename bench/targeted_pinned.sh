#!/usr/bin/env bash
# The targeted worker sweep with the placement fixed: every mcpfan worker thread on one CPU,
# the load generator on the other (taskset), so every publish crosses CPUs the same way
# whatever the worker count. Unpinned, on a 2-core machine shared with the load generator,
# how often the scheduler puts a worker beside the load generator (a cheap same-CPU wake-up)
# or not (a dearer cross-CPU one) changes with the worker count, and that, not the workers,
# is most of what the unpinned sweep shows. Prints per run: workers, server CPU per publish
# (µs), server context switches per publish, load generator CPU per delivery (µs), p99 (ms),
# publishes/s; then the medians and each ratio to the first worker count.
#   bash bench/targeted_pinned.sh [BUILD_DIR=build-compare] [REPS=3] [WORKERS="1 2 4 8"] [RATE=8000]
set -euo pipefail
build=${1:-build-compare} reps=${2:-3} workers=${3:-1 2 4 8} rate=${4:-8000}
server_cpu=${SERVER_CPU:-0} load_cpu=${LOADGEN_CPU:-1}
ulimit -n 30000 2>/dev/null || true
. "$(dirname "$0")/mcpfan_server.sh"
results=$(mktemp)
trap 'stop_mcpfan; rm -f "$results"' EXIT
run() {  # workers
  start_mcpfan taskset -c "$server_cpu" "$build/tools/mcpfan/mcpfan" --workers "$1"
  local u="http://127.0.0.1:$MCPFAN_PORT/v1/publish"
  taskset -c "$load_cpu" "$build/tools/mcpfan-load/mcpfan-load" --kind listen --target "http://127.0.0.1:$MCPFAN_PORT" \
      --publish-url "$u,$u,$u,$u" --streams 10000 --stream-uris own --extra-uris 10 --scenario targeted \
      --rate "$rate" --duration 10 --window 16 --server-pid "$MCPFAN_PID" --no-metrics --timeout-s 120 2>/dev/null | tail -1 |
    python3 -c "import json,sys; j=json.loads(sys.stdin.read()); t=j['targeted']; print($1, t['cpu_us_per_publish'], t['ctx_switches_per_publish'], j['loadgen']['cpu_us_per_delivery'], t['latency_ms']['p99'], t['publishes_per_s'])" |
    tee -a "$results"
  stop_mcpfan
}
echo "workers server_cpu_us_per_publish ctx_switches_per_publish loadgen_cpu_us p99_ms publishes_per_s"
for _ in $(seq "$reps"); do
  for w in $workers; do run "$w"; done
done
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ws = list(dict.fromkeys(r[0] for r in rows))
med = {w: [statistics.median(float(r[i]) for r in rows if r[0] == w) for i in (1, 2)] for w in ws}
for w in ws:
    cpu, ctx = med[w]
    print(f"--workers {w}: median {cpu:.2f} us/publish ({cpu / med[ws[0]][0]:.2f}x {ws[0]} worker), {ctx:.2f} context switches/publish")
EOF
