#!/usr/bin/env bash
# loadgen_peers_targeted: the targeted scenario against the peers bench/compare measures, so a
# change to mcpfan-load cannot silently break them:
#   - nginx+nchan (bench/compare/nchan): one channel per stream, a multiplexed subscriber with
#     2 extra channels, publishes to /pub/s/<channel>;
#   - the SDK v2 hub (bench/compare/sdkhub/hub.mjs): one listen per stream with 3 URIs.
# Each: 200 streams, 500 publishes/s for 1 s, then the maximum rate for 1 s, over 2 publisher
# connections; exit 0 and nothing lost, duplicated or misdelivered.
#
# A peer that is not installed is skipped (nchan: Debian's libnginx-mod-nchan, which
# tools/setup.sh installs, so CI runs it; the hub: `npm ci` in bench/compare/sdkhub, which
# bench/compare/run.sh does). Exit 77 (ctest SKIP_RETURN_CODE) when neither is there.
#
#   peers_targeted.sh PATH/TO/mcpfan-load REPO_ROOT
set -uo pipefail

load_bin="$1"
root="$2"
tmp="$(mktemp -d)"
server_pid=""
ran=()

stop_server() {  # TERM, up to 3 s, then KILL (nginx's master stops its workers)
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  server_pid=""
}
cleanup() { stop_server; rm -rf "$tmp"; }
trap cleanup EXIT

fail() {
  echo "loadgen_peers_targeted: FAIL: $*" >&2
  for f in "$tmp"/*.out "$tmp"/*.err; do [[ -f "$f" ]] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}

# check NAME: the run's last line is a JSON object with ok and nothing astray
check() {
  python3 - "$tmp/$1.out" "$1" <<'PY' || fail "$1: see above"
import json, sys
line = open(sys.argv[1]).read().strip().splitlines()[-1]
j = json.loads(line)
t = j.get("targeted") or {}
bad = [k for k in ("lost", "duplicates", "misdelivered", "publish_errors") if t.get(k) != 0]
if not j.get("ok") or bad or not t.get("published") or t.get("acked") != t.get("published"):
    sys.exit(f"{sys.argv[2]}: ok={j.get('ok')} not zero: {bad} published={t.get('published')} acked={t.get('acked')}")
print(f"{sys.argv[2]}: {t['published']} publishes, {t['publishes_per_s']:.0f}/s, p99 {t['latency_ms']['p99']} ms, "
      f"{t['subscriptions']} subscriptions")
PY
}

# run_peer NAME KIND TARGET PUBLISH_URL [extra load generator args]: a fixed rate, then max
run_peer() {
  local name="$1" kind="$2" target="$3" pub="$4"; shift 4
  local rate
  for rate in 500 max; do
    timeout 60 "$load_bin" --kind "$kind" --target "$target" --streams 200 --stream-uris own --extra-uris 2 \
      --scenario targeted --rate "$rate" --duration 1 --publish-url "$pub,$pub" --server-pid "$server_pid" \
      --timeout-s 45 "$@" >"$tmp/$name-$rate.out" 2>"$tmp/$name-$rate.err" \
      || fail "$name-$rate: mcpfan-load exited $?"
    check "$name-$rate"
  done
  ran+=("$name")
}

if [[ -x /usr/sbin/nginx && -f /usr/lib/nginx/modules/ngx_nchan_module.so ]]; then
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  bash "$root/bench/compare/nchan/run-nchan.sh" "$tmp/nginx" "$port" 2>"$tmp/nchan-server.err" &
  server_pid=$!
  up=0
  for _ in $(seq 100); do  # up to 10 s
    curl -fsS -m 1 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && { up=1; break; }
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ $up -eq 1 ]] || fail "nginx+nchan did not answer /healthz within 10 s"
  run_peer nchan nchan "http://127.0.0.1:$port" "http://127.0.0.1:$port/pub/s/"
  stop_server
else
  echo "loadgen_peers_targeted: nginx+nchan not installed (libnginx-mod-nchan): skipped" >&2
fi

hub="$root/bench/compare/sdkhub"
if command -v node >/dev/null && [[ -d "$hub/node_modules/@modelcontextprotocol/server" ]] &&
   node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  node "$hub/hub.mjs" --max-subscriptions 1000 2>"$tmp/sdkhub-server.err" &
  server_pid=$!
  port=""
  for _ in $(seq 200); do  # up to 20 s
    port="$(sed -n -E 's/^sdkhub: listening on 127\.0\.0\.1:([0-9]+)$/\1/p' "$tmp/sdkhub-server.err" | head -1)"
    [[ -n "$port" ]] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n "$port" ]] || fail "the SDK hub did not print its port within 20 s"
  run_peer sdkhub sdkhub "http://127.0.0.1:$port" "http://127.0.0.1:$port/publish"
  stop_server
else
  echo "loadgen_peers_targeted: the SDK hub's packages are not installed (npm ci in bench/compare/sdkhub): skipped" >&2
fi

if [[ ${#ran[@]} -eq 0 ]]; then
  echo "loadgen_peers_targeted: SKIPPED (neither nchan nor the SDK hub is installed)"
  exit 77
fi
echo "loadgen_peers_targeted: OK (${ran[*]})"
