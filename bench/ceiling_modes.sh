#!/usr/bin/env bash
# bench/ceiling_modes.sh: the raw-socket ceiling per way of writing (writev, sendmsg, send and
# their io_uring counterparts), measured K times, then summarised as a table of medians.
#
#   bash bench/ceiling_modes.sh [--bin build-release/bench/mcpfan_ceiling] [--runs 5]
#                               [--n 1000,10000] [--rounds 20] [--out DIR]
#                               [--modes "writev,uring-send,..."] [--summarise-only] [-- extra mcpfan_ceiling args]
#
# Each run is one mcpfan_ceiling process with every variant interleaved burst by burst (so the
# variants share the machine's background load); the table gives, per N and variant, the
# median over the K runs of each run's median over its bursts (and the min..max of those run
# medians), and the paired ratio to the first variant (per run, then the median over runs),
# which cancels most of the run-to-run load. Raw JSON lines: DIR/ceiling_modes.jsonl; table:
# DIR/ceiling_modes.md. --summarise-only re-prints the table of an existing --out DIR.
# Default DIR: ${MCPFAN_RESULTS_DIR:-build/bench-results}/ceiling-modes-<time> (outside the source tree).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
bin="$root/build-release/bench/mcpfan_ceiling"
runs=5
nlist=1000,10000
rounds=20
out=""
modes="writev,sendmsg,send,uring-writev,uring-sendmsg,uring-send,uring-send+fixed,uring-send+single+defer,uring-send+single+defer+fixed+ringfd,uring-send+coop,uring-send+taskrun,uring-send+dontwait,uring-send+b256,uring-send+b1"
extra=()
summarise_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --n) nlist="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --summarise-only) summarise_only=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ceiling_modes.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" ]] || out="${MCPFAN_RESULTS_DIR:-$root/build/bench-results}/ceiling-modes-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"
jl="$out/ceiling_modes.jsonl"
if [[ $summarise_only -eq 1 ]]; then
  runs=0
else
  [[ -x "$bin" ]] || { echo "ceiling_modes.sh: no binary at $bin (--bin)" >&2; exit 2; }
  : >"$jl"
fi
[[ $summarise_only -eq 1 ]] || {
  echo "# $(date -u +%FT%TZ) kernel $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# $bin --n $nlist --rounds $rounds --mode $modes ${extra[*]:-}"
} >"$out/ceiling_modes.log"
for ((r = 1; r <= runs; r++)); do
  echo "[ceiling_modes] run $r/$runs (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  timeout 900 "$bin" --n "$nlist" --rounds "$rounds" --mode "$modes" "${extra[@]}" --json "$jl" >>"$out/ceiling_modes.log" 2>&1 \
    || echo "[ceiling_modes] run $r failed (see $out/ceiling_modes.log)" >&2
done
python3 - "$jl" "$out/ceiling_modes.md" <<'EOF'
import json, statistics, sys
runs = []
for line in open(sys.argv[1]):
    c = json.loads(line)["ceiling"]
    variants = c.get("variants") or [{"mode": c.get("mode", "writev"), "results": c["results"]}]
    runs.append({v["mode"]: {r["n"]: r for r in v["results"]} for v in variants if "results" in v})
order = []
for run in runs:
    for mode, byn in run.items():
        for n in byn:
            if (n, mode) not in order:
                order.append((n, mode))
def get(r, path):
    for k in path.split("."):
        r = r.get(k) if isinstance(r, dict) else None
    return r if isinstance(r, (int, float)) else None
def med(vals):
    vals = [v for v in vals if v is not None]
    return (statistics.median(vals), min(vals), max(vals)) if vals else (None, None, None)
f = lambda v, d=3: "—" if v is None else f"{v:.{d}f}"
first = {}
for n, mode in order:
    first.setdefault(n, mode)
out = [f"{len(runs)} runs, variants interleaved within each run. CPU: median over runs of each run's median over "
       "bursts (min..max of the run medians). Paired: per run, the variant's median ÷ the first variant's, "
       "then the median (min..max) of those ratios — the figure to compare variants by.", "",
       "| N | mode | CPU µs/write | ÷ first, paired | writer process µs | ksoftirqd µs | writes/s | burst ms | kernel entries/burst |",
       "|---|---|---|---|---|---|---|---|---|"]
for n in sorted({k[0] for k in order}):
    for key in [k for k in order if k[0] == n]:
        mode = key[1]
        rs = [run[mode][n] for run in runs if mode in run and n in run[mode]]
        c = med(get(r, "cpu_us_per_write.median") for r in rs)
        ratios = med(get(run[mode][n], "cpu_us_per_write.median") / get(run[first[n]][n], "cpu_us_per_write.median")
                     for run in runs if mode in run and n in run[mode] and first[n] in run and n in run[first[n]])
        p = med(get(r, "process_cpu_us_per_write.median") for r in rs)[0]
        sq = med(get(r, "ksoftirqd_us_per_write.median") for r in rs)[0]
        w = med(get(r, "writes_per_s.median") for r in rs)[0]
        b = med(get(r, "burst_ms.median") for r in rs)[0]
        e = med(get(r, "kernel_entries_per_burst") for r in rs)[0]
        out.append(f"| {n:,} | `{mode}` | {f(c[0], 2)} ({f(c[1], 2)}..{f(c[2], 2)}) | {f(ratios[0])} ({f(ratios[1], 2)}..{f(ratios[2], 2)}) | "
                   f"{f(p, 2)} | {f(sq)} | {'—' if w is None else f'{w:,.0f}'} | {f(b, 1)} | {'—' if e is None else f'{e:.0f}'} |")
text = "\n".join(out) + "\n"
open(sys.argv[2], "w").write(text)
print(text)
EOF
echo "[ceiling_modes] wrote $out/ceiling_modes.{md,jsonl,log}" >&2
