#!/usr/bin/env bash
# Interop test: gateway routing by Mcp-Method through a real nginx (Debian's), no proxy in the
# request path. The official MCP TypeScript SDK v2 client, pointed at nginx, calls a tool on the
# application server and receives a publish from an mcpfan node.
#
#   bash run.sh /path/to/mcpfan
#
# 1. Checks for nginx (Debian's `nginx` package; tools/setup.sh installs it): missing is a FAIL.
# 2. Installs the pinned npm packages of this folder (the SDK v2 client) and of ../upstream_v2
#    (the SDK v2 server), each only when node_modules does not match its lock file.
# 3. Starts the application server (../upstream_v2/server.mjs) and two mcpfan nodes
#    (--workers 2, no backplane), each on an ephemeral loopback port read from its first line.
# 4. Renders tools/gateway's configuration for them (render.sh) and starts nginx in the
#    foreground as one process (daemon off, master_process off), everything in the test's work
#    folder, on a free loopback port (bound by the kernel, then handed to nginx; another bind
#    is tried if something took it in between); waits until a request through nginx reaches
#    the application (bounded).
# 5. Runs gateway.mjs against nginx (bounded); every process is stopped by PID at exit.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NAME=interop_gateway
TEST_TIMEOUT_S=150
NGINX_WAIT_S=10
NGINX_PORT_TRIES=3
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
NGINX="${NGINX:-/usr/sbin/nginx}"
[ -x "$NGINX" ] || die "nginx not found at $NGINX: this test needs Debian's nginx (apt-get install nginx; tools/setup.sh installs it, CI runs that); set NGINX=/path/to/nginx to use another"
command -v curl >/dev/null || die "curl not found"
interop_install_pinned_deps
interop_workdir gateway

interop_start_upstream_v2
interop_start_mcpfan_node a --workers 2
NODE_A="$NODE_HOSTPORT"
interop_start_mcpfan_node b --workers 2
NODE_B="$NODE_HOSTPORT"

# A free loopback port: the kernel picks it for a socket that is closed again at once.
free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# Starts nginx on a free port; sets NGINX_PID and GATEWAY (HOST:PORT) once a request through it
# is answered by the application server.
start_nginx() {
  local dir="$WORK/nginx" port code deadline
  for _ in $(seq 1 "$NGINX_PORT_TRIES"); do
    port="$(free_port)"
    bash "$ROOT/tools/gateway/render.sh" --out "$dir" --listen "127.0.0.1:$port" \
      --mcpfan "$NODE_A" --mcpfan "$NODE_B" --app "$UPSTREAM_HOSTPORT"
    : >"$dir/error.log"
    "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -g 'daemon off; master_process off;' \
      >"$dir/stdout" 2>&1 &
    NGINX_PID=$!
    interop_track "$NGINX_PID" "nginx (pid $NGINX_PID)" "$dir/error.log"
    deadline=$(( $(date +%s) + NGINX_WAIT_S ))
    while kill -0 "$NGINX_PID" 2>/dev/null; do
      # /healthz is not /mcp: nginx sends it to the application server.
      code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/healthz" || true)"
      if [ "$code" = 200 ]; then GATEWAY="127.0.0.1:$port"; return 0; fi
      [ "$(date +%s)" -lt "$deadline" ] || die "nginx (pid $NGINX_PID) did not pass a request to the application within ${NGINX_WAIT_S} s (last status '$code')"
      sleep 0.05
    done
    wait "$NGINX_PID" 2>/dev/null || true
    interop_untrack "$NGINX_PID"
    if ! grep -q 'Address already in use' "$dir/error.log" "$dir/stdout" 2>/dev/null; then
      cat "$dir/stdout" "$dir/error.log" >&2 || true
      die "nginx exited at start (see above)"
    fi
    echo "$NAME: port $port was taken before nginx bound it; trying another" >&2
  done
  die "nginx could not bind a free port in $NGINX_PORT_TRIES tries"
}
start_nginx

echo "$NAME: nginx $GATEWAY -> mcpfan $NODE_A, $NODE_B | app (upstream_v2) $UPSTREAM_HOSTPORT" >&2
interop_run_node_client "$TEST_TIMEOUT_S" gateway.mjs "http://$GATEWAY" \
  --mcpfan "http://$NODE_A" --mcpfan "http://$NODE_B" --app "http://$UPSTREAM_HOSTPORT" \
  --access-log "$WORK/nginx/access.log"
