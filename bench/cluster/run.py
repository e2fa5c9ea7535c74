#!/usr/bin/env python3
"""The multi-node benchmark (docs/performance.md, "Five nodes, 95,000 streams"; bench/cluster/README.md).

One command, loopback only, stdlib only. It starts nats-server(s), 5 mcpfan nodes on the NATS
backplane and one mcpfan-load receiver per node (19,000 streams each: the descriptor cap of
one process), plus one publisher process, and measures:

  broadcast  one publish reaches all 5 x 19,000 streams exactly once; Sigma CPU of nodes and
             nats-server(s) per delivery against one mcpfan without --nats (19,000 streams,
             same burst) measured in the same run; time to the last delivery
  sparse     each stream also has its own URI; 20,000 publishes/s for 10 s, each to one random
             stream's URI through a random node: lost / misdelivered / duplicates, latency,
             backplane CPU per (event, receiving node)
  hop        single publishes to a URI that small receivers on every node hold: first remote
             delivery - first local delivery
  outage     one publish per ms through node A while the nats-server is killed (-9) and
             restarted on its port: losses on the other nodes, with --nats-settle-ms 500 and 0

Every process it starts is stopped by its PID at the end, also on failure or Ctrl-C.

    python3 bench/cluster/run.py [--quick] [--scenarios broadcast,sparse,hop,outage] [--node-args "..."]
"""
import argparse, json, os, re, selectors, signal, socket, statistics, subprocess, sys, threading, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SHARED_URI = "file:///bench/all"      # every big-receiver stream subscribes to it (broadcast)
OWN_BASE = "file:///bench/s/"         # stream with global index g also subscribes OWN_BASE + g (sparse)
# The small hop receivers (hop, outage) subscribe to this sub-resource prefix, and each publish
# goes to a URI of its own below it: mcpfan coalesces a newer update of the SAME URI into an
# unwritten older one (by design), which would look like a loss here.
HOP_URI = "file:///bench/hop/"


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


class Fail(Exception):
    pass


# ------------------------------------------------------------------ processes

class Procs:
    """Every process this run starts, stopped by PID (TERM, then KILL) in reverse order."""

    def __init__(self):
        self.procs = []

    def start(self, name, argv, logdir, stdin=None, stdout=None):
        err = open(os.path.join(logdir, name + ".stderr"), "w")
        # A session of its own: a Ctrl-C in the terminal reaches run.py only, which then stops
        # everything in order (and no child is left behind by a signal it did not get).
        p = subprocess.Popen(argv, stdin=stdin, stdout=stdout if stdout is not None else subprocess.DEVNULL, stderr=err,
                             start_new_session=True)
        p.name = name
        p.errpath = err.name
        err.close()
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, grace=5.0):
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(5)
        for f in (p.stdin, p.stdout):
            if f:
                try:
                    f.close()
                except OSError:
                    pass
        if p in self.procs:
            self.procs.remove(p)

    def stop_all(self):
        for p in reversed(list(self.procs)):
            self.stop(p)


