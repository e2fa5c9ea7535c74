#!/usr/bin/env python3
"""Latency of the NATS hop, by delivery model (docs/performance.md, "NATS hop: IO and delivery").

Starts one nats-server and, per variant, two mcpfan nodes on loopback: A takes the publishes,
B holds the listen streams. `mcpfan-load --scenario sustained` publishes at a fixed rate and measures
publish->delivery latency at B's streams; once with the publishes sent to B itself (local:
no hop) and once through A (remote: A -> nats-server -> B). Each variant (extra arguments for
both nodes, e.g. `--nats-delivery-threads 2`) is measured in the same run, interleaved, RUNS times; the
medians of p50/p99/max are printed per variant, and the hop's own cost as remote - local.

    python3 bench/nats_hop.py [--build build] [--runs 3] [--rate 2000] [--duration 8] [--streams 20]
        [--variant "threads1=--nats-delivery-threads 1" --variant "..."]

Every process is stopped by PID at the end. Figures are from a shared 2-core VM: compare
variants of one run, not runs of different days.
"""
import argparse, json, os, re, shlex, signal, statistics, subprocess, sys, time

NATS_SERVER = "/usr/sbin/nats-server"


def start(argv, pattern, what, timeout=15):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + timeout
    seen = ""
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            if p.poll() is not None:
                break
            continue
        seen += line
        m = re.search(pattern, line)
        if m:
            return p, int(m.group(1))
    p.kill()
    raise SystemExit(f"{what} did not start:\n{seen}")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def node(build, nats_port, name, extra):
    argv = [f"{build}/tools/mcpfan/mcpfan", "--listen", "127.0.0.1:0", "--workers", "1",
            "--nats", f"nats://127.0.0.1:{nats_port}", "--node-name", name] + extra
    return start(argv, r"listening on 127\.0\.0\.1:(\d+)", f"mcpfan {name}")


def load(build, b_port, publish_port, args):
    argv = [f"{build}/tools/mcpfan-load/mcpfan-load", "--kind", "listen", "--target", f"http://127.0.0.1:{b_port}",
            "--publish-url", f"http://127.0.0.1:{publish_port}/v1/publish", "--streams", str(args.streams),
            "--scenario", "sustained", "--rate", str(args.rate), "--duration", str(args.duration), "--no-metrics",
            "--timeout-s", str(args.duration + 60)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=args.duration + 90)
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    try:
        r = json.loads(last)
    except json.JSONDecodeError:
        raise SystemExit(f"mcpfan-load failed (exit {out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    s = r["sustained"]
    if out.returncode != 0 or s["lost"] != 0:
        raise SystemExit(f"mcpfan-load: exit {out.returncode}, lost {s['lost']}:\n{last}")
    return s["latency_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--streams", type=int, default=20)
    ap.add_argument("--variant", action="append", default=[],
                    help='NAME=ARGS for both nodes (default: the shipped settings, nats.c batching, and '
                         'delivery by a pool of 2 and by a thread per subscription)')
    args = ap.parse_args()
    variants = [v.split("=", 1) for v in args.variant] or [
        ["default", ""], ["batching", "--nats-publish-batching"], ["pool2", "--nats-delivery-threads 2"],
        ["per-sub", "--nats-delivery-threads 0"]]
    procs = []
    results = {name: {"local": [], "remote": []} for name, _ in variants}
    try:
        nats, nats_port = start([NATS_SERVER, "-a", "127.0.0.1", "-p", "-1"],
                                r"Listening for client connections on 127\.0\.0\.1:(\d+)", "nats-server")
        procs.append(nats)
        for run in range(args.runs):
            for name, extra in variants:
                a, a_port = node(args.build, nats_port, "A", shlex.split(extra))
                b, b_port = node(args.build, nats_port, "B", shlex.split(extra))
                try:
                    time.sleep(0.3)  # B's interest reaches the server well before the first publish
                    for where, port in (("local", b_port), ("remote", a_port)):
                        before = (cpu_s(a.pid), cpu_s(nats.pid))
                        lat = load(args.build, b_port, port, args)
                        # The sender's and the server's CPU per publish on the hop (A only parses
                        # and forwards: its streams are at B).
                        publishes = args.rate * args.duration
                        lat["a_cpu_us"] = (cpu_s(a.pid) - before[0]) * 1e6 / publishes
                        lat["nats_cpu_us"] = (cpu_s(nats.pid) - before[1]) * 1e6 / publishes
                        results[name][where].append(lat)
                        print(f"run {run + 1} {name:8} {where:6} p50 {lat['p50']:.3f} p99 {lat['p99']:.3f} "
                              f"max {lat['max']:.3f} ms; A {lat['a_cpu_us']:.1f} us/publish", flush=True)
                finally:
                    stop([a, b])
    finally:
        stop(procs)
    print(f"\nmedians of {args.runs} runs, {args.streams} streams, {args.rate} publishes/s for {args.duration} s (ms):")
    print("| variant | local p50 | local p99 | remote p50 | remote p99 | remote max | hop p99 (remote - local) "
          "| A CPU/publish (remote) | nats-server CPU/publish |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for name, _ in variants:
        med = {w: {k: statistics.median(x[k] for x in results[name][w]) for k in ("p50", "p99", "max", "a_cpu_us", "nats_cpu_us")}
               for w in ("local", "remote")}
        summary[name] = med
        print(f"| {name} | {med['local']['p50']:.3f} | {med['local']['p99']:.3f} | {med['remote']['p50']:.3f} | "
              f"{med['remote']['p99']:.3f} | {med['remote']['max']:.3f} | {med['remote']['p99'] - med['local']['p99']:.3f} "
              f"| {med['remote']['a_cpu_us']:.1f} µs | {med['remote']['nats_cpu_us']:.1f} µs |")
    print(json.dumps({"streams": args.streams, "rate": args.rate, "duration_s": args.duration, "runs": args.runs,
                      "medians_ms": summary}))


if __name__ == "__main__":
    sys.exit(main())
