#!/usr/bin/env bash
# Builds and runs every test three times: an optimised build, an ASan+UBSan build, and a
# ThreadSanitizer build (every cross-thread path; tests/stress exists for it).
# MCPFAN_SANITIZE_TESTS=0 skips the sanitizer passes (quick local runs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/tools/setup.sh" test  # server.txt and test.txt (tools/deps/)
jobs=$(nproc)

run_suite() {  # build dir, extra cmake args...
  local dir="$1"; shift
  cmake -S "$root" -B "$dir" -G Ninja -DMCPFAN_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  local exclude=()
  [ -n "${MCPFAN_CTEST_EXCLUDE:-}" ] && exclude=(-LE "$MCPFAN_CTEST_EXCLUDE")
  (cd "$dir" && ctest --output-on-failure -j "$jobs" "${exclude[@]}")
}

echo "== tests: RelWithDebInfo =="
run_suite "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The official conformance suite's per-scenario summary, from ctest's log, for the CI record.
log="$root/build/Testing/Temporary/LastTest.log"
if [ -f "$log" ]; then
  echo "== MCP conformance suite (@modelcontextprotocol/conformance) =="
  sed -n '/=== SUMMARY (interop_conformance/,/^[0-9]* passed, [0-9]* failed/p' "$log" | sed 's/^/    conformance | /'
fi
if [ "${MCPFAN_SANITIZE_TESTS:-1}" != "0" ]; then
  echo "== tests: ASan + UBSan =="
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_suite "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug "-DMCPFAN_SANITIZE=address;undefined" -DMCPFAN_BUILD_BENCH=OFF
  echo "== tests: ThreadSanitizer =="
  unset ASAN_OPTIONS UBSAN_OPTIONS
  # halt_on_error: a report fails the test that produced it (and so the run).
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
  # The interop tests drive Node.js clients against the same binary the other passes test;
  # under TSan they add minutes and no thread coverage the integration tests lack.
  MCPFAN_CTEST_EXCLUDE="interop|loadgen" run_suite "$root/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCPFAN_SANITIZE=thread -DMCPFAN_BUILD_BENCH=OFF
fi

# libFuzzer targets (tests/fuzz): each replays its regressions, then fuzzes for a bounded time.
# MCPFAN_FUZZ_SECONDS=0 skips them.
fuzz_seconds="${MCPFAN_FUZZ_SECONDS:-30}"
if [ "$fuzz_seconds" != "0" ]; then
  echo "== fuzzing: ${fuzz_seconds} s per target =="
  bash "$root/tools/run-fuzz.sh" "$fuzz_seconds"
fi
