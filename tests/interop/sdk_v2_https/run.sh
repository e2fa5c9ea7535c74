#!/usr/bin/env bash
# Interop test: the official MCP TypeScript SDK v2 client over HTTPS, directly to mcpfan and to a
# front mcpfan whose upstream is an SDK v2 server over HTTPS.
#
#   bash run.sh /path/to/mcpfan
#
# 1. Installs the pinned packages of ../sdk_v2 (@modelcontextprotocol/client 2.4.0; client.mjs
#    imports the SDK from there, this folder has none of its own) and of ../upstream_v2, with
#    `npm ci` only when node_modules does not match the lock file.
# 2. Makes a test CA and a server certificate for localhost/127.0.0.1 (interop_make_certs).
# 3. (a) mcpfan with --tls-cert/--tls-key and a plaintext --publish-listen; client.mjs direct:
#        server/discover and a listen receiving a publish, over https://localhost:PORT.
#    (b) ../upstream_v2/server.mjs over HTTPS (the same certificate) and a front mcpfan (TLS)
#        with --upstream https://localhost:UPSTREAM_PORT/mcp --upstream-ca-file ca.pem;
#        client.mjs proxy: a tool call answered by the upstream through mcpfan, a listen on the
#        front receiving a publish.
#    The node processes trust the CA through NODE_EXTRA_CA_CERTS.
# Every process is stopped by PID at exit (../lib/common.sh).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_sdk_v2_https
CLIENT_TIMEOUT_S=120
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
interop_install_pinned_deps_at "$HERE/../sdk_v2"
interop_workdir sdkv2-https
CERTS="$WORK/certs"
interop_make_certs "$CERTS"
export NODE_EXTRA_CA_CERTS="$CERTS/ca.pem"

interop_start_mcpfan_node direct --workers 2 --tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key" \
  --publish-listen 127.0.0.1:0
interop_await_publish_port "$NODE_PID" "$WORK/mcpfan-direct.stderr"
DIRECT_PORT="${NODE_HOSTPORT##*:}"
DIRECT_PUBLISH="$PUBLISH_HOSTPORT"

interop_start_upstream_v2 --tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key"
UPSTREAM_PORT="${UPSTREAM_HOSTPORT##*:}"
interop_start_mcpfan_node front --workers 2 --tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key" \
  --publish-listen 127.0.0.1:0 --upstream "https://localhost:$UPSTREAM_PORT/mcp" --upstream-ca-file "$CERTS/ca.pem"
interop_await_publish_port "$NODE_PID" "$WORK/mcpfan-front.stderr"
FRONT_PORT="${NODE_HOSTPORT##*:}"
FRONT_PUBLISH="$PUBLISH_HOSTPORT"
echo "$NAME: mcpfan (TLS) on $DIRECT_PORT; upstream_v2 (HTTPS) on $UPSTREAM_PORT behind mcpfan (TLS) on $FRONT_PORT"

failed=()
run_client() {  # label, args...
  local label="$1"
  shift
  interop_run_bounded "$CLIENT_TIMEOUT_S" "$label" node client.mjs "$@"
  [ "$RC" -eq 0 ] || failed+=("$label")
}
run_client "(a) SDK v2 client -> mcpfan over HTTPS" direct "https://localhost:$DIRECT_PORT" "http://$DIRECT_PUBLISH"
run_client "(b) SDK v2 client -> mcpfan -> SDK v2 server, HTTPS both hops" proxy "https://localhost:$FRONT_PORT" \
  "http://$FRONT_PUBLISH" "https://localhost:$UPSTREAM_PORT"

interop_finish_clients "direct and through the front proxy, HTTPS"
