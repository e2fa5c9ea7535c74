#!/usr/bin/env python3
"""Fault injection for the NATS backplane (issue 28, item 3; bench/faults/README.md).

One command, run as root, Python 3 standard library only. On this one box it makes its own
network namespaces, veth pairs and Linux bridges (every name starts with mf-<pid>-), starts a
NATS cluster (2-3 nats-servers with routes) and 3-5 mcpfan nodes, opens 2026-07-28
subscriptions/listen streams on every node, publishes 100-200 notifications/s with a unique
marker each through every node, and injects one fault per scenario:

  server_kill     kill -9 of the nats-server most nodes use (they fail over to another)
  server_restart  that server started again (killed first if server_kill did not run)
  server_stall    SIGSTOP of a nats-server, SIGCONT a few seconds later
  node_restart    kill -9 of a node and its restart (its listeners die with it)
  node_partition  a node's backplane link down for ~16 s, then up
  route_cut       one nats-server's cluster link down (its routes cut, its clients connected)
  slow_consumer   a node SIGSTOPped until its nats-server cuts it as a slow consumer

For each: publishes accepted / refused / unanswered; the listener-side ledger of (publish,
listener) pairs: delivered, covered by a re-read hint, silently lost; duplicates; the worst
publish -> covering hint delay; the time until every node answers /healthz and /readyz 200;
what /healthz's backplane object and the mcpfan_backplane_* metrics said (sampled every
250 ms); what a load balancer polling /readyz would have done. A markdown table on stdout,
JSON and every process's stderr in ${MCPFAN_RESULTS_DIR:-build/bench-results}/faults/<time>/.

Every process it starts is stopped by its PID and every namespace and link it made is removed
at the end, on a failure, on Ctrl-C/SIGTERM/SIGHUP, and (by a reaper process that waits for
this one's end) even when this process is killed with SIGKILL.

    sudo python3 bench/faults/run.py [--quick] [--faults server_kill,node_partition] [--binary PATH]
"""
import argparse, http.client, json, os, re, signal, socket, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NATS_SERVER = "/usr/sbin/nats-server"
PREFIX_URI = "file:///faults/"     # every listen subscribes to it; each publish gets a URI of its own below it
MARKER_KEY = "faults/marker"
REREAD_KEY = "mcpfan/reread"
FAULTS = ["server_kill", "server_restart", "server_stall", "node_restart", "node_partition", "route_cut", "slow_consumer"]
SKIP = 77  # the exit status for "cannot run here" (ctest's SKIP_RETURN_CODE)


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def now():
    return time.monotonic()


class Fail(Exception):
    pass


# ------------------------------------------------------------------ processes

class Procs:
    """Every process this run starts, stopped by PID (TERM, then KILL) in reverse order."""

    def __init__(self, logdir):
        self.procs = []
        self.logdir = logdir

    def start(self, name, argv):
        err = open(os.path.join(self.logdir, name + ".stderr"), "w")
        # A session of its own: a Ctrl-C in the terminal reaches run.py only, which then stops
        # everything in order.
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
        p.name = name
        p.errpath = err.name
        p.log_offset = 0
        err.close()
        self.procs.append(p)
        return p

    def send(self, p, sig):
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass

    def stop(self, p, sig=signal.SIGTERM, grace=5.0):
        if p.poll() is None:
            self.send(p, signal.SIGCONT)  # a stopped process would not act on TERM
            self.send(p, sig)
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                self.send(p, signal.SIGKILL)
                p.wait(5)
        if p in self.procs:
            self.procs.remove(p)

    def stop_all(self):
        for p in reversed(list(self.procs)):
            self.stop(p)


def wait_for_log(p, pattern, timeout, start=0):
    """The first match of `pattern` in the process's stderr file after byte `start` (bounded)."""
    deadline = now() + timeout
    while now() < deadline:
        with open(p.errpath, errors="replace") as f:
            f.seek(start)
            m = re.search(pattern, f.read())
        if m:
            return m
        if p.poll() is not None:
            raise Fail(f"{p.name} exited ({p.returncode}) before logging /{pattern}/: see {p.errpath}")
        time.sleep(0.05)
    raise Fail(f"{p.name} did not log /{pattern}/ within {timeout} s: see {p.errpath}")


def log_size(p):
    try:
        return os.path.getsize(p.errpath)
    except OSError:
        return 0


# ------------------------------------------------------------------ network namespaces

def ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise Fail(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def cleanup_prefix(prefix):
    """Kills every process inside the namespaces named prefix*, deletes them and every link
    named prefix* (bridges, veth ends). Used at the end, by the reaper and for stale runs."""
    out = ip("netns", "list", check=False).stdout
    names = [l.split()[0] for l in out.splitlines() if l.split() and l.split()[0].startswith(prefix)]
    for ns in names:
        for _ in range(3):
            pids = [int(x) for x in ip("netns", "pids", ns, check=False).stdout.split() if x.isdigit()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        ip("netns", "del", ns, check=False)
    links = ip("-o", "link", "show", check=False).stdout
    for m in re.finditer(r"^\d+: ([^:@\s]+)", links, re.M):
        if m.group(1).startswith(prefix):
            ip("link", "del", m.group(1), check=False)


def sweep_stale():
    """Namespaces and links of an earlier run whose process is gone (killed before its reaper
    could act, e.g. by a reboot of the reaper itself): removed before this run starts."""
    seen = set()
    text = ip("netns", "list", check=False).stdout + ip("-o", "link", "show", check=False).stdout
    for m in re.finditer(r"\bmf-(\d+)-", text):
        pid = int(m.group(1))
        if pid not in seen and pid != os.getpid() and not pid_alive(pid):
            seen.add(pid)
            log(f"removing the namespaces and links of a finished run (mf-{pid}-*)")
            cleanup_prefix(f"mf-{pid}-")


def start_reaper(prefix):
    """A process in a session of its own that reads a pipe until this process has gone (EOF,
    also after a SIGKILL), then removes everything named prefix*, processes inside first."""
    r, w = os.pipe()
    code = ("import sys; sys.path.insert(0, %r); import run; sys.stdin.buffer.read(); run.cleanup_prefix(%r)"
            % (os.path.dirname(os.path.abspath(__file__)), prefix))
    p = subprocess.Popen([sys.executable, "-B", "-c", code], stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    os.close(r)
    os.set_inheritable(w, False)
    return p, w


class Net:
    """Three bridges: F (front: the harness reaches the nodes' HTTP here), C (client: nodes to
    nats-servers) and R (cluster: nats-server routes). Each node is a namespace with a link on
    F and one on C; each nats-server a namespace with a link on C and one on R. A fault is a
    bridge-side veth end set down: the namespace's own end stays up with its address, loses
    carrier, and TCP sees a silent cut (no reset), like a pulled cable."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.made_ns, self.made_links = [], []
        self.base = self.pick_base()

    def pick_base(self):
        used = ip("-4", "route", "show", "table", "all", check=False).stdout + ip("-4", "-o", "addr", check=False).stdout
        taken = {(int(a), int(b)) for a, b in re.findall(r"\b10\.(\d+)\.(\d+)\.\d+", used)}
        seed = os.getpid()
        for i in range(2000):
            a = 100 + (seed + i * 7) % 150
            b = ((seed // 150 + i) % 60) * 4
            if not any((a, b + k) in taken for k in range(3)):
                return a, b
        raise Fail("no free 10.x.y.0/24 triple for the bridges")

    def addr(self, bridge, host):
        a, b = self.base
        return f"10.{a}.{b + {'f': 0, 'c': 1, 'r': 2}[bridge]}.{host}"

    def bridge(self, tag):
        name = f"{self.prefix}b{tag}"
        ip("link", "add", name, "type", "bridge")
        self.made_links.append(name)
        ip("link", "set", name, "type", "bridge", "forward_delay", "0", check=False)
        ip("link", "set", name, "up")
        return name

    def setup(self):
        self.br = {t: self.bridge(t) for t in "fcr"}
        # The harness's own addresses: on F (nodes' HTTP) and on C (nats-servers' monitoring).
        ip("addr", "add", self.addr("f", 254) + "/24", "dev", self.br["f"])
        ip("addr", "add", self.addr("c", 254) + "/24", "dev", self.br["c"])

    def namespace(self, tag, links):
        """links: [(bridge tag, inside name, host number)]; returns the namespace name and the
        bridge-side end of each link by inside name."""
        ns = self.prefix + tag
        ip("netns", "add", ns)
        self.made_ns.append(ns)
        ip("-n", ns, "link", "set", "lo", "up")
        ends = {}
        for btag, inside, host in links:
            outer = f"{self.prefix}{tag}{btag}"
            ip("link", "add", outer, "type", "veth", "peer", "name", inside, "netns", ns)
            self.made_links.append(outer)
            ip("link", "set", outer, "master", self.br[btag])
            ip("link", "set", outer, "up")
            ip("-n", ns, "addr", "add", self.addr(btag, host) + "/24", "dev", inside)
            ip("-n", ns, "link", "set", inside, "up")
            ends[inside] = outer
        return ns, ends

    def link(self, outer, up):
        ip("link", "set", outer, "up" if up else "down")

    def teardown(self):
        cleanup_prefix(self.prefix)


# ------------------------------------------------------------------ HTTP

def http_get(host, port, path, timeout=1.0):
    """(status, body) or (None, reason)."""
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException) as e:
        return None, type(e).__name__
    finally:
        c.close()


def http_json(host, port, path, timeout=2.0):
    st, body = http_get(host, port, path, timeout)
    if st != 200:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def parse_metrics(text):
    """Every mcpfan_backplane_* series (labels kept in the key) -> value."""
    out = {}
    for line in text.splitlines():
        if line.startswith("mcpfan_backplane_"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


LISTEN_BODY = json.dumps({"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen", "params": {
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}},
    "notifications": {"resourceSubscriptions": [PREFIX_URI]}}}).encode()


class Listener(threading.Thread):
    """One subscriptions/listen stream read on a raw socket: the acknowledgement's time, each
    marker's first arrival (and repeats), every re-read hint (time, uri). Bounded: it ends
    when told, when the stream ends, or after max_s."""

    def __init__(self, name, node, max_s):
        super().__init__(daemon=True)
        self.name_, self.node = name, node
        self.host, self.port = node.ip, node.port
        self.max_s = max_s
        self.ack_t = None
        self.end_t = None
        self.end_reason = None
        self.seen = {}            # marker -> first arrival (monotonic)
        self.dups = []            # markers seen again
        self.hints = []           # (t, uri)
        self.other = 0
        self.acked = threading.Event()
        self.stopping = threading.Event()
        self.sock = None

    def run(self):
        t_end = now() + self.max_s
        try:
            s = socket.create_connection((self.host, self.port), timeout=10)
            self.sock = s
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                      b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                      b"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n"
                      % (self.host.encode(), self.port, len(LISTEN_BODY)) + LISTEN_BODY)
            s.settimeout(0.5)
            raw, head, chunked = b"", None, False
            body, sse = b"", b""
            while not self.stopping.is_set() and now() < t_end:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    self.end_reason = "eof"
                    break
                t = now()
                if head is None:
                    raw += chunk
                    if b"\r\n\r\n" not in raw:
                        if len(raw) > 65536:
                            raise Fail("no end of headers")
                        continue
                    head, _, chunk = raw.partition(b"\r\n\r\n")
                    status = head.split(b"\r\n", 1)[0]
                    if b" 200 " not in status + b" ":
                        self.end_reason = "status " + status.decode(errors="replace")
                        break
                    chunked = b"transfer-encoding: chunked" in head.lower()
                if chunked:
                    body += chunk
                    while True:
                        i = body.find(b"\r\n")
                        if i < 0:
                            break
                        size = int(body[:i].split(b";")[0] or b"0", 16)
                        if len(body) < i + 2 + size + 2:
                            break
                        sse += body[i + 2:i + 2 + size]
                        body = body[i + 2 + size + 2:]
                        if size == 0:
                            self.end_reason = "last chunk"
                else:
                    sse += chunk
                sse = sse.replace(b"\r\n", b"\n")
                while b"\n\n" in sse:
                    ev, _, sse = sse.partition(b"\n\n")
                    self.event(ev, t)
                if self.end_reason:
                    break
        except (OSError, ValueError, Fail) as e:
            self.end_reason = f"{type(e).__name__}: {e}"
        finally:
            if self.end_reason is None and not self.stopping.is_set():
                self.end_reason = "max_s"
            self.end_t = now()
            try:
                self.sock and self.sock.close()
            except OSError:
                pass

    def event(self, ev, t):
        data = "\n".join(l[5:].lstrip() for l in ev.decode(errors="replace").split("\n") if l.startswith("data:"))
        if not data:
            return
        try:
            msg = json.loads(data)
        except ValueError:
            self.other += 1
            return
        m = msg.get("method")
        params = msg.get("params") or {}
        meta = params.get("_meta") or {}
        if m == "notifications/subscriptions/acknowledged":
            self.ack_t = t
            self.acked.set()
        elif m == "notifications/resources/updated":
            if meta.get(REREAD_KEY) is True:
                self.hints.append((t, params.get("uri", "")))
            mk = meta.get(MARKER_KEY)
            if mk is not None:
                if mk in self.seen:
                    self.dups.append((mk, t))
                else:
                    self.seen[mk] = t
        else:
            self.other += 1

    def stop(self):
        self.stopping.set()
        self.join(3)


class Publishers:
    """One thread per node: rate/len(nodes) publishes per second on a keep-alive connection,
    each a resources/updated of a URI of its own (file:///faults/<scenario>/<k>) carrying a
    unique marker. Records (k, node, sent, answered, status) for every attempt; bounded by
    count and time. A publish with no answer (a stopped or dead node) is 'unanswered': it may
    or may not have been accepted, so it takes no part in the ledger."""

    def __init__(self, scenario, nodes, rate, max_s, pad=0):
        self.scenario, self.rate = scenario, rate
        self.nodes = nodes
        self.records = []
        self.lock = threading.Lock()
        self.k = 0
        self.stopping = threading.Event()
        self.max_s = max_s
        self.pad = "x" * pad
        self.threads = [threading.Thread(target=self.loop, args=(n,), daemon=True) for n in nodes]

    def start(self):
        for t in self.threads:
            t.start()

    def next_k(self):
        with self.lock:
            self.k += 1
            return self.k

    def loop(self, node):
        per = self.rate / max(1, len(self.nodes))
        t0 = now()
        deadline = t0 + self.max_s
        conn, conn_port = None, None
        i = 0
        while not self.stopping.is_set() and now() < deadline and i < self.max_s * per + 10:
            due = t0 + i / per
            wait = due - now()
            if wait > 0:
                if self.stopping.wait(wait):
                    break
            i += 1
            k = self.next_k()
            marker = f"{self.scenario}/{k}"
            uri = f"{PREFIX_URI}{self.scenario}/{k}"
            meta = {MARKER_KEY: marker, "faults/ts": round(time.time(), 6)}
            if self.pad:
                meta["faults/pad"] = self.pad
            body = json.dumps([{"method": "notifications/resources/updated", "params": {"uri": uri, "_meta": meta}}]).encode()
            rec = {"k": k, "node": node.name, "gen": node.generation, "uri": uri, "marker": marker, "sent": now()}
            try:
                if conn is None or conn_port != node.port:
                    if conn:
                        conn.close()
                    conn, conn_port = http.client.HTTPConnection(node.ip, node.port, timeout=5), node.port
                conn.request("POST", "/v1/publish", body, {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                rec["status"] = r.status
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                rec["status"] = None
                rec["error"] = type(e).__name__
                if conn:
                    conn.close()
                conn = None
                if isinstance(e, ConnectionRefusedError):
                    self.stopping.wait(0.05)  # a dead node: do not spin on refusals
            rec["answered"] = now()
            with self.lock:
                self.records.append(rec)
        if conn:
            conn.close()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(5)


class Sampler(threading.Thread):
    """Every `period` s: each node's /healthz (status, backplane object), /readyz (status) and
    the mcpfan_backplane_* lines of /metrics; each nats-server's /varz, /routez, /connz
    (a few fields). Bounded by max_s."""

    def __init__(self, nodes, servers, period, max_s):
        super().__init__(daemon=True)
        self.nodes, self.servers = nodes, servers
        self.period, self.max_s = period, max_s
        self.samples = {n.name: [] for n in nodes}
        self.server_samples = {s.name: [] for s in servers}
        self.stopping = threading.Event()
        self.node_threads = []

    def node_loop(self, n):
        t_end = now() + self.max_s
        while not self.stopping.is_set() and now() < t_end:
            t = now()
            hz, hbody = http_get(n.ip, n.port, "/healthz", 1.0)
            rz, _ = http_get(n.ip, n.port, "/readyz", 1.0)
            mz, mbody = http_get(n.ip, n.port, "/metrics", 1.0)
            bp = None
            if hz is not None:
                try:
                    bp = json.loads(hbody).get("backplane")
                except (ValueError, AttributeError):
                    bp = "unparsable"
            s = {"t": t, "port": n.port, "healthz": hz, "readyz": rz, "backplane": bp,
                 "metrics": parse_metrics(mbody.decode(errors="replace")) if mz == 200 else None}
            self.samples[n.name].append(s)
            self.stopping.wait(max(0.0, self.period - (now() - t)))

    def run(self):
        self.node_threads = [threading.Thread(target=self.node_loop, args=(n,), daemon=True) for n in self.nodes]
        for th in self.node_threads:
            th.start()
        t_end = now() + self.max_s
        while not self.stopping.is_set() and now() < t_end:
            t = now()
            for s in self.servers:
                if not s.alive():
                    self.server_samples[s.name].append({"t": t, "up": False})
                    continue
                v = http_json(s.ip, 8222, "/varz", 1.0)
                r = http_json(s.ip, 8222, "/routez", 1.0)
                c = http_json(s.ip, 8222, "/connz", 1.0)
                sz = http_json(s.ip, 8222, "/subsz", 1.0)
                self.server_samples[s.name].append({
                    "t": t, "up": v is not None,
                    "routes": r.get("num_routes") if r else None,
                    "clients": sorted(x.get("name", "?") for x in c.get("connections", [])) if c else None,
                    "slow_consumers": v.get("slow_consumers") if v else None,
                    "subscriptions": sz.get("num_subscriptions") if sz else None})
            self.stopping.wait(max(0.0, 1.0 - (now() - t)))

    def stop(self):
        self.stopping.set()
        self.join(5)
        for th in self.node_threads:
            th.join(5)


# ------------------------------------------------------------------ the cluster

class Server:
    def __init__(self, j, ns, ends, ip_client, ip_cluster, conf):
        self.j, self.name = j, f"s{j}"
        self.ns, self.ends = ns, ends
        self.ip, self.cluster_ip = ip_client, ip_cluster
        self.conf = conf
        self.p = None
        self.stopped = False

    def alive(self):
        return self.p is not None and self.p.poll() is None and not self.stopped

    def url(self):
        return f"nats://{self.ip}:4222"


class Node:
    def __init__(self, k, ns, ends, ip_front, ip_back):
        self.k, self.name = k, f"n{k}"
        self.ns, self.ends = ns, ends
        self.ip, self.back_ip = ip_front, ip_back
        self.p = None
        self.port = None
        self.listeners = []
        self.stopped = False
        self.generation = 0

    def alive(self):
        return self.p is not None and self.p.poll() is None


class Harness:
    def __init__(self, a):
        self.a = a
        self.prefix = f"mf-{os.getpid()}-"
        os.makedirs(a.out, exist_ok=True)
        self.procs = Procs(a.out)
        self.net = Net(self.prefix)
        self.servers, self.nodes = [], []
        self.result = {"config": {}, "faults": {}}
        self.killed_server = None
        self.listener_seq = 0

    # -- setup

    def server_conf(self, s, peers):
        a = self.a
        text = (f'server_name: "mf-{s.name}"\nlisten: "{s.ip}:4222"\nhttp: "{s.ip}:8222"\n'
                f'ping_interval: "{a.server_ping_s}s"\nping_max: {a.server_ping_max}\nwrite_deadline: "{a.server_write_deadline_s}s"\n'
                f'cluster {{\n  name: "mf"\n  listen: "{s.cluster_ip}:6222"\n'
                f'  routes: [{", ".join(f"nats-route://{p.cluster_ip}:6222" for p in peers)}]\n}}\n')
        path = os.path.join(a.out, f"{s.name}.conf")
        with open(path, "w") as f:
            f.write(text)
        return path

    def start_server(self, s, label=None):
        s.p = self.procs.start(label or s.name, ["ip", "netns", "exec", s.ns, NATS_SERVER, "-c", s.conf])
        s.stopped = False
        wait_for_log(s.p, r"Server is ready", 30)

    def node_argv(self, n, avoid=None):
        order = self.servers[n.k % len(self.servers):] + self.servers[:n.k % len(self.servers)]
        urls = ",".join(s.url() for s in order if s is not avoid)
        return ["ip", "netns", "exec", n.ns, self.a.binary, "--listen", f"{n.ip}:0", "--insecure", "--workers", "1",
                "--nats", urls, "--node-name", n.name, "--max-requests-per-connection", "0"] + self.a.node_args.split()

    def start_node(self, n, avoid=None):
        n.generation += 1
        label = n.name if n.generation == 1 else f"{n.name}-restart{n.generation - 1}"
        n.p = self.procs.start(label, self.node_argv(n, avoid))
        m = wait_for_log(n.p, r"listening on " + re.escape(n.ip) + r":(\d+)", 60)
        n.port = int(m.group(1))
        n.stopped = False

    def setup(self):
        a = self.a
        self.net.setup()
        for j in range(a.servers):
            ns, ends = self.net.namespace(f"s{j}", [("c", "client", 1 + j), ("r", "cluster", 1 + j)])
            self.servers.append(Server(j, ns, ends, self.net.addr("c", 1 + j), self.net.addr("r", 1 + j), None))
        for s in self.servers:
            s.conf = self.server_conf(s, [p for p in self.servers if p is not s])
        for k in range(a.nodes):
            ns, ends = self.net.namespace(f"n{k}", [("f", "front", 10 + k), ("c", "back", 10 + k)])
            if a.node_rmem_max:
                # Per namespace: a stopped node's NATS socket then fills in a second or two (the
                # kernel's default lets a receive buffer grow to 6 MiB: 10 s of this load).
                ip("netns", "exec", ns, "sysctl", "-q", "-w", f"net.ipv4.tcp_rmem=4096 65536 {a.node_rmem_max}")
            self.nodes.append(Node(k, ns, ends, self.net.addr("f", 10 + k), self.net.addr("c", 10 + k)))
        log(f"namespaces: {len(self.servers)} nats-servers, {len(self.nodes)} nodes; bridges {self.net.br}; "
            f"front {self.net.addr('f', 0)}/24, client {self.net.addr('c', 0)}/24, cluster {self.net.addr('r', 0)}/24")
        for s in self.servers:
            self.start_server(s)
        self.wait_routes(60)
        for n in self.nodes:
            self.start_node(n)
        self.wait_healthy(60)
        for n in self.nodes:
            self.open_listeners(n)
        self.wait_acked(30)
        self.wait_interest(60)
        log("cluster up: every node healthy and ready, every listen acknowledged, the interest at every server")

    def open_listeners(self, n):
        fresh = []
        for _ in range(self.a.listeners):
            self.listener_seq += 1
            l = Listener(f"{n.name}.L{self.listener_seq}", n, max_s=3600)
            l.start()
            fresh.append(l)
        n.listeners = [l for l in n.listeners if l.end_t is None] + fresh

    def all_listeners(self):
        return [l for n in self.nodes for l in n.listeners]

    def wait_acked(self, timeout):
        deadline = now() + timeout
        for l in self.all_listeners():
            while not l.acked.is_set() and l.end_t is None and now() < deadline:
                l.acked.wait(0.1)
            if not l.acked.is_set():
                raise Fail(f"listener {l.name_} on {l.node.name} not acknowledged within {timeout} s ({l.end_reason})")

    def wait_routes(self, timeout):
        """Every live nats-server has a route to every other live one (/routez)."""
        live = [s for s in self.servers if s.alive()]
        deadline = now() + timeout
        while now() < deadline:
            ok = True
            for s in live:
                r = http_json(s.ip, 8222, "/routez", 1.0)
                if not r or r.get("num_routes", 0) < len(live) - 1:
                    ok = False
                    break
            if ok:
                return now()
            time.sleep(0.1)
        raise Fail(f"routes not complete within {timeout} s")

    def interest_ok(self):
        """Every live node is a client of a live server (/connz) and every other live server
        holds each of its subscriptions on its route from that server (/routez?subs=1): the
        interest has propagated. Name-independent: whatever subjects the nodes hold."""
        live = [s for s in self.servers if s.alive()]
        ids, conns, routes = {}, {}, {}
        for s in live:
            v = http_json(s.ip, 8222, "/varz", 1.0)
            c = http_json(s.ip, 8222, "/connz?subs=1&limit=1000", 1.0)
            r = http_json(s.ip, 8222, "/routez?subs=1", 1.0)
            if not (v and c and r):
                return False, f"{s.name} monitoring not answering"
            ids[v["server_id"]] = s.name
            conns[s.name] = {x.get("name"): set(x.get("subscriptions_list") or []) for x in c.get("connections", [])}
            routes[s.name] = r.get("routes", [])
        where = {}
        for sname, cs in conns.items():
            for nname, subs in cs.items():
                where[nname] = (sname, subs)
        for n in self.nodes:
            if not n.alive() or n.stopped:
                continue
            if n.name not in where:
                return False, f"{n.name} is no server's client"
            if n.listeners and not where[n.name][1]:
                return False, f"{n.name} holds no subscription"
        for s in live:
            by_origin = {}
            for rt in routes[s.name]:
                by_origin.setdefault(ids.get(rt.get("remote_id"), "?"), set()).update(rt.get("subscriptions_list") or [])
            for nname, (sname, subs) in where.items():
                if sname != s.name and not subs <= by_origin.get(sname, set()):
                    return False, f"{s.name} lacks {nname}'s interest (on {sname})"
        return True, {n: w[0] for n, w in where.items()}

    def wait_interest(self, timeout):
        deadline = now() + timeout
        why = None
        while now() < deadline:
            ok, why = self.interest_ok()
            if ok:
                self.placement = why
                return now()
            time.sleep(0.1)
        raise Fail(f"interest not propagated within {timeout} s: {why}")

    def healthy(self, n):
        hz, _ = http_get(n.ip, n.port, "/healthz", 1.0)
        rz, _ = http_get(n.ip, n.port, "/readyz", 1.0)
        return hz == 200 and rz == 200

    def wait_healthy(self, timeout):
        deadline = now() + timeout
        while now() < deadline:
            if all(self.healthy(n) for n in self.nodes):
                return now()
            time.sleep(0.1)
        raise Fail(f"not every node healthy within {timeout} s: " +
                   ", ".join(f"{n.name} {http_get(n.ip, n.port, '/healthz', 1.0)[0]}" for n in self.nodes))

    # -- scenarios

    def scenario(self, name, inject, lift, hold, pad=0):
        """baseline, inject(), `hold` s, lift(), then until healthy and the interest whole, a
        tail, the drain. inject/lift return a dict of facts; lift may be None."""
        a = self.a
        # A recovered cluster: every node healthy and its listens open, the interest everywhere.
        for n in self.nodes:
            if not [l for l in n.listeners if l.end_t is None]:
                self.open_listeners(n)
        self.wait_acked(30)
        self.wait_healthy(60)
        self.wait_interest(60)
        placement = dict(self.placement)
        log(f"{name}: nodes on servers {placement}")
        max_s = a.baseline + hold + 180
        pubs = Publishers(name, [n for n in self.nodes], a.rate, max_s, pad)
        samp = Sampler(self.nodes, self.servers, 0.25, max_s)
        samp.start()
        pubs.start()
        res = {"placement": placement}
        log_at = {s.name: (s.p, log_size(s.p)) for s in self.servers if s.p is not None}
        t_start = now()
        time.sleep(a.baseline)  # the quiet baseline: shapes the run, synchronises nothing
        t_fault = now()
        res["inject"] = inject() or {}
        t_injected = now()
        log(f"{name}: injected {res['inject']}")
        t_lift = t_fault
        if lift:
            left = hold - (now() - t_injected)
            if left > 0:
                time.sleep(left)  # the fault's duration
            t_lift = now()
            res["lift"] = lift() or {}
            log(f"{name}: lifted {res['lift']}")
        else:
            res["lift"] = None
        # Recovery: until every node answers /healthz and /readyz 200 (bounded), then the interest.
        healthy_at = None
        try:
            healthy_at = self.wait_healthy(a.recover_timeout)
        except Fail as e:
            res["recover_error"] = str(e)
        # Restarted nodes get fresh listeners (their old ones died), then the interest.
        for n in self.nodes:
            if n.alive() and not [l for l in n.listeners if l.end_t is None]:
                self.open_listeners(n)
        try:
            self.wait_acked(30)
            interest_at = self.wait_interest(a.recover_timeout)
        except Fail as e:
            interest_at = None
            res["interest_error"] = str(e)
        if lift is None and hold > 0:
            # A fault with nothing to lift (the kill): observe at least `hold` s of it.
            left = hold - (now() - t_fault)
            if left > 0:
                time.sleep(left)
        time.sleep(a.tail)  # publishing goes on into the recovered cluster
        pubs.stop()
        t_pub_end = now()
        # Drain: until no listener saw anything new for `quiet` s (bounded).
        self.drain(a.quiet, 20)
        samp.stop()
        res.update(self.ledger(name, pubs, t_start, t_fault, t_lift))
        res["server_log"] = self.server_events(log_at)
        res["times"] = {"baseline_s": round(t_fault - t_start, 3), "fault_s": round(t_lift - t_fault, 3),
                        "healthy_after_lift_s": round(healthy_at - t_lift, 3) if healthy_at else None,
                        "healthy_after_fault_s": round(healthy_at - t_fault, 3) if healthy_at else None,
                        "interest_whole_after_lift_s": round(interest_at - t_lift, 3) if interest_at else None,
                        "publishing_s": round(t_pub_end - t_start, 3)}
        res["health"] = self.health_summary(samp, t_fault, t_lift)
        self.save_samples(name, samp, t_fault)
        res["servers"] = self.server_summary(samp, t_fault)
        self.result["faults"][name] = res
        self.save()
        log(f"{name}: {self.one_line(res)}")
        return res

    def drain(self, quiet, bound):
        deadline = now() + bound
        last, last_change = -1, now()
        while now() < deadline:
            total = sum(len(l.seen) + len(l.dups) + len(l.hints) for l in self.all_listeners())
            if total != last:
                last, last_change = total, now()
            elif now() - last_change >= quiet:
                return
            time.sleep(0.1)

    # -- the ledger

    def ledger(self, name, pubs, t_start, t_fault, t_lift):
        recs = sorted(pubs.records, key=lambda r: r["k"])
        accepted = [r for r in recs if r.get("status") == 202]
        refused = [r for r in recs if r.get("status") == 503]
        other = [r for r in recs if r.get("status") not in (202, 503, None)]
        unanswered = [r for r in recs if r.get("status") is None]
        dead = getattr(self, "dead_in_scenario", {})  # node name -> the generation that was killed
        listeners = [l for n in self.nodes for l in n.listeners] + getattr(self, "retired", [])
        seen_l = set()
        out = {"published": len(recs), "accepted": len(accepted), "refused": len(refused), "other_status": len(other),
               "unanswered": len(unanswered), "pairs": 0, "delivered": 0, "hinted": 0, "lost": 0,
               "lost_accepted_by_dead_node": 0, "duplicates": 0, "dead_listeners": [], "worst_hint_delay_s": None,
               "hints_received": 0, "per_listener": {}, "other_status_codes": sorted({r["status"] for r in other}),
               "refused_by_node": {}, "unanswered_by_node": {}}
        for r in refused:
            out["refused_by_node"][r["node"]] = out["refused_by_node"].get(r["node"], 0) + 1
        for r in unanswered:
            key = f"{r['node']} {r.get('error')}"
            out["unanswered_by_node"][key] = out["unanswered_by_node"].get(key, 0) + 1
        lat = {}
        for r in recs:
            lat.setdefault(r["node"], []).append(r["answered"] - r["sent"])
        out["publish_answer_s"] = {n: {"max": round(max(v), 3), "over_1s": sum(1 for x in v if x > 1.0)} for n, v in sorted(lat.items())}
        by_marker = {r["marker"]: r["node"] for r in recs}
        out["duplicates_by_path"] = {}
        worst = None
        lost_times = []
        for l in listeners:
            if id(l) in seen_l or l.ack_t is None:
                continue
            seen_l.add(id(l))
            mine = [m for m in l.seen if m.startswith(name + "/")]
            dups = [d for d in l.dups if d[0].startswith(name + "/")]
            out["duplicates"] += len(dups)
            hints = [h for h in l.hints if h[0] >= t_start]
            out["hints_received"] += len(hints)
            # A listener that died (its node killed) takes no part: its pairs do not count.
            if l.end_t is not None and not l.stopping.is_set():
                out["dead_listeners"].append({"listener": l.name_, "node": l.node.name, "ended_at_s": round(l.end_t - t_fault, 3),
                                              "reason": l.end_reason})
                continue
            pl = {"node": l.node.name, "pairs": 0, "delivered": 0, "hinted": 0, "lost": 0, "dead_node_loss": 0,
                  "duplicates": len(dups), "hints": len(hints), "lost_ranges_s": [],
                  "duplicate_markers": [{"marker": m, "published_through": by_marker.get(m), "first_s": round(l.seen[m] - t_fault, 3),
                                         "again_s": round(t - t_fault, 3)} for m, t in dups[:10]]}
            for m, _ in dups:
                key = f"{by_marker.get(m)}->{l.node.name}"
                out["duplicates_by_path"][key] = out["duplicates_by_path"].get(key, 0) + 1
            for r in accepted:
                if r["sent"] <= l.ack_t:
                    continue  # the listen was not acknowledged before this publish left
                pl["pairs"] += 1
                if r["marker"] in l.seen:
                    pl["delivered"] += 1
                    continue
                cover = next((h for h in hints if h[0] > r["sent"] and covers(h[1], r["uri"])), None)
                if cover:
                    pl["hinted"] += 1
                    d = cover[0] - r["sent"]
                    worst = d if worst is None or d > worst else worst
                elif dead.get(r["node"]) == r["gen"] and r["node"] != l.node.name:
                    pl["dead_node_loss"] += 1
                else:
                    pl["lost"] += 1
                    pl["lost_ranges_s"].append(round(r["sent"] - t_fault, 3))
                    lost_times.append((r["sent"] - t_fault, r["node"], l.node.name))
            pl["lost_ranges_s"] = time_ranges(pl["lost_ranges_s"])
            out["per_listener"][l.name_] = pl
            for key, src in (("pairs", "pairs"), ("delivered", "delivered"), ("hinted", "hinted"), ("lost", "lost"),
                             ("lost_accepted_by_dead_node", "dead_node_loss")):
                out[key] += pl[src]
        out["worst_hint_delay_s"] = round(worst, 3) if worst is not None else None
        # Silent losses by (publishing node -> listening node), with the time span (s from the fault).
        by = {}
        for t, src, dst in lost_times:
            e = by.setdefault(f"{src}->{dst}", [t, t, 0])
            e[0], e[1], e[2] = min(e[0], t), max(e[1], t), e[2] + 1
        out["lost_by_path"] = {k: {"pairs": v[2], "from_s": round(v[0], 3), "to_s": round(v[1], 3)} for k, v in sorted(by.items())}
        return out

    # -- health

    def health_summary(self, samp, t_fault, t_lift):
        out = {}
        for n in self.nodes:
            ss = samp.samples[n.name]
            if not ss:
                continue
            rel = lambda t: round(t - t_fault, 2)
            # The load balancer's view: in rotation while /readyz answers 200, out otherwise.
            lb, cur = [], None
            for s in ss:
                st = "in" if s["readyz"] == 200 else ("out(no answer)" if s["readyz"] is None else f"out({s['readyz']})")
                if st != cur:
                    lb.append([rel(s["t"]), st])
                    cur = st
            period = lambda pred: round(sum(b["t"] - a_["t"] for a_, b in zip(ss, ss[1:]) if pred(a_)), 2)
            bps = [s["backplane"] for s in ss if isinstance(s["backplane"], dict)]
            keys = sorted({k for b in bps for k in b})
            numeric = {}
            for k in keys:
                vals = [b[k] for b in bps if isinstance(b.get(k), (int, float)) and not isinstance(b.get(k), bool)]
                if vals and min(vals) != max(vals):
                    numeric[k] = {"min": min(vals), "max": max(vals)}
            distinct = []
            for b in bps:
                # each distinct object, numbers included, in order of first appearance (bounded)
                if b not in distinct and len(distinct) < 40:
                    distinct.append(b)
            ms = [s["metrics"] for s in ss if s["metrics"]]
            changed = {}
            if ms:
                series = sorted({k for m in ms for k in m})
                for k in series:
                    vals = [m.get(k) for m in ms if k in m]
                    if min(vals) != max(vals):
                        changed[k] = {"first": vals[0], "min": min(vals), "max": max(vals), "last": vals[-1]}
            worst_bp = max(bps, key=lambda b: (b.get("blind_seconds") or 0) if isinstance(b.get("blind_seconds"), (int, float)) else 0,
                           default=None)
            out[n.name] = {
                "samples": len(ss),
                "healthz_codes": sorted({str(s["healthz"]) for s in ss}),
                "healthz_not_200_s": period(lambda s: s["healthz"] != 200),
                "readyz_not_200_s": period(lambda s: s["readyz"] != 200),
                "no_answer_s": period(lambda s: s["healthz"] is None),
                "connected_false_s": period(lambda s: isinstance(s["backplane"], dict) and s["backplane"].get("connected") is False),
                "blind_seconds_max": max((b.get("blind_seconds") or 0 for b in bps if isinstance(b.get("blind_seconds"), (int, float))), default=None),
                "backplane_keys": keys, "backplane_numbers_changed": numeric,
                "backplane_at_worst": worst_bp, "backplane_last": bps[-1] if bps else None,
                "backplane_distinct": distinct,
                "metrics_changed": changed,
                "load_balancer": lb,
            }
        return out

    def server_events(self, log_at):
        """What each nats-server logged during the scenario about its connections: slow
        consumers, stale connections, closed and created routes and clients (counted, first few kept)."""
        out = {}
        pats = [("slow consumer", r"Slow Consumer Detected"), ("stale", r"Stale Connection"),
                ("route closed", r"Router? connection closed"), ("route created", r"Route connection created"),
                ("client closed", r"Client connection closed")]
        for s in self.servers:
            procs = [(p, off) for name, (p, off) in log_at.items() if name == s.name]
            if s.p is not None and (not procs or procs[0][0] is not s.p):
                procs.append((s.p, 0))  # restarted during the scenario: its new log from the start
            lines = []
            for p, off in procs:
                try:
                    with open(p.errpath, errors="replace") as f:
                        f.seek(off)
                        lines += f.read().splitlines()
                except OSError:
                    pass
            ev = {}
            for label, pat in pats:
                hits = [l.split("] ", 1)[-1] if "] " in l else l for l in lines if re.search(pat, l)]
                if hits:
                    ev[label] = {"count": len(hits), "first": hits[:3]}
            out[s.name] = ev
        return out

    def server_summary(self, samp, t_fault):
        out = {}
        for name, ss in samp.server_samples.items():
            ev, cur = [], None
            for s in ss:
                st = (s.get("up"), s.get("routes"), tuple(s.get("clients") or ()))
                if st != cur:
                    ev.append({"at_s": round(s["t"] - t_fault, 2), "up": s.get("up"), "routes": s.get("routes"),
                               "clients": s.get("clients"), "slow_consumers": s.get("slow_consumers"),
                               "subscriptions": s.get("subscriptions")})
                    cur = st
            out[name] = ev
        return out

    # -- the faults

    def busiest_server(self):
        counts = {}
        for n, s in self.placement.items():
            counts[s] = counts.get(s, 0) + 1
        live = [s for s in self.servers if s.alive()]
        return max(live, key=lambda s: (counts.get(s.name, 0), -s.j))

    def ensure_split(self):
        """Nodes on at least two servers (after earlier faults they may all sit on one, and a
        route cut would then separate no one): if not, one node is restarted (a setup step, not
        measured) with a --nats list without the crowded server. nats.c learns the others from
        the servers' INFO, so it still fails over."""
        self.wait_interest(60)
        used = set(self.placement.values())
        if len(used) >= 2 or len([s for s in self.servers if s.alive()]) < 2:
            return
        crowded = next(s for s in self.servers if s.name in used)
        n = self.nodes[0]
        log(f"route_cut: every node is on {crowded.name}; restarting {n.name} without it in its --nats list (setup)")
        self.procs.stop(n.p)
        for l in n.listeners:
            l.join(5)
        self.start_node(n, avoid=crowded)
        self.wait_healthy(60)
        self.open_listeners(n)
        self.wait_acked(30)
        self.wait_interest(60)

    def run_fault(self, f):
        a = self.a
        self.dead_in_scenario = {}
        self.retired = []
        if f == "server_kill":
            victim = None
            def inject():
                nonlocal victim
                victim = self.busiest_server()
                self.procs.stop(victim.p, signal.SIGKILL)
                self.killed_server = victim
                return {"killed": victim.name, "signal": "KILL", "its_nodes": sorted(n for n, s in self.placement.items() if s == victim.name)}
            return self.scenario(f, inject, None, a.observe)
        if f == "server_restart":
            if self.killed_server is None or self.killed_server.alive():
                victim = self.busiest_server()
                log(f"{f}: killing {victim.name} first (setup, not measured)")
                self.procs.stop(victim.p, signal.SIGKILL)
                self.killed_server = victim
            victim = self.killed_server
            def inject():
                self.start_server(victim, f"{victim.name}-restarted")
                self.wait_routes(30)
                return {"restarted": victim.name}
            r = self.scenario(f, inject, None, a.observe)
            self.killed_server = None
            return r
        if f == "server_stall":
            victim = None
            def inject():
                nonlocal victim
                victim = self.busiest_server()
                os.kill(victim.p.pid, signal.SIGSTOP)
                victim.stopped = True
                return {"stopped": victim.name, "its_nodes": sorted(n for n, s in self.placement.items() if s == victim.name)}
            def lift():
                os.kill(victim.p.pid, signal.SIGCONT)
                victim.stopped = False
                return {"continued": victim.name}
            return self.scenario(f, inject, lift, a.stall)
        if f == "node_restart":
            victim = self.nodes[-1]
            def inject():
                self.dead_in_scenario[victim.name] = victim.generation
                self.procs.stop(victim.p, signal.SIGKILL)
                return {"killed": victim.name, "signal": "KILL"}
            def lift():
                old = list(victim.listeners)
                for l in old:
                    l.join(5)  # the stream ended with the process
                self.retired = old
                self.start_node(victim)
                return {"restarted": victim.name, "port": victim.port}
            return self.scenario(f, inject, lift, a.node_down)
        if f == "node_partition":
            victim = self.nodes[min(1, len(self.nodes) - 1)]
            def inject():
                self.net.link(victim.ends["back"], False)
                return {"partitioned": victim.name, "link_down": victim.ends["back"]}
            def lift():
                self.net.link(victim.ends["back"], True)
                return {"link_up": victim.ends["back"]}
            return self.scenario(f, inject, lift, a.partition)
        if f == "route_cut":
            self.ensure_split()
            victim = None
            def inject():
                nonlocal victim
                # The server with the fewest nodes (but some), so both sides have listeners.
                counts = {s.name: 0 for s in self.servers}
                for n, s in self.placement.items():
                    counts[s] += 1
                victim = min((s for s in self.servers if counts[s.name] > 0), key=lambda s: (counts[s.name], -s.j))
                self.net.link(victim.ends["cluster"], False)
                return {"cut": victim.name, "link_down": victim.ends["cluster"],
                        "its_nodes": sorted(n for n, s in self.placement.items() if s == victim.name)}
            def lift():
                self.net.link(victim.ends["cluster"], True)
                return {"link_up": victim.ends["cluster"]}
            return self.scenario(f, inject, lift, a.route_cut)
        if f == "slow_consumer":
            victim = self.nodes[min(2, len(self.nodes) - 1)]
            srv_slow0 = {}
            def inject():
                for s in self.servers:
                    v = http_json(s.ip, 8222, "/varz", 1.0)
                    srv_slow0[s.name] = v.get("slow_consumers") if v else None
                os.kill(victim.p.pid, signal.SIGSTOP)
                victim.stopped = True
                t0 = now()
                srv = next((s for s in self.servers if s.name == self.placement.get(victim.name)), None)
                cut = None
                # Until its server no longer lists it (cut as a slow consumer, or as stale), bounded.
                while srv is not None and now() - t0 < a.slow_stop:
                    c = http_json(srv.ip, 8222, "/connz?limit=1000", 1.0)
                    if c is not None and victim.name not in [x.get("name") for x in c.get("connections", [])]:
                        cut = round(now() - t0, 3)
                        break
                    time.sleep(0.1)
                return {"stopped": victim.name, "server": srv.name if srv else None, "pad_bytes": a.slow_pad,
                        "cut_by_server_after_s": cut}
            def lift():
                os.kill(victim.p.pid, signal.SIGCONT)
                victim.stopped = False
                after = {}
                for s in self.servers:
                    v = http_json(s.ip, 8222, "/varz", 1.0)
                    after[s.name] = v.get("slow_consumers") if v else None
                return {"continued": victim.name, "server_slow_consumers_before": srv_slow0, "after": after}
            return self.scenario(f, inject, lift, 0.5, pad=a.slow_pad)  # continued 0.5 s after the cut
        raise Fail(f"unknown fault {f}")

    # -- output

    def one_line(self, r):
        return (f"accepted {r['accepted']} refused {r['refused']} unanswered {r['unanswered']}; pairs {r['pairs']}: delivered "
                f"{r['delivered']}, hinted {r['hinted']}, LOST {r['lost']} (+{r['lost_accepted_by_dead_node']} via the dead node); "
                f"dups {r['duplicates']}; healthy {r['times']['healthy_after_lift_s']} s after the lift")

    def save_samples(self, name, samp, t_fault):
        """Every sample of the scenario (times in s from the fault), metrics only where they changed."""
        out = {"nodes": {}, "servers": {}}
        for n, ss in samp.samples.items():
            prev, rows = {}, []
            for x in ss:
                m = x["metrics"] or {}
                rows.append({"t": round(x["t"] - t_fault, 3), "healthz": x["healthz"], "readyz": x["readyz"], "backplane": x["backplane"],
                             "metrics_changed": {k: v for k, v in m.items() if prev.get(k) != v}})
                prev = m or prev
            out["nodes"][n] = rows
        for n, ss in samp.server_samples.items():
            out["servers"][n] = [dict(x, t=round(x["t"] - t_fault, 3)) for x in ss]
        with open(os.path.join(self.a.out, f"samples-{name}.json"), "w") as f:
            json.dump(out, f, indent=0)

    def save(self):
        with open(os.path.join(self.a.out, "faults.json"), "w") as f:
            json.dump(self.result, f, indent=1, default=str)


def covers(hint_uri, uri):
    return hint_uri == uri or (hint_uri.endswith("/") and uri.startswith(hint_uri))


def time_ranges(ts, gap=0.5):
    """[[from, to, count], ...] of sorted times, split where two are more than `gap` apart."""
    out = []
    for t in sorted(ts):
        if out and t - out[-1][1] <= gap:
            out[-1][1] = t
            out[-1][2] += 1
        else:
            out.append([t, t, 1])
    return out


# ------------------------------------------------------------------ the report

def fmt(v, nd=1):
    return "–" if v is None else (f"{v:.{nd}f}" if isinstance(v, float) else str(v))


def lb_text(lb):
    """'in' or 'in, out(no answer)@+0.0, in@+3.2' (s from the fault)."""
    if not lb:
        return "?"
    parts = [lb[0][1]] + [f"{st}@{t:+.1f}" for t, st in lb[1:]]
    return ", ".join(parts)


def report(result):
    L = []
    cfg = result["config"]
    L.append(f"## mcpfan fault injection: {cfg.get('nodes')} nodes, {cfg.get('servers')} nats-servers, "
             f"{cfg.get('rate')} publishes/s, harness git {cfg.get('git')}{' (quick)' if cfg.get('quick') else ''}; binary {cfg.get('binary')}")
    L.append("")
    L.append("| fault | accepted | refused | unanswered | pairs | delivered | hinted | **silently lost** | lost via dead node | dups | worst hint delay (s) | healthy after lift (s) | out of LB rotation |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in result["faults"].items():
        if "accepted" not in r:
            L.append(f"| {name} | error: {r.get('error')} |||||||||||")
            continue
        outs = []
        for n, h in r["health"].items():
            if any(st != "in" for _, st in h["load_balancer"]):
                outs.append(f"{n} {h['readyz_not_200_s']:.1f} s")
        L.append(f"| {name} | {r['accepted']} | {r['refused']} | {r['unanswered']} | {r['pairs']} | {r['delivered']} | {r['hinted']} | "
                 f"**{r['lost']}** | {r['lost_accepted_by_dead_node']} | {r['duplicates']} | {fmt(r['worst_hint_delay_s'], 2)} | "
                 f"{fmt(r['times']['healthy_after_lift_s'], 2)} | {', '.join(outs) or 'none'} |")
    L.append("")
    for name, r in result["faults"].items():
        if "accepted" not in r:
            continue
        L.append(f"### {name}")
        L.append(f"- fault: {json.dumps(r['inject'])}; lifted: {json.dumps(r['lift'])}; fault lasted {r['times']['fault_s']} s; "
                 f"healthy {fmt(r['times']['healthy_after_fault_s'], 2)} s after the fault, interest whole "
                 f"{fmt(r['times']['interest_whole_after_lift_s'], 2)} s after the lift; nodes on servers {json.dumps(r['placement'])}")
        if r["lost_by_path"]:
            L.append("- silently lost, publishing -> listening node (pairs, sent between s from the fault): " +
                     "; ".join(f"{k} {v['pairs']} [{v['from_s']:+.2f}, {v['to_s']:+.2f}]" for k, v in r["lost_by_path"].items()))
        if r.get("duplicates_by_path"):
            L.append("- duplicates, publishing -> listening node: " + "; ".join(f"{k} {v}" for k, v in r["duplicates_by_path"].items()))
        sl = "; ".join(f"{sn}: " + ", ".join(f"{lab} {e['count']}" for lab, e in ev.items()) for sn, ev in r.get("server_log", {}).items() if ev)
        if sl:
            L.append(f"- nats-servers logged: {sl}")
        if r["dead_listeners"]:
            L.append(f"- listeners that died (not counted): {', '.join(d['listener'] for d in r['dead_listeners'])}")
        if r["refused_by_node"] or r["unanswered_by_node"]:
            L.append(f"- refused by node {json.dumps(r['refused_by_node'])}, unanswered by node {json.dumps(r['unanswered_by_node'])}")
        for n, h in r["health"].items():
            bits = [f"LB {lb_text(h['load_balancer'])}"]
            if h["healthz_not_200_s"]:
                bits.append(f"/healthz not 200 for {h['healthz_not_200_s']} s (codes {','.join(h['healthz_codes'])}"
                            + (f", no answer {h['no_answer_s']} s" if h["no_answer_s"] else "") + ")")
            if h["connected_false_s"]:
                bits.append(f"connected false {h['connected_false_s']} s")
            if h["blind_seconds_max"]:
                bits.append(f"blind_seconds max {h['blind_seconds_max']}")
            if h["backplane_numbers_changed"]:
                bits.append("backplane " + ", ".join(f"{k} {v['min']}..{v['max']}" for k, v in h["backplane_numbers_changed"].items()))
            mc = h["metrics_changed"]
            if mc:
                bits.append("metrics " + ", ".join(f"{k.replace('mcpfan_backplane_', '')} {fmt_delta(v)}" for k, v in mc.items()
                                                    if not k.startswith(("mcpfan_backplane_sent_total", "mcpfan_backplane_received_total"))))
            L.append(f"- {n}: " + "; ".join(bits))
            if h["backplane_at_worst"] and h["blind_seconds_max"]:
                L.append(f"  - {n} /healthz backplane at its worst: `{json.dumps(h['backplane_at_worst'])}`")
        L.append("")
    return "\n".join(L)


def fmt_delta(v):
    if v["first"] <= v["last"] and v["max"] == v["last"] and v["min"] == v["first"]:
        d = v["last"] - v["first"]
        return f"+{d:g}"
    return f"{v['first']:g}->[{v['min']:g}..{v['max']:g}]->{v['last']:g}"


# ------------------------------------------------------------------ main

def prerequisites(binary):
    """None, or why this cannot run here."""
    if os.geteuid() != 0:
        return "not root (network namespaces need CAP_NET_ADMIN)"
    if not os.access(NATS_SERVER, os.X_OK):
        return f"{NATS_SERVER} missing (Debian's nats-server package)"
    probe = f"mf-{os.getpid()}-probe"
    try:
        r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"ip netns unavailable: {e}"
    if r.returncode != 0:
        return f"ip netns unavailable: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=20)
    r = subprocess.run(["ip", "link", "add", f"mf-{os.getpid()}-pb", "type", "bridge"], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        return f"cannot make a bridge: {r.stderr.strip()}"
    subprocess.run(["ip", "link", "del", f"mf-{os.getpid()}-pb"], capture_output=True, timeout=20)
    return None


def find_binary():
    for d in ("build", "build-release"):
        p = os.path.join(ROOT, d, "tools/mcpfan/mcpfan")
        if os.access(p, os.X_OK):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short phases (the ctest faults_short)")
    ap.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, in this order: {','.join(FAULTS)}")
    ap.add_argument("--binary", default=None, help="the mcpfan to run (default build/tools/mcpfan/mcpfan)")
    ap.add_argument("--nodes", type=int, default=5, help="mcpfan nodes, 3-9 (default 5)")
    ap.add_argument("--servers", type=int, default=3, help="nats-servers, 2-3 (default 3)")
    ap.add_argument("--rate", type=float, default=150, help="publishes/s in all, spread over every node (default 150)")
    ap.add_argument("--listeners", type=int, default=2, help="listens per node (default 2)")
    ap.add_argument("--node-args", default="", help="extra arguments for every mcpfan")
    ap.add_argument("--server-ping-s", type=float, default=2, help="nats-server ping_interval (default 2 s; nats-server's own: 2 min)")
    ap.add_argument("--server-ping-max", type=int, default=2, help="nats-server ping_max (default 2)")
    ap.add_argument("--server-write-deadline-s", type=float, default=2, help="nats-server write_deadline (default 2 s; its own: 10 s)")
    ap.add_argument("--partition", type=float, default=None, help="node_partition: link down this long (16 s; --quick 12)")
    ap.add_argument("--route-cut", type=float, default=None, help="route_cut: cluster link down this long (10 s; --quick 8)")
    ap.add_argument("--stall", type=float, default=None, help="server_stall: SIGSTOP this long (6 s)")
    ap.add_argument("--slow-stop", type=float, default=None, help="slow_consumer: node SIGSTOPped until its server cuts it, at most this long (30 s)")
    ap.add_argument("--node-rmem-max", type=int, default=262144, help="net.ipv4.tcp_rmem max in the node namespaces (256 KiB; 0: the kernel's)")
    ap.add_argument("--slow-pad", type=int, default=4096, help="slow_consumer: bytes of padding per publish (fills buffers fast)")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every fault run had 0 duplicates and 0 silently lost pairs")
    ap.add_argument("--skip-exit", type=int, default=SKIP, help=f"exit status when this cannot run here (default {SKIP})")
    ap.add_argument("--out", default=None, help="folder for faults.json and the logs (default $MCPFAN_RESULTS_DIR/faults/<time>)")
    a = ap.parse_args()
    q = a.quick
    a.baseline = 1.5 if q else 3.0
    a.observe = 3.0 if q else 6.0
    a.tail = 2.0 if q else 3.0
    a.quiet = 1.5 if q else 2.0
    a.recover_timeout = 60
    a.partition = a.partition or (12.0 if q else 16.0)
    a.route_cut = a.route_cut or (8.0 if q else 10.0)
    a.stall = a.stall or 6.0
    a.slow_stop = a.slow_stop or 30.0
    a.node_down = 1.0
    a.faults = [x.strip() for x in a.faults.split(",") if x.strip()]
    bad = [x for x in a.faults if x not in FAULTS]
    if bad:
        ap.error(f"unknown fault(s): {bad}")
    if not (3 <= a.nodes <= 9) or not (2 <= a.servers <= 3):
        ap.error("--nodes 3..9, --servers 2..3")
    a.binary = os.path.abspath(a.binary) if a.binary else find_binary()
    if not a.binary or not os.access(a.binary, os.X_OK):
        print(f"mcpfan binary {a.binary!r} not found: build it (cmake --build build --target mcpfan) or pass --binary", file=sys.stderr)
        return 2
    why = prerequisites(a.binary)
    if why:
        print(f"SKIP: {why}", flush=True)
        return a.skip_exit
    results_root = os.environ.get("MCPFAN_RESULTS_DIR") or os.path.join(ROOT, "build", "bench-results")
    a.out = a.out or os.path.join(results_root, "faults", time.strftime("%Y-%m-%d-%H%M%S") + ("-quick" if q else ""))

    sweep_stale()
    h = Harness(a)
    reaper, reaper_pipe = start_reaper(h.prefix)
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    h.result["config"] = {"nodes": a.nodes, "servers": a.servers, "rate": a.rate, "listeners_per_node": a.listeners,
                          "faults": a.faults, "quick": q, "binary": a.binary, "node_args": a.node_args, "git": git,
                          "nats_server": {"ping_interval_s": a.server_ping_s, "ping_max": a.server_ping_max,
                                          "write_deadline_s": a.server_write_deadline_s},
                          "durations_s": {"baseline": a.baseline, "observe": a.observe, "tail": a.tail, "partition": a.partition,
                                          "route_cut": a.route_cut, "stall": a.stall, "slow_stop": a.slow_stop},
                          "prefix": h.prefix, "loadavg_start": open("/proc/loadavg").read().split()[:3], "nproc": os.cpu_count()}
    def on_signal(sig, _):
        raise KeyboardInterrupt(f"signal {sig}")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    rc = 0
    t0 = now()
    try:
        h.setup()
        for f in a.faults:
            log(f"== {f}")
            try:
                h.run_fault(f)
            except Fail as e:
                log(f"{f} FAILED: {e}")
                h.result["faults"][f] = {"error": str(e)}
                rc = 1
                break  # the cluster is in an unknown state
    except Fail as e:
        log(f"FAILED: {e}")
        h.result["error"] = str(e)
        rc = 1
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}): stopping every process")
        h.result["error"] = f"interrupted: {e}"
        rc = 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # the cleanup itself is not interrupted
        for l in h.all_listeners():
            l.stopping.set()
        h.procs.stop_all()
        h.net.teardown()
        os.close(reaper_pipe)
        try:
            reaper.wait(30)
        except subprocess.TimeoutExpired:
            reaper.kill()
            reaper.wait(5)
    h.result["config"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    h.result["config"]["wall_s"] = round(now() - t0, 1)
    h.save()
    print(report(h.result))
    failures = []
    for name, r in h.result["faults"].items():
        if "accepted" not in r:
            failures.append(f"{name}: {r.get('error')}")
            continue
        if r["duplicates"]:
            failures.append(f"{name}: {r['duplicates']} duplicates")
        if r["lost"]:
            failures.append(f"{name}: {r['lost']} silently lost pairs")
        if r["pairs"] == 0:
            failures.append(f"{name}: no pairs counted")
    # A sanitizer build's reports (ASan, UBSan, LeakSanitizer at exit) in any node's stderr.
    for fn in sorted(os.listdir(a.out)):
        if fn.startswith("n") and fn.endswith(".stderr"):
            with open(os.path.join(a.out, fn), errors="replace") as f:
                text = f.read()
            if re.search(r"ERROR: (Address|Leak)Sanitizer|runtime error:", text):
                failures.append(f"{fn}: a sanitizer report")
    print(f"JSON: {os.path.join(a.out, 'faults.json')}; logs: {a.out}; {h.result['config']['wall_s']} s")
    if a.check and failures:
        print("CHECK FAILED: " + "; ".join(failures))
        return 1
    if a.check:
        print("CHECK PASSED: 0 duplicates, 0 silently lost pairs")
    return rc


if __name__ == "__main__":
    sys.exit(main())
