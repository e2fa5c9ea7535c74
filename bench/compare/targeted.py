"""The targeted scenario's part of compare.py's summary: tables, targets, charts.

Cases (run.sh): "targeted-<rate>" on every server, <rate> a number of publishes/s or "max";
"targeted_w<workers>-<rate>" on mcpfan alone (its --workers sweep). Each run's figures come
from the load generator's "targeted" section (LOADGEN_CLI.md). Ratios here are mcpfan ÷ peer,
the way the targeted-publish targets are stated (CPU per publish ≤ 0.5× nchan's, publishes/s ≥ 4× ...).
"""
import statistics

# (key, label, JSON path in the load generator's line, better)
METRICS = [
    ("pps", "publishes/s answered", "targeted.publishes_per_s", "high"),
    ("cpu", "server CPU per publish (µs)", "targeted.cpu_us_per_publish", "low"),
    # every server thread's (or process's) context switches: a sleeping loop woken costs one
    ("ctx", "server context switches per publish", "targeted.ctx_switches_per_publish", "low"),
    ("p50", "latency p50 (ms)", "targeted.latency_ms.p50", "low"),
    ("p99", "latency p99 (ms)", "targeted.latency_ms.p99", "low"),
    ("max", "latency max (ms)", "targeted.latency_ms.max", "low"),
    ("rss", "server RSS per subscription (B)", "targeted.rss_bytes_per_subscription", "low"),
    # fixed rates: due but never written, every window full to the end (the server fell behind)
    ("unsent", "publishes due but never sent", "targeted.unsent", "low"),
]


def is_targeted(case):
    return case.startswith("targeted")


def _get(d, path):
    for k in path.split("."):
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def parse_case(case):
    """-> (workers or None, rate string)"""
    head, _, rate = case.partition("-")
    workers = int(head[len("targeted_w"):]) if head.startswith("targeted_w") else None
    return workers, rate


def _rate_key(rate):
    return (1, 0) if rate == "max" else (0, int(rate) if rate.isdigit() else 0)


def _violations(rec):
    """misdelivered + duplicates + lost of one run; None when the run left no result."""
    t = (rec.get("result") or {}).get("targeted")
    if not isinstance(t, dict):
        return None
    return sum(int(t.get(k) or 0) for k in ("misdelivered", "duplicates", "lost"))


def _median(runs, path):
    v = [x for x in (_get(r.get("result") or {}, path) for r in runs) if x is not None]
    return statistics.median(v) if v else None


def collect(runs):
    """{("rates"|"workers"): {(workers, rate): {server: {key: median, "viol": sum, "ok": n, "total": n}}}}"""
    out = {"rates": {}, "workers": {}}
    for r in runs:
        if not is_targeted(r["case"]):
            continue
        workers, rate = parse_case(r["case"])
        part = "workers" if workers is not None else "rates"
        out[part].setdefault((workers, rate), {}).setdefault(r["server"], []).append(r)
    for part in out.values():
        for key, by_srv in part.items():
            for srv, recs in by_srv.items():
                m = {k: _median(recs, path) for k, _, path, _ in METRICS}
                viol = [v for v in (_violations(x) for x in recs) if v is not None]
                m["viol"] = sum(viol) if viol else None
                m["ok"] = sum(1 for x in recs if x.get("exit") == 0)
                m["total"] = len(recs)
                by_srv[srv] = m
    return out


