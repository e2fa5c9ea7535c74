#!/usr/bin/env bash
# Listens opened per second with OAuth on and off (docs/performance.md "OAuth"): the same burst of
# N listens, each its own connection, against three fresh servers, interleaved within each rep:
#   none    no client authentication (loopback);
#   static  --jwt-public-key-file: a static RS256 key, a token made by mcpfan-token;
#   oauth   --oauth-issuer: a real oidc-provider (tests/interop/oauth/provider.mjs), its RS256
#           access token (client_credentials) verified against the JWKS mcpfan fetched; every
#           listen carries the same token, so after the first it is found in the token cache
#           (--oauth-token-cache: a client reconnecting with its token);
#   oauth-verify  the same with --oauth-token-cache 0: the signature checked on every listen (as
#           many clients with a token each would cost).
# Per run: listens confirmed per second (the load generator's connect phase) and server CPU per
# listen (utime+stime of the server over the whole run / N; the run's one publish is noise).
#
#   bash bench/oauth_listens.sh [--reps 5] [--streams 5000] [--build-dir build-release] [--out DIR]
#
# Needs node (the provider; its pinned packages are installed on first use) and a build of
# mcpfan, mcpfan-load and mcpfan-token in --build-dir. Raw lines: --out (default
# ${MCPFAN_RESULTS_DIR:-build/bench-results}/oauth-<time>/runs.jsonl); medians printed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
reps=5 streams=5000 build="$root/build-release" out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --streams) streams="$2"; shift 2 ;;
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: bash bench/oauth_listens.sh [--reps R] [--streams N] [--build-dir DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
mcpfan="$build/tools/mcpfan/mcpfan" load="$build/tools/mcpfan-load/mcpfan-load"
token_tool="$build/tools/mcpfan-token/mcpfan-token"
for b in "$mcpfan" "$load" "$token_tool"; do
  [[ -x "$b" ]] || { echo "no $b: build it first (mcpfan mcpfan-load mcpfan-token)" >&2; exit 2; }
done
out="${out:-${MCPFAN_RESULTS_DIR:-$root/build/bench-results}/oauth-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
work=$(mktemp -d)
ulimit -n 30000 2>/dev/null || true
. "$here/mcpfan_server.sh"
provider_pid=""
cleanup() {
  stop_mcpfan
  if [[ -n $provider_pid ]]; then kill "$provider_pid" 2>/dev/null || true; wait "$provider_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The provider, its token, and the static key's token.
oauth_dir="$root/tests/interop/oauth"
bash "$oauth_dir/ensure_deps.sh" >/dev/null
resource="https://mcp.bench.test/mcp"
node "$oauth_dir/provider.mjs" --make-keys "$work/keys.json" --kid bench-1 --alg RS256
node "$oauth_dir/provider.mjs" --port 0 --keys "$work/keys.json" --resource "$resource" >"$work/provider.out" \
  2>"$work/provider.err" &
provider_pid=$!
issuer=""
for _ in $(seq 100); do
  issuer=$(sed -n 's/^READY //p' "$work/provider.out")
  [[ -n $issuer ]] && break
  sleep 0.1
done
[[ -n $issuer ]] || { echo "the provider did not start: $(cat "$work/provider.err")" >&2; exit 1; }
oauth_token=$(curl -s -X POST "$issuer/token" -d grant_type=client_credentials -d client_id=svc-acme \
  -d client_secret=svc-acme-secret-0123456789 -d resource="$resource" -d scope=mcp:listen |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/static.key" 2>/dev/null
openssl pkey -in "$work/static.key" -pubout -out "$work/static.pub"
static_token=$("$token_tool" --alg RS256 --key-file "$work/static.key" --tenant default --exp-in 86400)

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "args: reps=$reps streams=$streams build=$build"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/run.txt"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

run() {  # case token server-args...
  local name=$1 token=$2
  shift 2
  start_mcpfan "$mcpfan" --workers 2 "$@"
  local before rc=0 bearer=()
  [[ -n $token ]] && bearer=(--bearer "$token")
  before=$(cpu_ticks "$MCPFAN_PID")
  "$load" --kind listen --target "http://127.0.0.1:$MCPFAN_PORT" --streams "$streams" --scenario burst --rounds 1 \
    "${bearer[@]}" --timeout-s 120 >"$out/last.out" 2>&1 || rc=$?
  local after
  after=$(cpu_ticks "$MCPFAN_PID")
  stop_mcpfan
  tail -n 1 "$out/last.out" | python3 -c '
import json, sys
name, rep, rc, ticks, hz, n = sys.argv[1:7]
try:
    j = json.loads(sys.stdin.read())
except ValueError:
    j = {}
print(json.dumps({"case": name, "rep": int(rep), "rc": int(rc), "streams": int(n),
                  "server_cpu_us_per_listen": int(ticks) * 1e6 / int(hz) / int(n), "result": j}))
' "$name" "$rep" "$rc" "$((after - before))" "$hz" "$streams" >>"$out/runs.jsonl"
  if [[ $rc -ne 0 ]]; then
    echo "  $name: mcpfan-load exited $rc:" >&2
    tail -n 5 "$out/last.out" >&2
  fi
}

for rep in $(seq "$reps"); do
  echo "rep $rep of $reps ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
  run none ""
  run static "$static_token" --jwt-public-key-file "$work/static.pub"
  run oauth "$oauth_token" --oauth-issuer "$issuer" --oauth-resource "$resource" --oauth-tenant default
  run oauth-verify "$oauth_token" --oauth-issuer "$issuer" --oauth-resource "$resource" --oauth-tenant default \
    --oauth-token-cache 0
done
rm -f "$out/last.out"
python3 - "$out/runs.jsonl" <<'EOF' | tee "$out/table.md"
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
print("| case | listens/s (median) | runs | server CPU per listen (median) | runs |")
print("|---|---|---|---|---|")
med = {}
for case in ("none", "static", "oauth", "oauth-verify"):
    rs = [r for r in runs if r["case"] == case and r["rc"] == 0 and r["result"].get("connect_s")]
    if not rs:
        continue
    rate = [r["streams"] / r["result"]["connect_s"] for r in rs]
    cpu = [r["server_cpu_us_per_listen"] for r in rs]
    med[case] = (statistics.median(rate), statistics.median(cpu))
    print(f"| {case} | {med[case][0]:,.0f} | {', '.join(f'{x:,.0f}' for x in rate)} | "
          f"{med[case][1]:.1f} us | {', '.join(f'{x:.1f}' for x in cpu)} |")
if "none" in med:
    for case in ("static", "oauth", "oauth-verify"):
        if case in med:
            print(f"\n{case} / none: listens/s {med[case][0] / med['none'][0]:.2f}x, "
                  f"CPU per listen {med[case][1] / med['none'][1]:.2f}x")
EOF
echo "raw results: $out"
