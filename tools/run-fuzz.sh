#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, build-fuzz/) and runs each for SECONDS
# (default 60), first replaying tests/fuzz/regressions/<target>/. Exits non-zero on any crash,
# leak, sanitizer report, broken invariant, hang or timeout; crashing inputs are saved in
# build-fuzz/artifacts/. The working corpus lives in a temporary directory seeded from
# tests/fuzz/corpus/ (nothing is written into the repository). See tests/fuzz/README.md.
#
#   bash tools/run-fuzz.sh [SECONDS]
#   MCPFAN_FUZZ_TARGETS="fuzz_http fuzz_stdio" bash tools/run-fuzz.sh 300   # a subset
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS]" >&2; exit 2; }
targets=(${MCPFAN_FUZZ_TARGETS:-fuzz_rpc_decoder fuzz_publish_decoder fuzz_http fuzz_stdio fuzz_upstream fuzz_h2 fuzz_oauth_token})
build="$root/build-fuzz"
artifacts="$build/artifacts"

bash "$root/tools/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMCPFAN_FUZZ=ON -DMCPFAN_BUILD_BENCH=OFF -DMCPFAN_BUILD_TESTS=OFF "-DMCPFAN_SANITIZE=address;undefined" >/dev/null
cmake --build "$build" --target mcpfan_fuzz -j "$(nproc)"

mkdir -p "$artifacts"
work="$(mktemp -d "${TMPDIR:-/tmp}/mcpfan-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Longest input per target: above each server limit it exercises (fuzz_support.cc: 16 KiB body,
# 4 KiB headers, 4 KiB stdio lines), small enough to keep the exec rate up.
max_len() {
  case "$1" in
    fuzz_http | fuzz_h2) echo 20480 ;;
    fuzz_stdio) echo 12288 ;;
    *) echo 8192 ;;
  esac
}

failed=()
summary=()
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/$t"
  src="$root/tests/fuzz"
  log="$artifacts/$t.log"
  reglog="$artifacts/$t.regressions.log"
  : >"$log"
  : >"$reglog"
  status=ok

  # 1. Known-bad inputs, kept after their bug was found: each must now pass.
  reg="$src/regressions/$t"
  nreg=0
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    nreg=$(ls -A "$reg" | wc -l)
    echo "== $t: replaying $nreg regression input(s)"
    for f in "$reg"/*; do  # one process each: a failing input must not hide the next
      if ! "$bin" -runs=1 -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 "$f" >>"$reglog" 2>&1; then
        status="REGRESSION"
        echo "   fails: ${f#"$root"/}"
      fi
    done
  fi

  # 2. Fuzz for $seconds from a temporary copy of the committed corpus.
  corpus="$work/$t"
  mkdir -p "$corpus"
  cp "$src/corpus/$t/"* "$corpus/"
  echo "== $t: fuzzing for ${seconds}s"
  rc=0
  "$bin" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 \
    -max_len="$(max_len "$t")" -dict="$src/$t.dict" -artifact_prefix="$artifacts/$t-" \
    -print_final_stats=1 >>"$log" 2>&1 || rc=$?
  fuzz_status=""
  if [ "$rc" -ne 0 ]; then
    fuzz_status="FAILED(rc=$rc)"
  elif grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|==mcpfan-fuzz==' "$log"; then
    fuzz_status="FAILED(report)"
  fi
  if [ -n "$fuzz_status" ]; then
    if [ "$status" = ok ]; then status="$fuzz_status"; else status="$status+$fuzz_status"; fi
  fi

  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 || true)
  line=$(printf '%-22s %-16s execs=%-10s exec/s=%-7s %s (regressions: %s)' "$t" "$status" "${execs:-?}" "${rate:-?}" "${cov:-cov: ?}" "$nreg")
  summary+=("$line")
  echo "$line"
  if [ "$status" != ok ]; then
    failed+=("$t")
    for l in "$reglog" "$log"; do
      grep -qE 'ERROR: |runtime error:|==mcpfan-fuzz==' "$l" || continue
      echo "---- $t: first report in $l ----"
      grep -nE -A24 'ERROR: |runtime error:|==mcpfan-fuzz==' "$l" | grep -vE '^[0-9]+-\s+#[0-9]+ 0x[0-9a-f]+ in (fuzzer::|std::|__)' | head -40 || true
    done
    if [ -n "$fuzz_status" ] && ! grep -q 'Test unit written' "$log"; then tail -20 "$log"; fi
  fi
done

echo
echo "== fuzz summary (${seconds}s per target; logs and crashing inputs in $artifacts)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]} -- reproduce with: $build/tests/fuzz/<target> $artifacts/<target>-crash-<sha1> (tests/fuzz/README.md)"
  exit 1
fi
echo "all fuzz targets passed"
