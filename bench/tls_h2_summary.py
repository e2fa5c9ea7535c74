#!/usr/bin/env python3
"""The tables and charts of bench/tls_h2.sh. Reads its JSON lines in OUT, prints markdown tables
(medians of the reps, and the ratios docs/performance.md "TLS and HTTP/2" quotes, against the
issue's targets), and writes gnuplot charts into OUT when gnuplot is installed:
  cpu.png     server CPU per delivery of each case (median; bars: min..max of the reps)
  memory.png  server memory per h2 stream and per connection (median; bars: min..max)
A section with no data (--memory-only, --no-memory, no --handshakes) is left out.

    python3 bench/tls_h2_summary.py OUT N K CASE...
"""
import json
import os
import shutil
import statistics
import subprocess
import sys

out, n, k, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]


def rows(name):
    p = os.path.join(out, name)
    return [json.loads(line) for line in open(p)] if os.path.exists(p) else []


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def f(v, d=2):
    return "n/a" if v is None else f"{v:,.{d}f}"


charts = []  # (name, gnuplot script)

# ---- bursts
cpu, cpu_runs = {}, {}
if any(rows(f"burst-{c}.jsonl") for c in cases):
    print(f"\n### Burst, {n:,} streams (medians; runs that passed / runs)\n")
    print("| case | runs | server CPU per delivery | same, rounds 2.. | publish -> last delivery | connect all |"
          " connect -> ack p99 | server RSS per stream |")
    print("|---|---|---|---|---|---|---|---|")
    for c in cases:
        rs = rows(f"burst-{c}.jsonl")
        good = [r for r in rs if r.get("ok")]
        cpu_runs[c] = [r["server"]["cpu_us_per_delivery"] for r in good]
        cpu[c] = med(cpu_runs[c])
        warm = med([r["server"].get("cpu_us_per_delivery_warm") for r in good])
        last = med([r["burst"]["last_delivery_ms"]["median"] for r in good])
        conn = med([r["connect_s"] for r in good])
        rss = med([r["server"]["rss_kib_per_stream"] for r in good])
        ack = med([r.get("confirm_ms", {}).get("p99") for r in good])
        print(f"| {c} | {len(good)}/{len(rs)} | {f(cpu[c])} us | {f(warm)} us | {f(last, 1)} ms | {f(conn)} s |"
              f" {f(ack, 1)} ms | {f(rss)} KiB |")

    def ratio(a, b, target=None):
        if cpu.get(a) and cpu.get(b):
            v = cpu[a] / cpu[b]
            t = "" if target is None else (" (target <= %.1f: %s)" % (target, "met" if v <= target else "NOT met"))
            print(f"- {a} / {b}: {v:.2f}{t}")

    print("\nRatios of the medians of CPU per delivery:\n")
    ratio("tls", "plain", 1.3)
    ratio("tls-h2", "tls", 1.0)
    ratio("h2c", "plain")
    ratio("tls-h2", "h2c")
    ratio("tls", "nchan-tls", 0.5)
    ratio("tls-h2", "nchan-tls-h2")
    ratio("nchan-tls", "nchan-plain")
    ratio("plain", "nchan-plain")
    ratio("tls", "tls-libuv")
    ratio("plain", "plain-libuv")
    ratio("tls-libuv", "plain-libuv")

    with open(os.path.join(out, "cpu.dat"), "w") as d:
        d.write("# case median min max\n")
        for i, c in enumerate(cases):
            v = cpu_runs.get(c) or []
            if v:
                d.write(f"{i} {c} {statistics.median(v):.3f} {min(v):.3f} {max(v):.3f}\n")
    charts.append(("cpu", f"""set terminal pngcairo size 900,520 font 'sans,11'
set output 'cpu.png'
set title 'Burst of {n:,} streams: server CPU per delivery (median of the reps; bars: min..max)'
set ylabel 'µs per delivery'
set yrange [0:*]
set grid ytics
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics rotate by -30
unset key
plot 'cpu.dat' u 1:3:xtic(2) w boxes lc rgb '#1b9e77', '' u 1:3:4:5 w yerrorbars lc rgb '#333333' pt 0 lw 2
"""))

