#!/usr/bin/env bash
# Runs mcpfan in a network namespace of its own, listening on 192.0.2.1 (TEST-NET-1, added to
# that namespace's loopback device only), and sends it GETs from that address: mcpfan sees a
# peer that is not a loopback address. Nothing leaves the namespace.
#
#   non_loopback_peer.sh MCPFAN_BIN [MCPFAN_ARGS...] < requests
#
# Each line of stdin, "PATH [BEARER_TOKEN]", is one GET; one HTTP status is printed per line.
# Exits 77 when no network namespace can be made here (not root, or no unshare/ip).
set -euo pipefail
ADDR=192.0.2.1
if [ "${NLP_INSIDE:-}" != 1 ]; then
  command -v unshare >/dev/null && command -v ip >/dev/null || exit 77
  unshare --net true 2>/dev/null || exit 77
  NLP_INSIDE=1 exec unshare --net bash "$0" "$@"
fi
bin="$1"; shift
ip link set lo up
ip addr add "$ADDR/32" dev lo
log="$(mktemp)"
"$bin" --listen "$ADDR:0" "$@" </dev/null >/dev/null 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 200); do  # 10 s
  port="$(grep -m1 -oE "listening on $ADDR:[0-9]+" "$log" | sed 's/.*://' || true)"
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.05
done
[ -n "$port" ] || { echo "mcpfan did not log its port" >&2; cat "$log" >&2; exit 1; }
while read -r path token; do
  auth=()
  [ -n "${token:-}" ] && auth=(-H "Authorization: Bearer $token")
  curl -s -o /dev/null -w '%{http_code}\n' --max-time 5 "${auth[@]}" "http://$ADDR:$port$path"
done
