#!/usr/bin/env bash
# loadgen_smoke: starts mcpfan on an ephemeral loopback port, runs mcpfan-load
#   1. burst: 200 listen streams, 3 rounds
#   2. sustained: 200 listen streams, 50 publishes/s for 2 s
#   3. the same with 10 % slow readers (fast/slow split, mcpfan's /metrics read)
#   4. targeted: 200 streams with their own URIs, 500 publishes/s each to one stream; then
#      at the maximum rate over 2 publisher connections, with 2 extra URIs per stream
#      and with 16 notifications per POST; task listens (--task-listens), task notifications of
#      200 B and 8 KiB (--params-bytes), the task states mcpfan then keeps, and over stdio
#   5. receive + publish driven over stdin (bench/cluster's protocol)
#   6. HTTP/2: a burst and a targeted run as h2c streams (--h2, 4 and 2 connections); with the
#      openssl CLI, a second mcpfan with TLS: a burst over TLS HTTP/1.1 and over TLS h2
# and checks each exits 0 with a last-line JSON object showing every delivery received.
# The server is stopped by its PID (TERM, then KILL after 3 s), also on failure.
#
#   smoke.sh PATH/TO/mcpfan PATH/TO/mcpfan-load
set -uo pipefail

server_bin="$1"
load_bin="$2"
tmp="$(mktemp -d)"
server_pid=""
tls_pid=""

