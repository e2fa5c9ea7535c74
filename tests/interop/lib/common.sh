# shellcheck shell=bash
# Shared plumbing for the interop tests' run.sh scripts (tests/interop/*/run.sh).
#
# Sourced, not run. Before sourcing, the caller sets (with `set -euo pipefail` already on):
#   HERE   absolute path of the test's own folder (package.json, package-lock.json, node_modules)
#   NAME   test name used as the prefix of every message, e.g. interop_sdk_v2
#
# Provides:
#   die MSG...                     "$NAME: FAIL: MSG" on stderr, exit 1
#   interop_check_prereqs BIN      usage/binary/node/npm/timeout/Node >= 20 checks; sets BIN
#   interop_install_pinned_deps [NPM_CI_ARGS...]
#                                  `npm ci` into $HERE only when node_modules does not match
#                                  package-lock.json (so re-runs work offline); bounded
#   interop_install_pinned_deps_at DIR
#                                  the same for another folder (e.g. ../upstream_v2)
#   interop_workdir TAG            creates $WORK (removed at exit) and installs the exit traps
#   interop_start_mcpfan ARGS...   starts "$BIN" --listen 127.0.0.1:0 ARGS... by PID ($SRV_PID),
#                                  stderr in $LOG; sets HOSTPORT from its listening line
#                                  (bounded wait)
#   interop_server_alive           whether $SRV_PID is still running
#   interop_start_mcpfan_node TAG ARGS...
#                                  one more mcpfan ("$BIN" --listen 127.0.0.1:0 ARGS...), stderr in
#                                  $WORK/mcpfan-TAG.stderr; sets NODE_PID and NODE_HOSTPORT; tracked
#   interop_start_upstream_v2 [ARGS...]
#                                  the SDK v2 MCP server of ../upstream_v2 (its pinned packages
#                                  installed first; ARGS e.g. --tls-cert F --tls-key F) on an
#                                  ephemeral loopback port; sets
#                                  UPSTREAM_PID and UPSTREAM_HOSTPORT; tracked
#   interop_track PID WHAT [LOG]   a process the test started itself: stopped at exit, must be
#                                  alive when the client ends, LOG's tail shown on failure
#   interop_untrack PID            forgets it again (a process that ended as expected)
#   interop_await_line PID FILE ERE SECS WHAT
#                                  bounded wait for a line of FILE matching ERE while PID lives;
#                                  sets AWAITED to the first match
#   interop_run_bounded SECS WHAT CMD...
#                                  runs CMD in $HERE under `timeout`; dies on a timeout; else
#                                  sets RC to CMD's exit status
#   interop_run_node_client SECS SCRIPT ARGS...
#                                  `node SCRIPT ARGS...` via interop_run_bounded; a test that
#                                  started mcpfan fails if it died meanwhile; then
#                                  interop_finish with the client's status
#   interop_watch_pidfile FILE     PIDs listed in FILE (one per line) are stopped at exit too
#   interop_finish RC              records the result (mcpfan's stderr is shown when RC != 0)
#                                  and exits with RC
#   interop_install_node22_suite DIR
#                                  the pinned packages of DIR (../conformance_next: the
#                                  conformance suite and the `node` package); sets NODE22 to
#                                  its Node 22 binary and CONFORMANCE_CLI to the suite's CLI
#   interop_start_sdk1_example DIR the SDK 1.x example server simpleStreamableHttp.js from
#                                  DIR/node_modules on a free port (MCP_PORT; it binds every
#                                  interface); sets EXAMPLE_PID, EXAMPLE_HOSTPORT (127.0.0.1:N)
#                                  and EXAMPLE_LOG (its stdout: it logs each session's GET); tracked
#   interop_make_certs DIR         a test CA (DIR/ca.pem, ca.key) and a server certificate it signed
#                                  (DIR/server.pem, server.key; SAN DNS:localhost, IP:127.0.0.1),
#                                  EC P-256, with the openssl CLI as tests/support/test_certs.cc
#   interop_spki_sha256 CERT       base64 SHA-256 of CERT's public key (Chromium's
#                                  --ignore-certificate-errors-spki-list)
#   interop_await_publish_port PID LOG
#                                  bounded wait for mcpfan's "publish listener on HOST:PORT"
#                                  line (--publish-listen); sets PUBLISH_HOSTPORT
# At exit every process this test started (or recorded in the pid file) is stopped by PID:
# SIGTERM, then SIGKILL after 5 s.

