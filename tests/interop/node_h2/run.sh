#!/usr/bin/env bash
# Interop test: Node's own HTTP/2 client (node:http2, built-ins only, no npm package) holding many
# 2026-07-28 listens on one connection to the real mcpfan binary.
#
#   bash run.sh /path/to/mcpfan
#
# 1. Makes a test CA and a server certificate for localhost/127.0.0.1 with the openssl CLI
#    (interop_make_certs) in the work folder.
# 2. Starts mcpfan with --tls-cert/--tls-key on an ephemeral loopback port and a plaintext
#    --publish-listen (POST /v1/publish, GET /metrics), and runs h2_listens.mjs over TLS (ALPN h2,
#    the CA trusted through http2.connect's `ca:`) with 1,000 listens on one session: every stream
#    gets exactly its notifications once, 500 cancelled by RST_STREAM CANCEL free their listens
#    (mcpfan_listen_streams_open 1000 -> 500), the next publish reaches exactly the 500 still open.
# 3. The same over h2c (prior knowledge, a second mcpfan without TLS) with 200 listens.
# Every process is stopped by PID at exit (../lib/common.sh).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_node_h2
CLIENT_TIMEOUT_S=120
TLS_LISTENS=1000
H2C_LISTENS=200
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
interop_workdir node-h2
interop_make_certs "$WORK/certs"

interop_start_mcpfan_node tls --workers 2 --tls-cert "$WORK/certs/server.pem" --tls-key "$WORK/certs/server.key" \
  --publish-listen 127.0.0.1:0
interop_await_publish_port "$NODE_PID" "$WORK/mcpfan-tls.stderr"
TLS_PORT="${NODE_HOSTPORT##*:}"
TLS_PUBLISH="$PUBLISH_HOSTPORT"

interop_start_mcpfan_node h2c --workers 2 --publish-listen 127.0.0.1:0
interop_await_publish_port "$NODE_PID" "$WORK/mcpfan-h2c.stderr"
H2C_HOSTPORT="$NODE_HOSTPORT"
H2C_PUBLISH="$PUBLISH_HOSTPORT"

failed=()
run_client() {  # label, args...
  local label="$1"
  shift
  interop_run_bounded "$CLIENT_TIMEOUT_S" "$label" node h2_listens.mjs "$@"
  [ "$RC" -eq 0 ] || failed+=("$label")
}
run_client "TLS (ALPN h2), $TLS_LISTENS listens" tls "https://localhost:$TLS_PORT" "http://$TLS_PUBLISH" "$TLS_LISTENS" "$WORK/certs/ca.pem"
run_client "h2c (prior knowledge), $H2C_LISTENS listens" h2c "http://$H2C_HOSTPORT" "http://$H2C_PUBLISH" "$H2C_LISTENS"

interop_finish_clients "TLS: $TLS_LISTENS listens, h2c: $H2C_LISTENS listens"