cleanup() {
  if [[ -n "$tls_pid" ]] && kill -0 "$tls_pid" 2>/dev/null; then
    kill -TERM "$tls_pid" 2>/dev/null
    wait "$tls_pid" 2>/dev/null
  fi
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "loadgen_smoke: FAIL: $*" >&2
  for f in "$tmp"/*.out; do [[ -f "$f" ]] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  [[ -f "$tmp/server.err" ]] && { echo "--- server stderr" >&2; tail -20 "$tmp/server.err" >&2; }
  exit 1
}

# json_get FILE .a.b: prints the value ("null" when absent); fails when FILE is not JSON.
# jq when installed, else python3.
json_get() {
  if command -v jq >/dev/null 2>&1; then
    jq -r "$2" "$1"
  else
    python3 - "$1" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].strip('.').split('.'):
    v = v.get(k) if isinstance(v, dict) else None
print(json.dumps(v) if isinstance(v, (bool, dict, list)) or v is None else v)
PY
  fi
}
has() { local v; v="$(json_get "$1" "$2")" && [[ "$v" != "null" ]]; }

"$server_bin" --listen 127.0.0.1:0 --workers 2 --unix "$tmp/mcpfan.sock" 2>"$tmp/server.err" &
server_pid=$!
port=""
for _ in $(seq 100); do  # up to 10 s
  port="$(grep -m1 -oE 'listening on 127\.0\.0\.1:[0-9]+' "$tmp/server.err" 2>/dev/null | sed 's/.*://')"
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail "mcpfan exited before listening"
  sleep 0.1
done
[[ -n "$port" ]] || fail "mcpfan did not log 'listening on 127.0.0.1:PORT' within 10 s"

run() {  # run NAME ARGS...
  local name="$1"; shift
  timeout 60 "$load_bin" --kind listen --target "http://127.0.0.1:$port" --server-pid "$server_pid" --timeout-s 45 "$@" \
    >"$tmp/$name.out" 2>&1
  local rc=$?
  [[ $rc -eq 0 ]] || fail "$name: mcpfan-load exited $rc"
  tail -n 1 "$tmp/$name.out" >"$tmp/$name.json"
  json_get "$tmp/$name.json" '.kind' >/dev/null 2>&1 || fail "$name: the last line is not a JSON object"
  [[ "$(json_get "$tmp/$name.json" '.ok')" == "true" ]] || fail "$name: ok is not true"
}

run burst --streams 200 --scenario burst --rounds 3
[[ "$(json_get "$tmp/burst.json" '.burst.rounds')" == "3" ]] || fail "burst: want 3 rounds"
[[ "$(json_get "$tmp/burst.json" '.streams')" == "200" ]] || fail "burst: want 200 streams"
[[ "$(json_get "$tmp/burst.json" '.checks.violations')" == "0" ]] || fail "burst: violations"
has "$tmp/burst.json" '.burst.last_delivery_ms.median' || fail "burst: no median"
has "$tmp/burst.json" '.burst.deliveries_per_s' || fail "burst: no deliveries_per_s"
has "$tmp/burst.json" '.server.rss_kib_per_stream' || fail "burst: no server figures"

run sustained --streams 200 --scenario sustained --rate 50 --duration 2
expected="$(json_get "$tmp/sustained.json" '.sustained.expected')"
received="$(json_get "$tmp/sustained.json" '.sustained.received')"
coalesced="$(json_get "$tmp/sustained.json" '.sustained.coalesced')"
lost="$(json_get "$tmp/sustained.json" '.sustained.lost')"
[[ "$expected" == "20000" ]] || fail "sustained: want expected 20000 (200 streams x 100 publishes), got $expected"
[[ "$lost" == "0" ]] || fail "sustained: lost $lost"
# 50/s to 200 streams is far below what mcpfan writes: nothing should even be coalesced.
[[ "$received" == "$expected" && "$coalesced" == "0" ]] || fail "sustained: received $received, coalesced $coalesced of $expected"
has "$tmp/sustained.json" '.sustained.latency_ms.p99' || fail "sustained: no p99"

# Slow readers: 10 % of the streams read 2 KiB/s; the fast ones must still get everything, and
# mcpfan's /metrics counters must be reported.
run slow --streams 200 --scenario sustained --rate 50 --duration 2 --slow-readers 0.1 --slow-read-bytes-per-s 2048
[[ "$(json_get "$tmp/slow.json" '.sustained.fast.streams')" == "180" ]] || fail "slow: want 180 fast streams"
[[ "$(json_get "$tmp/slow.json" '.sustained.slow.streams')" == "20" ]] || fail "slow: want 20 slow streams"
[[ "$(json_get "$tmp/slow.json" '.sustained.fast.received')" == "$(json_get "$tmp/slow.json" '.sustained.fast.expected')" ]] \
  || fail "slow: the fast streams did not receive every update"
has "$tmp/slow.json" '.sustained.fast.latency_ms.p99' || fail "slow: no fast p99"
has "$tmp/slow.json" '.server_metrics.deliveries' || fail "slow: no server_metrics from /metrics"

# Targeted: each stream its own URI, each publish to one random stream; nothing lost,
# duplicated or misdelivered.
run targeted --streams 200 --stream-uris own --scenario targeted --rate 500 --duration 2
[[ "$(json_get "$tmp/targeted.json" '.targeted.published')" == "1000" ]] || fail "targeted: want 1000 publishes"
[[ "$(json_get "$tmp/targeted.json" '.targeted.lost')" == "0" ]] || fail "targeted: lost"
[[ "$(json_get "$tmp/targeted.json" '.targeted.tally.received')" == "1000" ]] || fail "targeted: want 1000 received"
[[ "$(json_get "$tmp/targeted.json" '.targeted.tally.misdelivered')" == "0" ]] || fail "targeted: misdelivered"

# Targeted at the maximum rate over 2 publisher connections (window 4), with 2 extra
# never-published URIs per stream: the targeted-publish figures are reported, nothing goes astray.
pub="http://127.0.0.1:$port/v1/publish"
run targeted_max --streams 200 --stream-uris own --extra-uris 2 --scenario targeted --rate max --duration 1 --window 4 \
  --publish-url "$pub,$pub"
for k in lost duplicates misdelivered publish_errors; do
  [[ "$(json_get "$tmp/targeted_max.json" ".targeted.$k")" == "0" ]] || fail "targeted_max: $k is not 0"
done
[[ "$(json_get "$tmp/targeted_max.json" '.targeted.rate')" == "max" ]] || fail "targeted_max: rate is not max"
[[ "$(json_get "$tmp/targeted_max.json" '.targeted.publishers')" == "2" ]] || fail "targeted_max: want 2 publishers"
[[ "$(json_get "$tmp/targeted_max.json" '.targeted.subscriptions')" == "600" ]] || fail "targeted_max: want 600 subscriptions"
has "$tmp/targeted_max.json" '.targeted.cpu_us_per_publish' || fail "targeted_max: no CPU per publish"
has "$tmp/targeted_max.json" '.targeted.rss_bytes_per_subscription' || fail "targeted_max: no RSS per subscription"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["targeted"]; sys.exit(0 if t["publishes_per_s"] > 0 and t["acked"] == t["published"] > 0 else 1)' \
  "$tmp/targeted_max.json" || fail "targeted_max: no publishes answered"

# Array bodies (--batch 16: each POST carries 16 notifications, each to a random stream): every
# one is delivered once to its stream, and the published count is a multiple of 16.
run targeted_batch --streams 200 --stream-uris own --scenario targeted --rate max --duration 1 --window 2 --batch 16
for k in lost duplicates misdelivered publish_errors; do
  [[ "$(json_get "$tmp/targeted_batch.json" ".targeted.$k")" == "0" ]] || fail "targeted_batch: $k is not 0"
done
[[ "$(json_get "$tmp/targeted_batch.json" '.targeted.batch')" == "16" ]] || fail "targeted_batch: batch is not 16"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["targeted"]; sys.exit(0 if t["published"] > 0 and t["published"] % 16 == 0 and t["tally"]["received"] == t["published"] else 1)' \
  "$tmp/targeted_batch.json" || fail "targeted_batch: published not a multiple of 16, or not all received"
# Task listens (--task-listens): stream i's listen names task-<i> with the Tasks extension
# declared; each publish is a notifications/tasks for one random stream's task, its params padded
# to 200 bytes (then 8 KiB at the maximum rate over 2 connections): every one delivered once to
# the listen of its task (matched by taskId), and mcpfan keeps the newest state of each task.
run tasks --streams 200 --stream-uris own --task-listens --params-bytes 200 --scenario targeted --rate 500 --duration 2
for k in lost duplicates misdelivered publish_errors; do
  [[ "$(json_get "$tmp/tasks.json" ".targeted.$k")" == "0" ]] || fail "tasks: $k is not 0"
done
[[ "$(json_get "$tmp/tasks.json" '.targeted.tally.received')" == "1000" ]] || fail "tasks: want 1000 received"
[[ "$(json_get "$tmp/tasks.json" '.targeted.task_listens')" == "true" ]] || fail "tasks: task_listens is not true"
[[ "$(json_get "$tmp/tasks.json" '.server_metrics.task_states_after')" == "200" ]] \
  || fail "tasks: want 200 task states kept, got $(json_get "$tmp/tasks.json" '.server_metrics.task_states_after')"
run tasks_max --streams 200 --stream-uris own --task-listens --params-bytes 8192 --scenario targeted --rate max \
  --duration 1 --window 4 --publish-url "$pub,$pub"
for k in lost duplicates misdelivered publish_errors; do
  [[ "$(json_get "$tmp/tasks_max.json" ".targeted.$k")" == "0" ]] || fail "tasks_max: $k is not 0"
done
# Each kept state is one 8 KiB task notification as encoded, counted in both of its encodings
# (the frame and plain(): params of 8,192 bytes plus the envelope, twice).
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); m=t["server_metrics"]; b=m["task_states_bytes_after"]/m["task_states_after"]; sys.exit(0 if t["targeted"]["tally"]["received"] == t["targeted"]["published"] > 0 and 2 * 8192 <= b <= 2 * (8192 + 512) else 1)' \
  "$tmp/tasks_max.json" || fail "tasks_max: not all received, or kept states not of the published size"
# The same over stdio framing (--kind stdio on the server's --unix socket).
timeout 60 "$load_bin" --kind stdio --unix "$tmp/mcpfan.sock" --target "http://127.0.0.1:$port" --server-pid "$server_pid" \
  --timeout-s 45 --streams 100 --stream-uris own --task-listens --params-bytes 200 --scenario targeted --rate 200 \
  --duration 1 >"$tmp/tasks_stdio.out" 2>&1 || fail "tasks_stdio: mcpfan-load exited $?"
tail -n 1 "$tmp/tasks_stdio.out" >"$tmp/tasks_stdio.json"
[[ "$(json_get "$tmp/tasks_stdio.json" '.targeted.tally.received')" == "200" ]] || fail "tasks_stdio: want 200 received"
[[ "$(json_get "$tmp/tasks_stdio.json" '.targeted.misdelivered')" == "0" ]] || fail "tasks_stdio: misdelivered"
# A task listen is one task per stream, and only with the targeted scenario.
if "$load_bin" --kind listen --target "http://127.0.0.1:$port" --streams 1 --stream-uris own --extra-uris 1 --task-listens \
  --scenario targeted >"$tmp/tasks_extra.out" 2>&1; then fail "--task-listens with --extra-uris was accepted"; fi
grep -q -- "--task-listens needs" "$tmp/tasks_extra.out" || fail "--task-listens: no clear error: $(cat "$tmp/tasks_extra.out")"

# --batch with nchan is refused by name (nchan takes one message per POST).
if "$load_bin" --kind nchan --target "http://127.0.0.1:$port" --streams 1 --stream-uris own --scenario targeted --rate max \
  --batch 4 >"$tmp/batch_nchan.out" 2>&1; then fail "--batch with nchan was accepted"; fi
grep -q -- "--batch is for" "$tmp/batch_nchan.out" || fail "--batch with nchan: no clear error: $(cat "$tmp/batch_nchan.out")"

# Receive + publish over stdin (the cluster benchmark's protocol): 50 streams with both URIs,
# one broadcast (all 50 get it once) and one publish addressed to stream 7 (only it gets it).
timeout 60 python3 - "$load_bin" "$port" >"$tmp/controlled.out" 2>&1 <<'PY' || fail "receive/publish over stdin"
import json, subprocess, sys, time
load, port = sys.argv[1], sys.argv[2]
base = [load, "--kind", "listen", "--target", f"http://127.0.0.1:{port}", "--timeout-s", "50"]
rx = subprocess.Popen(base + ["--streams", "50", "--scenario", "receive", "--stream-uris", "both", "--uri", "file:///smoke/all",
                              "--own-uri-base", "file:///smoke/s/", "--index-base", "100"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
pub = subprocess.Popen(base + ["--streams", "0", "--scenario", "publish"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def ask(p, cmd, word):
    if cmd:
        p.stdin.write(cmd + "\n"); p.stdin.flush()
    for _ in range(100):
        line = p.stdout.readline()
        if not line:
            raise SystemExit(f"EOF waiting for {word}")
        if line.startswith(word):
            rest = line[len(word):].strip()
            return json.loads(rest) if rest.startswith("{") else rest
    raise SystemExit(f"no {word}")
assert ask(rx, None, "READY")["streams"] == 50
ask(pub, None, "READY")
ask(rx, "phase b perseq", "OK")
sent = ask(pub, "one 0 file:///smoke/all", "SENT")
assert sent["status"] == 202, sent
sent2 = ask(pub, "run 100 1 0 own file:///smoke/s/ 107 1", "DONE")
assert sent2["errors"] == 0, sent2
for _ in range(50):
    rep = ask(rx, "report", "REPORT")
    if rep["received"] >= 51:
        break
    time.sleep(0.05)
seqs = {s[0]: s[1] for s in rep["seqs"]}
assert seqs.get(sent["seq"]) == 50 and seqs.get(sent2["first_seq"]) == 1, rep
assert rep["received"] == 51 and rep["duplicates"] == 0 and rep["misdelivered"] == 0, rep
for p in (rx, pub):
    p.stdin.write("quit\n"); p.stdin.flush(); p.wait(20)
assert rx.returncode == 0 and pub.returncode == 0, (rx.returncode, pub.returncode)
print("controlled OK")
PY

# HTTP/2 with prior knowledge on the plaintext listener: the same checks, the same counts.
run h2c_burst --streams 200 --h2 --streams-per-conn 50 --scenario burst --rounds 3
[[ "$(json_get "$tmp/h2c_burst.json" '.loadgen.transport')" == "h2c" ]] || fail "h2c_burst: transport is not h2c"
[[ "$(json_get "$tmp/h2c_burst.json" '.loadgen.connections')" == "4" ]] || fail "h2c_burst: want 4 connections"
[[ "$(json_get "$tmp/h2c_burst.json" '.checks.violations')" == "0" ]] || fail "h2c_burst: violations"
run h2c_targeted --streams 200 --h2 --streams-per-conn 100 --stream-uris own --scenario targeted --rate 500 --duration 2
for k in lost duplicates misdelivered; do
  [[ "$(json_get "$tmp/h2c_targeted.json" ".targeted.$k")" == "0" ]] || fail "h2c_targeted: $k is not 0"
done
[[ "$(json_get "$tmp/h2c_targeted.json" '.targeted.tally.received')" == "1000" ]] || fail "h2c_targeted: want 1000"

# TLS: a second server with a certificate made here (skipped without the openssl CLI).
tls_note="TLS skipped (no openssl)"
if command -v openssl >/dev/null 2>&1; then
  (
    cd "$tmp" || exit 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem -out cert.pem -days 2 \
      -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1
  ) >"$tmp/openssl.log" 2>&1 || fail "openssl could not make a certificate: $(cat "$tmp/openssl.log")"
  "$server_bin" --listen 127.0.0.1:0 --workers 2 --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" \
    --publish-listen 127.0.0.1:0 --insecure 2>"$tmp/tls_server.err" &
  tls_pid=$!
  tport="" pport=""
  for _ in $(seq 100); do
    tport="$(grep -m1 -oE 'listening on 127\.0\.0\.1:[0-9]+' "$tmp/tls_server.err" 2>/dev/null | sed 's/.*://')"
    pport="$(grep -m1 -oE 'publish listener on 127\.0\.0\.1:[0-9]+' "$tmp/tls_server.err" 2>/dev/null | sed 's/.*://')"
    [[ -n "$tport" && -n "$pport" ]] && break
    kill -0 "$tls_pid" 2>/dev/null || fail "mcpfan with TLS exited: $(cat "$tmp/tls_server.err")"
    sleep 0.1
  done
  [[ -n "$tport" && -n "$pport" ]] || fail "mcpfan with TLS did not log its listeners within 10 s"
  for mode in tls tls_h2; do
    extra=()
    [[ $mode == tls_h2 ]] && extra=(--h2 --streams-per-conn 100)
    timeout 60 "$load_bin" --kind listen --target "https://127.0.0.1:$tport" --ca-file "$tmp/cert.pem" \
      --publish-url "http://127.0.0.1:$pport/v1/publish" --server-pid "$tls_pid" --timeout-s 45 --streams 200 \
      --scenario burst --rounds 3 "${extra[@]}" >"$tmp/$mode.out" 2>&1 || fail "$mode: mcpfan-load exited $?"
    tail -n 1 "$tmp/$mode.out" >"$tmp/$mode.json"
    [[ "$(json_get "$tmp/$mode.json" '.ok')" == "true" ]] || fail "$mode: ok is not true"
    [[ "$(json_get "$tmp/$mode.json" '.checks.violations')" == "0" ]] || fail "$mode: violations"
    has "$tmp/$mode.json" '.server_metrics.deliveries' || fail "$mode: no /metrics from the publish listener"
  done
  [[ "$(json_get "$tmp/tls.json" '.loadgen.transport')" == "https/1.1" ]] || fail "tls: transport is not https/1.1"
  [[ "$(json_get "$tmp/tls_h2.json" '.loadgen.transport')" == "h2" ]] || fail "tls_h2: transport is not h2"
  tls_note="TLS and TLS h2 bursts OK"
fi

echo "loadgen_smoke: OK (burst median $(json_get "$tmp/burst.json" '.burst.last_delivery_ms.median') ms;" \
     "sustained p99 $(json_get "$tmp/sustained.json" '.sustained.latency_ms.p99') ms;" \
     "targeted $(json_get "$tmp/targeted.json" '.targeted.tally.received') of 1000; $(tail -n 1 "$tmp/controlled.out");" \
     "h2c OK; $tls_note)"
