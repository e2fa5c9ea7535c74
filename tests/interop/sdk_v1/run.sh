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
# 3. Runs client.mjs against it (bounded), then always stops the server by PID.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:-}"
PORT_WAIT_S=10
TEST_TIMEOUT_S=150

die() { echo "interop_sdk_v1: FAIL: $*" >&2; exit 1; }

[ -n "$BIN" ] || die "usage: bash run.sh /path/to/mcpfan"
[ -f "$BIN" ] && [ -x "$BIN" ] || die "mcpfan binary '$BIN' is not an executable file"
command -v node >/dev/null || die "node not found (Node >= 20 required)"
command -v npm >/dev/null || die "npm not found"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
  || die "Node >= 20 required, found $(node --version)"

# --- 1. pinned dependencies ----------------------------------------------------------------
# Installed tree matches the lock file when every locked package is present at its locked
# version. Reads only local files.
deps_ok() {
  (cd "$HERE" && node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const [p, meta] of Object.entries(lock.packages || {})) {
      if (p === "" || meta.dev || meta.optional) continue;
      let v;
      try { v = JSON.parse(fs.readFileSync(p + "/package.json", "utf8")).version; } catch { process.exit(1); }
      if (v !== meta.version) process.exit(1);
    }
  ') 2>/dev/null
}
if ! deps_ok; then
  echo "interop_sdk_v1: installing pinned packages (npm ci) in $HERE" >&2
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error) >&2 \
    || die "npm ci failed (needs the npm registry once; later runs are offline)"
  deps_ok || die "node_modules still does not match package-lock.json after npm ci"
fi

# --- 2. start the server -------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpfan-sdkv1.XXXXXX")"
LOG="$WORK/mcpfan.stderr"
SRV_PID=""
RESULT=1

cleanup() {
  local rc=$?
  if [ -n "$SRV_PID" ] && kill -0 "$SRV_PID" 2>/dev/null; then
    kill -TERM "$SRV_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do                       # up to 5 s for a graceful stop
      kill -0 "$SRV_PID" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$SRV_PID" 2>/dev/null; then
      echo "interop_sdk_v1: mcpfan (pid $SRV_PID) ignored SIGTERM for 5 s; sending SIGKILL" >&2
      kill -KILL "$SRV_PID" 2>/dev/null || true
    fi
    wait "$SRV_PID" 2>/dev/null || true
  fi
  if [ "$RESULT" -ne 0 ] && [ -s "$LOG" ]; then
    echo "--- mcpfan stderr (last 40 lines):" >&2
    tail -n 40 "$LOG" >&2 || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$BIN" --listen 127.0.0.1:0 --workers 2 >"$WORK/mcpfan.stdout" 2>"$LOG" &
SRV_PID=$!

HOSTPORT=""
deadline=$(( $(date +%s) + PORT_WAIT_S ))
while :; do
  HOSTPORT="$(grep -m1 -oE 'listening on ([0-9.]+|\[[0-9a-f:]+\]):[0-9]+' "$LOG" 2>/dev/null | sed 's/^listening on //' || true)"
  [ -n "$HOSTPORT" ] && break
  if ! kill -0 "$SRV_PID" 2>/dev/null; then
    ec=0; wait "$SRV_PID" 2>/dev/null || ec=$?
    SRV_PID=""
    die "mcpfan exited (status $ec) before logging its listening line"
  fi
  [ "$(date +%s)" -lt "$deadline" ] || die "no 'mcpfan: listening on HOST:PORT' line on stderr within ${PORT_WAIT_S} s"
  sleep 0.05
done

# --- 3. the SDK client ---------------------------------------------------------------------
set +e
(cd "$HERE" && timeout --kill-after=5 "$TEST_TIMEOUT_S" node client.mjs "http://$HOSTPORT")
rc=$?
set -e
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  die "client.mjs did not finish within ${TEST_TIMEOUT_S} s"
fi
kill -0 "$SRV_PID" 2>/dev/null || { [ "$rc" -ne 0 ] || rc=1; echo "interop_sdk_v1: FAIL: mcpfan died during the test" >&2; }
RESULT=$rc
exit "$rc"
