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
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:-}"
TEST_TIMEOUT_S=150
NAME=interop_sdk_v2_stdio

die() { echo "$NAME: FAIL: $*" >&2; exit 1; }

[ -n "$BIN" ] || die "usage: bash run.sh /path/to/mcpfan"
[ -f "$BIN" ] && [ -x "$BIN" ] || die "mcpfan binary '$BIN' is not an executable file"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"   # the SDK spawns it from its own cwd
command -v node >/dev/null || die "node not found (Node >= 20 required)"
command -v npm >/dev/null || die "npm not found"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
  || die "Node >= 20 required, found $(node --version)"

# --- 1. pinned dependencies ----------------------------------------------------------------
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
  echo "$NAME: installing pinned packages (npm ci) in $HERE" >&2
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error) >&2 \
    || die "npm ci failed (needs the npm registry once; later runs are offline)"
  deps_ok || die "node_modules still does not match package-lock.json after npm ci"
fi

# --- 2. the SDK client (it spawns mcpfan) ----------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpfan-sdkv2stdio.XXXXXX")"
PIDFILE="$WORK/children.pid"
: >"$PIDFILE"

cleanup() {
  local rc=$?
  local left=()
  while read -r pid; do
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && left+=("$pid")
  done <"$PIDFILE"
  if [ "${#left[@]}" -gt 0 ]; then
    echo "$NAME: mcpfan child(ren) still running after the test: ${left[*]}; stopping them" >&2
    for pid in "${left[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for _ in $(seq 1 50); do
      local alive=0
      for pid in "${left[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
      [ "$alive" -eq 0 ] && break
      sleep 0.1
    done
    for pid in "${left[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

set +e
(cd "$HERE" && MCPFAN_PIDFILE="$PIDFILE" timeout --kill-after=5 "$TEST_TIMEOUT_S" node client.mjs "$BIN")
rc=$?
set -e
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  die "client.mjs did not finish within ${TEST_TIMEOUT_S} s"
fi
exit "$rc"
