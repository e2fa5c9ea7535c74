#!/usr/bin/env bash
# Task notifications against resource updates on the targeted load (docs/performance.md "Task
# notifications"): 10,000 listens, each watching one task (task-<i>, the Tasks extension
# declared) or one resource URI of its own, and publishes each to one random stream, at a fixed
# rate and at the maximum rate, with params of each size (a task's statusMessage, a resource
# update's "bench/pad", padded to the same size). Per run: server CPU per delivered notification,
# publishes/s, p99, RSS per watched task or URI, RSS growth over the run, the task states kept
# (mcpfan_task_states, _bytes after the run), and anything lost, duplicated or misdelivered.
#
#   bash bench/tasks_targeted.sh [--reps 3] [--rate 8000] [--sizes 200,8192] [--duration 10]
#                                [--no-states-case] [--build-dir build-release] [--out DIR]
#
# Cases, interleaved within each rep, each a fresh `mcpfan --workers 2` on an ephemeral loopback
# port stopped by its PID: for each size, resource updates (`--stream-uris own`), task
# notifications, and task notifications with `--task-states-max 0` (no states kept; left out
# with --no-states-case). The load generator (built beside mcpfan in --build-dir, Release):
#   mcpfan-load --kind listen --target URL --publish-url P,P,P,P --streams 10000 --stream-uris own
#     [--task-listens] --params-bytes SIZE --scenario targeted --rate RATE|max --duration 10
#     --window 16 --server-pid PID
# Raw JSON lines: --out (default ${MCPFAN_RESULTS_DIR:-build/bench-results}/tasks-<time>/runs.jsonl);
# the medians and ratios (bench/tasks_targeted_summary.py) are printed and written to table.md.
# About 20 s per run: 36 runs with the defaults, about 12 minutes on the 2-core VM.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
reps=3 rate=8000 sizes=200,8192 duration=10 states_case=1 build="$root/build-release" out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --no-states-case) states_case=0; shift ;;
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: bash bench/tasks_targeted.sh [--reps R] [--rate HZ] [--sizes B,B] [--duration S]" \
         "[--no-states-case] [--build-dir DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
mcpfan="$build/tools/mcpfan/mcpfan" load="$build/tools/mcpfan-load/mcpfan-load"
for b in "$mcpfan" "$load"; do
  [[ -x "$b" ]] || { echo "no $b: build it first (cmake --build $build --target mcpfan mcpfan-load)" >&2; exit 2; }
done
out="${out:-${MCPFAN_RESULTS_DIR:-$root/build/bench-results}/tasks-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
ulimit -n 30000 2>/dev/null || true
. "$here/mcpfan_server.sh"
trap stop_mcpfan EXIT
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "args: reps=$reps rate=$rate sizes=$sizes duration=$duration states_case=$states_case build=$build"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/run.txt"

run() {  # case size rate server-args...
  local name=$1 size=$2 r=$3
  shift 3
  local extra=()
  [[ $name == resource ]] || extra=(--task-listens)
  start_mcpfan "$mcpfan" --workers 2 "$@"
  local u="http://127.0.0.1:$MCPFAN_PORT/v1/publish" rc=0
  "$load" --kind listen --target "http://127.0.0.1:$MCPFAN_PORT" --publish-url "$u,$u,$u,$u" --streams 10000 \
    --stream-uris own "${extra[@]}" --params-bytes "$size" --scenario targeted --rate "$r" --duration "$duration" \
    --window 16 --server-pid "$MCPFAN_PID" --timeout-s 150 >"$out/last.out" 2>&1 || rc=$?
  stop_mcpfan
  tail -n 1 "$out/last.out" | python3 -c '
import json, sys
name, size, rate, rep, rc = sys.argv[1:6]
try:
    j = json.loads(sys.stdin.read())
except ValueError:
    j = {}
print(json.dumps({"case": name, "size": int(size), "rate": rate, "rep": int(rep), "rc": int(rc), "result": j}))
' "$name" "$size" "$r" "$rep" "$rc" >>"$out/runs.jsonl"
  if [[ $rc -ne 0 ]]; then
    echo "  $name $size B at $r: mcpfan-load exited $rc (kept in runs.jsonl):" >&2
    tail -n 5 "$out/last.out" >&2
  fi
}

for rep in $(seq "$reps"); do
  echo "rep $rep of $reps ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
  for size in ${sizes//,/ }; do
    for r in "$rate" max; do
      run resource "$size" "$r"
      run task "$size" "$r"
      if [[ $states_case == 1 ]]; then run task-nostates "$size" "$r" --task-states-max 0; fi
    done
  done
done
rm -f "$out/last.out"
python3 "$here/tasks_targeted_summary.py" "$out/runs.jsonl" | tee "$out/table.md"
echo "raw results: $out"
