#!/usr/bin/env bash
# TLS and HTTP/2 on the subscriber side (docs/performance.md "TLS and HTTP/2"): server CPU per
# delivery of a burst over plaintext HTTP/1.1, TLS HTTP/1.1, TLS h2 and h2c; server memory per
# h2 stream and per TLS h2 connection; optionally nginx+nchan over TLS and h2 as the peer, and
# the server's CPU per full TLS handshake.
#
#   bash bench/tls_h2.sh [--reps 3] [--n 10000] [--rounds 10] [--k 1000] [--nchan] [--handshakes]
#                        [--memory-only | --no-memory] [--uring-ab] [--build-dir build-release] [--out DIR]
#   (--memory-only: step 4 alone, the memory per h2 stream and per connection; --no-memory: without it;
#    --uring-ab: adds plain-libuv and tls-libuv, the same servers with --io-uring-entries 0, so the
#    ring's sends and libuv's writes are compared in the same run)
#
# 1. builds mcpfan and mcpfan-load (Release, -j2) in --build-dir;
# 2. makes a CA and a server certificate (ECDSA P-256, SAN localhost and 127.0.0.1) with the
#    openssl CLI in a temp folder;
# 3. for rep in 1..R, for each case (interleaved): a fresh server on ephemeral loopback ports,
#    `mcpfan-load --kind listen --streams N --scenario burst --rounds R --server-pid PID` over the
#    case's transport, the server stopped by its PID. mcpfan: --workers 2, publishes to a
#    plaintext --publish-listen; nchan: bench/compare/nchan's config plus a `listen ... ssl http2`
#    on the same server block, publishes to its plaintext port;
# 4. memory, per rep, a fresh server each: N streams as N/K h2 connections x K streams, then N/K
#    connections x 1 stream, then 200 connections x 1 stream (RSS after every stream is confirmed
#    minus before the first connect, from the load generator);
# 5. --handshakes: a fresh server (mcpfan --workers 1; nginx 1 worker with --nchan), 5 x
#    `h2load -n 1000 -c 1000 -m 1 --h1 https://.../livez` (each h2load client is one new TLS
#    connection with one request), server CPU from /proc before and after;
# 6. prints medians (and ratios) as a markdown table; raw JSON lines go to --out (default
#    ${MCPFAN_RESULTS_DIR:-build/bench-results}/tls-h2-<time>/).
# Every process it starts is stopped by PID (EXIT trap too). Bounded: each load generator run has
# --timeout-s 120; the default run takes about 10 minutes on the 2-core VM.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
reps=3 n=10000 rounds=10 k=1000 nchan=0 handshakes=0 memory_only=0 memory=1 uring_ab=0 build="$root/build-release" out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --n) n="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --k) k="$2"; shift 2 ;;
    --nchan) nchan=1; shift ;;
    --handshakes) handshakes=1; shift ;;
    --memory-only) memory_only=1; shift ;;
    --uring-ab) uring_ab=1; shift ;;
    --no-memory) memory=0; shift ;;
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: bash bench/tls_h2.sh [--reps R] [--n N] [--rounds R] [--k K] [--nchan] [--handshakes]" \
         "[--memory-only | --no-memory] [--uring-ab] [--build-dir DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
out="${out:-${MCPFAN_RESULTS_DIR:-$root/build/bench-results}/tls-h2-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
work="$(mktemp -d)"
SRV_PID="" PORT="" PPORT=""  # the one running server; start_* set them
cleanup() {
  if [[ -n "$SRV_PID" ]]; then
    kill "$SRV_PID" 2>/dev/null || true
    wait "$SRV_PID" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. build
export CCACHE_BASEDIR="$root"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMCPFAN_BUILD_TESTS=OFF >"$out/cmake.log" 2>&1
cmake --build "$build" --target mcpfan mcpfan-load -j2 >>"$out/cmake.log" 2>&1
mcpfan="$build/tools/mcpfan/mcpfan"
load="$build/tools/mcpfan-load/mcpfan-load"

# ---- 2. certificates
c="$work/certs"
mkdir -p "$c"
(
  cd "$c"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key
  openssl req -new -x509 -key ca.key -subj "/CN=mcpfan bench CA" -days 2 -out ca.pem \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out server.key
  openssl req -new -key server.key -subj /CN=localhost -out server.csr
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >ext.cnf
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -sha256 \
    -extfile ext.cnf -out server.pem
) >"$out/openssl.log" 2>&1

# ---- servers: start_* set SRV_PID, PORT (subscribers), PPORT (publishes, plaintext)
wait_line() {  # wait_line FILE SED-REGEX: the first capture, within 10 s
  local i m
  for ((i = 0; i < 200; i++)); do
    m="$(sed -n -E "s/$2/\\1/p" "$1" | head -1)"
    if [[ -n "$m" ]]; then echo "$m"; return 0; fi
    kill -0 "$SRV_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
start_mcpfan() {  # start_mcpfan tls|plain WORKERS [more mcpfan flags...]
  local log tls=() mode="$1" workers="$2"
  shift 2
  log="$(mktemp -p "$work" mcpfan.XXXX.log)"  # a new file: no port read from the previous server's log
  [[ "$mode" == tls ]] && tls=(--tls-cert "$c/server.pem" --tls-key "$c/server.key")
  "$mcpfan" --listen 127.0.0.1:0 --publish-listen 127.0.0.1:0 --insecure --workers "$workers" "${tls[@]}" "$@" \
    2>"$log" &
  SRV_PID=$!
  PORT="$(wait_line "$log" '^.*mcpfan: listening on 127\.0\.0\.1:([0-9]+).*')" || { cat "$log" >&2; exit 1; }
  PPORT="$(wait_line "$log" '^.*publish listener on 127\.0\.0\.1:([0-9]+).*')" || { cat "$log" >&2; exit 1; }
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_nchan() {  # start_nchan WORKERS: PPORT plaintext (publishes), PORT TLS with h2 (subscribers)
  local d="$work/nginx" tport
  rm -rf "$d"; mkdir -p "$d"
  PPORT="$(free_port)"; tport="$(free_port)"
  sed -e "s#@PREFIX@#$d#g" -e "s#@PORT@#$PPORT#g" -e "s#^worker_processes 2;#worker_processes $1;#" \
    -e "s#^\( *\)listen 127.0.0.1:$PPORT reuseport backlog=8192;.*#&\n\1listen 127.0.0.1:$tport ssl http2 reuseport backlog=8192;\n\1ssl_certificate $c/server.pem;\n\1ssl_certificate_key $c/server.key;\n\1ssl_protocols TLSv1.2 TLSv1.3;\n\1http2_max_concurrent_streams $k;\n\1location = /livez { return 200 \"ok\\\\n\"; }#" \
    "$here/compare/nchan/nginx.conf.in" >"$d/nginx.conf"
  grep -q "ssl http2" "$d/nginx.conf" || { echo "tls_h2.sh: could not add the TLS listener to nginx.conf" >&2; exit 1; }
  /usr/sbin/nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log" 2>"$d/stderr" &
  SRV_PID=$!
  PORT="$tport"
  local i
  for ((i = 0; i < 100; i++)); do
    curl -sf "http://127.0.0.1:$PPORT/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "nginx did not start: $(cat "$d/stderr" "$d/error.log" 2>/dev/null)" >&2
  exit 1
}
stop_server() {
  kill "$SRV_PID" 2>/dev/null || true
  wait "$SRV_PID" 2>/dev/null || true
  SRV_PID=""
  sleep 1  # the sockets go
}

# ---- 3. bursts: case name, server, load generator transport arguments
declare -A SERVER ARGS FLAGS  # FLAGS: more mcpfan flags of a case
cases=(plain tls tls-h2 h2c)
SERVER[plain]="mcpfan plain"; ARGS[plain]=""
SERVER[tls]="mcpfan tls"; ARGS[tls]="--tls --ca-file $c/ca.pem"
SERVER[tls-h2]="mcpfan tls"; ARGS[tls-h2]="--tls --ca-file $c/ca.pem --h2 --streams-per-conn $k"
SERVER[h2c]="mcpfan plain"; ARGS[h2c]="--h2 --streams-per-conn $k"
if [[ $uring_ab == 1 ]]; then
  cases+=(plain-libuv tls-libuv)
  SERVER[plain-libuv]="mcpfan plain"; FLAGS[plain-libuv]="--io-uring-entries 0"; ARGS[plain-libuv]=""
  SERVER[tls-libuv]="mcpfan tls"; FLAGS[tls-libuv]="--io-uring-entries 0"; ARGS[tls-libuv]="${ARGS[tls]}"
fi
if [[ $nchan == 1 ]]; then
  [[ -x /usr/sbin/nginx && -f /usr/lib/nginx/modules/ngx_nchan_module.so ]] || {
    echo "tls_h2.sh: --nchan needs nginx and libnginx-mod-nchan (apt-get install nginx libnginx-mod-nchan)" >&2
    exit 1
  }
  cases+=(nchan-plain nchan-tls nchan-tls-h2)
  SERVER[nchan-plain]="nchan"; ARGS[nchan-plain]=""
  SERVER[nchan-tls]="nchan"; ARGS[nchan-tls]="--tls --ca-file $c/ca.pem"
  SERVER[nchan-tls-h2]="nchan"; ARGS[nchan-tls-h2]="--tls --ca-file $c/ca.pem --h2 --streams-per-conn $k"
fi
start_for() {  # start_for CASE [WORKERS]
  local s="${SERVER[$1]}"
  # shellcheck disable=SC2086
  if [[ "$s" == nchan ]]; then start_nchan "${2:-2}"; else start_mcpfan "${s#mcpfan }" "${2:-2}" ${FLAGS[$1]:-}; fi
}
scheme_of() { [[ "${ARGS[$1]}" == *--tls* ]] && echo https || echo http; }
run_load() {  # run_load CASE JSONFILE STREAMS [extra args...]: one mcpfan-load run against the running server
  local cs="$1" json="$2" streams="$3" port="$PORT"
  shift 3
  [[ "$cs" == nchan-plain ]] && port="$PPORT"  # nginx's plaintext listener
  local kind=(--kind listen --publish-url "http://127.0.0.1:$PPORT/v1/publish")
  [[ "${SERVER[$cs]}" == nchan ]] && kind=(--kind nchan --sub-path /sub/bench
    --publish-url "http://127.0.0.1:$PPORT/pub/bench")
  # shellcheck disable=SC2086
  "$load" "${kind[@]}" --target "$(scheme_of "$cs")://127.0.0.1:$port" ${ARGS[$cs]} --streams "$streams" \
    --server-pid "$SRV_PID" --timeout-s 120 --json "$json" "$@" >"$work/load.out" 2>&1 || {
    echo "tls_h2.sh: $cs failed:" >&2
    tail -5 "$work/load.out" >&2
  }
}
[[ $memory_only == 1 ]] || echo "tls_h2.sh: $reps reps x ${#cases[@]} cases of a $n-stream burst ($rounds rounds); results in $out" >&2
for ((r = 1; memory_only == 0 && r <= reps; r++)); do
  for cs in "${cases[@]}"; do
    start_for "$cs"
    run_load "$cs" "$out/burst-$cs.jsonl" "$n" --scenario burst --rounds "$rounds"
    stop_server
  done
done

# ---- 4. memory per h2 stream and per connection (mcpfan)
for ((r = 1; memory == 1 && r <= reps; r++)); do
  for cs in tls-h2 h2c; do
    start_for "$cs"
    run_load "$cs" "$out/mem-$cs-full.jsonl" "$n" --scenario burst --rounds 1
    stop_server
    start_for "$cs"
    run_load "$cs" "$out/mem-$cs-conns.jsonl" "$((n / k))" --streams-per-conn 1 --scenario burst --rounds 1
    stop_server
    start_for "$cs"
    run_load "$cs" "$out/mem-$cs-200.jsonl" 200 --streams-per-conn 1 --scenario burst --rounds 1
    stop_server
  done
done

# ---- 5. handshakes: server CPU per full TLS handshake
cpu_ticks() {  # utime + stime of PID and its children
  local p t=0
  for p in "$1" $(pgrep -P "$1" || true); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$t"
}
if [[ $handshakes == 1 ]]; then
  command -v h2load >/dev/null || { echo "tls_h2.sh: --handshakes needs h2load (apt-get install nghttp2-client)" >&2; exit 1; }
  hs_servers=(mcpfan)
  [[ $nchan == 1 ]] && hs_servers+=(nchan)
  for ((r = 1; r <= reps; r++)); do
    for s in "${hs_servers[@]}"; do
      if [[ $s == nchan ]]; then start_nchan 1; else start_mcpfan tls 1; fi
      t0=$(cpu_ticks "$SRV_PID"); w0=$(date +%s.%N); ok=0
      for _ in 1 2 3 4 5; do
        h2load -n 1000 -c 1000 -m 1 --h1 "https://127.0.0.1:$PORT/livez" >"$work/h2load.out" 2>&1 || true
        ok=$((ok + $(sed -n -E 's/^requests: .* ([0-9]+) succeeded.*/\1/p' "$work/h2load.out")))
      done
      t1=$(cpu_ticks "$SRV_PID"); w1=$(date +%s.%N)
      resumed=""
      [[ $s == mcpfan ]] && resumed=$(curl -s "http://127.0.0.1:$PPORT/metrics" |
        awk '/^mcpfan_tls_resumed_total /{print $2}')
      echo "{\"server\":\"$s\",\"handshakes\":$ok,\"cpu_ticks\":$((t1 - t0)),\"clk_tck\":$(getconf CLK_TCK)," \
        "\"wall_s\":$(awk -v a="$w0" -v b="$w1" 'BEGIN{print b - a}'),\"resumed\":${resumed:-null}}" >>"$out/handshakes.jsonl"
      stop_server
    done
  done
fi

# ---- 6. the tables (stdout) and the charts (gnuplot PNGs in --out, when gnuplot is there)
python3 "$here/tls_h2_summary.py" "$out" "$n" "$k" "${cases[@]}"
