#!/usr/bin/env python3
"""Prints a markdown table of the median aggregates in a Google Benchmark JSON file.

  ./build/bench/mcpfan_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_out=bench.json --benchmark_out_format=json
  python3 bench/medians.py bench.json
"""
import json
import sys

# Counters worth a column, in order, with how to print them. Time counters are seconds in JSON.
COLUMNS = [
    ("time_per_delivery", "ns/delivery", 1e9), ("time_per_notification", "ns/notification", 1e9),
    ("time_per_reported_sub", "ns/reported sub", 1e9), ("time_per_sub", "ns/sub added", 1e9),
    ("items_per_second", "items/s", 1e-6), ("bytes_per_delivery", "bytes/delivery", 1),
    ("iovecs_per_delivery", "iovecs/delivery", 1), ("writes_per_delivery", "writes/delivery", 1),
    ("allocs_per_delivery", "allocs/delivery", 1), ("allocs_per_encode", "allocs/encode", 1),
    ("allocs_per_notification", "allocs/notification", 1), ("allocs_per_sub", "allocs/sub", 1),
    ("reported_per_match", "subs/match", 1), ("sse_frame_bytes", "SSE frame bytes", 1),
    ("heap_MiB", "heap MiB", 1), ("rss_MiB", "RSS delta MiB", 1), ("heap_bytes_per_sub", "heap bytes/sub", 1),
]


def fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def main(path):
    data = json.load(open(path))
    rows = [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"]
    if not rows:  # a run without repetitions
        rows = data["benchmarks"]
    print("| benchmark | CPU time | measured |")
    print("|---|---|---|")
    for b in rows:
        name = b.get("run_name", b["name"])
        cells = []
        for key, label, scale in COLUMNS:
            if key in b:
                unit = "M" if key == "items_per_second" else ""
                cells.append(f"{label} {fmt(b[key] * scale)}{unit}")
        print(f"| {name} | {fmt(b['cpu_time'])} {b['time_unit']} | {'; '.join(cells)} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench.json")
