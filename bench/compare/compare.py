#!/usr/bin/env python3
"""Helpers for bench/compare/run.sh (Python 3 standard library only).

  compare.py freeport                      print a free TCP port on 127.0.0.1
  compare.py tree PID                      print PID and its descendants, space-separated
  compare.py watch --out F PID             sample the RSS and CPU time of PID and its descendants
                                           every 100 ms until SIGTERM, then write a JSON summary
  compare.py record --runs F ...           append one run (the load generator's JSON line, the
                                           watcher's summary, exit status) to runs.jsonl
  compare.py summarise DIR                 medians over repetitions -> DIR/table.md, DIR/summary.json,
                                           gnuplot data, scripts and charts (PNG) in DIR

The process-tree watcher is an independent cross-check of the load generator's --server-pid
figures: it sums every process of a server (nginx's master and both workers, node, mcpfan).
"""
import argparse
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

import targeted  # the targeted scenario's tables, targets and charts

SERVERS = ["mcpfan", "nchan", "sdkhub"]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


# ---------------------------------------------------------------------------------------------
# /proc helpers

def _children_map():
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def process_tree(pid):
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _rss_kib(pid):
    # statm's resident field: pages, shared file/shmem pages included (as VmRSS).
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE_KIB


def _pss_kib(pid):
    # proportional set size: shared pages (nginx's shared memory zone, libraries) split
    # between the processes that map them, so a multi-process server is not counted twice.
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return _rss_kib(pid)


def _tcp_mem_kib():
    # memory held in TCP socket buffers on the whole machine (both ends of every loopback
    # stream: what a server could not yet write out and what the client has not read yet)
    try:
        with open("/proc/net/sockstat") as f:
            for line in f:
                if line.startswith("TCP:"):
                    parts = line.split()
                    return int(parts[parts.index("mem") + 1]) * PAGE_KIB
    except (OSError, ValueError):
        pass
    return 0


def cmd_freeport(_):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    s.close()


def cmd_tree(a):
    print(" ".join(str(p) for p in process_tree(a.pid)))


