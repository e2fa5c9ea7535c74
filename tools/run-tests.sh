#!/usr/bin/env bash
# Builds and runs every test three times: an optimised build, an ASan+UBSan build, and a
# ThreadSanitizer build (every cross-thread path; tests/stress exists for it).
# MCPFAN_SANITIZE_TESTS=0 skips the sanitizer passes (quick local runs).
# Each phase's wall and CPU time is printed as it ends and in a table at the end
# (docs/testing.md, "CI time").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs=$(nproc)
# Tests run several per core: most of their time is spent waiting (on child processes, sockets,
# nats-servers, npm, a TSan build's 1 s sleep at exit), not computing, and every one of them
# waits on events with bounds meant for a loaded machine. MCPFAN_TEST_JOBS overrides.
test_jobs="${MCPFAN_TEST_JOBS:-$((2 * jobs))}"

phase_names=()
phase_lines=()
phase_wall=$SECONDS
phase_cpu=0
cpu_seconds() {  # user+sys CPU of this script's waited-for children so far
  # From /proc/$$/stat (cutime, cstime), which a $(...) subshell reads for this shell too;
  # `times` there would report the subshell's own children.
  local st
  st=$(cat "/proc/$$/stat")
  st=${st##*) }  # the fields after the command name, from the state on (field 3)
  awk -v tick="$(getconf CLK_TCK)" '{ printf "%.0f", ($14 + $15) / tick }' <<<"$st"
}
phase_done() {  # name: the time since the previous phase ended
  local cpu now=$SECONDS
  cpu=$(cpu_seconds)
  phase_lines+=("$(printf '%-34s %6d s wall %7d s cpu' "$1" $((now - phase_wall)) $((cpu - phase_cpu)))")
  echo "-- ${phase_lines[-1]}"
  phase_wall=$now
  phase_cpu=$cpu
}
phase_table() {
  echo "== phase times"
  printf '%s\n' "${phase_lines[@]}"
  printf '%-34s %6d s wall %7d s cpu\n' total "$SECONDS" "$(cpu_seconds)"
}

bash "$root/tools/setup.sh" test  # server.txt and test.txt (tools/deps/)
phase_done "setup"

run_suite() {  # name, build dir, extra cmake args...
  local name="$1" dir="$2"; shift 2
  cmake -S "$root" -B "$dir" -G Ninja -DMCPFAN_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  phase_done "$name: build"
  local exclude=()
  [ -n "${MCPFAN_CTEST_EXCLUDE:-}" ] && exclude=(-LE "$MCPFAN_CTEST_EXCLUDE")
  (cd "$dir" && ctest --output-on-failure -j "$test_jobs" "${exclude[@]}")
  phase_done "$name: tests"
}

# libFuzzer targets (tests/fuzz): each replays its regressions, then fuzzes for a bounded time.
# MCPFAN_FUZZ_SECONDS=0 skips them.
fuzz_seconds="${MCPFAN_FUZZ_SECONDS:-15}"
fuzz_pid=""
fuzz_log="$root/build-fuzz/run-fuzz.log"
stop_fuzz() { if [ -n "$fuzz_pid" ]; then kill -- -"$fuzz_pid" 2>/dev/null || true; fi; }
trap stop_fuzz EXIT

echo "== tests: RelWithDebInfo =="
run_suite "RelWithDebInfo" "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The official conformance suite's per-scenario summary, from ctest's log, for the CI record.
log="$root/build/Testing/Temporary/LastTest.log"
if [ -f "$log" ]; then
  echo "== MCP conformance suite (@modelcontextprotocol/conformance) =="
  sed -n '/=== SUMMARY (interop_conformance/,/^[0-9]* passed, [0-9]* failed/p' "$log" | sed 's/^/    conformance | /'
fi
if [ "${MCPFAN_SANITIZE_TESTS:-1}" != "0" ]; then
  echo "== tests: ASan + UBSan =="
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_suite "ASan+UBSan" "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug "-DMCPFAN_SANITIZE=address;undefined" -DMCPFAN_BUILD_BENCH=OFF
  echo "== tests: ThreadSanitizer =="
  unset ASAN_OPTIONS UBSAN_OPTIONS
  # The interop tests drive Node.js clients against the same binary the other passes test;
  # under TSan they add minutes and no thread coverage the integration tests lack. Nor does the
  # load generator's smoke test (so the load generator is not built).
  cmake -S "$root" -B "$root/build-tsan" -G Ninja -DMCPFAN_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMCPFAN_SANITIZE=thread -DMCPFAN_BUILD_BENCH=OFF -DMCPFAN_BUILD_LOADGEN=OFF >/dev/null
  cmake --build "$root/build-tsan" -j "$jobs"
  phase_done "ThreadSanitizer: build"
  # The fuzz pass (its own clang build, then the fuzzers) runs alongside the TSan tests, which
  # leave most of the CPU idle; at a lower priority, so the tests' processes are served first.
  # Its output goes to a log, printed whole when it ends; a failure of either fails the run.
  if [ "$fuzz_seconds" != "0" ]; then
    mkdir -p "$root/build-fuzz"
    echo "== fuzzing: ${fuzz_seconds} s per target, alongside the TSan tests (log: $fuzz_log) =="
    setsid nice -n 10 bash "$root/tools/run-fuzz.sh" "$fuzz_seconds" >"$fuzz_log" 2>&1 </dev/null &
    fuzz_pid=$!
  fi
  # halt_on_error: a report fails the test that produced it (and so the run).
  tsan_rc=0
  (cd "$root/build-tsan" && TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    ctest --output-on-failure -j "$test_jobs" -LE "interop|loadgen") || tsan_rc=$?
  phase_done "ThreadSanitizer: tests"
  if [ -n "$fuzz_pid" ]; then
    fuzz_rc=0
    wait "$fuzz_pid" || fuzz_rc=$?
    fuzz_pid=""
    echo "== fuzzing: ${fuzz_seconds} s per target (run alongside the TSan tests) =="
    cat "$fuzz_log"
    phase_done "fuzzing (after the TSan tests)"
    if [ "$fuzz_rc" != 0 ]; then echo "FAILED: the fuzz pass (exit $fuzz_rc), above" >&2; fi
    if [ "$tsan_rc" != 0 ]; then echo "FAILED: the ThreadSanitizer tests (ctest exit $tsan_rc), above" >&2; fi
    if [ "$fuzz_rc" != 0 ] || [ "$tsan_rc" != 0 ]; then phase_table; exit 1; fi
  elif [ "$tsan_rc" != 0 ]; then
    echo "FAILED: the ThreadSanitizer tests (ctest exit $tsan_rc), above" >&2
    phase_table
    exit 1
  fi
elif [ "$fuzz_seconds" != "0" ]; then
  echo "== fuzzing: ${fuzz_seconds} s per target =="
  bash "$root/tools/run-fuzz.sh" "$fuzz_seconds"
  phase_done "fuzzing"
fi
phase_table
