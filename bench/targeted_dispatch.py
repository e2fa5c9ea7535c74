#!/usr/bin/env python3
"""CPU per targeted publish against the worker count (docs/performance.md, "Interest-aware dispatch").

Starts `mcpfan --workers W` for each W, opens N listen streams (one URI each, spread over
the workers by the kernel), then sends P publishes, each to one random stream's URI, at a
fixed rate over one keep-alive connection, and reads the server's CPU time (utime + stime
from /proc/PID/stat) around the publishes. Every stream's deliveries are counted: nothing
may be lost. Prints one line per W: CPU microseconds per publish.

    python3 bench/targeted_dispatch.py BINARY [--workers 1,8] [--streams 2000] [--publishes 20000] [--rate 8000]
"""
import argparse, json, os, random, re, select, selectors, socket, subprocess, sys, time

def clk():
    return os.sysconf("SC_CLK_TCK")

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / clk()

def start(binary, workers):
    p = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--workers", str(workers)], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    line = ""
    while time.time() < deadline:
        line = p.stderr.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    raise SystemExit("mcpfan did not start: " + line)

def listen(port, i):
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "subscriptions/listen", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}},
        "notifications": {"resourceSubscriptions": [f"mem://s/{i}"]}}})
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
               f"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    s.setblocking(False)
    return s

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--workers", default="1,8")
    ap.add_argument("--streams", type=int, default=2000)
    ap.add_argument("--publishes", type=int, default=20000)
    ap.add_argument("--rate", type=int, default=8000)
    a = ap.parse_args()
    for w in [int(x) for x in a.workers.split(",")]:
        proc, port = start(a.binary, w)
        try:
            streams = [listen(port, i) for i in range(a.streams)]
            sel = selectors.DefaultSelector()  # epoll: thousands of descriptors
            for i, s in enumerate(streams):
                sel.register(s, selectors.EVENT_READ, i)
            got = [0] * a.streams
            acked = [False] * a.streams
            def pump(timeout):
                for key, _ in sel.select(timeout):
                    try:
                        data = key.fileobj.recv(1 << 16)
                    except BlockingIOError:
                        continue
                    i = key.data
                    if not acked[i] and b"acknowledged" in data:
                        acked[i] = True
                    got[i] += data.count(b"notifications/resources/updated")
            # Every stream acknowledged before the clock starts.
            deadline = time.time() + 30
            while not all(acked) and time.time() < deadline:
                pump(0.2)
            if not all(acked):
                raise SystemExit(f"only {sum(acked)} of {a.streams} listens acknowledged")
            answered = 0
            pending = b""
            pub = socket.create_connection(("127.0.0.1", port))
            pub.setblocking(False)
            def read_answers():
                nonlocal pending, answered
                try:
                    pending += pub.recv(1 << 16)
                except BlockingIOError:
                    return
                answered = pending.count(b"HTTP/1.1 202")
            rnd = random.Random(1)
            targets = [rnd.randrange(a.streams) for _ in range(a.publishes)]
            cpu0, t0 = cpu_seconds(proc.pid), time.time()
            for n, t in enumerate(targets):
                body = json.dumps({"method": "notifications/resources/updated", "params": {"uri": f"mem://s/{t}"}})
                pub.setblocking(True)
                pub.sendall((f"POST /v1/publish HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
                pub.setblocking(False)
                due = t0 + (n + 1) / a.rate
                while True:  # read answers, and deliveries, until the next publish is due
                    left = due - time.time()
                    read_answers()
                    if left <= 0:
                        break
                    pump(min(left, 0.002))
            end = time.time() + 20
            while (answered < a.publishes or sum(got) < a.publishes) and time.time() < end:
                read_answers()
                pump(0.01)
            cpu = cpu_seconds(proc.pid) - cpu0
            lost = a.publishes - sum(got)
            want = [0] * a.streams
            for t in targets:
                want[t] += 1
            misdelivered = sum(1 for i in range(a.streams) if got[i] != want[i])
            print(f"workers={w} streams={a.streams} publishes={a.publishes} rate={a.rate}/s "
                  f"cpu_per_publish_us={cpu * 1e6 / a.publishes:.1f} answered={answered} lost={lost} streams_off={misdelivered}")
            sys.stdout.flush()
        finally:
            proc.terminate()
            proc.wait(10)

if __name__ == "__main__":
    main()
