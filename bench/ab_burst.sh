#!/usr/bin/env bash
# A/B of two mcpfan commands on the 10,000-stream burst: alternating runs of a fresh server
# each, then the raw-socket ceiling (bench/ceiling.cc, writev of a 250-byte frame to as many
# sockets) in the same session. Prints, per run, server CPU per delivery over all rounds and
# over rounds 2..K (warm connections, like the ceiling's per-burst median), and the median
# publish -> last delivery; then the medians and each side's warm figure over the ceiling's.
#   bash bench/ab_burst.sh "OLD_MCPFAN [ARGS]" "NEW_MCPFAN [ARGS]" [RUNS_EACH=4] [ROUNDS=30]
#   e.g. bash bench/ab_burst.sh "build-compare/tools/mcpfan/mcpfan --io-uring-entries 0" \
#          build-compare/tools/mcpfan/mcpfan 5
# Env: LOADGEN (default build-compare/tools/mcpfan-load/mcpfan-load), CEILING (default
# build-compare/bench/mcpfan_ceiling; empty: skipped), N (default 10000).
set -euo pipefail
old=$1 new=$2 runs=${3:-4} rounds=${4:-30}
load=${LOADGEN:-build-compare/tools/mcpfan-load/mcpfan-load}
ceiling=${CEILING-build-compare/bench/mcpfan_ceiling}
n=${N:-10000}
ulimit -n $((2 * n + 1000)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"
. "$(dirname "$0")/mcpfan_server.sh"
results=$(mktemp)
trap 'stop_mcpfan; rm -f "$results"' EXIT
run() {  # "command args" label
  local cmd=($1)
  start_mcpfan "${cmd[@]}" --workers 2
  "$load" --kind listen --target "http://127.0.0.1:$MCPFAN_PORT" --streams "$n" --scenario burst --rounds "$rounds" \
      --server-pid "$MCPFAN_PID" --no-metrics --timeout-s 120 2>/dev/null | tail -1 |
    python3 -c "import json,sys; j=json.loads(sys.stdin.read()); s=j['server']; print('$2', s['cpu_us_per_delivery'], s['cpu_us_per_delivery_warm'], j['burst']['last_delivery_ms']['median'])" |
    tee -a "$results"
  stop_mcpfan
}
echo "label cpu_us_all_rounds cpu_us_warm last_delivery_ms_median"
for _ in $(seq "$runs"); do
  run "$old" old
  run "$new" new
done
ceil=""
if [ -n "$ceiling" ]; then
  ceil=$("$ceiling" --n "$n" --rounds 20 2>/dev/null | sed -n 's/.*"cpu_us_per_write":{"median":\([0-9.]*\).*/\1/p')
  echo "ceiling (writev, $n sockets, median of 20 bursts): $ceil us/write"
fi
python3 - "$results" "$ceil" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ceil = float(sys.argv[2]) if sys.argv[2] else None
for side in ("old", "new"):
    r = [x for x in rows if x[0] == side]
    if not r:
        continue
    allr, warm, ms = (statistics.median(float(x[i]) for x in r) for i in (1, 2, 3))
    extra = f", warm / ceiling {warm / ceil:.3f}" if ceil else ""
    print(f"{side}: median of {len(r)}: {allr:.2f} us all rounds, {warm:.2f} us warm, {ms:.1f} ms to last delivery{extra}")
EOF
