#!/usr/bin/env bash
# Interop test: official MCP TypeScript SDK v2 client over stdio against the real mcpfan binary.
#
#   bash run.sh /path/to/mcpfan
#
# 1. Makes sure the pinned npm packages (package-lock.json) are installed in this folder:
#    runs `npm ci` only when node_modules is missing or does not match the lock file, so
#    re-runs work offline.
# 2. Runs client.mjs (bounded). The SDK's StdioClientTransport itself spawns
#    `mcpfan --stdio --listen 127.0.0.1:0 --workers 1` (twice: a throw-away probe sibling, then
#    the session child; FINDINGS.md §2); the test publishes to the session child over HTTP.
# 3. client.mjs records every child PID in a file; whatever is still alive afterwards is
#    killed by PID (SIGTERM, then SIGKILL after 5 s).
# The shared helpers are in ../lib/common.sh.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_sdk_v2_stdio
TEST_TIMEOUT_S=150
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"   # the SDK spawns it from its own cwd
interop_install_pinned_deps

# --- the SDK client (it spawns mcpfan) -------------------------------------------------------
interop_workdir sdkv2stdio
interop_watch_pidfile "$WORK/children.pid"
export MCPFAN_PIDFILE="$PIDFILE"
interop_run_node_client "$TEST_TIMEOUT_S" client.mjs "$BIN"