PORT_WAIT_S=10                     # mcpfan's "listening on" line
STOP_GRACE_S=5                     # SIGTERM -> SIGKILL
NPM_CI_TIMEOUT_S=240               # first run only: the registry download

SRV_PID=""
WORK=""
TRACKED_PIDS=()                    # interop_track: PIDs, names, logs (same index)
TRACKED_WHAT=()
TRACKED_LOGS=()
LOG=""
PIDFILE=""
RESULT=1
RC=1

die() { echo "$NAME: FAIL: $*" >&2; exit 1; }

interop_check_prereqs() {
  BIN="${1:-}"
  [ -n "$BIN" ] || die "usage: bash run.sh /path/to/mcpfan"
  if [ ! -f "$BIN" ] || [ ! -x "$BIN" ]; then die "mcpfan binary '$BIN' is not an executable file"; fi
  command -v node >/dev/null || die "node not found (Node >= 20 required)"
  command -v npm >/dev/null || die "npm not found"
  command -v timeout >/dev/null || die "coreutils 'timeout' not found"
  node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
    || die "Node >= 20 required, found $(node --version)"
}

# --- pinned dependencies ---------------------------------------------------------------------
# The installed tree in $HERE matches its lock file when every locked package is present at
# its locked version. Reads only local files.
interop_deps_ok() {
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

# shellcheck disable=SC2120  # the extra npm ci arguments are optional
interop_install_pinned_deps() {
  interop_deps_ok && return 0
  echo "$NAME: installing pinned packages (npm ci) in $HERE" >&2
  local rc=0
  (cd "$HERE" && timeout --kill-after=5 "$NPM_CI_TIMEOUT_S" \
     npm ci --no-audit --no-fund --loglevel=error "$@") >&2 || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    die "npm ci did not finish within ${NPM_CI_TIMEOUT_S} s"
  fi
  [ "$rc" -eq 0 ] || die "npm ci failed (needs the npm registry once; later runs are offline)"
  interop_deps_ok || die "node_modules still does not match package-lock.json after npm ci"
}

interop_install_pinned_deps_at() {
  local HERE  # interop_deps_ok and interop_install_pinned_deps read $HERE
  HERE="$(cd "$1" && pwd)"
  interop_install_pinned_deps
}

# --- processes, stopped by PID ---------------------------------------------------------------
# SIGTERM to every given PID that is alive, up to STOP_GRACE_S for all of them to go, then
# SIGKILL to the survivors. Reaps our own children.
interop_stop_pids() {
  local pid alive left=()
  for pid in "$@"; do
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && left+=("$pid")
  done
  [ "${#left[@]}" -gt 0 ] || return 0
  for pid in "${left[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 $((STOP_GRACE_S * 10))); do
    alive=0
    for pid in "${left[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  for pid in "${left[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "$NAME: pid $pid ignored SIGTERM for ${STOP_GRACE_S} s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
}

interop_cleanup() {
  local rc=$?
  interop_stop_pids "$SRV_PID" "${TRACKED_PIDS[@]}"
  if [ -n "$PIDFILE" ] && [ -f "$PIDFILE" ]; then
    local pid left=()
    while read -r pid; do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && left+=("$pid")
    done <"$PIDFILE"
    if [ "${#left[@]}" -gt 0 ]; then
      echo "$NAME: mcpfan child(ren) still running after the test: ${left[*]}; stopping them" >&2
      interop_stop_pids "${left[@]}"
    fi
  fi
  if [ "$RESULT" -ne 0 ] && [ -n "$LOG" ] && [ -s "$LOG" ]; then
    echo "--- mcpfan stderr (last 40 lines):" >&2
    tail -n 40 "$LOG" >&2 || true
  fi
  local i
  for i in "${!TRACKED_PIDS[@]}"; do
    if [ "$RESULT" -ne 0 ] && [ -n "${TRACKED_LOGS[$i]}" ] && [ -s "${TRACKED_LOGS[$i]}" ]; then
      echo "--- ${TRACKED_WHAT[$i]}: ${TRACKED_LOGS[$i]##*/} (last 40 lines):" >&2
      tail -n 40 "${TRACKED_LOGS[$i]}" >&2 || true
    fi
  done
  [ -z "$WORK" ] || rm -rf "$WORK"
  exit "$rc"
}

interop_workdir() {
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpfan-$1.XXXXXX")"
  trap interop_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

interop_watch_pidfile() {
  PIDFILE="$1"
  : >"$PIDFILE"
}

interop_server_alive() {
  [ -n "$SRV_PID" ] && kill -0 "$SRV_PID" 2>/dev/null
}

interop_track() {
  TRACKED_PIDS+=("$1")
  TRACKED_WHAT+=("$2")
  TRACKED_LOGS+=("${3:-}")
}

interop_untrack() {
  local i
  for i in "${!TRACKED_PIDS[@]}"; do
    [ "${TRACKED_PIDS[$i]}" = "$1" ] && unset 'TRACKED_PIDS[i]' 'TRACKED_WHAT[i]' 'TRACKED_LOGS[i]'
  done
  return 0
}

interop_await_line() {
  local pid="$1" file="$2" re="$3" secs="$4" what="$5" ec deadline
  deadline=$(( $(date +%s) + secs ))
  AWAITED=""
  while :; do
    AWAITED="$(grep -m1 -oE "$re" "$file" 2>/dev/null || true)"
    [ -n "$AWAITED" ] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      ec=0; wait "$pid" 2>/dev/null || ec=$?
      die "$what exited (status $ec) before writing a line matching '$re'"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || die "$what wrote no line matching '$re' within ${secs} s"
    sleep 0.05
  done
}

# mcpfan's "mcpfan: listening on HOST:PORT ..." stderr line -> AWAITED (HOST:PORT).
interop_await_mcpfan_port() {
  interop_await_line "$1" "$2" 'listening on ([0-9.]+|\[[0-9a-f:]+\]):[0-9]+' "$PORT_WAIT_S" "mcpfan (pid $1)"
  AWAITED="${AWAITED#listening on }"
}

# shellcheck disable=SC2034  # its *HOSTPORT is read by the test that sourced this file
interop_start_mcpfan() {
  [ -n "$WORK" ] || die "interop_start_mcpfan needs interop_workdir first"
  LOG="$WORK/mcpfan.stderr"
  "$BIN" --listen 127.0.0.1:0 "$@" >"$WORK/mcpfan.stdout" 2>"$LOG" &
  SRV_PID=$!
  interop_await_mcpfan_port "$SRV_PID" "$LOG"
  HOSTPORT="$AWAITED"
}

# shellcheck disable=SC2034  # its *HOSTPORT is read by the test that sourced this file
interop_start_mcpfan_node() {
  [ -n "$WORK" ] || die "interop_start_mcpfan_node needs interop_workdir first"
  local tag="$1" log="$WORK/mcpfan-$1.stderr"
  shift
  "$BIN" --listen 127.0.0.1:0 "$@" >"$WORK/mcpfan-$tag.stdout" 2>"$log" &
  NODE_PID=$!
  interop_track "$NODE_PID" "mcpfan $tag (pid $NODE_PID)" "$log"
  interop_await_mcpfan_port "$NODE_PID" "$log"
  NODE_HOSTPORT="$AWAITED"
}

# shellcheck disable=SC2034  # its *HOSTPORT is read by the test that sourced this file
interop_start_upstream_v2() {
  [ -n "$WORK" ] || die "interop_start_upstream_v2 needs interop_workdir first"
  local dir
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../upstream_v2" && pwd)"
  interop_install_pinned_deps_at "$dir"
  node "$dir/server.mjs" "$@" >"$WORK/upstream_v2.stdout" 2>"$WORK/upstream_v2.stderr" &
  UPSTREAM_PID=$!
  interop_track "$UPSTREAM_PID" "upstream_v2 (pid $UPSTREAM_PID)" "$WORK/upstream_v2.stderr"
  interop_await_line "$UPSTREAM_PID" "$WORK/upstream_v2.stdout" '^upstream_v2 listening on 127\.0\.0\.1:[0-9]+$' \
    "$PORT_WAIT_S" "upstream_v2 (pid $UPSTREAM_PID)"
  UPSTREAM_HOSTPORT="${AWAITED#upstream_v2 listening on }"
}

interop_run_bounded() {
  local secs="$1" what="$2"
  shift 2
  set +e
  (cd "$HERE" && timeout --kill-after=5 "$secs" "$@")
  RC=$?
  set -e
  if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
    die "$what did not finish within ${secs} s"
  fi
}

interop_run_node_client() {
  local secs="$1" script="$2"
  shift 2
  interop_run_bounded "$secs" "$script" node "$script" "$@"
  if [ -n "$SRV_PID" ] && ! interop_server_alive; then
    [ "$RC" -ne 0 ] || RC=1
    echo "$NAME: FAIL: mcpfan died during the test" >&2
  fi
  local i
  for i in "${!TRACKED_PIDS[@]}"; do
    if ! kill -0 "${TRACKED_PIDS[$i]}" 2>/dev/null; then
      [ "$RC" -ne 0 ] || RC=1
      echo "$NAME: FAIL: ${TRACKED_WHAT[$i]} died during the test" >&2
    fi
  done
  interop_finish "$RC"
}

interop_finish() {
  RESULT="$1"
  exit "$1"
}

# Ends a test that ran several clients: each tracked process still alive, else "<what> died
# during the test" joins the caller's `failed` array; any failure is printed and the test
# fails, else it passes with "$NAME: PASS (<summary>)".
interop_finish_clients() {
  local i f
  for i in "${!TRACKED_PIDS[@]}"; do
    kill -0 "${TRACKED_PIDS[$i]}" 2>/dev/null || failed+=("${TRACKED_WHAT[$i]} died during the test")
  done
  if [ "${#failed[@]}" -gt 0 ]; then
    for f in "${failed[@]}"; do echo "$NAME: FAIL: $f" >&2; done
    interop_finish 1
  fi
  echo "$NAME: PASS ($1)"
  interop_finish 0
}

# --- the conformance suite's Node 22 (used by conformance_next and proxy_conformance) --------
# npm ci runs on the system Node (20): --engine-strict=false, as some of the suite's
# dependencies declare engines.node >= 22; --ignore-scripts=false, as the `node` package needs
# its preinstall script to fetch the binary (conformance_next/FINDINGS.md §1). If the package
# versions match but the binary is missing (an install with scripts off), node_modules is
# reinstalled once.
interop_install_node22_suite() {
  local HERE want  # interop_deps_ok and interop_install_pinned_deps read $HERE
  HERE="$(cd "$1" && pwd)"
  want="v$(node -p 'require(process.argv[1]).dependencies.node' "$HERE/package.json")"
  NODE22="$HERE/node_modules/node/bin/node"
  CONFORMANCE_CLI="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  interop_install_pinned_deps --engine-strict=false --ignore-scripts=false
  if ! { [ -x "$NODE22" ] && [ "$("$NODE22" --version 2>/dev/null)" = "$want" ]; }; then
    echo "$NAME: $NODE22 is not Node $want; reinstalling $HERE/node_modules" >&2
    rm -rf "$HERE/node_modules"
    interop_install_pinned_deps --engine-strict=false --ignore-scripts=false
    [ "$("$NODE22" --version 2>/dev/null)" = "$want" ] \
      || die "$NODE22 is not Node $want after npm ci (the 'node' package's preinstall fetches it)"
  fi
  [ -f "$CONFORMANCE_CLI" ] || die "$CONFORMANCE_CLI missing after install"
}

# --- the official SDK 1.x example server, a 2025-era upstream ----------------------------------
# simpleStreamableHttp.js takes its port from MCP_PORT and binds every interface. The port is
# one the kernel just handed out on 127.0.0.1 (bound and released); if another process takes it
# first, the example exits with EADDRINUSE and another port is tried (bounded).
EXAMPLE_PORT_ATTEMPTS=5
# shellcheck disable=SC2034  # EXAMPLE_HOSTPORT and EXAMPLE_LOG are read by the test that sourced this file
interop_start_sdk1_example() {
  [ -n "$WORK" ] || die "interop_start_sdk1_example needs interop_workdir first"
  local dir js port attempt ec out err
  dir="$(cd "$1" && pwd)"
  js="$dir/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"
  [ -f "$js" ] || die "$js missing (the pinned @modelcontextprotocol/sdk of $dir)"
  for attempt in $(seq 1 "$EXAMPLE_PORT_ATTEMPTS"); do
    port="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
    out="$WORK/sdk1-example.$attempt.stdout"
    err="$WORK/sdk1-example.$attempt.stderr"
    MCP_PORT="$port" node "$js" >"$out" 2>"$err" &
    EXAMPLE_PID=$!
    local deadline=$(( $(date +%s) + PORT_WAIT_S ))
    while :; do
      if grep -q "^MCP Streamable HTTP Server listening on port $port\$" "$out" 2>/dev/null; then
        interop_track "$EXAMPLE_PID" "SDK 1.x example server (pid $EXAMPLE_PID)" "$out"
        EXAMPLE_HOSTPORT="127.0.0.1:$port"
        EXAMPLE_LOG="$out"
        return 0
      fi
      if ! kill -0 "$EXAMPLE_PID" 2>/dev/null; then
        ec=0; wait "$EXAMPLE_PID" 2>/dev/null || ec=$?
        grep -q EADDRINUSE "$err" "$out" 2>/dev/null && break   # taken meanwhile: next port
        cat "$err" >&2
        die "SDK 1.x example server exited (status $ec) before listening on port $port"
      fi
      if [ "$(date +%s)" -ge "$deadline" ]; then
        interop_stop_pids "$EXAMPLE_PID"
        die "SDK 1.x example server did not log 'listening on port $port' within ${PORT_WAIT_S} s"
      fi
      sleep 0.05
    done
    echo "$NAME: port $port was taken before the SDK 1.x example bound it; trying another" >&2
  done
  die "SDK 1.x example server: no free port in $EXAMPLE_PORT_ATTEMPTS attempts"
}

# --- TLS: certificates made by the test ----------------------------------------------------------
# The commands of tests/support/test_certs.cc (a CA, a server certificate it signed) with the
# openssl CLI; its output goes to DIR/openssl.log, shown when a command fails.
interop_make_certs() {
  local dir="$1"
  command -v openssl >/dev/null || die "openssl not found (tools/setup.sh test installs it)"
  mkdir -p "$dir"
  cat >"$dir/ext.cnf" <<'CNF'
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
CNF
  if ! (cd "$dir" && {
      openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key &&
      openssl req -new -key ca.key -subj '/CN=mcpfan interop test CA' -out ca.csr &&
      openssl x509 -req -in ca.csr -signkey ca.key -days 3650 -sha256 -extfile ext.cnf -extensions ca_ext -out ca.pem &&
      openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out server.key &&
      openssl req -new -key server.key -subj /CN=localhost -out server.csr &&
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
        -extfile ext.cnf -extensions server -out server.pem
    } >openssl.log 2>&1); then
    cat "$dir/openssl.log" >&2
    die "making the test certificates with openssl failed"
  fi
}

interop_spki_sha256() {
  openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64
}

# shellcheck disable=SC2034  # PUBLISH_HOSTPORT is read by the test that sourced this file
interop_await_publish_port() {
  interop_await_line "$1" "$2" 'publish listener on ([0-9.]+|\[[0-9a-f:]+\]):[0-9]+' "$PORT_WAIT_S" "mcpfan (pid $1)"
  PUBLISH_HOSTPORT="${AWAITED#publish listener on }"
}