def cmd_watch(a):
    pids = process_tree(a.pid)
    stop = {"now": False}

    def on_sig(*_):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_sig)
    signal.signal(signal.SIGINT, on_sig)
    samples = []  # (t, rss_kib, cpu_ticks, pss_kib, tcp_mem_kib)
    t0 = time.monotonic()
    deadline = t0 + a.max_s
    while not stop["now"] and time.monotonic() < deadline:
        rss = cpu = pss = 0
        alive = 0
        for p in pids:
            try:
                rss += _rss_kib(p)
                cpu += _cpu_ticks(p)
                pss += _pss_kib(p)
                alive += 1
            except OSError:
                pass
        if alive == 0:
            break
        samples.append((round(time.monotonic() - t0, 3), rss, cpu, pss, _tcp_mem_kib()))
        time.sleep(a.interval)
    out = {"pids": pids, "interval_s": a.interval, "samples": len(samples)}
    if samples:
        out.update({
            "rss_kib_first": samples[0][1],
            "rss_kib_peak": max(s[1] for s in samples),
            "rss_kib_last": samples[-1][1],
            "pss_kib_first": samples[0][3],
            "pss_kib_peak": max(s[3] for s in samples),
            "tcp_mem_kib_first": samples[0][4],
            "tcp_mem_kib_peak": max(s[4] for s in samples),
            "cpu_s": (samples[-1][2] - samples[0][2]) / CLK_TCK,
            "wall_s": samples[-1][0] - samples[0][0],
            # a thinned time series (at most ~200 points) for the RSS chart
            "series": [list(s) for s in samples[:: max(1, len(samples) // 200)]],
        })
    with open(a.out, "w") as f:
        json.dump(out, f)


def _last_json_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return None
    for l in reversed(lines):
        if l.startswith("{"):
            try:
                return json.loads(l)
            except ValueError:
                return None
    return None


def cmd_record(a):
    result = _last_json_line(a.stdout)
    watch = None
    try:
        with open(a.watch) as f:
            watch = json.load(f)
    except (OSError, ValueError):
        pass
    rec = {
        "rep": a.rep, "server": a.server, "case": a.case, "scenario": a.scenario, "n": a.n,
        "exit": a.rc, "wall_s": a.wall, "argv": a.argv, "result": result, "proc": watch,
    }
    if a.note:
        rec["note"] = a.note
    with open(a.runs, "a") as f:
        f.write(json.dumps(rec) + "\n")


# ---------------------------------------------------------------------------------------------
# summary

def _get(d, path):
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d or d[k] is None:
            return None
        d = d[k]
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def _proc_metric(rec, name):
    p = rec.get("proc") or {}
    r = rec.get("result") or {}
    n = rec.get("n") or 0
    if name == "rss_peak_mib":
        return p.get("rss_kib_peak", 0) / 1024 if p.get("rss_kib_peak") else None
    if name == "rss_growth_mib":
        # peak while publishing - RSS just after every stream was open (connect_s after the start,
        # plus half a second for the load generator's own start-up)
        series, c = p.get("series"), _get(r, "connect_s")
        if not series or c is None:
            return None
        after = [s for s in series if s[0] >= c + 0.5]
        if len(after) < 3:
            return None
        return (max(s[1] for s in after) - after[0][1]) / 1024
    if name == "tcp_mem_growth_mib":
        if p.get("tcp_mem_kib_peak") is None:
            return None
        return (p["tcp_mem_kib_peak"] - p["tcp_mem_kib_first"]) / 1024
    if name == "proc_pss_kib_per_stream":
        if not p.get("pss_kib_peak") or not n:
            return None
        return (p["pss_kib_peak"] - p["pss_kib_first"]) / n
    if name == "proc_cpu_s":
        return p.get("cpu_s")
    return None


# (section, metric label, how to read it, better direction, source)
# source: "r:<json path>" from the load generator's JSON line, "p:<name>" from the watcher.
METRICS = {
    "burst": [
        ("time to last delivery, median (ms)", "r:burst.last_delivery_ms.median", "low", "burst_ms"),
        ("time to last delivery, max (ms)", "r:burst.last_delivery_ms.max", "low", None),
        ("deliveries/s", "r:burst.deliveries_per_s", "high", "writes_per_s"),
        ("server CPU per delivery (µs)", "r:server.cpu_us_per_delivery", "low", "cpu_us_per_write"),
        # Rounds 2..K: the ceiling's figure is a per-burst median, which leaves its first
        # (cold-connection) burst out; this row does the same for the servers.
        ("server CPU per delivery, warm: rounds 2..K (µs)", "r:server.cpu_us_per_delivery_warm", "low", "cpu_us_per_write"),
        ("server RSS per stream (KiB)", "r:server.rss_kib_per_stream", "low", None),
        ("server PSS per stream (KiB)", "r:server.pss_kib_per_stream", "low", None),
        ("connect all streams (s)", "r:connect_s", "low", None),
        ("load generator CPU per delivery (µs)", "r:loadgen.cpu_us_per_delivery", "info", None),
    ],
    "sustained": [
        ("deliveries/s", "r:sustained.deliveries_per_s", "high", None),
        ("received / expected", "ratio", "high", None),
        ("coalesced", "r:sustained.coalesced", "info", None),
        ("lost", "r:sustained.lost", "low", None),
        ("latency p50 (ms)", "r:sustained.latency_ms.p50", "low", None),
        ("latency p99 (ms)", "r:sustained.latency_ms.p99", "low", None),
        ("latency p99.9 (ms)", "r:sustained.latency_ms.p999", "low", None),
        ("latency max (ms)", "r:sustained.latency_ms.max", "low", None),
        ("server CPU per delivery (µs)", "r:server.cpu_us_per_delivery", "low", "cpu_us_per_write"),
        ("server: coalesced (/metrics)", "r:server_metrics.coalesced", "info", None),
        ("server: stream writes per delivery (/metrics)", "r:server_metrics.writes_per_delivery", "info", None),
        ("load generator CPU per delivery (µs)", "r:loadgen.cpu_us_per_delivery", "info", None),
        ("server RSS peak, process tree (MiB)", "p:rss_peak_mib", "low", None),
        ("server RSS growth while publishing, process tree (MiB)", "p:rss_growth_mib", "low", None),
        ("TCP socket buffers, whole machine, peak growth (MiB)", "p:tcp_mem_growth_mib", "low", None),
    ],
    # sustained with slow readers (--slow-readers): the fast streams' figures are the point
    "slow": [
        ("fast streams: latency p50 (ms)", "r:sustained.fast.latency_ms.p50", "low", None),
        ("fast streams: latency p99 (ms)", "r:sustained.fast.latency_ms.p99", "low", None),
        ("fast streams: latency p99.9 (ms)", "r:sustained.fast.latency_ms.p999", "low", None),
        ("fast streams: latency max (ms)", "r:sustained.fast.latency_ms.max", "low", None),
        ("fast streams: received / expected", "ratio_fast", "high", None),
        ("fast streams: lost", "r:sustained.fast.lost", "low", None),
        ("fast streams: coalesced (seen by the load generator)", "r:sustained.fast.coalesced", "info", None),
        ("slow streams: latency p50 (ms)", "r:sustained.slow.latency_ms.p50", "low", None),
        ("slow streams: latency max (ms)", "r:sustained.slow.latency_ms.max", "low", None),
        ("slow streams: updates received", "r:sustained.slow.received", "info", None),
        ("slow streams: ended by the server", "r:sustained.slow.closed_by_server", "info", None),
        ("server: coalesced (/metrics)", "r:server_metrics.coalesced", "info", None),
        ("server: closed for backpressure (/metrics)", "r:server_metrics.slow_consumer_closes", "info", None),
        ("server: stream writes per delivery (/metrics)", "r:server_metrics.writes_per_delivery", "info", None),
        ("server CPU per delivery (µs)", "r:server.cpu_us_per_delivery", "low", None),
        ("server RSS peak, process tree (MiB)", "p:rss_peak_mib", "low", None),
        ("server RSS growth while publishing, process tree (MiB)", "p:rss_growth_mib", "low", None),
        ("TCP socket buffers, whole machine, peak growth (MiB)", "p:tcp_mem_growth_mib", "low", None),
    ],
    # --capacity: mcpfan alone, N streams of one kind, a 3-round burst
    "capacity": [
        ("streams", "n", "info", None),
        ("every stream got every round exactly once (runs ok / runs)", "exactly_once", "high", None),
        ("connect all streams (s)", "r:connect_s", "low", None),
        ("time to last delivery, median (ms)", "r:burst.last_delivery_ms.median", "low", None),
        ("time to last delivery, max (ms)", "r:burst.last_delivery_ms.max", "low", None),
        ("deliveries/s", "r:burst.deliveries_per_s", "high", None),
        ("server CPU per delivery (µs)", "r:server.cpu_us_per_delivery", "low", None),
        ("server RSS per stream (KiB)", "r:server.rss_kib_per_stream", "low", None),
        ("server RSS peak, process tree (MiB)", "p:rss_peak_mib", "low", None),
    ],
    "storm": [
        ("all reconnected + a publish reached all (s)", "r:storm.reconnect_s", "low", None),
        ("all received (runs ok / runs)", "okfrac", "high", None),
        ("connect all streams (s)", "r:connect_s", "low", None),
    ],
}


def _metric_value(rec, src):
    if src == "ratio":
        exp, got = _get(rec.get("result") or {}, "sustained.expected"), _get(rec.get("result") or {}, "sustained.received")
        return got / exp if exp else None
    if src == "ratio_fast":
        r = rec.get("result") or {}
        exp, got = _get(r, "sustained.fast.expected"), _get(r, "sustained.fast.received")
        return got / exp if exp else None
    if src == "n":
        return rec.get("n") if rec.get("result") else None
    if src == "exactly_once":
        r = rec.get("result")
        if not r:
            return None
        ok = rec.get("exit") == 0 and _get(r, "checks.duplicates") == 0 and _get(r, "burst.rounds") is not None
        return 1.0 if ok else 0.0
    if src == "okfrac":
        r = rec.get("result") or {}
        st = r.get("storm") or {}
        return 1.0 if st.get("all_received") is True else 0.0 if rec.get("result") else None
    if src.startswith("r:"):
        return _get(rec.get("result") or {}, src[2:])
    if src.startswith("p:"):
        return _proc_metric(rec, src[2:])
    return None


def _fmt(v):
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def _case_order(case):
    kind, _, n = case.partition("-")
    order = {"burst": 0, "sustained": 1, "overload": 2, "slow": 3, "storm": 4, "capacity_listen": 5, "capacity_stdio": 6}
    return (order.get(kind, 9), int(n) if n.isdigit() else 0)


def _load_ceiling(d):
    """ceiling.json holds one line per measurement (run.sh measures at the start and at the end).
    Per N, each figure is the best of them: the limit is what the machine does undisturbed."""
    path = os.path.join(d, "ceiling.json")
    measured = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    c = json.loads(line)
                except ValueError:
                    continue
                if isinstance(c, dict) and "ceiling" in c:
                    measured.append(c["ceiling"])
    except OSError:
        pass
    if not measured:
        return None, {}
    by_n = {}
    for c in measured:
        for r in c.get("results", []):
            b = by_n.get(r["n"])
            if b is None:
                by_n[r["n"]] = json.loads(json.dumps(r))
                continue
            for key, better in (("cpu_us_per_write", min), ("writes_per_s", max), ("burst_ms", min)):
                if better(r[key]["median"], b[key]["median"]) != b[key]["median"]:
                    b[key] = r[key]
            b["cpu_us_per_frame"] = min(b.get("cpu_us_per_frame", 1e9), r.get("cpu_us_per_frame", 1e9))
    best = dict(measured[0])
    best["results"] = [by_n[n] for n in sorted(by_n)]
    best["measurements"] = measured
    return best, by_n


def _ceiling_for(by_n, n, key):
    if not by_n or not n:
        return None
    if n in by_n:
        r = by_n[n]
    else:  # nearest N measured
        r = by_n[min(by_n, key=lambda k: abs(math.log(k) - math.log(n)))]
        if key == "burst_ms":
            return r["burst_ms"]["median"] * n / r["n"]
    v = r.get(key)
    return v["median"] if isinstance(v, dict) else v


def summarise(d):
    runs = []
    with open(os.path.join(d, "runs.jsonl")) as f:
        for line in f:
            line = line.strip()
            if line:
                runs.append(json.loads(line))
    meta = {}
    try:
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        pass
    ceiling, cby_n = _load_ceiling(d)
    servers = [s for s in SERVERS if any(r["server"] == s for r in runs)]
    # the targeted cases have their own tables (targeted.py): rate and worker sweeps
    cases = sorted({r["case"] for r in runs if not targeted.is_targeted(r["case"])}, key=_case_order)

    summary = {"meta": meta, "ceiling": ceiling, "cases": {}}
    lines = []
    title = f"# bench/compare — {meta.get('date', '')}"
    lines.append(title)
    lines.append("")
    if meta:
        lines.append(f"- command: `{meta.get('command', '')}`")
        lines.append(f"- machine: {meta.get('nproc', '?')} cores ({meta.get('cpu', '?')}), kernel {meta.get('kernel', '?')}, "
                     f"{meta.get('mem', '?')}; load generator and servers share it")
        lines.append(f"- servers: " + "; ".join(f"{k}: {v}" for k, v in (meta.get("versions") or {}).items()))
        lines.append(f"- repetitions: {meta.get('reps', '?')} (interleaved); every figure is the median over them")
    if ceiling:
        parts = [f"N={r['n']}: {r['cpu_us_per_write']['median']:.2f} µs CPU/write, "
                 f"{r['writes_per_s']['median']:,.0f} writes/s, burst {r['burst_ms']['median']:.1f} ms"
                 for r in ceiling.get("results", [])]
        lines.append(f"- raw-socket ceiling (one core, {ceiling.get('frame_bytes')}-byte SSE frame, writev; "
                     f"best of {len(ceiling.get('measurements', [1]))} measurements in this run): " + "; ".join(parts))
    lines.append("")
    head = lines
    lines = []

    for case in cases:
        kind = case.split("-")[0]
        section = {"overload": "sustained", "capacity_listen": "capacity", "capacity_stdio": "capacity"}.get(kind, kind)
        recs = [r for r in runs if r["case"] == case]
        n = recs[0].get("n")
        desc = {
            "burst": f"burst: {n} listen streams on one URI, one publish at a time",
            "sustained": f"sustained: {n} streams, steady publish rate",
            "overload": f"overload: {n} streams × the rate below to one URI (beyond what the box can write)",
            "slow": f"slow readers: {n} streams, a fraction of them reading slowly through a small receive buffer "
                    f"(fast streams' latency apart)",
            "storm": f"storm: {n} streams drop and reconnect at once",
            "capacity_listen": f"capacity: {n} listen streams (SSE) on one mcpfan, a 3-round burst",
            "capacity_stdio": f"capacity: {n} stdio streams (--unix) on one mcpfan, a 3-round burst",
        }.get(kind, case)
        argv = recs[0].get("argv") or ""
        lines.append(f"## {case} — {desc}")
        lines.append("")
        if argv:
            lines.append(f"load generator: `{argv}`")
            lines.append("")
        hdr = ["metric"] + servers
        if "nchan" in servers and "mcpfan" in servers:
            hdr.append("nchan ÷ mcpfan")
        if "sdkhub" in servers and "mcpfan" in servers:
            hdr.append("sdkhub ÷ mcpfan")
        hdr += ["ceiling", "mcpfan ÷ ceiling"]
        lines.append("| " + " | ".join(hdr) + " |")
        lines.append("|" + "---|" * len(hdr))
        csum = {"n": n, "metrics": {}, "runs": {}}
        for s in servers:
            sr = [r for r in recs if r["server"] == s]
            csum["runs"][s] = {"total": len(sr), "ok": sum(1 for r in sr if r["exit"] == 0),
                               "notes": sorted({r.get("note") for r in sr if r.get("note")})}
        for label, src, better, ckey in METRICS[section]:
            row = {}
            for s in servers:
                vals = [v for v in (_metric_value(r, src) for r in recs if r["server"] == s) if v is not None]
                row[s] = statistics.median(vals) if vals else None
            if all(row[s] is None for s in servers):
                continue
            arrow = {"low": " ↓", "high": " ↑", "info": ""}[better]
            cells = [label + arrow] + [_fmt(row[s]) for s in servers]
            if "nchan ÷ mcpfan" in hdr:
                cells.append(_fmt(_ratio(row.get("nchan"), row.get("mcpfan"))) if better != "info" else "")
            if "sdkhub ÷ mcpfan" in hdr:
                cells.append(_fmt(_ratio(row.get("sdkhub"), row.get("mcpfan"))) if better != "info" else "")
            cval = _ceiling_for(cby_n, n, ckey) if ckey else None
            cells.append(_fmt(cval) if cval is not None else "")
            cells.append(_fmt(_ratio(row.get("mcpfan"), cval)) if cval is not None else "")
            lines.append("| " + " | ".join(cells) + " |")
            csum["metrics"][label] = {"better": better, **row, "ceiling": cval}
        okline = ", ".join(f"{s} {v['ok']}/{v['total']}" + (f" ({'; '.join(v['notes'])})" if v["notes"] else "")
                           for s, v in csum["runs"].items())
        lines.append("")
        lines.append(f"runs completed (load generator exit 0): {okline}")
        lines.append("")
        summary["cases"][case] = csum

    note = ("Ratios are plain quotients of the medians (↓ lower is better, ↑ higher is better): "
            "for a ↓ metric, nchan ÷ mcpfan = 3 means mcpfan needs a third of nchan's. "
            "'ceiling' is the raw-socket figure at the same N (one core, writev, nothing else).")
    if cases:  # the broadcast tables' ratios (the targeted tables state their own)
        lines.append(note)
        lines.append("")
    t_lines, t_summary = targeted.tables(runs, servers, _fmt, meta)
    if t_summary:
        summary["targeted"] = t_summary
    lines += t_lines
    table = "\n".join(head + headline(summary, servers) + targets(summary) + targeted.targets(t_summary, _fmt) + lines) + "\n"
    with open(os.path.join(d, "table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    charts(d, runs, servers, cases, cby_n)
    return table


# The few figures people ask for first, one row each (taken from the per-case tables).
HEADLINE = [
    ("burst", "time to last delivery, median (ms)"),
    ("burst", "server CPU per delivery (µs)"),
    ("burst", "server CPU per delivery, warm: rounds 2..K (µs)"),
    ("burst", "server RSS per stream (KiB)"),
    ("burst", "deliveries/s"),
    ("sustained", "latency p99 (ms)"),
    ("overload", "latency p99 (ms)"),
    ("overload", "latency max (ms)"),
    ("overload", "server RSS growth while publishing, process tree (MiB)"),
    ("overload", "TCP socket buffers, whole machine, peak growth (MiB)"),
    ("overload", "server CPU per delivery (µs)"),
    ("slow", "fast streams: latency p99 (ms)"),
    ("slow", "server: coalesced (/metrics)"),
    ("slow", "server RSS growth while publishing, process tree (MiB)"),
    ("storm", "all reconnected + a publish reached all (s)"),
    ("capacity_listen", "every stream got every round exactly once (runs ok / runs)"),
    ("capacity_listen", "server RSS per stream (KiB)"),
    ("capacity_stdio", "every stream got every round exactly once (runs ok / runs)"),
    ("capacity_stdio", "server RSS per stream (KiB)"),
]


def headline(summary, servers):
    out = ["## Headline (medians over reps)", ""]
    hdr = ["case", "metric"] + servers
    pairs = [o for o in ("nchan", "sdkhub") if o in servers and "mcpfan" in servers]
    hdr += [f"{o} ÷ mcpfan" for o in pairs] + ["mcpfan ÷ ceiling"]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "---|" * len(hdr))
    rows = 0
    for kind, label in HEADLINE:
        for case, c in summary["cases"].items():
            if case.split("-")[0] != kind or label not in c["metrics"]:
                continue
            m = c["metrics"][label]
            arrow = {"low": " ↓", "high": " ↑", "info": ""}[m["better"]]
            cells = [case, label + arrow] + [_fmt(m.get(s)) for s in servers]
            cells += [_fmt(_ratio(m.get(o), m.get("mcpfan"))) for o in pairs]
            cells.append(_fmt(_ratio(m.get("mcpfan"), m.get("ceiling"))) if m.get("ceiling") else "")
            out.append("| " + " | ".join(cells) + " |")
            rows += 1
    out.append("")
    return out if rows else []


def targets(summary):
    """The broadcast targets (docs/performance.md, "Targets not met yet" lists the open ones), checked against this run's medians (only those this run measured)."""
    cases = summary["cases"]
    burst = [c for k, c in cases.items() if k.startswith("burst-")]
    big = max(burst, key=lambda c: c["n"]) if burst else None
    over = next((c for k, c in cases.items() if k.startswith("overload-")), None)
    checks = []

    def m(c, label, srv):
        return (c or {}).get("metrics", {}).get(label, {}).get(srv) if c else None

    def add(what, ok, detail):
        checks.append(f"| {what} | {'yes' if ok else 'NO' if ok is not None else '—'} | {detail} |")

    if big:
        n = big["n"]
        cpu = "server CPU per delivery (µs)"
        rss = "server RSS per stream (KiB)"
        t = "time to last delivery, median (ms)"
        a, b = m(big, cpu, "mcpfan"), m(big, cpu, "nchan")
        if a is not None and b is not None:
            add(f"CPU per delivery ≤ ½ nchan's (burst, N={n})", a <= b / 2, f"{_fmt(a)} vs {_fmt(b)} µs")
        a, b = m(big, rss, "mcpfan"), m(big, rss, "nchan")
        if a is not None and b is not None:
            add(f"memory per stream ≤ ¼ nchan's (N={n})", a <= b / 4, f"{_fmt(a)} vs {_fmt(b)} KiB")
        a, b = m(big, t, "mcpfan"), m(big, t, "nchan")
        if a is not None and b is not None:
            add(f"time to last delivery ≤ nchan's (N={n})", a <= b, f"{_fmt(a)} vs {_fmt(b)} ms")
        a, b = m(big, cpu, "mcpfan"), m(big, cpu, "sdkhub")
        if a is not None and b is not None:
            add(f"≥ 6× less CPU per delivery than the SDK v2 hub (N={n})", b >= 6 * a, f"{_fmt(a)} vs {_fmt(b)} µs ({_fmt(b / a if a else None)}×)")
        a, b = m(big, rss, "mcpfan"), m(big, rss, "sdkhub")
        if a is not None and b is not None:
            add(f"≥ 12× less memory per stream than the SDK v2 hub (N={n})", b >= 12 * a, f"{_fmt(a)} vs {_fmt(b)} KiB ({_fmt(b / a if a else None)}×)")
    if over:
        a = m(over, "latency p99 (ms)", "mcpfan")
        if a is not None:
            add(f"overload: newest update reaches every stream within 50 ms at p99 (N={over['n']})", a <= 50, f"p99 {_fmt(a)} ms")
        lbl = "server RSS growth while publishing, process tree (MiB)"
        tl = "TCP socket buffers, whole machine, peak growth (MiB)"
        g, gn = m(over, lbl, "mcpfan"), m(over, lbl, "nchan")
        tg, tgn = m(over, tl, "mcpfan"), m(over, tl, "nchan")
        if g is not None:
            detail = f"RSS: mcpfan +{_fmt(g)} MiB" + (f", nchan +{_fmt(gn)} MiB" if gn is not None else "")
            if tg is not None:
                detail += f"; TCP buffers (whole box): mcpfan +{_fmt(tg)} MiB" + (f", nchan +{_fmt(tgn)} MiB" if tgn is not None else "")
            add("overload: server memory stays flat (RSS growth ≤ 16 MiB)", g <= 16, detail)
        pn = m(over, "latency p99 (ms)", "nchan")
        if a is not None and pn is not None:
            add("overload: nchan's backlog grows to seconds (nchan p99 ≥ 1 s)", pn >= 1000, f"nchan p99 {_fmt(pn)} ms")
    if not checks:
        return []
    return ["## Broadcast targets, as measured in this run", "", "| target | met | medians |", "|---|---|---|"] + checks + [""]


# ---------------------------------------------------------------------------------------------
# charts (gnuplot)

COLORS = {"mcpfan": "#1b9e77", "nchan": "#d95f02", "sdkhub": "#7570b3", "ceiling": "#666666"}


def charts(d, runs, servers, cases, cby_n):
    gp = shutil.which("gnuplot")
    chart_dir = d
    scripts = []

    # 1. fan-out time per N (burst): median over reps of the per-run median, min..max of the reps
    bursts = sorted({r["n"] for r in runs if r["case"].startswith("burst-")})
    if bursts:
        with open(os.path.join(chart_dir, "fanout.dat"), "w") as f:
            f.write("# N " + " ".join(f"{s}_med {s}_lo {s}_hi" for s in servers) + " ceiling_ms\n")
            for n in bursts:
                row = [str(n)]
                for s in servers:
                    v = [x for x in (_get(r.get("result") or {}, "burst.last_delivery_ms.median")
                                     for r in runs if r["case"] == f"burst-{n}" and r["server"] == s) if x is not None]
                    row += [f"{statistics.median(v):.3f}", f"{min(v):.3f}", f"{max(v):.3f}"] if v else ["NaN"] * 3
                c = _ceiling_for(cby_n, n, "burst_ms")
                row.append(f"{c:.3f}" if c is not None else "NaN")
                f.write(" ".join(row) + "\n")
        plot = []
        for i, s in enumerate(servers):
            col = 2 + 3 * i
            plot.append(f"'fanout.dat' u 1:{col}:{col+1}:{col+2} w yerrorlines lw 2 pt 7 lc rgb '{COLORS[s]}' t '{s}'")
        plot.append(f"'fanout.dat' u 1:{2 + 3 * len(servers)} w linespoints lw 2 dt 2 pt 6 lc rgb '{COLORS['ceiling']}' "
                    f"t 'raw writev ceiling (1 core)'")
        scripts.append(("fanout", f"""set terminal pngcairo size 900,600 font 'sans,11'
set output 'fanout.png'
set title 'Burst: time from publish to the last delivery (median over reps; bars: min..max)'
set xlabel 'listen streams N'
set ylabel 'ms'
set logscale xy
set grid
set key top left
plot {', '.join(plot)}
"""))

    # 2. latency distribution (sustained and overload): p50, p99, p99.9, max on a "nines" axis
    lat_cases = [c for c in cases if c.startswith("sustained-") or c.startswith("overload-")]
    if lat_cases:
        pct = [("p50", 50.0), ("p99", 99.0), ("p999", 99.9), ("max", 99.99)]
        panels = []
        for case in lat_cases:
            fn = f"latency_{case}.dat"
            with open(os.path.join(chart_dir, fn), "w") as f:
                f.write("# nines label " + " ".join(servers) + "\n")
                for key, p in pct:
                    x = -math.log10(1 - p / 100)
                    row = [f"{x:.3f}", key]
                    for s in servers:
                        v = [y for y in (_get(r.get("result") or {}, f"sustained.latency_ms.{key}")
                                         for r in runs if r["case"] == case and r["server"] == s) if y is not None]
                        row.append(f"{max(statistics.median(v), 0.001):.4f}" if v else "NaN")
                    f.write(" ".join(row) + "\n")
            pl = [f"'{fn}' u 1:{3 + i}:xtic(2) w linespoints lw 2 pt 7 lc rgb '{COLORS[s]}' t '{s}'"
                  for i, s in enumerate(servers)]
            panels.append(f"set title '{case}'\nplot " + ", ".join(pl))
        cols = min(3, len(panels))
        rows = math.ceil(len(panels) / cols)
        scripts.append(("latency", f"""set terminal pngcairo size {450 * cols},{420 * rows} font 'sans,10'
set output 'latency.png'
set multiplot layout {rows},{cols} title 'Publish-to-delivery latency distribution (median over reps; "max" drawn at 99.99)'
set logscale y
set grid
set ylabel 'ms'
set xlabel 'percentile'
set key top left
set xrange [0:4.3]
""" + "\n".join(panels) + "\nunset multiplot\n"))

    # 3. cost per delivery and memory per stream at each burst N (bars)
    if bursts:
        with open(os.path.join(chart_dir, "cost.dat"), "w") as f:
            f.write("# N " + " ".join(f"{s}_cpu" for s in servers) + " " + " ".join(f"{s}_rss" for s in servers) + " ceiling_cpu\n")
            for n in bursts:
                row = [str(n)]
                for key in ("server.cpu_us_per_delivery", "server.rss_kib_per_stream"):
                    for s in servers:
                        v = [x for x in (_get(r.get("result") or {}, key) for r in runs
                                         if r["case"] == f"burst-{n}" and r["server"] == s) if x is not None]
                        row.append(f"{statistics.median(v):.4f}" if v else "NaN")
                c = _ceiling_for(cby_n, n, "cpu_us_per_write")
                row.append(f"{c:.4f}" if c is not None else "NaN")
                f.write(" ".join(row) + "\n")
        k = len(servers)
        cpu_plot = ", ".join(f"'cost.dat' u {2 + i}:xtic(1) lc rgb '{COLORS[s]}' t '{s}'" for i, s in enumerate(servers))
        cpu_plot += f", 'cost.dat' u {2 + 2 * k} lc rgb '{COLORS['ceiling']}' t 'ceiling: one writev'"
        rss_plot = ", ".join(f"'cost.dat' u {2 + k + i}:xtic(1) lc rgb '{COLORS[s]}' t '{s}'" for i, s in enumerate(servers))
        scripts.append(("cost", f"""set terminal pngcairo size 1100,480 font 'sans,10'
set output 'cost.png'
set multiplot layout 1,2 title 'Burst: server cost (median over reps)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set grid ytics
set key below horizontal
set xlabel 'listen streams N'
set title 'server CPU per delivery (µs)'
set yrange [0:*]
plot {cpu_plot}
set title 'server RSS per open stream (KiB)'
plot {rss_plot}
unset multiplot
"""))

    scripts += targeted.chart_scripts(chart_dir, runs, servers, COLORS)

    for name, text in scripts:
        path = os.path.join(chart_dir, f"{name}.gp")
        with open(path, "w") as f:
            f.write(text)
        if gp:
            r = subprocess.run([gp, f"{name}.gp"], cwd=chart_dir, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                sys.stderr.write(f"compare.py: gnuplot {name}.gp failed: {r.stderr.strip()[:500]}\n")


def cmd_summarise(a):
    sys.stdout.write(summarise(a.dir))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("freeport").set_defaults(fn=cmd_freeport)
    t = sub.add_parser("tree")
    t.add_argument("pid", type=int)
    t.set_defaults(fn=cmd_tree)
    w = sub.add_parser("watch")
    w.add_argument("--out", required=True)
    w.add_argument("--interval", type=float, default=0.1)
    w.add_argument("--max-s", type=float, default=900)
    w.add_argument("pid", type=int)
    w.set_defaults(fn=cmd_watch)
    r = sub.add_parser("record")
    for k in ("runs", "server", "case", "scenario", "stdout", "watch", "argv"):
        r.add_argument("--" + k, required=True)
    r.add_argument("--note", default="")
    r.add_argument("--rep", type=int, required=True)
    r.add_argument("--n", type=int, required=True)
    r.add_argument("--rc", type=int, required=True)
    r.add_argument("--wall", type=float, required=True)
    r.set_defaults(fn=cmd_record)
    s = sub.add_parser("summarise")
    s.add_argument("dir")
    s.set_defaults(fn=cmd_summarise)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
