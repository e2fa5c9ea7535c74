#!/usr/bin/env bash
# Interop test: official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk, 2025-era sessions) client against the real mcpfan binary.
#
#   bash run.sh /path/to/mcpfan
#
# 1. Makes sure the pinned npm packages (package-lock.json) are installed in this folder:
#    runs `npm ci` only when node_modules is missing or does not match the lock file, so
#    re-runs work offline.
# 2. Starts mcpfan on an ephemeral loopback port with 2 workers and reads the port from its
#    "mcpfan: listening on HOST:PORT ..." stderr line (bounded wait).
# 3. Runs client.mjs against it (bounded), then resume.mjs (the SDK's own reconnection with
#    Last-Event-ID through a TCP relay the script cuts), then always stops the server by PID.
# Steps 1-3 are the shared helpers in ../lib/common.sh.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_sdk_v1
TEST_TIMEOUT_S=150
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
interop_install_pinned_deps
interop_workdir sdkv1
interop_start_mcpfan --workers 2
interop_run_bounded "$TEST_TIMEOUT_S" client.mjs node client.mjs "http://$HOSTPORT"
[ "$RC" -eq 0 ] || interop_finish "$RC"
interop_run_node_client "$TEST_TIMEOUT_S" resume.mjs "http://$HOSTPORT"