def wait_for_log(p, pattern, timeout):
    """The first match of `pattern` in the process's stderr file (bounded by `timeout`)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(p.errpath) as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        if p.poll() is not None:
            raise Fail(f"{p.name} exited ({p.returncode}) before logging /{pattern}/: see {p.errpath}")
        time.sleep(0.05)
    raise Fail(f"{p.name} did not log /{pattern}/ within {timeout} s: see {p.errpath}")


class Driven:
    """A mcpfan-load process in a controlled scenario: commands on stdin, one answer line each."""

    def __init__(self, procs, name, argv, logdir):
        self.p = procs.start(name, argv, logdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.name = name
        self.buf = b""
        self.lines = []
        self.ready = None
        self.final = None
        os.set_blocking(self.p.stdout.fileno(), False)

    def _fill(self, timeout):
        sel = selectors.DefaultSelector()
        sel.register(self.p.stdout, selectors.EVENT_READ)
        got = sel.select(timeout)
        sel.close()
        if not got:
            return False
        try:
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            raise Fail(f"{self.name} closed its stdout (exit {self.p.poll()}): see {self.p.errpath}")
        self.buf += chunk
        *done, self.buf = self.buf.split(b"\n")
        self.lines += [d.decode() for d in done]
        return True

    def expect(self, word, timeout):
        """The JSON (or text) after the first line starting with `word`; other lines are kept."""
        deadline = time.time() + timeout
        while True:
            for i, l in enumerate(self.lines):
                if l.startswith(word + " ") or l == word:
                    del self.lines[: i + 1]
                    rest = l[len(word):].strip()
                    return json.loads(rest) if rest.startswith("{") else rest
                if l.startswith("ERR "):
                    raise Fail(f"{self.name}: {l}")
            left = deadline - time.time()
            if left <= 0:
                raise Fail(f"{self.name}: no '{word}' within {timeout} s (see {self.p.errpath})")
            self._fill(min(left, 0.5))

    def send(self, cmd):
        self.p.stdin.write((cmd + "\n").encode())
        self.p.stdin.flush()

    def ask(self, cmd, word, timeout=30):
        self.send(cmd)
        return self.expect(word, timeout)

    def wait_ready(self, timeout):
        self.ready = self.expect("READY", timeout)
        return self.ready

    def quit(self, timeout=30):
        """Asks it to end and keeps its last JSON line (its final report)."""
        try:
            self.send("quit")
        except (BrokenPipeError, ValueError):
            return None
        deadline = time.time() + timeout
        while self.p.poll() is None and time.time() < deadline:
            try:
                self._fill(0.2)
            except Fail:
                break
        for l in reversed(self.lines):
            if l.startswith("{"):
                self.final = json.loads(l)
                break
        return self.final


# ------------------------------------------------------------------ /proc, sockets, metrics

def free_port():
    # Bound then released: nats-server needs its ports named (restarted on the same one; route
    # URLs). A race with another process taking the port in between is possible on a busy box.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def ctx_switches(pid):
    """(voluntary, involuntary) context switches summed over the process's threads: a voluntary one is
    a thread going to sleep (each wake-up of a message's path), the other a preemption."""
    vol = inv = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        inv += int(line.split()[1])
        except OSError:
            pass  # a thread that ended meanwhile
    return vol, inv


def thread_switches(pid):
    """{tid: (name/where it sleeps, voluntary context switches)} of one process (where its wake-ups are)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                name += "/" + f.read().strip()  # where it sleeps: ep_poll (a loop), futex (a condition), ...
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                vol = next(int(l.split()[1]) for l in f if l.startswith("voluntary_ctxt_switches:"))
            out[tid] = (name, vol)
        except (OSError, StopIteration):
            pass
    return out


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sockstat_tcp():
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                v = line.split()[1:]
                return {v[i]: int(v[i + 1]) for i in range(0, len(v), 2)}
    return {}


def slab_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Slab:"):
                return int(line.split()[1])
    return 0


def box_cpu():
    """(busy, total, fields) jiffies of the whole box from /proc/stat; busy = user + nice +
    system + irq + softirq (steal, the hypervisor's, is not this box's work)."""
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:9]))
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    busy = v[0] + v[1] + v[2] + v[5] + v[6]
    return busy, sum(v), dict(zip(names, v))


def ksoftirqd_pids():
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().startswith("ksoftirqd/"):
                        out.append(int(d))
            except OSError:
                pass
    return out


def slab_caches():
    """Bytes per slab cache (active objects x object size) from /proc/slabinfo (root only)."""
    out = {}
    try:
        with open("/proc/slabinfo") as f:
            for line in f.readlines()[2:]:
                v = line.split()
                out[v[0]] = int(v[1]) * int(v[3])
    except (OSError, IndexError, ValueError):
        pass
    return out


class SockstatPeak:
    """The highest /proc/net/sockstat TCP mem (pages) seen, sampled every 5 ms in a thread."""

    def __init__(self):
        self.peak, self.stop = 0, threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, sockstat_tcp().get("mem", 0))
            self.stop.wait(0.005)

    def done(self):
        self.stop.set()
        self.t.join(2)
        return self.peak


def skmem_sum(filt):
    """Sum of rmem_alloc + wmem_queued + fwd_alloc over the established TCP sockets matching an
    ss filter, and their count: the kernel's buffer memory charged to those sockets."""
    out = subprocess.run(["ss", "-tmnH", "state", "established", filt], capture_output=True, text=True, timeout=60).stdout
    total = n = 0
    for m in re.finditer(r"skmem:\(r(\d+),rb\d+,t(\d+),tb\d+,f(\d+),w(\d+)", out):
        r, t, fwd, w = map(int, m.groups())
        total += r + fwd + w
        n += 1
    return total, n


def metrics(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("mcpfan_") and "{" not in line:
            k, _, v = line.partition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def nats_subs(mport):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}/subsz", timeout=5) as r:
            return json.loads(r.read()).get("num_subscriptions", 0)
    except OSError:
        return -1


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def merge_quantiles(bucket_lists, qs=(0.5, 0.99, 0.999)):
    """Quantiles of the union of several DeliveryTally histograms ([[upper_ns, count], ...])."""
    merged = {}
    for bl in bucket_lists:
        for ub, c in bl:
            merged[ub] = merged.get(ub, 0) + c
    items = sorted(merged.items())
    total = sum(c for _, c in items)
    out = {}
    for q in qs:
        rank = max(1, min(total, int(-(-q * total // 1))))
        seen = 0
        for ub, c in items:
            seen += c
            if seen >= rank:
                out[q] = ub / 1e6
                break
    out["max"] = items[-1][0] / 1e6 if items else None
    out["n"] = total
    return out


def rfc3339(t):
    """Seconds since the epoch of nats-server's 2026-11-24T14:06:59.605104123Z (local offsets too)."""
    import datetime
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", t)
    base = datetime.datetime.fromisoformat(m.group(1) + (m.group(3).replace("Z", "+00:00")))
    return base.timestamp() + float(m.group(2) or 0)


def ranges(idx, _t0=None):
    """[[first, last], ...] runs of consecutive integers."""
    out = []
    for i in idx:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def pct(vals, q):
    if not vals:
        return None
    s = sorted(vals)
    return s[min(len(s) - 1, max(0, int(-(-q * len(s) // 1)) - 1))]


# ------------------------------------------------------------------ the pieces

class Bench:
    def __init__(self, a):
        self.a = a
        self.procs = Procs()
        self.mcpfan = os.path.join(a.build, "tools/mcpfan/mcpfan")
        self.load = os.path.join(a.build, "tools/mcpfan-load/mcpfan-load")
        for b in (self.mcpfan, self.load):
            if not os.access(b, os.X_OK):
                raise Fail(f"{b} not built: cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2")
        self.logdir = a.out
        os.makedirs(self.logdir, exist_ok=True)
        self.result = {"config": {}, "single": {}, "cluster": {}}

    # -- processes

    def node_argv(self, name, nats_url, extra=()):
        argv = [self.mcpfan, "--listen", "127.0.0.1:0", "--workers", str(self.a.workers),
                # Background writes out of the measured phases: a 15 s keep-alive comment on
                # 19,000 idle streams is ~1,300 writes/s per node.
                "--keepalive-ms", "3600000",
                # The publisher keeps one connection per node for 100,000+ publishes.
                "--max-requests-per-connection", "0"]
        if nats_url:
            argv += ["--nats", nats_url, "--node-name", name]
        return argv + list(extra) + self.a.node_args.split()

    def start_node(self, name, nats_url, extra=()):
        p = self.procs.start(name, self.node_argv(name, nats_url, extra), self.logdir)
        m = wait_for_log(p, r"listening on 127\.0\.0\.1:(\d+)", 20)
        p.port = int(m.group(1))
        return p

    def start_nats(self, name, port, mport, cluster=None, routes=None):
        argv = ["/usr/sbin/nats-server", "-a", "127.0.0.1", "-p", str(port), "-m", str(mport)]
        if cluster:
            argv += ["--cluster_name", "bench", "--cluster", f"nats://127.0.0.1:{cluster}", "--routes", routes]
        p = self.procs.start(name, argv, self.logdir)
        p.port, p.mport, p.argv = port, mport, argv
        wait_for_log(p, r"Server is ready", 20)
        return p

    def receiver(self, name, node, streams, index_base, uri_mode, uri):
        argv = [self.load, "--kind", "listen", "--target", f"http://127.0.0.1:{node.port}", "--streams", str(streams),
                "--scenario", "receive", "--stream-uris", uri_mode, "--uri", uri, "--own-uri-base", OWN_BASE,
                "--index-base", str(index_base), "--timeout-s", "7200"]
        return Driven(self.procs, name, argv, self.logdir)

    def publisher(self, name, nodes):
        urls = ",".join(f"http://127.0.0.1:{n.port}/v1/publish" for n in nodes)
        argv = [self.load, "--kind", "listen", "--target", f"http://127.0.0.1:{nodes[0].port}", "--streams", "0",
                "--scenario", "publish", "--publish-url", urls, "--timeout-s", "7200"]
        d = Driven(self.procs, name, argv, self.logdir)
        d.wait_ready(20)
        return d

    # -- measurements

    def capacity(self, nodes, before, streams_per_node):
        """RSS per stream per node; the kernel's TCP memory per connection, both ends apart."""
        sock1, slab1 = sockstat_tcp(), slab_kib()
        out = {"rss_kib_per_stream": [], "server_end_skmem_bytes_per_stream": [], "client_end_skmem_bytes_per_stream": []}
        for n in nodes:
            out["rss_kib_per_stream"].append((rss_kib(n.pid) - before["rss"][n.pid]) / streams_per_node)
            srv, ns = skmem_sum(f"( sport = :{n.port} )")
            cli, nc = skmem_sum(f"( dport = :{n.port} )")
            out["server_end_skmem_bytes_per_stream"].append(srv / max(ns, 1))
            out["client_end_skmem_bytes_per_stream"].append(cli / max(nc, 1))
        conns = streams_per_node * len(nodes)
        out["sockstat_tcp_mem_pages"] = [before["sock"].get("mem"), sock1.get("mem")]
        out["sockstat_tcp_mem_bytes_per_connection_both_ends"] = (sock1.get("mem", 0) - before["sock"].get("mem", 0)) * PAGE / conns
        out["sockstat_tcp_inuse"] = [before["sock"].get("inuse"), sock1.get("inuse")]
        out["slab_kib_per_connection_both_ends"] = (slab1 - before["slab"]) / conns
        caches1 = slab_caches()
        top = sorted(((k, (v - before["caches"].get(k, 0)) / conns) for k, v in caches1.items()), key=lambda x: -x[1])
        out["slab_bytes_per_connection_both_ends_by_cache"] = {k: round(v) for k, v in top[:12] if v > 0}
        return out

    def before_streams(self, nodes):
        return {"rss": {n.pid: rss_kib(n.pid) for n in nodes}, "sock": sockstat_tcp(), "slab": slab_kib(), "caches": slab_caches()}

    def burst_rounds(self, pub, recvs, nodes, servers, expected, rounds, via):
        """Broadcast rounds: CPU of `nodes` + `servers` per delivery, time to the last delivery."""
        out = []
        softirqd = ksoftirqd_pids()
        watched = [n.pid for n in nodes] + [s.pid for s in servers] + softirqd
        for r in range(rounds):
            for d in recvs:
                d.ask(f"phase burst{r} perseq", "OK")
            time.sleep(0.3)  # quiet before the clock starts
            t0 = {p: cpu_ticks(p) for p in watched}
            box0 = box_cpu()
            peak = SockstatPeak()
            sent = pub.ask(f"one {via(r)} {SHARED_URI}", "SENT", 30)
            if sent["status"] // 100 != 2:
                raise Fail(f"broadcast publish refused: {sent}")
            seq = sent["seq"]
            deadline = time.time() + 60
            while True:
                reps = [d.ask("report", "REPORT") for d in recvs]
                got = sum(s[1] for rep in reps for s in rep.get("seqs", []) if s[0] == seq)
                if got >= expected or time.time() > deadline:
                    break
                time.sleep(0.05)
            t1 = {p: cpu_ticks(p) for p in watched}
            box1 = box_cpu()
            peak_pages = peak.done()
            last = max((s[3] for rep in reps for s in rep.get("seqs", []) if s[0] == seq), default=0)
            dups = sum(rep["duplicates"] + rep["misdelivered"] for rep in reps)
            node_ticks = sum(t1[n.pid] - t0[n.pid] for n in nodes)
            nats_ticks = sum(t1[s.pid] - t0[s.pid] for s in servers)
            out.append({"seq": seq, "via": via(r), "delivered": got, "expected": expected, "duplicates_or_misdelivered": dups,
                        "last_delivery_ms": (last - sent["ts_ns"]) / 1e6 if last else None,
                        "node_cpu_ms": node_ticks * 1000 / CLK, "nats_cpu_ms": nats_ticks * 1000 / CLK,
                        "cpu_us_per_delivery": (node_ticks + nats_ticks) * 1e6 / CLK / max(got, 1),
                        "sockstat_tcp_mem_peak_pages": peak_pages,
                        # Context: the whole box over the round (load generators and the driver's
                        # polling included), and the softirq threads (loopback TCP work the
                        # kernel did outside any process's own time).
                        "ksoftirqd_cpu_ms": sum(t1[p] - t0[p] for p in softirqd) * 1000 / CLK,
                        "box_busy_ms": (box1[0] - box0[0]) * 1000 / CLK,
                        "box_jiffies": {k: box1[2][k] - box0[2][k] for k in box1[2]}})
            log(f"  round {r}: {got}/{expected} delivered, last after {out[-1]['last_delivery_ms']:.1f} ms, "
                f"CPU {out[-1]['cpu_us_per_delivery']:.2f} us/delivery (nodes {out[-1]['node_cpu_ms']:.0f} ms, nats {out[-1]['nats_cpu_ms']:.0f} ms)")
            if got != expected or dups:
                raise Fail(f"broadcast round {r}: {got} of {expected} delivered, {dups} duplicates/misdelivered")
        tot_ticks = sum(x["node_cpu_ms"] + x["nats_cpu_ms"] for x in out)
        return {"rounds": out, "median_last_delivery_ms": med([x["last_delivery_ms"] for x in out]),
                "median_cpu_us_per_delivery": med([x["cpu_us_per_delivery"] for x in out]),
                "all_rounds_cpu_us_per_delivery": tot_ticks * 1000 / (expected * rounds)}

    def targeted_run(self, pub, recvs, nodes, servers, rate, seconds, via, first, n):
        """`rate` publishes/s for `seconds`, each to one random stream's own URI in [first, first+n)."""
        count = int(rate * seconds)
        loadgens = [d.p.pid for d in recvs] + [pub.p.pid]
        softirqd = ksoftirqd_pids()
        watched = [x.pid for x in nodes] + [s.pid for s in servers] + loadgens + softirqd
        for d in recvs:
            d.ask("phase targeted", "OK")
        m0 = [metrics(x.port) for x in nodes]
        time.sleep(0.3)
        t0 = {p: cpu_ticks(p) for p in watched}
        cs0 = {p: ctx_switches(p) for p in [x.pid for x in nodes] + [s.pid for s in servers]}
        th0 = thread_switches(nodes[0].pid)
        box0 = box_cpu()
        w0 = time.time()
        pub.send(f"run {rate} {count} {via} own {OWN_BASE} {first} {n}")
        done = pub.expect("DONE", seconds + 120)
        # Drain: until every publish arrived, or 5 s without progress.
        seen, progress = -1, time.time()
        while True:
            reps = [d.ask("report", "REPORT") for d in recvs]
            got = sum(r["received"] for r in reps)
            if got >= done["published"] - done["errors"]:
                break
            if got != seen:
                seen, progress = got, time.time()
            if time.time() - progress > 5:
                break
            time.sleep(0.1)
        t1 = {p: cpu_ticks(p) for p in watched}
        cs1 = {p: ctx_switches(p) for p in cs0}
        th1 = thread_switches(nodes[0].pid)
        box1 = box_cpu()
        wall = time.time() - w0
        m1 = [metrics(x.port) for x in nodes]
        lat = merge_quantiles([r["latency_buckets"] for r in reps])
        node_ms = sum(t1[x.pid] - t0[x.pid] for x in nodes) * 1000 / CLK
        nats_ms = sum(t1[s.pid] - t0[s.pid] for s in servers) * 1000 / CLK
        d = lambda k: sum(b.get(k, 0) - a.get(k, 0) for a, b in zip(m0, m1))
        return {"rate": rate, "seconds": seconds, "published": done["published"], "publish_errors": done["errors"],
                "publish_lag_ms": done["publish_lag_ms"], "per_url": done["per_url"],
                "received": got, "lost": done["published"] - done["errors"] - got,
                "duplicates": sum(r["duplicates"] for r in reps), "misdelivered": sum(r["misdelivered"] for r in reps),
                "dropped_streams": sum(r["dropped_streams"] for r in reps),
                "latency_ms": {"p50": lat.get(0.5), "p99": lat.get(0.99), "p999": lat.get(0.999), "max": lat.get("max")},
                "node_cpu_ms": node_ms, "nats_cpu_ms": nats_ms, "wall_s": wall,
                # context switches over the run (all threads): the wake-ups per event, less noisy than CPU time
                "node_ctxsw": [sum(cs1[x.pid][i] - cs0[x.pid][i] for x in nodes) for i in (0, 1)],
                "nats_ctxsw": [sum(cs1[s.pid][i] - cs0[s.pid][i] for s in servers) for i in (0, 1)],
                "first_node_thread_ctxsw": {f"{th1[t][0]}/{t}": th1[t][1] - th0.get(t, ("", 0))[1] for t in th1},
                "loadgen_cpu_ms": sum(t1[p] - t0[p] for p in loadgens) * 1000 / CLK,
                # the whole box, every process (another build on the machine included)
                "box_busy_fraction": (box1[0] - box0[0]) / max(1, box1[1] - box0[1]),
                "box_jiffies": {k: box1[2][k] - box0[2][k] for k in box1[2]},
                "ksoftirqd_cpu_ms": sum(t1[p] - t0[p] for p in softirqd) * 1000 / CLK,
                "backplane_received": d("mcpfan_backplane_received_total"), "backplane_sent": d("mcpfan_backplane_sent_total"),
                "backplane_unmatched": d("mcpfan_backplane_unmatched_total"), "backplane_dropped": d("mcpfan_backplane_dropped_total"),
                "deliveries_metric": d("mcpfan_deliveries_total")}

    # -- phases

    def single(self):
        a = self.a
        log(f"single node: one mcpfan without --nats, {a.streams} streams")
        node = self.start_node("single", None)
        before = self.before_streams([node])
        rx = self.receiver("single-rx", node, a.streams, 0, "both", SHARED_URI)
        rx.wait_ready(180)
        time.sleep(1)
        res = {"streams": a.streams, "connect_s": rx.ready["connect_s"], "capacity": self.capacity([node], before, a.streams)}
        pub = self.publisher("single-pub", [node])
        if "broadcast" in a.scenarios:
            # As many deliveries in all as the cluster's rounds: /proc counts CPU in 10 ms ticks,
            # which is 0.5 us per delivery in one 19,000-stream round.
            res["broadcast"] = self.burst_rounds(pub, [rx], [node], [], a.streams, a.single_rounds, lambda r: 0)
        if "sparse" in a.scenarios:
            # The same per-node load as one cluster node gets in "sparse", all local, no backplane:
            # the reference for the nodes' CPU attributable to the backplane.
            res["sparse_local"] = {}
            for total in a.sparse_rates:
                rate = total // a.nodes
                log(f"single node: local-only targeted load, {rate}/s for {a.sparse_seconds} s (one node's share of {total}/s)")
                x = res["sparse_local"][str(total)] = self.targeted_run(pub, [rx], [node], [], rate, a.sparse_seconds, 0, 0, a.streams)
                log(f"  {x['received']} received, lost {x['lost']}, node CPU {x['node_cpu_ms']:.0f} ms, "
                    f"p99 {x['latency_ms']['p99']} ms")
        pub.quit()
        rx.quit()
        self.procs.stop_all()
        self.result["single"] = res

    def start_cluster(self, extra_node_args=(), tag=""):
        a = self.a
        servers = []
        if a.nats_servers == 1:
            servers.append(self.start_nats("nats-0" + tag, free_port(), free_port()))
        else:
            cports = [free_port(), free_port()]
            for i in range(2):
                other = cports[1 - i]
                servers.append(self.start_nats(f"nats-{i}{tag}", free_port(), free_port(), cluster=cports[i],
                                               routes=f"nats://127.0.0.1:{other}"))
            time.sleep(1)  # routes up
        nodes = []
        for k in range(a.nodes):
            # With two servers, half the nodes list the other server first (nats.c may still
            # shuffle the list; which server each node uses is read from /connz and reported).
            urls = [f"nats://127.0.0.1:{s.port}" for s in servers]
            if k % 2:
                urls.reverse()
            nodes.append(self.start_node(f"n{k}{tag}", ",".join(urls), extra_node_args))
        time.sleep(0.5)
        return servers, nodes

    def wait_interest(self, servers, want, timeout=60):
        deadline = time.time() + timeout
        got = -1
        while time.time() < deadline:
            got = min(nats_subs(s.mport) for s in servers)
            if got >= want:
                return got
            time.sleep(0.2)
        raise Fail(f"nats-server holds {got} subscriptions, want {want} (interest not propagated within {timeout} s)")

    def cluster(self):
        a = self.a
        n, N = a.nodes, a.streams
        log(f"cluster: {a.nats_servers} nats-server(s), {n} nodes, {n} x {N} streams")
        servers, nodes = self.start_cluster()
        before = self.before_streams(nodes)
        before["nats_rss"] = [rss_kib(x.pid) for x in servers]
        rxs = [self.receiver(f"rx{k}", nodes[k], N, k * N, "both", SHARED_URI) for k in range(n)]
        hops = [self.receiver(f"hop{k}", nodes[k], a.hop_streams, 0, "shared", HOP_URI) for k in range(n)]
        for d in rxs + hops:
            d.wait_ready(300)
        # Interest read from NATS itself: each node's own URIs + the shared + the hop URI.
        want = n * (N + 2)
        subs = self.wait_interest(servers, want)
        time.sleep(1)
        nats_rss = [rss_kib(x.pid) for x in servers]
        res = {"nodes": n, "streams": n * N, "connect_s": max(d.ready["connect_s"] for d in rxs),
               "nats_rss_kib_before_after": [before["nats_rss"], nats_rss],
               "nats_subscriptions": subs, "capacity": self.capacity(nodes, before, N)}
        # (The hop receivers' few streams are inside these figures: 8 of 19,008 per node.)
        log(f"  {n * N} streams open, nats-server holds {subs} subscriptions")
        pub = self.publisher("pub", nodes)
        if "broadcast" in a.scenarios:
            log("cluster: broadcast")
            res["broadcast"] = self.burst_rounds(pub, rxs, nodes, servers, n * N, a.rounds, lambda r: r % n)
            res["capacity"]["sockstat_after_broadcast"] = sockstat_tcp()
        if "sparse" in a.scenarios:
            res["sparse"] = {}
            for i, rate in enumerate(a.sparse_rates):
                log(f"cluster: sparse, {rate}/s for {a.sparse_seconds} s through random nodes")
                prof = self.perf_start([nodes[0], servers[0]], a.sparse_seconds) if a.perf and i == 0 else None
                s = res["sparse"][str(rate)] = self.targeted_run(pub, rxs, nodes, servers, rate, a.sparse_seconds, "random", 0, n * N)
                if prof:
                    s["perf"] = self.perf_report(prof)
                log(f"  published {s['published']}, received {s['received']}, lost {s['lost']}, dup {s['duplicates']}, "
                    f"misdelivered {s['misdelivered']}, p50/p99/max {s['latency_ms']['p50']}/{s['latency_ms']['p99']}/{s['latency_ms']['max']} ms, "
                    f"box busy {s['box_busy_fraction']:.0%}")
        if "hop" in a.scenarios:
            log("cluster: added hop")
            res["hop"] = self.hop(pub, hops, n)
        if "outage" in a.scenarios:
            log("cluster: outage (settle as configured: 500 ms unless --node-args says otherwise)")
            res["outage_settle_default"] = self.outage(pub, hops, servers, nodes)
        pub.quit()
        for d in rxs + hops:
            d.quit()
        self.procs.stop_all()
        self.result["cluster"] = res
        if "outage" in a.scenarios:
            log("cluster again with --nats-settle-ms 0: outage")
            servers, nodes = self.start_cluster(["--nats-settle-ms", "0"], tag="-s0")
            rxs = [self.receiver(f"rx{k}-s0", nodes[k], N, k * N, "both", SHARED_URI) for k in range(n)]
            hops = [self.receiver(f"hop{k}-s0", nodes[k], a.hop_streams, 0, "shared", HOP_URI) for k in range(n)]
            for d in rxs + hops:
                d.wait_ready(300)
            self.wait_interest(servers, n * (N + 2))
            pub = self.publisher("pub-s0", nodes)
            res["outage_settle_0"] = self.outage(pub, hops, servers, nodes)
            pub.quit()
            for d in rxs + hops:
                d.quit()
            self.procs.stop_all()

    def perf_start(self, procs, seconds):
        """perf record (software clock, call graphs) of node n0 and the nats-server while the run
        goes on: where the sparse load's CPU goes. Its own overhead is in that run's figures."""
        data = os.path.join(self.logdir, "perf-sparse.data")
        p = self.procs.start("perf", ["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-o", data,
                                      "-p", ",".join(str(x.pid) for x in procs), "--", "sleep", str(seconds)], self.logdir)
        p.data = data
        return p

    def perf_report(self, p):
        try:
            p.wait(self.a.sparse_seconds + 30)
        except subprocess.TimeoutExpired:
            pass
        self.procs.stop(p, signal.SIGINT)
        out = {}
        for name, sort in (("by_symbol", "comm,dso,sym"), ("by_dso", "comm,dso")):
            txt = subprocess.run(["perf", "report", "-i", p.data, "--no-children", "--sort", sort, "--stdio", "-g", "none",
                                  "--percent-limit", "0.7"], capture_output=True, text=True, timeout=300).stdout
            path = os.path.join(self.logdir, f"perf-sparse-{name}.txt")
            with open(path, "w") as f:
                f.write(txt)
            out[name] = [l.strip() for l in txt.splitlines() if l.strip() and not l.startswith("#")][:40]
        log(f"  perf: {self.logdir}/perf-sparse-by_symbol.txt")
        return out

    def hop(self, pub, hops, n):
        a = self.a
        for d in hops:
            d.ask("phase hop perseq", "OK")
        pub.send(f"run {a.hop_rate} {a.hop_publishes} rotate each {HOP_URI}")
        done = pub.expect("DONE", a.hop_publishes / a.hop_rate + 60)
        time.sleep(1)
        reps = [d.ask("report", "REPORT") for d in hops]
        firsts = [{s[0]: s[2] for s in r.get("seqs", [])} for r in reps]
        first_remote, all_remote, local_lat = [], [], []
        incomplete = 0
        for i in range(done["published"]):
            seq = done["first_seq"] + i
            via = i % n  # rotate: publish i went through node i % n
            if any(seq not in f for f in firsts):
                incomplete += 1
                continue
            local = firsts[via][seq]
            remote = [firsts[k][seq] for k in range(n) if k != via]
            first_remote.append((min(remote) - local) / 1e6)
            all_remote.append((max(remote) - local) / 1e6)
        q = lambda v: {"p50": pct(v, 0.5), "p99": pct(v, 0.99), "max": max(v) if v else None}
        res = {"publishes": done["published"], "rate": a.hop_rate, "streams_per_node": a.hop_streams, "incomplete": incomplete,
               "first_remote_minus_first_local_ms": q(first_remote), "last_remote_minus_first_local_ms": q(all_remote),
               "duplicates": sum(r["duplicates"] for r in reps)}
        log(f"  hop p50/p99/max {res['first_remote_minus_first_local_ms']} (first remote - first local), incomplete {incomplete}")
        return res

    def outage(self, pub, hops, servers, nodes):
        """One publish per ms through node A (n0) to HOP_URI; the nats-server n0 uses is killed
        with -9 after `kill_at` s and restarted on its port `down` s later."""
        a = self.a
        n = len(nodes)
        for d in hops:
            d.ask("phase outage perseq", "OK")
        count = int(a.outage_seconds * 1000)
        m0 = [metrics(x.port) for x in nodes]
        pub.send(f"run 1000 {count} 0 each {HOP_URI}")
        t_start = time.time()
        time.sleep(a.outage_kill_at)
        victim = servers[0]
        t_kill = time.time()
        self.procs.stop(victim, signal.SIGKILL)
        log(f"  killed nats-server pid {victim.pid} (-9); restarting on port {victim.port} in {a.outage_down} s")
        time.sleep(a.outage_down)
        new = self.procs.start(victim.name + "-restarted", victim.argv, self.logdir)
        new.port, new.mport, new.argv = victim.port, victim.mport, victim.argv
        wait_for_log(new, r"Server is ready", 20)
        servers[0] = new
        t_up = time.time()
        # When each node's interest is whole again at the restarted server: its connection's
        # subscription count polled from /connz every 20 ms (bounded: until DONE + 3 s).
        want_subs = a.streams + 2
        interest_ms, stop = {}, threading.Event()
        def poll():
            while not stop.is_set():
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{new.mport}/connz?limit=1000", timeout=2) as r:
                        for c in json.loads(r.read()).get("connections", []):
                            if c.get("subscriptions", 0) >= want_subs and c.get("name") not in interest_ms:
                                interest_ms[c.get("name")] = round((time.time() - t_start) * 1000)
                except (OSError, ValueError):
                    pass
                stop.wait(0.02)
        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        done = pub.expect("DONE", a.outage_seconds + 60)
        time.sleep(3)  # settle delay, release of what waited, drain
        stop.set()
        poller.join(5)
        m1 = [metrics(x.port) for x in nodes]
        # When each node's connection came back, from the restarted server's own /connz.
        reconnect_ms = {}
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{new.mport}/connz?limit=1000", timeout=5) as r:
                for c in json.loads(r.read()).get("connections", []):
                    reconnect_ms[c.get("name", "?")] = round((rfc3339(c["start"]) - t_start) * 1000)
        except (OSError, ValueError, KeyError):
            pass
        reps = [d.ask("report", "REPORT") for d in hops]
        # Publish i is due i ms after the run starts: its index is its time, to within the
        # publisher's lag (reported). Missing publishes are given as [from, to] ms ranges.
        t_kill_ms = (t_kill - t_start) * 1000
        res = {"publishes": done["published"], "refused": done["errors"], "first_error": done["first_error"],
               "publish_lag_ms": done["publish_lag_ms"], "kill_at_ms": round(t_kill_ms), "restart_at_ms": round((t_up - t_start) * 1000),
               "down_s": round(t_up - t_kill, 3), "node_reconnected_at_ms": reconnect_ms,
               "node_interest_whole_at_ms": interest_ms, "per_node": []}
        accepted = done["published"] - done["errors"]
        for k, r in enumerate(reps):
            counts = {s[0]: s[1] for s in r.get("seqs", [])}
            missing = [i for i, seq in enumerate(range(done["first_seq"], done["last_seq"] + 1))
                       if counts.get(seq, 0) < a.hop_streams]
            full = done["published"] - len(missing)
            res["per_node"].append({"node": f"n{k}", "local": k == 0, "received_by_all_streams": full,
                                    "lost": accepted - full, "duplicates": r["duplicates"],
                                    "missing_ranges_ms": ranges(missing, t_kill_ms), "latency_ms": r["latency_ms"],
                                    "metrics_delta": {key.replace("mcpfan_", ""): m1[k].get(key, 0) - m0[k].get(key, 0) for key in m1[k]
                                                      if key.startswith("mcpfan_backplane_") or key in ("mcpfan_coalesced_total",
                                                                                                       "mcpfan_deliveries_total")}})
        res["lost_on_other_nodes"] = [x["lost"] for x in res["per_node"][1:]]
        log(f"  refused {done['errors']} of {done['published']}; lost on n1..n{n-1}: {res['lost_on_other_nodes']}; "
            f"on A: {res['per_node'][0]['lost']}; killed at {res['kill_at_ms']} ms, back at {res['restart_at_ms']} ms; missing (ms): "
            + "; ".join(f"n{x['node'][1:]} {x['missing_ranges_ms'][:4]}" for x in res["per_node"])
            + f"; reconnected at (ms) {reconnect_ms}; interest whole at (ms) {interest_ms}")
        return res


# ------------------------------------------------------------------ summary

def summarize(r):
    s, c = r["single"], r["cluster"]
    lines = ["", "== mcpfan cluster benchmark: " + json.dumps(r["config"])]
    if "broadcast" in s and "broadcast" in c:
        sb, cb = s["broadcast"], c["broadcast"]
        # The figure: CPU of all rounds / deliveries of all rounds (finer than one round's ticks).
        ratio = cb["all_rounds_cpu_us_per_delivery"] / sb["all_rounds_cpu_us_per_delivery"]
        r["broadcast_cpu_ratio"] = ratio
        r["broadcast_cpu_ratio_of_round_medians"] = cb["median_cpu_us_per_delivery"] / sb["median_cpu_us_per_delivery"]
        lines += [f"broadcast: {c['streams']} streams: CPU (nodes + nats) {cb['all_rounds_cpu_us_per_delivery']:.2f} us/delivery "
                  f"(all {len(cb['rounds'])} rounds; median round {cb['median_cpu_us_per_delivery']:.2f}) vs single node "
                  f"{sb['all_rounds_cpu_us_per_delivery']:.2f} (all {len(sb['rounds'])} rounds; median round "
                  f"{sb['median_cpu_us_per_delivery']:.2f}) = {ratio:.3f}x (target <= 1.05x)",
                  f"           time to last delivery {cb['median_last_delivery_ms']:.1f} ms vs single node ({s['streams']} streams) "
                  f"{sb['median_last_delivery_ms']:.1f} ms"]
    for rate, sp in c.get("sparse", {}).items():
        lines.append(f"sparse: {sp['published']} publishes at {sp['rate']}/s: lost {sp['lost']}, misdelivered {sp['misdelivered']}, "
                     f"duplicates {sp['duplicates']}; latency p50 {sp['latency_ms']['p50']} p99 {sp['latency_ms']['p99']} "
                     f"max {sp['latency_ms']['max']} ms (target p99 <= 10)")
        loc = s.get("sparse_local", {}).get(rate)
        if loc:
            per_event_local = loc["node_cpu_ms"] * 1000 / max(loc["published"], 1)
            per_event_cluster = sp["node_cpu_ms"] * 1000 / max(sp["published"], 1)
            bp_us = sp["nats_cpu_ms"] * 1000 + (per_event_cluster - per_event_local) * sp["published"]
            recv = sp["backplane_received"] or None
            sp["backplane_cpu_us_per_event"] = bp_us / max(sp["published"], 1)
            sp["backplane_cpu_us_per_event_receiving_node"] = bp_us / recv if recv else None
            sp["node_cpu_us_per_event"] = per_event_cluster
            sp["local_only_node_cpu_us_per_event"] = per_event_local
            lines.append(f"        node CPU {per_event_cluster:.1f} us/event (local-only reference {per_event_local:.1f}), nats-server "
                         f"{sp['nats_cpu_ms'] * 1000 / max(sp['published'], 1):.1f} us/event; backplane "
                         f"{sp['backplane_cpu_us_per_event']:.1f} us/event, "
                         f"{(sp['backplane_cpu_us_per_event_receiving_node'] or float('nan')):.1f} us per (event, receiving node) "
                         f"({sp['backplane_received']:.0f} received over NATS) (target <= 15); box busy {sp['box_busy_fraction']:.0%}, "
                         f"load generators {sp['loadgen_cpu_ms'] * 1000 / max(sp['published'], 1):.1f} us/event")
    if "hop" in c:
        h = c["hop"]["first_remote_minus_first_local_ms"]
        lines.append(f"added hop: first remote - first local p50 {h['p50']} p99 {h['p99']} max {h['max']} ms (target p99 <= 2)")
    for k in ("outage_settle_default", "outage_settle_0"):
        if k in c:
            o = c[k]
            lines.append(f"{k}: {o['publishes']} publishes through n0 at 1/ms, nats-server down {o['down_s']} s: refused {o['refused']}, "
                         f"lost on the other nodes {o['lost_on_other_nodes']}, on n0 {o['per_node'][0]['lost']}")
    if "capacity" in c:
        cap = c["capacity"]
        lines.append(f"capacity per node at {r['config']['streams_per_node']} streams: RSS "
                     f"{med(cap['rss_kib_per_stream']):.2f} KiB/stream; kernel TCP buffers (ss skmem) server end "
                     f"{med(cap['server_end_skmem_bytes_per_stream']):.0f} B, client end {med(cap['client_end_skmem_bytes_per_stream']):.0f} B "
                     f"per stream; sockstat mem {cap['sockstat_tcp_mem_bytes_per_connection_both_ends']:.0f} B and slab "
                     f"{cap['slab_kib_per_connection_both_ends']:.2f} KiB per connection (both ends)")
        if "broadcast" in c:
            pk = max(x["sockstat_tcp_mem_peak_pages"] for x in c["broadcast"]["rounds"])
            lines.append(f"          sockstat TCP mem peak during a broadcast: {pk} pages = {pk * PAGE / c['streams']:.0f} B per connection (both ends)")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true", help="5 x 2,000 streams, short phases (a smoke run)")
    ap.add_argument("--scenarios", default="broadcast,sparse,hop,outage")
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--streams", type=int, default=None, help="streams per node (default 19,000; --quick 2,000)")
    ap.add_argument("--workers", type=int, default=1, help="--workers of every mcpfan (default 1: 5 nodes share 2 cores)")
    ap.add_argument("--nats-servers", type=int, choices=(1, 2), default=1)
    ap.add_argument("--node-args", default="", help="extra arguments for every mcpfan (cluster nodes and the single node)")
    ap.add_argument("--rounds", type=int, default=None, help="broadcast rounds (default 5; --quick 3)")
    ap.add_argument("--single-rounds", type=int, default=None, help="the single node's broadcast rounds (default rounds x nodes)")
    ap.add_argument("--sparse-rate", default="20000", help="publishes/s, or several comma-separated (each a run; the first is the target's)")
    ap.add_argument("--sparse-seconds", type=float, default=None, help="default 10; --quick 2")
    ap.add_argument("--hop-publishes", type=int, default=None, help="default 1,000; --quick 200")
    ap.add_argument("--hop-rate", type=int, default=200)
    ap.add_argument("--hop-streams", type=int, default=8)
    ap.add_argument("--outage-seconds", type=float, default=None, help="publishing time (default 8; --quick 5)")
    ap.add_argument("--outage-kill-at", type=float, default=1.5)
    ap.add_argument("--outage-down", type=float, default=1.0)
    ap.add_argument("--perf", action="store_true", help="perf record n0 and the nats-server during the first sparse rate")
    ap.add_argument("--out", default=None, help="folder for logs and cluster.json (default $MCPFAN_RESULTS_DIR/cluster/<time>, MCPFAN_RESULTS_DIR defaulting to build/bench-results: outside the source tree)")
    ap.add_argument("--json", default=None, help="also write the JSON here")
    a = ap.parse_args()
    q = a.quick
    a.streams = a.streams or (2000 if q else 19000)
    a.rounds = a.rounds or (3 if q else 5)
    a.sparse_seconds = a.sparse_seconds or (2 if q else 10)
    a.single_rounds = a.single_rounds or a.rounds * a.nodes
    a.hop_publishes = a.hop_publishes or (200 if q else 1000)
    a.outage_seconds = a.outage_seconds or (5 if q else 8)
    a.sparse_rates = [int(x) for x in a.sparse_rate.split(",")]
    a.scenarios = set(x.strip() for x in a.scenarios.split(",") if x.strip())
    bad = a.scenarios - {"broadcast", "sparse", "hop", "outage"}
    if bad:
        ap.error(f"unknown scenario(s): {bad}")
    results_root = os.environ.get("MCPFAN_RESULTS_DIR") or os.path.join(ROOT, "build", "bench-results")
    a.out = a.out or os.path.join(results_root, "cluster", time.strftime("%Y-%m-%d-%H%M%S") + ("-quick" if q else ""))

    b = Bench(a)
    b.result["config"] = {"nodes": a.nodes, "streams_per_node": a.streams, "workers": a.workers, "nats_servers": a.nats_servers,
                          "node_args": a.node_args, "rounds": a.rounds, "single_rounds": a.single_rounds, "sparse_rate": a.sparse_rate,
                          "sparse_seconds": a.sparse_seconds, "hop_publishes": a.hop_publishes, "hop_rate": a.hop_rate,
                          "outage_seconds": a.outage_seconds, "scenarios": sorted(a.scenarios), "quick": q,
                          "git": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                                text=True).stdout.strip(),
                          "loadavg_start": open("/proc/loadavg").read().split()[:3], "nproc": os.cpu_count()}
    # SIGINT/SIGTERM/SIGHUP become an exception, so the finally below stops every child by PID.
    def on_signal(sig, _):
        raise KeyboardInterrupt(f"signal {sig}")
    # SIGINT too: a shell starts background jobs with SIGINT ignored, and Python then keeps it so.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    rc = 0
    try:
        if a.scenarios & {"broadcast", "sparse"}:
            b.single()
        b.cluster()
    except Fail as e:
        log(f"FAILED: {e}")
        b.result["error"] = str(e)
        rc = 1
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}): stopping every process")
        b.result["error"] = f"interrupted: {e}"
        rc = 130
    finally:
        b.procs.stop_all()
    b.result["config"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    try:
        text = summarize(b.result)
    except (KeyError, TypeError, ZeroDivisionError) as e:
        text = f"(summary incomplete: {e!r})"
    print(text)
    path = os.path.join(a.out, "cluster.json")
    with open(path, "w") as f:
        json.dump(b.result, f, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(b.result, f, indent=1)
    print(f"JSON: {path}; logs: {a.out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
