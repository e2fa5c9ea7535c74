#!/usr/bin/env bash
# bench/compare: mcpfan vs nginx+nchan vs the official TypeScript SDK v2 listen hub, side by
# side in one run on this machine, plus the raw-socket ceiling. One command:
#
#   bash bench/compare/run.sh [--reps 3] [--n 1000,10000] [--servers mcpfan,nchan,sdkhub]
#                             [--scenarios burst,sustained,overload,slow,storm] [--rounds auto]
#                             [--sustained-load 20000] [--duration 10]
#                             [--overload-streams 1000] [--overload-rate 1000]
#                             [--slow-streams 200] [--slow-rate 500] [--slow-duration 15]
#                             [--slow-fraction 0.2] [--slow-bps 4096] [--slow-pad 2048]
#                             [--capacity] [--capacity-n 19000]
#                             [--targeted-streams 10000] [--targeted-extra 10]
#                             [--targeted-rates 1000,4000,8000,max] [--targeted-workers 1,2,4,8]
#                             [--targeted-duration 10] [--publishers 4] [--window 16]
#                             [--sdkhub-max-n 10000] [--out DIR] [--loadgen PATH]
#                             [--build-dir DIR] [--no-install] [--no-build]
#
# 1. installs what is missing: nginx, libnginx-mod-nchan, gnuplot-nox (Debian), the SDK hub's
#    pinned npm packages (npm ci in bench/compare/sdkhub);
# 2. builds mcpfan, mcpfan-load and mcpfan_ceiling in Release in build-compare/;
# 3. measures the raw-socket ceiling (bench/ceiling.cc);
# 4. for rep in 1..K, for each case, for each server (mcpfan, nchan, sdkhub): starts a fresh
#    server on loopback, runs tools/mcpfan-load against it with --server-pid, stops it by PID;
#    --capacity (off by default): after the reps, mcpfan alone holds
#    --capacity-n (19,000) listen streams, then as many stdio streams on its --unix socket,
#    each receiving a 3-round burst exactly once (one run each);
#    targeted (not in the default --scenarios, it is slow): N streams with 1+K URIs
#    each (nchan: one channel per stream plus K extra channels, one multiplexed subscriber),
#    publishes addressed to one random stream each over P keep-alive connections with a
#    window, at each --targeted-rates rate and at max, on every server; then mcpfan alone at
#    each --targeted-workers count (at 8000/s and at max), interleaved with the others;
# 5. prints the table (medians over reps, ratios) and writes runs.jsonl, summary.json, table.md
#    and gnuplot charts to ${MCPFAN_RESULTS_DIR:-build/bench-results}/compare/<date>/ (outside the
#    source tree; --out DIR to choose).
# Every wait is bounded; every process is stopped by its PID (also on exit: trap). Loopback only.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

reps=3
nlist="1000,10000"
servers="mcpfan,nchan,sdkhub"
scenarios="burst,sustained,overload,slow,storm"
rounds=auto                 # burst publishes per run; auto = max(10, 100000 / N), so each run
                            # has >= 100,000 deliveries and /proc's 10 ms CPU ticks stay < 2 %
sustained_load=20000        # deliveries/s the sustained case aims at: rate = load / N
duration=10
overload_streams=1000
overload_rate=1000
# slow: a fraction of the streams read slowly (small SO_RCVBUF, a few KiB/s); publishes are
# padded so their socket buffers fill within seconds and the server has to coalesce or drop.
slow_streams=200
slow_rate=500
slow_duration=15
slow_fraction=0.2
slow_bps=4096
slow_pad=2048
capacity=0
capacity_n=19000
# targeted: N streams x (1 + K) URIs, publishes to one random stream each
targeted_streams=10000
targeted_extra=10
targeted_rates="1000,4000,8000,max"
targeted_workers="1,2,4,8"     # mcpfan only: the worker sweep, at targeted_sweep_rate and at max
targeted_sweep_rate=8000
targeted_duration=10
publishers=4                   # P keep-alive publisher connections
window=16                      # publishes in flight per publisher connection
sdkhub_max_n=10000
out=""
loadgen=""
install=1
build=1
build_dir="$root/build-compare"
cmdline="bash bench/compare/run.sh $*"

usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --n) nlist="$2"; shift 2 ;;
    --servers) servers="$2"; shift 2 ;;
    --scenarios) scenarios="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --sustained-load) sustained_load="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --overload-streams) overload_streams="$2"; shift 2 ;;
    --overload-rate) overload_rate="$2"; shift 2 ;;
    --slow-streams) slow_streams="$2"; shift 2 ;;
    --slow-rate) slow_rate="$2"; shift 2 ;;
    --slow-duration) slow_duration="$2"; shift 2 ;;
    --slow-fraction) slow_fraction="$2"; shift 2 ;;
    --slow-bps) slow_bps="$2"; shift 2 ;;
    --slow-pad) slow_pad="$2"; shift 2 ;;
    --capacity) capacity=1; shift ;;
    --capacity-n) capacity_n="$2"; shift 2 ;;
    --targeted-streams) targeted_streams="$2"; shift 2 ;;
    --targeted-extra) targeted_extra="$2"; shift 2 ;;
    --targeted-rates) targeted_rates="$2"; shift 2 ;;
    --targeted-workers) targeted_workers="$2"; shift 2 ;;
    --targeted-duration) targeted_duration="$2"; shift 2 ;;
    --publishers) publishers="$2"; shift 2 ;;
    --window) window="$2"; shift 2 ;;
    --sdkhub-max-n) sdkhub_max_n="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --loadgen) loadgen="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --no-install) install=0; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; usage 2 ;;
  esac
done

