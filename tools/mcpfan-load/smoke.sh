#!/usr/bin/env bash
# loadgen_smoke: starts mcpfan on an ephemeral loopback port, runs mcpfan-load
#   1. burst: 200 listen streams, 3 rounds
#   2. sustained: 200 listen streams, 50 publishes/s for 2 s
#   3. the same with 10 % slow readers (fast/slow split, mcpfan's /metrics read)
# and checks each exits 0 with a last-line JSON object showing every delivery received.
# The server is stopped by its PID (TERM, then KILL after 3 s), also on failure.
#
#   smoke.sh PATH/TO/mcpfan PATH/TO/mcpfan-load
set -uo pipefail

server_bin="$1"
load_bin="$2"
tmp="$(mktemp -d)"
server_pid=""

cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "loadgen_smoke: FAIL: $*" >&2
  for f in "$tmp"/*.out; do [[ -f "$f" ]] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  [[ -f "$tmp/server.err" ]] && { echo "--- server stderr" >&2; tail -20 "$tmp/server.err" >&2; }
  exit 1
}

# json_get FILE .a.b: prints the value ("null" when absent); fails when FILE is not JSON.
# jq when installed, else python3.
json_get() {
  if command -v jq >/dev/null 2>&1; then
    jq -r "$2" "$1"
  else
    python3 - "$1" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].strip('.').split('.'):
    v = v.get(k) if isinstance(v, dict) else None
print(json.dumps(v) if isinstance(v, (bool, dict, list)) or v is None else v)
PY
  fi
}
has() { local v; v="$(json_get "$1" "$2")" && [[ "$v" != "null" ]]; }

"$server_bin" --listen 127.0.0.1:0 --workers 2 2>"$tmp/server.err" &
server_pid=$!
port=""
for _ in $(seq 100); do  # up to 10 s
  port="$(grep -m1 -oE 'listening on 127\.0\.0\.1:[0-9]+' "$tmp/server.err" 2>/dev/null | sed 's/.*://')"
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail "mcpfan exited before listening"
  sleep 0.1
done
[[ -n "$port" ]] || fail "mcpfan did not log 'listening on 127.0.0.1:PORT' within 10 s"

run() {  # run NAME ARGS...
  local name="$1"; shift
  timeout 60 "$load_bin" --kind listen --target "http://127.0.0.1:$port" --server-pid "$server_pid" --timeout-s 45 "$@" \
    >"$tmp/$name.out" 2>&1
  local rc=$?
  [[ $rc -eq 0 ]] || fail "$name: mcpfan-load exited $rc"
  tail -n 1 "$tmp/$name.out" >"$tmp/$name.json"
  json_get "$tmp/$name.json" '.kind' >/dev/null 2>&1 || fail "$name: the last line is not a JSON object"
  [[ "$(json_get "$tmp/$name.json" '.ok')" == "true" ]] || fail "$name: ok is not true"
}

run burst --streams 200 --scenario burst --rounds 3
[[ "$(json_get "$tmp/burst.json" '.burst.rounds')" == "3" ]] || fail "burst: want 3 rounds"
[[ "$(json_get "$tmp/burst.json" '.streams')" == "200" ]] || fail "burst: want 200 streams"
[[ "$(json_get "$tmp/burst.json" '.checks.violations')" == "0" ]] || fail "burst: violations"
has "$tmp/burst.json" '.burst.last_delivery_ms.median' || fail "burst: no median"
has "$tmp/burst.json" '.burst.deliveries_per_s' || fail "burst: no deliveries_per_s"
has "$tmp/burst.json" '.server.rss_kib_per_stream' || fail "burst: no server figures"

run sustained --streams 200 --scenario sustained --rate 50 --duration 2
expected="$(json_get "$tmp/sustained.json" '.sustained.expected')"
received="$(json_get "$tmp/sustained.json" '.sustained.received')"
coalesced="$(json_get "$tmp/sustained.json" '.sustained.coalesced')"
lost="$(json_get "$tmp/sustained.json" '.sustained.lost')"
[[ "$expected" == "20000" ]] || fail "sustained: want expected 20000 (200 streams x 100 publishes), got $expected"
[[ "$lost" == "0" ]] || fail "sustained: lost $lost"
# 50/s to 200 streams is far below what mcpfan writes: nothing should even be coalesced.
[[ "$received" == "$expected" && "$coalesced" == "0" ]] || fail "sustained: received $received, coalesced $coalesced of $expected"
has "$tmp/sustained.json" '.sustained.latency_ms.p99' || fail "sustained: no p99"

# Slow readers: 10 % of the streams read 2 KiB/s; the fast ones must still get everything, and
# mcpfan's /metrics counters must be reported.
run slow --streams 200 --scenario sustained --rate 50 --duration 2 --slow-readers 0.1 --slow-read-bytes-per-s 2048
[[ "$(json_get "$tmp/slow.json" '.sustained.fast.streams')" == "180" ]] || fail "slow: want 180 fast streams"
[[ "$(json_get "$tmp/slow.json" '.sustained.slow.streams')" == "20" ]] || fail "slow: want 20 slow streams"
[[ "$(json_get "$tmp/slow.json" '.sustained.fast.received')" == "$(json_get "$tmp/slow.json" '.sustained.fast.expected')" ]] \
  || fail "slow: the fast streams did not receive every update"
has "$tmp/slow.json" '.sustained.fast.latency_ms.p99' || fail "slow: no fast p99"
has "$tmp/slow.json" '.server_metrics.deliveries' || fail "slow: no server_metrics from /metrics"

echo "loadgen_smoke: OK (burst median $(json_get "$tmp/burst.json" '.burst.last_delivery_ms.median') ms;" \
     "sustained p99 $(json_get "$tmp/sustained.json" '.sustained.latency_ms.p99') ms)"
