# Sourced by the bench scripts that A/B fresh mcpfan servers (ab_burst.sh, ingest_batch.sh,
# targeted_pinned.sh): one on an ephemeral loopback port, stopped by its PID.
#   start_mcpfan COMMAND [ARGS...]   runs COMMAND ARGS --listen 127.0.0.1:0 in the background
#                                    (COMMAND may be a prefix such as `taskset -c 0 mcpfan`);
#                                    sets MCPFAN_PID and MCPFAN_PORT, or exits 1 when it has not
#                                    said where it listens within 10 s
#   stop_mcpfan                      SIGTERM, wait, then a second's pause for the sockets to go
# The caller's EXIT trap should call stop_mcpfan too (it does nothing when none runs).
MCPFAN_PID="" MCPFAN_PORT="" MCPFAN_LOG=""
start_mcpfan() {
  MCPFAN_LOG=$(mktemp)
  "$@" --listen 127.0.0.1:0 2>"$MCPFAN_LOG" &
  MCPFAN_PID=$!
  MCPFAN_PORT=""
  for _ in $(seq 100); do
    MCPFAN_PORT=$(sed -n 's/^.*mcpfan: listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$MCPFAN_LOG")
    [ -n "$MCPFAN_PORT" ] && return 0
    sleep 0.1
  done
  echo "mcpfan did not start ($*): $(cat "$MCPFAN_LOG")" >&2
  stop_mcpfan
  exit 1
}
stop_mcpfan() {
  if [ -n "$MCPFAN_PID" ]; then
    kill "$MCPFAN_PID" 2>/dev/null || true
    wait "$MCPFAN_PID" 2>/dev/null || true
    MCPFAN_PID=""
    sleep 1
  fi
  [ -n "$MCPFAN_LOG" ] && rm -f "$MCPFAN_LOG"
  MCPFAN_LOG=""
}