def _ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def tables(runs, servers, fmt, meta):
    """Markdown lines: the rate table (every server) and the worker sweep (mcpfan)."""
    data = collect(runs)
    if not data["rates"] and not data["workers"]:
        return [], {}
    t = (meta or {}).get("targeted") or {}
    lines = ["## Targeted publishes", ""]
    n = next((r["n"] for r in runs if is_targeted(r["case"])), "?")
    lines.append(f"{n} streams, each subscribed to its own URI and {t.get('extra_uris', '?')} more never published "
                 f"(nchan: its own channel plus as many extra channels, one multiplexed subscriber); each publish "
                 f"addressed to one random stream; {t.get('publishers', '?')} keep-alive publisher connections with "
                 f"{t.get('window', '?')} publishes in flight each; {t.get('duration_s', '?')} s per run. mcpfan "
                 f"--workers {t.get('mcpfan_workers', 2)}, nginx worker_processes {t.get('nchan_worker_processes', 2)}, "
                 f"the SDK hub one Node process. Medians over the reps; ratios are mcpfan ÷ peer.")
    lines.append("")
    argv = next((r.get("argv") for r in runs if is_targeted(r["case"]) and r.get("argv")), "")
    if argv:
        lines += [f"load generator (first run): `{argv}`", ""]
    summary = {"rates": {}, "workers": {}}
    peers = [p for p in ("nchan", "sdkhub") if p in servers]
    if data["rates"]:
        hdr = ["rate", "metric"] + servers + [f"mcpfan ÷ {p}" for p in peers if "mcpfan" in servers]
        lines += ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
        for (_, rate) in sorted(data["rates"], key=lambda k: _rate_key(k[1])):
            by_srv = data["rates"][(None, rate)]
            summary["rates"][rate] = by_srv
            for key, label, _, better in METRICS:
                row = [by_srv.get(s, {}).get(key) for s in servers]
                if all(v is None for v in row):
                    continue
                arrow = " ↑" if better == "high" else " ↓"
                cells = [rate, label + arrow] + [fmt(v) for v in row]
                if "mcpfan" in servers:
                    cells += [fmt(_ratio(by_srv.get("mcpfan", {}).get(key), by_srv.get(p, {}).get(key))) for p in peers]
                lines.append("| " + " | ".join(cells) + " |")
            cells = [rate, "misdelivered + duplicates + lost (sum over reps; must be 0)"]
            cells += [fmt(by_srv.get(s, {}).get("viol")) for s in servers] + [""] * (len(hdr) - 2 - len(servers))
            lines.append("| " + " | ".join(cells) + " |")
            cells = [rate, "runs completed (exit 0)"]
            cells += [f"{by_srv[s]['ok']}/{by_srv[s]['total']}" if s in by_srv else "—" for s in servers]
            lines.append("| " + " | ".join(cells + [""] * (len(hdr) - len(cells))) + " |")
        lines.append("")
    if data["workers"]:
        rates = sorted({k[1] for k in data["workers"]}, key=_rate_key)
        workers = sorted({k[0] for k in data["workers"]})
        hdr = ["mcpfan --workers"]
        for rate in rates:
            hdr += [f"CPU/publish (µs) @{rate}", f"÷ {workers[0]} worker(s)", f"context switches/publish @{rate}",
                    f"p99 (ms) @{rate}", f"publishes/s @{rate}"]
        hdr += ["misdelivered + dup + lost", "runs ok"]
        lines += ["### Worker sweep (mcpfan alone)", "", "| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
        for w in workers:
            cells, viol, ok, total = [str(w)], 0, 0, 0
            for rate in rates:
                m = data["workers"].get((w, rate), {}).get("mcpfan", {})
                base = data["workers"].get((workers[0], rate), {}).get("mcpfan", {})
                cells += [fmt(m.get("cpu")), fmt(_ratio(m.get("cpu"), base.get("cpu"))), fmt(m.get("ctx")), fmt(m.get("p99")),
                          fmt(m.get("pps"))]
                viol += m.get("viol") or 0
                ok += m.get("ok", 0)
                total += m.get("total", 0)
                summary["workers"].setdefault(str(w), {})[rate] = m
            cells += [fmt(viol), f"{ok}/{total}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines, summary


def targets(summary, fmt):
    """The targeted-publish targets (docs/performance.md, "Targeted publishes") checked against this run's medians."""
    rates = summary.get("rates") or {}
    checks = []

    def add(what, ok, detail):
        checks.append(f"| {what} | {'yes' if ok else 'NO' if ok is not None else '—'} | {detail} |")

    for rate, by in sorted(rates.items(), key=lambda kv: _rate_key(kv[0])):
        m, nc = by.get("mcpfan") or {}, by.get("nchan") or {}
        if rate == "max":
            a, b = m.get("pps"), nc.get("pps")
            if a is not None and b:
                add("at the maximum rate ≥ 4× nchan's publishes/s", a >= 4 * b, f"{fmt(a)} vs {fmt(b)} /s ({fmt(a / b)}×)")
            continue
        sustained = nc.get("pps") is not None and nc["pps"] >= 0.95 * float(rate)
        for key, what in (("cpu", "CPU per publish"), ("p99", "p99")):
            a, b = m.get(key), nc.get(key)
            if a is None or b is None:
                continue
            note = "" if sustained else " (nchan did not sustain this rate)"
            add(f"{rate}/s: {what} ≤ 0.5× nchan's{note}", a <= 0.5 * b if sustained else None,
                f"{fmt(a)} vs {fmt(b)} ({fmt(a / b if b else None)}×)")
    fixed = [r for r in rates if r != "max" and r.isdigit()]
    if "max" in rates and fixed:
        r8 = "8000" if "8000" in fixed else max(fixed, key=int)
        a, b = (rates[r8].get("mcpfan") or {}).get("cpu"), (rates["max"].get("mcpfan") or {}).get("cpu")
        if a is not None and b:
            add(f"CPU per publish at {r8}/s within 1.5× of its value at the maximum rate", a <= 1.5 * b,
                f"{fmt(a)} vs {fmt(b)} µs ({fmt(a / b)}×)")
    workers = summary.get("workers") or {}
    if len(workers) >= 2:
        ws = sorted(workers, key=int)
        for rate in sorted({r for w in ws for r in workers[w]}, key=_rate_key):
            a = (workers[ws[0]].get(rate) or {}).get("cpu")
            b = (workers[ws[-1]].get(rate) or {}).get("cpu")
            if a and b is not None:
                add(f"from {ws[0]} to {ws[-1]} workers, CPU per targeted publish within 1.2× (@{rate})", b <= 1.2 * a,
                    f"{fmt(a)} → {fmt(b)} µs ({fmt(b / a)}×)")
    viol = [m.get("viol") for by in rates.values() for m in by.values()]      # rates: {rate: {server: m}}
    viol += [m.get("viol") for by in workers.values() for m in by.values()]   # workers: {w: {rate: m}}
    if viol:
        total = sum(v or 0 for v in viol)
        add("misdelivered / duplicate / lost all 0 (every server, every run)", total == 0, f"sum {total}")
    if not checks:
        return []
    return ["## Targeted-publish targets, as measured in this run", "", "| target | met | medians |", "|---|---|---|"] + checks + [""]


def chart_scripts(d, runs, servers, colors):
    """gnuplot scripts (name, text) after writing their .dat files into d."""
    import os
    data = collect(runs)
    scripts = []
    if data["rates"]:
        rates = sorted({k[1] for k in data["rates"]}, key=_rate_key)
        with open(os.path.join(d, "targeted_rate.dat"), "w") as f:
            f.write("# i rate " + " ".join(f"{s}_cpu {s}_p99" for s in servers) + "\n")
            for i, rate in enumerate(rates):
                row = [str(i), rate]
                for s in servers:
                    m = data["rates"][(None, rate)].get(s, {})
                    row += [f"{m['cpu']:.3f}" if m.get("cpu") is not None else "NaN",
                            f"{max(m['p99'], 0.001):.4f}" if m.get("p99") is not None else "NaN"]
                f.write(" ".join(row) + "\n")
        cpu = ", ".join(f"'targeted_rate.dat' u 1:{3 + 2 * i}:xtic(2) w linespoints lw 2 pt 7 lc rgb '{colors[s]}' t '{s}'"
                        for i, s in enumerate(servers))
        p99 = ", ".join(f"'targeted_rate.dat' u 1:{4 + 2 * i}:xtic(2) w linespoints lw 2 pt 7 lc rgb '{colors[s]}' t '{s}'"
                        for i, s in enumerate(servers))
        scripts.append(("targeted_rate", f"""set terminal pngcairo size 1100,480 font 'sans,10'
set output 'targeted_rate.png'
set multiplot layout 1,2 title 'Targeted publishes: cost and latency against the publish rate (median over reps)'
set grid
set key top right
set xlabel 'publishes/s asked (max: as fast as the server answers)'
set xrange [-0.3:{len(rates) - 0.7}]
set title 'server CPU per publish (µs, log scale)'
set logscale y
set yrange [*:*]
plot {cpu}
set title 'publish → delivery p99 (ms)'
plot {p99}
unset multiplot
"""))
    if data["workers"]:
        rates = sorted({k[1] for k in data["workers"]}, key=_rate_key)
        workers = sorted({k[0] for k in data["workers"]})
        with open(os.path.join(d, "targeted_workers.dat"), "w") as f:
            f.write("# workers " + " ".join(f"cpu@{r}" for r in rates) + "\n")
            for w in workers:
                row = [str(w)]
                for r in rates:
                    m = data["workers"].get((w, r), {}).get("mcpfan", {})
                    row.append(f"{m['cpu']:.3f}" if m.get("cpu") is not None else "NaN")
                f.write(" ".join(row) + "\n")
        pal = ["#1b9e77", "#e7298a", "#66a61e", "#e6ab02"]
        pl = ", ".join(f"'targeted_workers.dat' u 1:{2 + i} w linespoints lw 2 pt 7 lc rgb '{pal[i % len(pal)]}' "
                       f"t '{r}' . ('{r}' eq 'max' ? '' : '/s')" for i, r in enumerate(rates))
        scripts.append(("targeted_workers", f"""set terminal pngcairo size 700,480 font 'sans,10'
set output 'targeted_workers.png'
set title 'mcpfan: server CPU per targeted publish against --workers (median over reps)'
set grid
set key top left
set logscale x 2
set xrange [{workers[0] / 1.25}:{workers[-1] * 1.25}]
set xtics ({', '.join(f'"{w}" {w}' for w in workers)})
set xlabel 'worker loops'
set ylabel 'µs per publish'
set yrange [0:*]
plot {pl}
"""))
    return scripts
