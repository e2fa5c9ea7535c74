#!/usr/bin/env bash
# Interop test: the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json / package-lock.json) — the server scenarios that concern a notification tier —
# against the real mcpfan binary.
#
#   bash run.sh /path/to/mcpfan
#
# 1. Makes sure the pinned npm packages are installed in this folder (`npm ci` only when
#    node_modules is missing or does not match the lock file, so re-runs work offline).
# 2. Starts mcpfan on an ephemeral loopback port and reads the port from its
#    "mcpfan: listening on HOST:PORT ..." stderr line (bounded wait).
# 3. Runs each scenario below with the suite's CLI (each bounded), prints the suite's output and
#    a summary, and always stops the server by PID.
# Steps 1 and 2 and the cleanup are the shared helpers in ../lib/common.sh.
# A scenario passes iff it has no FAILURE check and at least one SUCCESS check (the suite's own
# tier-check rule; see FINDINGS.md §1). Exit 0 iff all scenarios pass.
#
# Node 20: the suite imports `globSync` from `fs` (Node >= 22); compat/register.mjs supplies it
# from the `glob` package (see FINDINGS.md §1).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCENARIO_TIMEOUT_S=90
SCENARIOS=(
  server-initialize
  ping
  logging-set-level
  resources-subscribe
  resources-unsubscribe
  server-sse-multiple-streams
  dns-rebinding-protection
)
NAME=interop_conformance
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"

# --- 1. pinned dependencies ----------------------------------------------------------------
# The suite declares engines.node >= 22 only because of fs.globSync, which compat/ supplies.
interop_install_pinned_deps --engine-strict=false
CLI="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$CLI" ] || die "$CLI missing after install"

# --- 2. start the server -------------------------------------------------------------------
interop_workdir conformance
interop_start_mcpfan --workers 2
URL="http://$HOSTPORT/mcp"
echo "$NAME: mcpfan pid $SRV_PID at $URL; running ${#SCENARIOS[@]} server scenarios of @modelcontextprotocol/conformance"

# --- 3. the scenarios ------------------------------------------------------------------------
# Per scenario: the suite's own printout, then a verdict computed from its checks.json.
verdict() {  # $1 = checks.json -> prints "PASSED FAILED WARNINGS OK(0/1)"
  node -e '
    const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const n = s => checks.filter(c => c.status === s).length;
    const ok = n("FAILURE") === 0 && n("SUCCESS") > 0 ? 1 : 0;
    console.log(`${n("SUCCESS")} ${n("FAILURE")} ${n("WARNING")} ${ok}`);
  ' "$1"
}

show_failures() {  # $1 = checks.json: what the server answered, as recorded by the suite
  node -e '
    const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    for (const c of checks) {
      if (c.status === "SUCCESS" || c.status === "INFO") continue;
      let d = c.details === undefined ? "" : JSON.stringify(c.details);
      if (d.length > 1500) d = d.slice(0, 1500) + "…";
      console.log(`--- ${c.status} ${c.id}: ${c.errorMessage ?? ""}${d ? `\n    details: ${d}` : ""}`);
    }
  ' "$1"
}

SUMMARY=()
N_OK=0
N_BAD=0
for s in "${SCENARIOS[@]}"; do
  echo
  echo "=== scenario: $s"
  out="$WORK/results"
  set +e
  # (the suite colours its output with raw escape codes; strip them for readable test logs)
  (cd "$HERE" && timeout --kill-after=5 "$SCENARIO_TIMEOUT_S" \
     node --import ./compat/register.mjs "$CLI" server --url "$URL" --scenario "$s" -o "$out") 2>&1 \
    | sed -u 's/\x1b\[[0-9;]*m//g'
  rc=${PIPESTATUS[0]}
  set -e
  checks="$(find "$out" -path "*$s*" -name checks.json 2>/dev/null | head -n 1)"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    SUMMARY+=("✗ $s: did not finish within ${SCENARIO_TIMEOUT_S} s")
    N_BAD=$((N_BAD + 1))
  elif [ -z "$checks" ]; then
    SUMMARY+=("✗ $s: the suite wrote no checks.json (exit status $rc)")
    N_BAD=$((N_BAD + 1))
  else
    read -r passed failed warnings ok < <(verdict "$checks")
    [ "$ok" -eq 1 ] || show_failures "$checks"
    note=""
    [ "$warnings" -gt 0 ] && note=", $warnings warning(s)"
    if [ "$ok" -eq 1 ]; then
      SUMMARY+=("✓ $s: $passed passed, $failed failed$note")
      N_OK=$((N_OK + 1))
    else
      [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ] && note="$note — no SUCCESS check at all"
      SUMMARY+=("✗ $s: $passed passed, $failed failed$note")
      N_BAD=$((N_BAD + 1))
    fi
    rm -f "$checks"
  fi
  interop_server_alive || { SUMMARY+=("✗ mcpfan died during scenario $s"); N_BAD=$((N_BAD + 1)); break; }
done

echo
echo "=== SUMMARY ($NAME, @modelcontextprotocol/conformance server scenarios against $BIN)"
for line in "${SUMMARY[@]}"; do echo "$line"; done
echo "$N_OK passed, $N_BAD failed"
if [ "$N_BAD" -eq 0 ]; then
  interop_finish 0
fi
interop_finish 1