# ---- memory
def total(r):  # KiB the server grew by while the streams opened
    return r["server"]["rss_kib_per_stream"] * r["streams"]


mem = {}
for c in ("tls-h2", "h2c"):
    full, conns, c200 = rows(f"mem-{c}-full.jsonl"), rows(f"mem-{c}-conns.jsonl"), rows(f"mem-{c}-200.jsonl")
    if not full:
        continue
    per_stream = [(total(a) - total(b)) / (a["streams"] - b["streams"]) for a, b in zip(full, conns)
                  if a.get("ok") and b.get("ok")]
    per_conn = [total(r) / r["streams"] for r in c200 if r.get("ok")]
    mem[c] = (per_stream, per_conn, len(full))
if mem:
    print("\n### Memory (KiB of server RSS; medians)\n")
    print("| transport | per h2 stream | per connection (with its one stream) | runs |")
    print("|---|---|---|---|")
    for c, (per_stream, per_conn, runs) in mem.items():
        print(f"| {c} | {f(med(per_stream))} | {f(med(per_conn))} | {runs} |")
    with open(os.path.join(out, "memory.dat"), "w") as d:
        d.write("# transport stream_med stream_min stream_max conn_med conn_min conn_max\n")
        for i, (c, (ps, pc, _)) in enumerate(mem.items()):
            if ps and pc:
                d.write(f"{i} {c} {statistics.median(ps):.3f} {min(ps):.3f} {max(ps):.3f} "
                        f"{statistics.median(pc):.3f} {min(pc):.3f} {max(pc):.3f}\n")
    charts.append(("memory", """set terminal pngcairo size 900,420 font 'sans,11'
set output 'memory.png'
set multiplot layout 1,2 title 'Server memory (RSS; median of the reps, bars: min..max)'
set yrange [0:*]
set grid ytics
set style fill solid 0.8 border -1
set boxwidth 0.5
unset key
set title 'per h2 stream (KiB)'
plot 'memory.dat' u 1:3:xtic(2) w boxes lc rgb '#1b9e77', '' u 1:3:4:5 w yerrorbars lc rgb '#333333' pt 0 lw 2
set title 'per connection, with its one stream (KiB)'
plot 'memory.dat' u 1:6:xtic(2) w boxes lc rgb '#7570b3', '' u 1:6:7:8 w yerrorbars lc rgb '#333333' pt 0 lw 2
unset multiplot
"""))

# ---- handshakes
hs = rows("handshakes.jsonl")
if hs:
    print("\n### Full TLS handshakes (h2load, one request per connection)\n")
    print("| server | runs | handshakes per run | server CPU per handshake | handshakes/s per core |"
          " wall-clock handshakes/s | resumed |")
    print("|---|---|---|---|---|---|---|")
    for s in sorted({h["server"] for h in hs}):
        v = [h for h in hs if h["server"] == s]
        per = med([h["cpu_ticks"] / h["clk_tck"] * 1e6 / h["handshakes"] for h in v if h["handshakes"]])
        wall = med([h["handshakes"] / h["wall_s"] for h in v if h["wall_s"]])
        resumed = v[0]["resumed"] if v[0]["resumed"] is not None else "n/a"
        print(f"| {s} | {len(v)} | {f(med([h['handshakes'] for h in v]), 0)} | {f(per, 1)} us |"
              f" {f(1e6 / per if per else None, 0)} | {f(wall, 0)} | {resumed} |")

# ---- charts
gp = shutil.which("gnuplot")
for name, text in charts:
    with open(os.path.join(out, f"{name}.gp"), "w") as g:
        g.write(text)
    if gp:
        r = subprocess.run([gp, f"{name}.gp"], cwd=out, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            sys.stderr.write(f"tls_h2_summary.py: gnuplot {name}.gp failed: {r.stderr.strip()[:500]}\n")
if charts:
    print(f"\nCharts: {', '.join(n + '.png' for n, _ in charts)} in {out}"
          + ("" if gp else " (gnuplot is not installed: only their .gp scripts and .dat files were written)"))
