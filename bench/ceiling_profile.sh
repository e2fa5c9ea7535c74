#!/usr/bin/env bash
# bench/ceiling_profile.sh: where a write's CPU goes in the raw-socket ceiling, per variant.
#
#   bash bench/ceiling_profile.sh [--bin build-release/bench/mcpfan_ceiling] [--n 10000]
#                                 [--rounds 30] [--out DIR] MODE [MODE...] [-- extra mcpfan_ceiling args]
#
# For each MODE (a mcpfan_ceiling --mode variant, e.g. writev or uring-send+single+defer), runs
# the ceiling alone under `perf record -e cpu-clock -g` (software clock: this VM has no hardware
# counters), keeps the writer process's samples (and the writer core's ksoftirqd's, where
# deferred loopback receive work goes) taken inside the send path, and sorts them into buckets
# by their kernel call chain. Prints a table: bucket -> share of the in-burst samples and the
# µs per write that share is of the run's measured cpu_us_per_write. Needs perf and root (or
# perf_event_paranoid <= 1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
bin="$root/build-release/bench/mcpfan_ceiling"
n=10000
rounds=30
out=""
modes=()
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --n) n="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) modes+=("$1"); shift ;;
  esac
done
[[ ${#modes[@]} -gt 0 ]] || modes=(writev uring-send)
command -v perf >/dev/null || { echo "ceiling_profile.sh: perf not found" >&2; exit 2; }
[[ -n "$out" ]] || out="$(mktemp -d /tmp/ceiling-profile.XXXXXX)"
mkdir -p "$out"
for m in "${modes[@]}"; do
  tag="$(echo "$m" | tr '+' '_')"
  perf record -q -a -e cpu-clock -F 2999 -g -o "$out/$tag.data" -- \
    "$bin" --n "$n" --rounds "$rounds" --mode "$m" "${extra[@]}" >"$out/$tag.out" 2>&1
  perf script -i "$out/$tag.data" -F comm,pid,tid,cpu,ip,sym 2>/dev/null >"$out/$tag.script"
  python3 - "$m" "$out/$tag.script" "$out/$tag.out" <<'EOF'
import json, sys
mode, script, outp = sys.argv[1:4]
res = None
for line in open(outp):
    if line.startswith('{"ceiling"'):
        res = json.loads(line)["ceiling"]["results"][0]
writer = None
# Buckets, checked in order against the set of kernel functions in the sample's stack.
BUCKETS = [
    ("receive: wake the reader (sock_def_readable, epoll callback, IPI)", {"sock_def_readable", "ep_poll_callback", "__wake_up_sync_key", "try_to_wake_up"}),
    ("receive: softirq IP/TCP input (ip_rcv .. tcp_v4_rcv, ACK processing)", {"__netif_receive_skb", "__netif_receive_skb_one_core", "process_backlog", "net_rx_action", "ip_rcv", "tcp_v4_rcv", "tcp_v4_do_rcv"}),
    ("transmit: loopback device + qdisc (dev_queue_xmit, loopback_xmit)", {"__dev_queue_xmit", "loopback_xmit", "dev_hard_start_xmit"}),
    ("transmit: TCP/IP output (tcp_write_xmit, __tcp_transmit_skb, ip_queue_xmit)", {"tcp_write_xmit", "__tcp_transmit_skb", "__ip_queue_xmit", "ip_finish_output2"}),
    ("transmit: tcp_sendmsg (skb alloc, copy from user, socket lock)", {"tcp_sendmsg", "tcp_sendmsg_locked", "release_sock", "lock_sock_nested"}),
    ("io_uring: SQE prep/issue/CQE (outside the socket)", {"io_submit_sqes", "io_issue_sqe", "io_send", "io_sendmsg", "io_write", "io_req_task_work_add", "__io_submit_flush_completions", "io_cqring_wait"}),
    ("syscall layer: fd lookup, vfs, iovec import, sock_*msg", {"do_writev", "vfs_writev", "sock_write_iter", "__sys_sendmsg", "__sys_sendto", "____sys_sendmsg", "___sys_sendmsg", "import_iovec", "__x64_sys_io_uring_enter", "__do_sys_io_uring_enter", "fdget_pos", "sock_sendmsg"}),
    ("syscall entry/exit", {"do_syscall_64", "entry_SYSCALL_64_after_hwframe", "syscall_exit_to_user_mode"}),
]
OTHER_SKIP = {"__sys_accept4", "do_accept", "__x64_sys_close", "__fput", "seq_read_iter", "do_nanosleep", "hrtimer_nanosleep",
              "__x64_sys_openat", "do_sys_openat2", "__x64_sys_getdents64", "exit_mmap", "do_exit", "__x64_sys_clock_nanosleep",
              "__x64_sys_pread64", "__x64_sys_io_uring_setup", "__x64_sys_io_uring_register", "io_ring_exit_work"}
samples = []
cur = None
def flush():
    if cur is not None:
        samples.append(cur)
for line in open(script):
    if not line.strip():
        flush(); cur = None; continue
    if not line.startswith((" ", "\t")):
        flush()
        parts = line.split()
        # comm may contain spaces (ksoftirqd/0 does not); pid/tid then [cpu]
        comm = parts[0]
        pidtid = parts[1]
        cpu = int(parts[2].strip("[]")) if parts[2].startswith("[") else -1
        pid, _, tid = pidtid.partition("/")
        cur = {"comm": comm, "pid": int(pid), "cpu": cpu, "syms": [], "user": False}
    else:
        f = line.split()
        if len(f) >= 2:
            sym = f[1].split("+")[0]
            cur["syms"].append(sym)
flush()
# the writer: the mcpfan_ceiling process with the most samples on cpu 0 (the reader is pinned to cpu 1)
from collections import Counter
c = Counter(s["pid"] for s in samples if s["comm"] == "mcpfan_ceiling" and s["cpu"] == 0)
writer = c.most_common(1)[0][0] if c else None
counts = Counter()
total = 0
for s in samples:
    mine = (s["pid"] == writer) or (s["comm"].startswith("ksoftirqd/0") and s["cpu"] == 0)
    if not mine:
        continue
    syms = set(s["syms"])
    if syms & OTHER_SKIP:
        continue
    # in-burst only: a sample of the writer outside any send path (setup, waiting) is skipped,
    # unless it is ksoftirqd doing receive work
    b = None
    for name, fs in BUCKETS:
        if syms & fs:
            b = name
            break
    if b is None:
        if s["comm"].startswith("ksoftirqd"):
            continue
        if not any(x.startswith(("do_syscall_64", "entry_SYSCALL", "io_")) for x in s["syms"]):
            b = "user space (the writer's own loop, liburing)"
        else:
            continue
    if s["comm"].startswith("ksoftirqd"):
        b += " [in ksoftirqd]"
    counts[b] += 1
    total += 1
cpu = res["cpu_us_per_write"]["median"] if res else float("nan")
print(f"\n### {mode}: N={res['n'] if res else '?'}, cpu_us_per_write {cpu:.3f} (under perf), {total} in-burst samples\n")
print("| bucket | share | µs/write |")
print("|---|---|---|")
for name, k in sorted(counts.items(), key=lambda kv: -kv[1]):
    print(f"| {name} | {100 * k / total:.1f} % | {cpu * k / total:.2f} |")
EOF
done
echo "perf data and scripts in $out" >&2
