#!/usr/bin/env python3
"""Markdown table of several bench/cluster/run.py results: each figure per run, and the median.

    python3 bench/cluster/table.py RESULTS/*/cluster.json
"""
import json
import statistics
import sys


def get(r, path):
    for k in path:
        if r is None:
            return None
        r = r.get(k) if isinstance(r, dict) else (r[k] if isinstance(r, list) and isinstance(k, int) and k < len(r) else None)
    return r


def fmt(v, nd=2):
    if v is None:
        return "—"
    if isinstance(v, list):
        return "/".join(fmt(x, nd) for x in v)
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def main():
    runs = [json.load(open(p)) for p in sys.argv[1:]]
    rates = sorted({int(k) for r in runs for k in get(r, ["cluster", "sparse"]) or {}}, reverse=True)
    rows = [
        ("broadcast: CPU per delivery, 5 nodes + nats-server (µs)", ["cluster", "broadcast", "all_rounds_cpu_us_per_delivery"], 2),
        ("broadcast: CPU per delivery, single node (µs)", ["single", "broadcast", "all_rounds_cpu_us_per_delivery"], 2),
        ("broadcast: ratio cluster / single (target ≤ 1.05)", ["broadcast_cpu_ratio"], 3),
        ("broadcast: time to last delivery, 95,000 streams (ms, median round)", ["cluster", "broadcast", "median_last_delivery_ms"], 0),
        ("broadcast: time to last delivery, single node 19,000 (ms, median round)", ["single", "broadcast", "median_last_delivery_ms"], 0),
    ]
    for rate in rates:
        k = str(rate)
        rows += [
            (f"sparse {rate}/s: lost / misdelivered / duplicates", None, (k,)),
            (f"sparse {rate}/s: latency p50 (ms)", ["cluster", "sparse", k, "latency_ms", "p50"], 2),
            (f"sparse {rate}/s: latency p99 (ms) (target ≤ 10 at 20,000/s)", ["cluster", "sparse", k, "latency_ms", "p99"], 1),
            (f"sparse {rate}/s: latency max (ms)", ["cluster", "sparse", k, "latency_ms", "max"], 0),
            (f"sparse {rate}/s: node CPU per event, cluster (µs)", ["cluster", "sparse", k, "node_cpu_us_per_event"], 1),
            (f"sparse {rate}/s: node CPU per event, local-only reference (µs)", ["cluster", "sparse", k, "local_only_node_cpu_us_per_event"], 1),
            (f"sparse {rate}/s: backplane CPU per (event, receiving node) (µs) (target ≤ 15)",
             ["cluster", "sparse", k, "backplane_cpu_us_per_event_receiving_node"], 1),
            (f"sparse {rate}/s: whole box busy (fraction of 2 cores)", ["cluster", "sparse", k, "box_busy_fraction"], 2),
        ]
    rows += [
        ("added hop: first remote − first local p50 (ms)", ["cluster", "hop", "first_remote_minus_first_local_ms", "p50"], 2),
        ("added hop: first remote − first local p99 (ms) (target ≤ 2)", ["cluster", "hop", "first_remote_minus_first_local_ms", "p99"], 2),
        ("added hop: max (ms)", ["cluster", "hop", "first_remote_minus_first_local_ms", "max"], 2),
        ("outage, default settle (500 ms before d6aecdb, 1 s since): lost on n1..n4 (of 8,000)", ["cluster", "outage_settle_default", "lost_on_other_nodes"], 0),
        ("outage, settle 0: lost on n1..n4 (of 8,000)", ["cluster", "outage_settle_0", "lost_on_other_nodes"], 0),
        ("capacity: mcpfan RSS per stream (KiB, median of 5 nodes)", ["cluster", "capacity", "rss_kib_per_stream"], 2),
        ("capacity: slab per connection, both ends (KiB)", ["cluster", "capacity", "slab_kib_per_connection_both_ends"], 2),
        ("capacity: sockstat TCP mem peak in a broadcast (pages)", None, ("peak",)),
    ]
    print("| figure | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | median |")
    print("|---|" + "---|" * (len(runs) + 1))
    for name, path, nd in rows:
        vals = []
        for r in runs:
            if path is None and nd[0] == "peak":
                rounds = get(r, ["cluster", "broadcast", "rounds"]) or []
                vals.append(max((x["sockstat_tcp_mem_peak_pages"] for x in rounds), default=None))
            elif path is None:
                s = get(r, ["cluster", "sparse", nd[0]])
                vals.append(None if s is None else f"{s['lost']}/{s['misdelivered']}/{s['duplicates']}")
            else:
                v = get(r, path)
                if isinstance(v, list) and "rss" in path[-1]:
                    v = statistics.median(v)
                vals.append(v)
        nums = [v for v in vals if isinstance(v, (int, float))]
        m = statistics.median(nums) if nums and len(nums) == len(vals) else None
        d = nd if isinstance(nd, int) else 0
        print(f"| {name} | " + " | ".join(fmt(v, d) for v in vals) + f" | {fmt(m, d) if m is not None else '—'} |")


if __name__ == "__main__":
    main()
