#!/usr/bin/env bash
# Builds and runs every test twice: an optimised build, then an ASan+UBSan build.
# MCPFAN_SANITIZE_TESTS=0 skips the sanitizer pass (quick local runs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/tools/setup.sh"
jobs=$(nproc)

run_suite() {  # build dir, extra cmake args...
  local dir="$1"; shift
  cmake -S "$root" -B "$dir" -G Ninja -DMCPFAN_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  (cd "$dir" && ctest --output-on-failure -j "$jobs")
}

echo "== tests: RelWithDebInfo =="
run_suite "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${MCPFAN_SANITIZE_TESTS:-1}" != "0" ]; then
  echo "== tests: ASan + UBSan =="
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_suite "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug "-DMCPFAN_SANITIZE=address;undefined" -DMCPFAN_BUILD_BENCH=OFF
fi
