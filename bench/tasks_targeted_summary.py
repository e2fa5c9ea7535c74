#!/usr/bin/env python3
"""Medians and ratios of bench/tasks_targeted.sh's runs.jsonl, as markdown.

    python3 bench/tasks_targeted_summary.py runs.jsonl

One row per (size, rate, case): server CPU per delivered notification (the server's CPU over the
measured phase divided by the deliveries the load generator counted), publishes/s answered, p99
latency, server RSS per watched task or URI (listens open, before any publish), RSS growth over
the run, the task states kept after it, and lost + duplicated + misdelivered + refused over every
rep. Then each task case against the resource case of the same size and rate: the ratio of the
medians, and the median of the per-rep ratios (the cases of one rep ran back to back).
"""
import json
import statistics
import sys


def figures(row):
    r = row["result"]
    t = r.get("targeted") or {}
    m = r.get("server_metrics") or {}
    received = (t.get("tally") or {}).get("received") or 0
    cpu = t.get("cpu_us_per_publish")
    return {
        "cpu": cpu * t["published"] / received if cpu is not None and received else None,
        "pps": t.get("publishes_per_s"),
        "p99": (t.get("latency_ms") or {}).get("p99"),
        "rss": t.get("rss_bytes_per_subscription"),
        "growth": t["rss_growth_kib"] / 1024 if t.get("rss_growth_kib") is not None else None,
        "states": m.get("task_states_after"),
        "states_mib": m["task_states_bytes_after"] / 2**20 if m.get("task_states_bytes_after") is not None else None,
        "bad": sum(t.get(k) or 0 for k in ("lost", "duplicates", "misdelivered", "publish_errors")) + (row["rc"] != 0),
    }


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(v, digits=2):
    if v is None:
        return "—"
    return f"{v:,.{digits}f}"


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    groups = {}
    for row in rows:
        groups.setdefault((row["size"], row["rate"], row["case"]), []).append(row)
    print("| params | rate | case | reps | server CPU per delivery | publishes/s | p99 | RSS per watched task or URI |"
          " RSS growth over the run | task states kept after | their bytes | lost+dup+misdelivered+refused |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (size, rate, case), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "max", kv[0][1])):
        f = [figures(r) for r in rs]
        col = lambda k: med(x[k] for x in f)  # noqa: E731
        print(f"| {size:,} B | {rate}{'' if rate == 'max' else '/s'} | {case} | {len(rs)} | {fmt(col('cpu'))} µs |"
              f" {fmt(col('pps'), 0)} | {fmt(col('p99'))} ms | {fmt(col('rss'), 0)} B | {fmt(col('growth'), 1)} MiB |"
              f" {fmt(col('states'), 0)} | {fmt(col('states_mib'), 1)} MiB | {sum(x['bad'] for x in f)} |")
    print()
    print("| params | rate | case ÷ resource | CPU per delivery: ratio of medians | median of per-rep ratios |"
          " publishes/s | p99 | RSS per watched task ÷ per URI |")
    print("|---|---|---|---|---|---|---|---|")
    for (size, rate, case), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "max", kv[0][1])):
        base = groups.get((size, rate, "resource"))
        if case == "resource" or not base:
            continue
        f = {r["rep"]: figures(r) for r in rs}
        b = {r["rep"]: figures(r) for r in base}

        def ratio(k):
            x, y = med(v[k] for v in f.values()), med(v[k] for v in b.values())
            return x / y if x is not None and y else None

        paired = med(f[k]["cpu"] / b[k]["cpu"] for k in f if k in b and f[k]["cpu"] and b[k]["cpu"])
        print(f"| {size:,} B | {rate}{'' if rate == 'max' else '/s'} | {case} | {fmt(ratio('cpu'), 3)} |"
              f" {fmt(paired, 3)} | {fmt(ratio('pps'), 3)} | {fmt(ratio('p99'), 3)} | {fmt(ratio('rss'), 3)} |")


if __name__ == "__main__":
    main()