log() { printf '[compare %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

IFS=, read -r -a NS <<<"$nlist"
IFS=, read -r -a SERVERS <<<"$servers"
IFS=, read -r -a SCENARIOS <<<"$scenarios"
for n in "${NS[@]}"; do [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 && "$n" -le 19000 ]] || die "--n: $n is not in 1..19000"; done
for s in "${SERVERS[@]}"; do [[ "$s" =~ ^(mcpfan|nchan|sdkhub)$ ]] || die "--servers: unknown server $s"; done
for s in "${SCENARIOS[@]}"; do [[ "$s" =~ ^(burst|sustained|overload|slow|storm|targeted)$ ]] || die "--scenarios: unknown scenario $s"; done
IFS=, read -r -a TRATES <<<"$targeted_rates"
IFS=, read -r -a TWORKERS <<<"$targeted_workers"
for r in "${TRATES[@]}"; do [[ "$r" == max || "$r" =~ ^[0-9]+$ ]] || die "--targeted-rates: $r is not a number or max"; done
for w in "${TWORKERS[@]}"; do [[ "$w" =~ ^[0-9]+$ && "$w" -ge 1 && "$w" -le 64 ]] || die "--targeted-workers: $w is not in 1..64"; done
[[ "$targeted_streams" =~ ^[0-9]+$ && "$targeted_streams" -ge 1 && "$targeted_streams" -le 19000 ]] || die "--targeted-streams: not in 1..19000"
[[ "$targeted_extra" =~ ^[0-9]+$ && "$targeted_extra" -le 254 ]] || die "--targeted-extra: not in 0..254 (nchan multiplexes up to 255 channels)"
[[ "$publishers" =~ ^[0-9]+$ && "$publishers" -ge 1 && "$publishers" -le 64 ]] || die "--publishers: not in 1..64"
[[ "$window" =~ ^[0-9]+$ && "$window" -ge 1 ]] || die "--window must be >= 1"
[[ "$targeted_duration" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--targeted-duration: not a number of seconds"
# the raw-socket ceiling is a broadcast figure: targeted alone neither builds nor measures it
broadcast=0
for s in "${SCENARIOS[@]}"; do [[ "$s" != targeted ]] && broadcast=1; done
[[ "$capacity_n" =~ ^[0-9]+$ && "$capacity_n" -ge 1 && "$capacity_n" -le 19000 ]] || die "--capacity-n: $capacity_n is not in 1..19000"
[[ "$reps" =~ ^[0-9]+$ && "$reps" -ge 1 ]] || die "--reps must be >= 1"
has_server() { [[ ",$servers," == *",$1,"* ]]; }

# --- processes, stopped by PID --------------------------------------------------------------
work="$(mktemp -d /tmp/mcpfan-compare.XXXXXX)"
declare -a LIVE=()          # PIDs we started that may still run
declare -a SRV_KIDS=()      # the running server's child processes (nginx workers)
stop_pid() {                 # stop_pid PID [extra PIDs of its children]: TERM, up to 5 s, KILL
  local pid="$1"; shift
  local kids=("$@") p i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${kids[@]}"; do   # e.g. nginx workers, if the master died first
    for ((i = 0; i < 20; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  local keep=()
  for p in "${LIVE[@]}"; do [[ "$p" == "$pid" ]] || keep+=("$p"); done
  LIVE=("${keep[@]}")
}
forget_pid() {               # forget_pid PID: it has been reaped (wait), never signal it again
  local keep=() p
  for p in "${LIVE[@]}"; do [[ "$p" == "$1" ]] || keep+=("$p"); done
  LIVE=("${keep[@]}")
}
cleanup() {
  local p
  for p in "${LIVE[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${LIVE[@]}" "${SRV_KIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# --- 1. install what is missing -------------------------------------------------------------
if [[ $install -eq 1 ]]; then
  need=()
  [[ -x /usr/sbin/nginx ]] || need+=(nginx)
  [[ -f /usr/lib/nginx/modules/ngx_nchan_module.so ]] || need+=(libnginx-mod-nchan)
  command -v gnuplot >/dev/null || need+=(gnuplot-nox)
  command -v python3 >/dev/null || need+=(python3)
  command -v cmake >/dev/null || need+=(cmake)
  command -v ninja >/dev/null || need+=(ninja-build)
  if [[ ${#need[@]} -gt 0 ]]; then
    log "installing from Debian: ${need[*]}"
    timeout 600 apt-get update -qq >/dev/null || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq "${need[@]}" >/dev/null \
      || die "apt-get install ${need[*]} failed"
  fi
  # build dependencies of mcpfan itself
  if [[ -x "$root/tools/setup.sh" || -f "$root/tools/setup.sh" ]]; then
    timeout 900 bash "$root/tools/setup.sh" >/dev/null || die "tools/setup.sh failed"
  fi
  if has_server sdkhub; then
    command -v node >/dev/null && command -v npm >/dev/null || die "node and npm are needed for the SDK hub (Node >= 20)"
    node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || die "Node >= 20 needed, found $(node --version)"
    if ! (cd "$here/sdkhub" && node -e '
        const fs = require("fs");
        const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
        for (const [p, m] of Object.entries(lock.packages || {})) {
          if (p === "" || m.dev || m.optional) continue;
          const v = JSON.parse(fs.readFileSync(p + "/package.json", "utf8")).version;
          if (v !== m.version) process.exit(1);
        }' 2>/dev/null); then
      log "npm ci in bench/compare/sdkhub"
      (cd "$here/sdkhub" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed"
    fi
  fi
fi
command -v python3 >/dev/null || die "python3 not found"
cpy() { python3 "$here/compare.py" "$@"; }

# --- 2. build (Release, own build dir) ------------------------------------------------------
if [[ $build -eq 1 ]]; then
  log "building mcpfan, mcpfan-load, mcpfan_ceiling (Release) in ${build_dir#$root/}"
  timeout 300 cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMCPFAN_BUILD_TESTS=OFF -DMCPFAN_BUILD_BENCH=ON >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; die "cmake configure failed"; }
  targets=(mcpfan)
  [[ $broadcast -eq 1 ]] && targets+=(mcpfan_ceiling)
  [[ -z "$loadgen" ]] && targets+=(mcpfan-load)
  timeout 1800 cmake --build "$build_dir" -j2 --target "${targets[@]}" >"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log" >&2; die "build failed"; }
fi
mcpfan_bin="$build_dir/tools/mcpfan/mcpfan"
ceiling_bin="$build_dir/bench/mcpfan_ceiling"
if [[ -z "$loadgen" ]]; then
  loadgen="$(find "$build_dir/tools" -maxdepth 3 -type f -name mcpfan-load -perm -u+x 2>/dev/null | head -1)"
fi
[[ -x "$mcpfan_bin" ]] || die "no mcpfan binary at $mcpfan_bin"
[[ $broadcast -eq 0 || -x "$ceiling_bin" ]] || die "no mcpfan_ceiling binary at $ceiling_bin"
[[ -n "$loadgen" && -x "$loadgen" ]] || die "no mcpfan-load binary (tools/mcpfan-load; or pass --loadgen PATH)"

# --- results folder ---------------------------------------------------------------------------
if [[ -z "$out" ]]; then
  out="${MCPFAN_RESULTS_DIR:-$root/build/bench-results}/compare/$(date -u +%Y-%m-%d)"
  [[ -e "$out" ]] && out="$out-$(date -u +%H%M%S)"
fi
mkdir -p "$out/logs"
runs="$out/runs.jsonl"
: >"$runs"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

node_v="$(node --version 2>/dev/null || echo none)"
nginx_v="$(/usr/sbin/nginx -v 2>&1 | sed 's#.*/##' || true)"
nchan_v="$(dpkg-query -W -f='${Version}' libnginx-mod-nchan 2>/dev/null || echo '?')"
sdk_v="$(cd "$here/sdkhub" && node -p 'require("./node_modules/@modelcontextprotocol/server/package.json").version' 2>/dev/null || echo '?')"
mcpfan_v="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo '+dirty')"
python3 - "$out/meta.json" <<EOF
import json, os, platform, sys
cpu = "?"
for l in open("/proc/cpuinfo"):
    if l.startswith("model name"):
        cpu = l.split(":", 1)[1].strip(); break
mem = "?"
for l in open("/proc/meminfo"):
    if l.startswith("MemTotal"):
        mem = f"{int(l.split()[1]) / 1048576:.0f} GiB RAM"; break
json.dump({"date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "command": """$cmdline""", "nproc": os.cpu_count(),
           "cpu": cpu, "mem": mem, "kernel": platform.release(), "reps": $reps, "n": "$nlist",
           "servers": "$servers", "scenarios": "$scenarios", "rounds": "$rounds",
           "sustained_load": $sustained_load, "duration_s": $duration,
           "overload": {"streams": $overload_streams, "rate": $overload_rate},
           "slow": {"streams": $slow_streams, "rate": $slow_rate, "duration_s": $slow_duration, "fraction": $slow_fraction,
                    "read_bytes_per_s": $slow_bps, "pad_bytes": $slow_pad},
           "capacity": {"on": bool($capacity), "streams": $capacity_n},
           "targeted": {"streams": $targeted_streams, "extra_uris": $targeted_extra, "rates": "$targeted_rates",
                        "workers": "$targeted_workers", "sweep_rate": $targeted_sweep_rate,
                        "duration_s": $targeted_duration, "publishers": $publishers, "window": $window,
                        "nchan_worker_processes": 2, "mcpfan_workers": 2},
           "versions": {"mcpfan": "$mcpfan_v", "nginx": "$nginx_v", "nchan": "$nchan_v",
                        "sdk_server": "$sdk_v", "node": "$node_v"}}, open(sys.argv[1], "w"), indent=1)
EOF

# --- 3. the raw-socket ceiling ------------------------------------------------------------------
cn="$nlist"
[[ ",$scenarios," == *",overload,"* && ",$nlist," != *",$overload_streams,"* ]] && cn="$cn,$overload_streams"
if [[ $broadcast -eq 1 ]]; then
  log "raw-socket ceiling (N=$cn)"
  timeout 120 "$ceiling_bin" --n "$cn" --rounds 20 --json "$out/ceiling.json" | tee "$out/logs/ceiling.txt" >&2 \
    || log "ceiling run failed (see logs/ceiling.txt)"
fi

# --- servers -----------------------------------------------------------------------------------
SRV_PID=""; SRV_PORT=""; SRV_KIDS=(); SRV_TAG=""
SRV_WORKERS=2                # mcpfan --workers (the targeted worker sweep changes it per case)
wait_for_line() {            # wait_for_line FILE REGEX SECONDS -> prints the first match group
  local f="$1" re="$2" t="$3" i
  for ((i = 0; i < t * 20; i++)); do
    if [[ -f "$f" ]]; then
      local m
      m="$(sed -n -E "s/$re/\\1/p" "$f" | head -1)"
      if [[ -n "$m" ]]; then echo "$m"; return 0; fi
    fi
    kill -0 "$SRV_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
start_server() {             # start_server NAME TAG: sets SRV_PID, SRV_PORT, SRV_KIDS
  local name="$1" tag="$2" slog="$out/logs/$2.server.log"
  SRV_KIDS=(); SRV_TAG="$tag"
  case "$name" in
    mcpfan)
      "$mcpfan_bin" --listen 127.0.0.1:0 --workers "$SRV_WORKERS" --unix "$work/$tag.sock" 2>"$slog" &
      SRV_PID=$!; LIVE+=("$SRV_PID")
      SRV_PORT="$(wait_for_line "$slog" '^.*mcpfan: listening on 127\.0\.0\.1:([0-9]+).*' 10)" || return 1
      ;;
    nchan)
      local try
      for try in 1 2 3; do
        SRV_PORT="$(cpy freeport)"
        rm -rf "$work/nginx-$tag"
        bash "$here/nchan/run-nchan.sh" "$work/nginx-$tag" "$SRV_PORT" 2>"$slog" &
        SRV_PID=$!; LIVE+=("$SRV_PID")
        local i ok=0
        for ((i = 0; i < 100; i++)); do
          if curl -fsS -m 1 "http://127.0.0.1:$SRV_PORT/healthz" >/dev/null 2>&1; then ok=1; break; fi
          kill -0 "$SRV_PID" 2>/dev/null || break
          sleep 0.1
        done
        if [[ $ok -eq 1 ]]; then
          sleep 0.2
          read -r -a SRV_KIDS <<<"$(cpy tree "$SRV_PID" | cut -d' ' -f2-)"
          cp "$work/nginx-$tag/nginx.conf" "$out/logs/nchan-nginx.conf" 2>/dev/null || true
          return 0
        fi
        stop_pid "$SRV_PID"
      done
      return 1
      ;;
    sdkhub)
      node "$here/sdkhub/hub.mjs" --max-subscriptions 20000 2>"$slog" &
      SRV_PID=$!; LIVE+=("$SRV_PID")
      SRV_PORT="$(wait_for_line "$slog" '^sdkhub: listening on 127\.0\.0\.1:([0-9]+)$' 20)" || return 1
      ;;
  esac
}
stop_server() {
  [[ -n "$SRV_PID" ]] || return 0
  stop_pid "$SRV_PID" "${SRV_KIDS[@]}"
  if [[ -f "$work/nginx-$SRV_TAG/error.log" ]]; then
    [[ -s "$work/nginx-$SRV_TAG/error.log" ]] && cp "$work/nginx-$SRV_TAG/error.log" "$out/logs/$SRV_TAG.nginx-error.log"
    rm -rf "$work/nginx-$SRV_TAG"
  fi
  SRV_PID=""; SRV_KIDS=()
}
server_pid_for_loadgen() {   # the PID --server-pid gets
  # nginx: the master does no work; both workers do. The load generator takes one PID, so it
  # gets the master and sums its process tree if it supports that; the watcher (compare.py
  # watch) sums the whole tree in any case.
  echo "$SRV_PID"
}

# --- cases --------------------------------------------------------------------------------------
CASES=()                      # "case|scenario|N|extra args"
for sc in "${SCENARIOS[@]}"; do
  case "$sc" in
    burst)
      for n in "${NS[@]}"; do
        r="$rounds"
        [[ "$r" == auto ]] && r=$(( (100000 + n - 1) / n )) && [[ $r -lt 10 ]] && r=10
        CASES+=("burst-$n|burst|$n|--rounds $r")
      done ;;
    sustained)
      for n in "${NS[@]}"; do
        rate=$(( sustained_load / n )); [[ $rate -ge 1 ]] || rate=1
        CASES+=("sustained-$n|sustained|$n|--rate $rate --duration $duration")
      done ;;
    overload) CASES+=("overload-$overload_streams|sustained|$overload_streams|--rate $overload_rate --duration $duration") ;;
    slow) CASES+=("slow-$slow_streams|sustained|$slow_streams|--rate $slow_rate --duration $slow_duration --slow-readers $slow_fraction --slow-read-bytes-per-s $slow_bps --pad-bytes $slow_pad") ;;
    storm) for n in "${NS[@]}"; do CASES+=("storm-$n|storm|$n|"); done ;;
    targeted)
      # every server at each rate; then mcpfan alone at each worker count (8000/s and max).
      # The 5th field restricts the servers, the 6th is mcpfan's --workers.
      targs="--stream-uris own --extra-uris $targeted_extra --duration $targeted_duration --window $window"
      for r in "${TRATES[@]}"; do
        CASES+=("targeted-$r|targeted|$targeted_streams|--rate $r $targs||")
      done
      for w in "${TWORKERS[@]}"; do
        for r in "$targeted_sweep_rate" max; do
          CASES+=("targeted_w$w-$r|targeted|$targeted_streams|--rate $r $targs|mcpfan|$w")
        done
      done ;;
  esac
done

run_case() {                  # run_case REP SERVER CASE SCENARIO N EXTRA [KIND] [TIMEOUT_S]
  # KIND: the load generator's --kind for mcpfan (listen by default; stdio uses its --unix socket)
  local rep="$1" srv="$2" case="$3" scen="$4" n="$5" extra="$6" kind="${7:-listen}" tmo_override="${8:-}"
  local tag="r$rep-$srv-$case" note=""
  if [[ "$srv" == sdkhub && "$n" -gt "$sdkhub_max_n" ]]; then
    log "$tag: skipped (N=$n > --sdkhub-max-n $sdkhub_max_n)"
    echo '{}' >"$work/empty.json"
    cpy record --runs "$runs" --rep "$rep" --server "$srv" --case "$case" --scenario "$scen" --n "$n" \
      --rc 3 --wall 0 --stdout /dev/null --watch "$work/empty.json" --argv "" --note "skipped: N above --sdkhub-max-n $sdkhub_max_n"
    return 0
  fi
  if ! start_server "$srv" "$tag"; then
    log "$tag: server did not start (logs/$tag.server.log)"
    stop_server
    echo '{}' >"$work/empty.json"
    cpy record --runs "$runs" --rep "$rep" --server "$srv" --case "$case" --scenario "$scen" --n "$n" \
      --rc 4 --wall 0 --stdout /dev/null --watch "$work/empty.json" --argv "" --note "server did not start"
    return 0
  fi
  local target="http://127.0.0.1:$SRV_PORT" kindargs
  case "$srv" in
    mcpfan)
      if [[ "$kind" == stdio ]]; then kindargs=(--kind stdio --target "$target" --unix "$work/$tag.sock")
      else kindargs=(--kind "$kind" --target "$target"); fi ;;
    nchan) kindargs=(--kind nchan --target "$target" --sub-path /sub/bench --publish-url "$target/pub/bench") ;;
    sdkhub) kindargs=(--kind sdkhub --target "$target" --publish-url "$target/publish") ;;
  esac
  if [[ "$scen" == targeted ]]; then
    # P keep-alive publisher connections: the same URL P times. nchan: one channel per stream,
    # so the URL is a prefix the load generator appends the stream's channel to, and the
    # streams subscribe through the multiplexed location (/sub/multi/<own>,<extras>).
    local path p urls=""
    case "$srv" in mcpfan) path=/v1/publish ;; nchan) path=/pub/s/ ;; sdkhub) path=/publish ;; esac
    for ((p = 0; p < publishers; p++)); do urls+="${urls:+,}$target$path"; done
    case "$srv" in
      nchan) kindargs=(--kind nchan --target "$target" --sub-path /sub/multi/ --publish-url "$urls") ;;
      *) kindargs=(--kind "${kindargs[1]}" --target "$target" --publish-url "$urls") ;;
    esac
  fi
  # bound: connect + the scenario itself + margin
  local tmo=120
  local -a extra_a=()
  [[ -n "$extra" ]] && read -r -a extra_a <<<"$extra"
  if [[ "$scen" == sustained ]]; then    # this case's own --duration
    local i d="$duration"
    for ((i = 0; i + 1 < ${#extra_a[@]}; i++)); do [[ "${extra_a[i]}" == --duration ]] && d="${extra_a[i+1]}"; done
    tmo=$(( ${d%.*} + 120 ))
  fi
  # targeted: connect (10k SDK-hub listens: ~10 s) + warm-up (<= 120 s; the hub ~30 s) + the run + drain
  [[ "$scen" == targeted ]] && tmo=$(( ${targeted_duration%.*} + 240 ))
  [[ -n "$tmo_override" ]] && tmo="$tmo_override"
  local -a argv=("$loadgen" "${kindargs[@]}" --streams "$n" --scenario "$scen" "${extra_a[@]}"
                 --server-pid "$(server_pid_for_loadgen)" --timeout-s "$tmo")
  local watch="$work/$tag.watch.json"
  python3 "$here/compare.py" watch --out "$watch" --max-s $(( tmo + 60 )) "$SRV_PID" &
  local wpid=$!; LIVE+=("$wpid")
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  # in the background + wait, so a signal to this script stops it at once (trap -> cleanup)
  timeout -k 10 $(( tmo + 30 )) "${argv[@]}" >"$out/logs/$tag.txt" 2>"$out/logs/$tag.err" &
  local lpid=$!; LIVE+=("$lpid")
  wait "$lpid" || rc=$?
  t1=$(date +%s.%N)
  forget_pid "$lpid"
  stop_pid "$wpid"
  stop_server
  [[ $rc -eq 124 || $rc -eq 137 ]] && note="load generator timed out after $(( tmo + 30 )) s"
  local shown="${argv[*]}"; shown="${shown/#$loadgen/mcpfan-load}"
  cpy record --runs "$runs" --rep "$rep" --server "$srv" --case "$case" --scenario "$scen" --n "$n" \
    --rc "$rc" --wall "$(awk "BEGIN{print $t1-$t0}")" --stdout "$out/logs/$tag.txt" --watch "$watch" \
    --argv "$shown" --note "$note"
  cp "$watch" "$out/logs/$tag.watch.json" 2>/dev/null || true
  log "$tag: exit $rc ($(awk "BEGIN{printf \"%.1f\", $t1-$t0}") s) $(tail -1 "$out/logs/$tag.txt" | cut -c1-160)"
}

log "results in ${out#$root/}; ${#CASES[@]} cases x ${#SERVERS[@]} servers x $reps reps"
for ((rep = 1; rep <= reps; rep++)); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r case scen n extra only workers <<<"$c"
    for srv in "${SERVERS[@]}"; do
      [[ -n "$only" && "$srv" != "$only" ]] && continue
      SRV_WORKERS="${workers:-2}"
      run_case "$rep" "$srv" "$case" "$scen" "$n" "$extra"
      SRV_WORKERS=2
    done
  done
done

# capacity (--capacity): mcpfan alone, capacity_n listen streams, then capacity_n stdio streams
# (its --unix socket), each stream receiving a 3-round burst exactly once; one run each.
if [[ $capacity -eq 1 ]]; then
  if ! has_server mcpfan; then
    log "capacity: skipped (mcpfan is not in --servers)"
  else
    nofile="$(ulimit -n)"
    if [[ "$nofile" != unlimited && "$nofile" -lt $(( capacity_n + 200 )) ]]; then
      log "capacity: the descriptor limit is $nofile (ulimit -n), under $capacity_n + 200: the runs will likely fail"
    fi
    for kind in listen stdio; do
      run_case 1 mcpfan "capacity_$kind-$capacity_n" burst "$capacity_n" "--rounds 3" "$kind" 300
    done
  fi
fi

# the ceiling once more at the end: the summary takes, per N, the better of the two measurements
# (the limit is what the machine can do when nothing else disturbs it)
if [[ $broadcast -eq 1 ]]; then
  log "raw-socket ceiling again (N=$cn)"
  timeout 120 "$ceiling_bin" --n "$cn" --rounds 20 --json "$out/ceiling.json" | tee -a "$out/logs/ceiling.txt" >&2 \
    || log "ceiling run failed (see logs/ceiling.txt)"
fi

# --- 5. table, JSON, charts ---------------------------------------------------------------------
cpy summarise "$out"
log "wrote ${out#$root/}/{table.md,summary.json,runs.jsonl,*.png}$([[ $broadcast -eq 1 ]] && echo " and ceiling.json")"
