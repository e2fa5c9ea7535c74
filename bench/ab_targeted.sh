#!/usr/bin/env bash
# A/B of two mcpfan commands on targeted publishes (10,000 streams, each on its own URI and 10
# more, each publish reaching one stream): alternating runs of a fresh server each, at a fixed
# rate and at the maximum. Prints, per run, server CPU per publish, publishes/s and p99, and
# whether anything was lost, duplicated or misdelivered; then each side's medians and the ratios.
#   bash bench/ab_targeted.sh "OLD_MCPFAN [ARGS]" "NEW_MCPFAN [ARGS]" [RUNS_EACH=4] [RATE=8000]
# Env: LOADGEN (default build-compare/tools/mcpfan-load/mcpfan-load).
set -euo pipefail
old=$1 new=$2 runs=${3:-4} rate=${4:-8000}
load=${LOADGEN:-build-compare/tools/mcpfan-load/mcpfan-load}
ulimit -n 30000 2>/dev/null || true
. "$(dirname "$0")/mcpfan_server.sh"
results=$(mktemp)
trap 'stop_mcpfan; rm -f "$results"' EXIT
run() {  # "command args" label rate
  local cmd=($1)
  start_mcpfan "${cmd[@]}" --workers 2
  local u="http://127.0.0.1:$MCPFAN_PORT/v1/publish"
  "$load" --kind listen --target "http://127.0.0.1:$MCPFAN_PORT" --publish-url "$u,$u,$u,$u" --streams 10000 \
      --stream-uris own --extra-uris 10 --scenario targeted --rate "$3" --duration 10 --window 16 \
      --server-pid "$MCPFAN_PID" --no-metrics --timeout-s 120 2>/dev/null | tail -1 |
    python3 -c "import json,sys; t=json.loads(sys.stdin.read())['targeted']; print('$2', '$3', t['cpu_us_per_publish'], t['publishes_per_s'], t['latency_ms']['p99'], t['lost'] + t['duplicates'] + t['misdelivered'])" |
    tee -a "$results"
  stop_mcpfan
}
echo "label rate cpu_us_per_publish publishes_per_s p99_ms lost+dup+misdelivered"
for _ in $(seq "$runs"); do
  for r in "$rate" max; do
    run "$old" old "$r"
    run "$new" new "$r"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for rate in dict.fromkeys(x[1] for x in rows):
    med = {}
    for side in ("old", "new"):
        r = [x for x in rows if x[0] == side and x[1] == rate]
        med[side] = [statistics.median(float(x[i]) for x in r) for i in (2, 3, 4)]
        bad = sum(int(x[5]) for x in r)
        print(f"rate {rate} {side}: median of {len(r)}: {med[side][0]:.2f} us/publish, {med[side][1]:.0f} publishes/s, "
              f"p99 {med[side][2]:.2f} ms; lost+duplicated+misdelivered {bad}")
    print(f"rate {rate} new/old: cpu {med['new'][0] / med['old'][0]:.3f}, publishes/s {med['new'][1] / med['old'][1]:.3f}")
PY
