#!/usr/bin/env bash
# Interop test: `mcpfan --upstream` in front of real MCP servers built on the official SDKs,
# driven by the official TypeScript SDK clients (docs/protocol.md "Front proxy").
#
#   bash run.sh /path/to/mcpfan
#
# 1. Installs the pinned npm packages of this folder (@modelcontextprotocol/sdk 1.32.2, which
#    brings express, and @modelcontextprotocol/client 2.4.0) and of ../upstream_v2, with
#    `npm ci` only when node_modules does not match the lock file (re-runs are offline).
# 2. Starts the 2025-era upstream, the SDK 1.32.2 example server simpleStreamableHttp.js (on a
#    free port), and the 2026-07-28 upstream ../upstream_v2/server.mjs (SDK v2), each with an
#    mcpfan --upstream in front of it on an ephemeral loopback port (bounded waits).
# 3. Runs, one after the other and each bounded:
#      session_2025.mjs v1  SDK 1.32.2 client, 2025 session, through mcpfan to the example
#      session_2025.mjs v2  SDK v2 client in legacy mode, the same
#      session_2025.mjs v2-auto  SDK v2 client in auto mode: its server/discover probe is
#                           refused by the upstream (through mcpfan), it falls back to the same
#      listen_2026.mjs      SDK v2 client in 2026-07-28 mode, through mcpfan to upstream_v2
#    and fails if any of them fails or any process died. Every process is stopped by PID at exit.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_proxy_sdk
CLIENT_TIMEOUT_S=120
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
interop_install_pinned_deps
interop_workdir proxy-sdk

interop_start_sdk1_example "$HERE"
interop_start_mcpfan_node front-2025 --workers 2 --upstream "http://$EXAMPLE_HOSTPORT/mcp"
FRONT_2025="$NODE_HOSTPORT"
interop_start_upstream_v2
interop_start_mcpfan_node front-2026 --workers 2 --upstream "http://$UPSTREAM_HOSTPORT/mcp"
FRONT_2026="$NODE_HOSTPORT"
echo "$NAME: SDK 1.32.2 example at $EXAMPLE_HOSTPORT behind mcpfan $FRONT_2025; upstream_v2 at $UPSTREAM_HOSTPORT behind mcpfan $FRONT_2026"

failed=()
run_client() {  # label, script, args...
  local label="$1"
  shift
  interop_run_bounded "$CLIENT_TIMEOUT_S" "$label" node "$@"
  [ "$RC" -eq 0 ] || failed+=("$label")
}
run_client "SDK v1, 2025 session" session_2025.mjs "http://$FRONT_2025" v1 "http://$EXAMPLE_HOSTPORT" "$EXAMPLE_LOG"
run_client "SDK v2 legacy, 2025 session" session_2025.mjs "http://$FRONT_2025" v2 "http://$EXAMPLE_HOSTPORT" "$EXAMPLE_LOG"
run_client "SDK v2 auto, falls back to a 2025 session" session_2025.mjs "http://$FRONT_2025" v2-auto "http://$EXAMPLE_HOSTPORT" "$EXAMPLE_LOG"
run_client "SDK v2, 2026-07-28" listen_2026.mjs "http://$FRONT_2026" "http://$UPSTREAM_HOSTPORT"

interop_finish_clients "4 clients"
