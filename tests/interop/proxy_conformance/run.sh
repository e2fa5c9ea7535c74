#!/usr/bin/env bash
# Interop test: the official MCP conformance suite (@modelcontextprotocol/conformance
# 0.2.0-alpha.12 on Node 22, the pins of ../conformance_next) against real MCP servers, first
# alone and then through `mcpfan --upstream` in front of them (docs/protocol.md "Front proxy").
#
#   bash run.sh /path/to/mcpfan
#
# Arms (upstream @ spec version; every server scenario `conformance list --server
# --spec-version V` names, run with `--suite all`, which runs exactly those):
#   sdk1-example @ 2025-11-25   the SDK 1.32.2 example server simpleStreamableHttp.js (../proxy_sdk)
#   upstream_v2  @ 2025-11-25   ../upstream_v2 (SDK v2 server 2.4.0), its 2025-era sessions
#   upstream_v2  @ 2026-07-28   the same server, 2026-07-28
# Each upstream gets its own mcpfan --upstream in front. compare.mjs then fails the test when a
# check that passes alone does not pass through mcpfan, when mcpfan adds a schema violation, when
# resources-subscribe / resources-unsubscribe (2025) or the listen checks of server-stateless
# (2026) do not pass through mcpfan, or when upstream_v2 received a request mcpfan should have
# answered itself (its GET /stats, read before and after each run). It prints the table (scenario ×
# alone / through mcpfan) and writes it to $MCPFAN_PROXY_CONFORMANCE_TABLE if set (ctest sets it:
# build/tests/interop/proxy_conformance_table.md). Every process is stopped by PID at exit.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_proxy_conformance
RUN_TIMEOUT_S=300            # our bound on one suite run (all scenarios of an arm)
SUITE_TIMEOUT_MS=30000       # the suite's own per-scenario timeout
STATS_TIMEOUT_S=10
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
interop_install_node22_suite "$HERE/../conformance_next"   # NODE22, CONFORMANCE_CLI
interop_install_pinned_deps_at "$HERE/../proxy_sdk"        # the SDK 1.32.2 example server
interop_workdir proxy-conformance

interop_start_sdk1_example "$HERE/../proxy_sdk"
interop_start_mcpfan_node front-sdk1 --workers 2 --upstream "http://$EXAMPLE_HOSTPORT/mcp"
FRONT_SDK1="$NODE_HOSTPORT"
interop_start_upstream_v2
interop_start_mcpfan_node front-v2 --workers 2 --upstream "http://$UPSTREAM_HOSTPORT/mcp"
FRONT_V2="$NODE_HOSTPORT"
echo "$NAME: @modelcontextprotocol/conformance $("$NODE22" -p 'require(process.argv[1]).version' \
  "$(dirname "$CONFORMANCE_CLI")/../package.json") on Node $("$NODE22" --version);" \
  "SDK 1.32.2 example $EXAMPLE_HOSTPORT behind mcpfan $FRONT_SDK1; upstream_v2 $UPSTREAM_HOSTPORT behind mcpfan $FRONT_V2"

# "<upstream> <spec-version> <upstream host:port> <mcpfan host:port> <has /stats>"
ARMS=(
  "sdk1-example 2025-11-25 $EXAMPLE_HOSTPORT $FRONT_SDK1 no"
  "upstream_v2 2025-11-25 $UPSTREAM_HOSTPORT $FRONT_V2 yes"
  "upstream_v2 2026-07-28 $UPSTREAM_HOSTPORT $FRONT_V2 yes"
)

stats() {  # host:port -> stdout: upstream_v2's {"<era> <method>": count}
  # shellcheck disable=SC2016  # JavaScript, not shell
  timeout "$STATS_TIMEOUT_S" "$NODE22" -e '
    fetch(process.argv[1]).then(r => r.ok ? r.json() : Promise.reject(new Error(`status ${r.status}`)))
      .then(b => process.stdout.write(JSON.stringify(b.requests ?? {})))
      .catch(e => { console.error(`GET ${process.argv[1]}: ${e.message}`); process.exit(1); })' "http://$1/stats"
}

RESULTS="$WORK/results"
i=0
for arm in "${ARMS[@]}"; do
  read -r upstream version upstream_hp front_hp has_stats <<<"$arm"
  i=$((i + 1))
  dir="$RESULTS/$(printf %02d "$i")__${upstream}__${version}"
  mkdir -p "$dir"
  "$NODE22" "$CONFORMANCE_CLI" list --server --spec-version "$version" \
    | sed -n 's/^  - \([^ ]*\) .*$/\1/p' >"$dir/scenarios.txt"
  for via in alone through; do
    target="$upstream_hp"
    [ "$via" = through ] && target="$front_hp"
    [ "$has_stats" = yes ] && { stats "$upstream_hp" >"$dir/$via.stats-before.json" || die "upstream_v2 GET /stats failed"; }
    echo
    echo "=== $upstream @ $version, $via ($(wc -l <"$dir/scenarios.txt") scenarios, http://$target/mcp)"
    start=$(date +%s)
    set +e
    # The suite's own output, colour codes stripped; the per-scenario detail is in checks.json.
    (cd "$dir" && timeout --kill-after=5 "$RUN_TIMEOUT_S" "$NODE22" "$CONFORMANCE_CLI" server \
       --url "http://$target/mcp" --suite all --spec-version "$version" --timeout "$SUITE_TIMEOUT_MS" \
       -o "$dir/$via") >"$dir/$via.log" 2>&1
    rc=$?
    set -e
    sed 's/\x1b\[[0-9;]*m//g' "$dir/$via.log" | sed -n '/^=== SUMMARY/,$p'
    echo "($(( $(date +%s) - start )) s, exit status $rc)"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "did not finish within ${RUN_TIMEOUT_S} s" >"$dir/$via.error"
    fi
    if [ "$has_stats" = yes ]; then
      stats "$upstream_hp" >"$dir/$via.stats-after.json" || die "upstream_v2 GET /stats failed"
      # what this run made the upstream receive
      "$NODE22" -e '
        const [b, a] = process.argv.slice(1).map(f => JSON.parse(require("fs").readFileSync(f, "utf8")));
        const d = {};
        for (const [k, v] of Object.entries(a)) if (v - (b[k] ?? 0)) d[k] = v - (b[k] ?? 0);
        process.stdout.write(JSON.stringify(d));' "$dir/$via.stats-before.json" "$dir/$via.stats-after.json" \
        >"$dir/$via.stats.json"
    fi
    for j in "${!TRACKED_PIDS[@]}"; do
      kill -0 "${TRACKED_PIDS[$j]}" 2>/dev/null || die "${TRACKED_WHAT[$j]} died during $upstream @ $version, $via"
    done
  done
done

TABLE="$WORK/table.md"
set +e
"$NODE22" "$HERE/compare.mjs" "$RESULTS" "$TABLE"
RC=$?
set -e
if [ -n "${MCPFAN_PROXY_CONFORMANCE_TABLE:-}" ]; then
  cp "$TABLE" "$MCPFAN_PROXY_CONFORMANCE_TABLE" && echo "$NAME: table written to $MCPFAN_PROXY_CONFORMANCE_TABLE"
fi
interop_finish "$RC"
