#!/usr/bin/env bash
# Instructions per targeted publish of the whole server (HTTP parse, decode, hub, shard, the
# stream's write, the 202), counted by callgrind: repeatable for the same binary however busy
# the machine, where CPU-time A/Bs on a shared 2-core machine drift by ±5%. One worker, no
# io_uring (valgrind does not follow it), 200 streams each on its own URI and 2 more, 100
# publishes/s: two runs that differ only in their length, so that start-up and stop cancel out.
#   bash bench/callgrind_publish.sh MCPFAN MCPFAN_LOAD [SHORT_S=5] [LONG_S=25]
set -euo pipefail
bin=$1 load=$2 short=${3:-5} long=${4:-25}
command -v valgrind >/dev/null || { echo "callgrind_publish.sh: valgrind is not installed" >&2; exit 2; }
out=$(mktemp -d)
vpid=""
trap '[ -n "$vpid" ] && kill "$vpid" 2>/dev/null; rm -rf "$out"' EXIT
count() {  # seconds -> "published instructions"
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1" "$bin" --workers 1 --io-uring-entries 0 \
      --listen 127.0.0.1:0 2>"$out/log.$1" &
  vpid=$!
  local port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/^.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out/log.$1")
    [ -n "$port" ] && break
    sleep 0.2
  done
  [ -n "$port" ] || { echo "mcpfan did not start under valgrind: $(cat "$out/log.$1")" >&2; exit 1; }
  local u="http://127.0.0.1:$port/v1/publish" published
  published=$("$load" --kind listen --target "http://127.0.0.1:$port" --publish-url "$u" --streams 200 \
      --stream-uris own --extra-uris 2 --scenario targeted --rate 100 --duration "$1" --window 4 --no-metrics \
      --timeout-s 300 2>/dev/null | tail -1 |
    python3 -c "import json,sys; t=json.loads(sys.stdin.read())['targeted']; assert t['lost'] == 0; print(t['published'])")
  kill -TERM "$vpid"
  wait "$vpid" 2>/dev/null || true
  vpid=""
  echo "$published $(callgrind_annotate "$out/cg.$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')"
}
read -r p1 i1 < <(count "$short")
read -r p2 i2 < <(count "$long")
echo "callgrind: $((i2 - i1)) instructions for $((p2 - p1)) targeted publishes"
awk -v i="$((i2 - i1))" -v p="$((p2 - p1))" 'BEGIN { printf "callgrind: %.0f instructions per publish\n", i / p }'
