#!/usr/bin/env bash
# bench/ingest_batch.sh: publish ingestion with array bodies (docs/performance.md, "Publish ingestion"). For each
# (K notifications per POST, W POSTs in flight) starts a fresh `mcpfan --workers 2`, runs
# mcpfan-load's targeted scenario at the maximum rate over ONE keep-alive connection against
# 1,000 streams, and prints notifications/s answered, server CPU per notification, delivery
# p99 and lost/misdelivered/duplicate. Loopback only; the server is stopped by its PID.
#
#   bash bench/ingest_batch.sh BUILD_DIR [REPS] [BATCHES] [WINDOWS]     (defaults: 2 "1 16 256" "1 16")
set -euo pipefail
build="${1:?usage: ingest_batch.sh BUILD_DIR [REPS] [BATCHES] [WINDOWS]}"
reps="${2:-2}"; batches="${3:-1 16 256}"; windows="${4:-1 16}"
bin="$build/tools/mcpfan/mcpfan"; lg="$build/tools/mcpfan-load/mcpfan-load"
[[ -x "$bin" && -x "$lg" ]] || { echo "no mcpfan or mcpfan-load in $build" >&2; exit 2; }
. "$(dirname "$0")/mcpfan_server.sh"
trap 'stop_mcpfan' EXIT
one() {  # one BATCH WINDOW
  local out u
  start_mcpfan "$bin" --workers 2
  u="http://127.0.0.1:$MCPFAN_PORT/v1/publish"
  out=$("$lg" --kind listen --target "http://127.0.0.1:$MCPFAN_PORT" --publish-url "$u" --streams 1000 --stream-uris own \
        --scenario targeted --rate max --batch "$1" --window "$2" --duration 8 --server-pid "$MCPFAN_PID" --timeout-s 120 2>/dev/null | tail -1)
  stop_mcpfan
  python3 -c '
import json, sys
t = json.loads(sys.argv[1])["targeted"]; y = t["tally"]
print("batch=%-4s window=%-3s notifications/s=%-10.0f cpu_us_per_notification=%-6.2f p99_ms=%-9.3f lost=%s misdelivered=%s duplicates=%s"
      % (sys.argv[2], sys.argv[3], t["publishes_per_s"], t["cpu_us_per_publish"], y["latency_ms"]["p99"], t["lost"], y["misdelivered"], y["duplicates"]))
' "$out" "$1" "$2"
}
for _ in $(seq "$reps"); do
  for b in $batches; do for w in $windows; do one "$b" "$w"; done; done
done
