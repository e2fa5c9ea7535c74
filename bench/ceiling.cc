// mcpfan_ceiling: the raw-socket ceiling for SSE fan-out on this machine.
//
// One thread, pinned to one core, writes one pre-built ~250-byte SSE frame to each of N
// loopback TCP sockets with writev() (or another way: --mode), and does nothing else: no parsing, no lookup, no
// allocation, no epoll. A child process (pinned to the other core when there is one) holds
// the peer ends and drains them. The figure is the cost of the syscall plus the kernel's
// loopback TCP path, i.e. the floor under any server that does one write per delivery:
// every server figure in bench/compare can be read as a fraction of it.
//
//   mcpfan_ceiling [--n 1000,10000] [--rounds 20] [--frame-bytes 250] [--iov 4 (1..8)] [--batch 1]
//                  [--mode writev[,VARIANT...]] [--uring-qd 4096] [--no-pin] [--per-burst] [--json FILE]
//
// For each N: `rounds` bursts, each writing the frame once to each of the first N sockets
// (with --batch B: B frames in one write per socket, reported per frame too); after each
// burst the writer waits until the reader has drained every byte. Reported per N, as the
// median over the bursts (min and max too):
//   cpu_us_per_write  (the writer process's CPU time + the CPU time of the writer core's
//                     ksoftirqd) / writes. The process clock (CLOCK_PROCESS_CPUTIME_ID) counts
//                     every thread of the process, io_uring's io-wq workers and SQPOLL thread
//                     included; without io_uring the writer is one thread. ksoftirqd: loopback
//                     receive work the kernel deferred out of the writer's context (see
//                     SoftirqClock); ~0.05 us for one syscall per write, 0.2-0.3 us for io_uring
//                     at N=10,000 (median; single bursts far more).
//                     Also reported apart: process_cpu_us_per_write, thread_cpu_us_per_write
//                     (the writer thread alone), rusage_us_per_write (getrusage RUSAGE_SELF,
//                     user + sys), ksoftirqd_us_per_write.
//   writes_per_s      writes / wall time of the burst (on the writer's core)
// stdout: a human summary, then one JSON line (also appended to --json FILE). --per-burst
// also prints every burst's figures to stderr.
//
// --mode takes a comma-separated list of variants; with more than one, their bursts are
// interleaved (round r runs every variant once, starting from a different one each round), so
// they are compared under the same background load. A variant is an operation, optionally
// followed by +modifiers:
//   writev | sendmsg | send               one syscall per socket (send: the frame as one buffer)
//   uring-writev | uring-sendmsg | uring-send
//                                         IORING_OP_WRITEV / SENDMSG / SEND, one SQE per socket,
//                                         submitted B at a time (io_uring_submit), CQEs reaped
//                                         after each submit
//   modifiers: bNUM   SQEs per io_uring_submit (default: --uring-qd)
//              qdNUM  ring size (default --uring-qd, 4096; the CQ ring is twice that)
//              fixed  registered files (IOSQE_FIXED_FILE)
//              ringfd registered ring fd (io_uring_register_ring_fd)
//              dontwait  MSG_DONTWAIT (send/sendmsg) or RWF_NOWAIT (writev): fail instead of
//                        arming a poll when the socket is full; also valid for the syscalls
//              single | coop | defer | taskrun   IORING_SETUP_SINGLE_ISSUER / COOP_TASKRUN /
//                        DEFER_TASKRUN (implies single) / TASKRUN_FLAG
//              async  IOSQE_ASYNC: every send punted to an io-wq worker thread (shows that
//                     those threads' CPU is counted: thread_cpu drops, cpu stays)
//              sqpoll IORING_SETUP_SQPOLL (kernel thread polls the SQ; its CPU is counted, and
//                     it spins 1 ms after each burst, which may land in the next variant's burst)
// e.g. --mode writev,uring-send+single+defer+fixed,uring-sendmsg+b256
// sendmmsg(2) is not a variant: it sends several messages on ONE socket (for datagrams);
// a TCP fan-out has one message per socket, so it would still be one syscall per socket.
// The first variant's figures are the JSON "results" (what bench/compare reads); every
// variant's are under "variants".
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if MCPFAN_HAVE_LIBURING
#include <liburing.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Shared {
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<int> connected{0};
  std::atomic<int> failed{0};
  std::atomic<int> stop{0};
};

double now_s(clockid_t clk) {
  timespec ts{};
  clock_gettime(clk, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "mcpfan_ceiling: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // best effort
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty()) out.push_back(std::atoi(cur.c_str()));
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur.push_back(*p);
    }
  }
  return out;
}

// The peer: connects n sockets to port (spreading the source addresses over 127.R.1.x so the
// ephemeral ports never run out) and drains them until told to stop.
[[noreturn]] void run_reader(Shared* sh, uint16_t port, int n, int cpu) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (cpu >= 0) pin_to(cpu);
  std::vector<int> fds;
  fds.reserve(size_t(n));
  // Source addresses 127.R.1.x with R from the PID: back-to-back runs do not meet the
  // TIME_WAIT sockets of the previous ones (and the close below avoids leaving any).
  const uint32_t src_base = 0x7F000100u | ((1u + uint32_t(getpid()) % 250u) << 16);
  for (int i = 0; i < n; ++i) {
    auto fail = [&](const char* what) {
      std::fprintf(stderr, "mcpfan_ceiling: reader: connection %d: %s: %s\n", i, what, std::strerror(errno));
      sh->failed.store(1);
      _exit(3);
    };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(src_base + 1u + unsigned(i / 5000));  // 127.R.1.(1 + i/5000)
    src.sin_port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) fail("bind");
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    dst.sin_port = htons(port);
    if (connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) fail("connect");
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fds.push_back(fd);
    sh->connected.fetch_add(1, std::memory_order_relaxed);
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  for (int fd : fds) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  std::vector<epoll_event> evs(1024);
  static char buf[1 << 16];
  while (!sh->stop.load(std::memory_order_relaxed)) {
    int k = epoll_wait(ep, evs.data(), int(evs.size()), 50);
    for (int i = 0; i < k; ++i) {
      for (;;) {
        ssize_t r = read(evs[size_t(i)].data.fd, buf, sizeof buf);
        if (r > 0) { sh->bytes_read.fetch_add(uint64_t(r), std::memory_order_relaxed); continue; }
        if (r == 0) { epoll_ctl(ep, EPOLL_CTL_DEL, evs[size_t(i)].data.fd, nullptr); }
        break;
      }
    }
  }
  // Abortive close (RST): no TIME_WAIT left behind, so runs can follow one another.
  const linger lg{1, 0};
  for (int fd : fds) setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  _exit(0);
}

struct Stat { double median, min, max; };
Stat stat_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size();
  double med = (m % 2) ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
  return {med, v.front(), v.back()};
}

}  // namespace

namespace {

enum class Op : uint8_t { Writev, Sendmsg, Send };

// One way of writing the burst (see --mode in the header comment).
struct Variant {
  std::string name;
  Op op = Op::Writev;
  bool uring = false;
  bool fixed = false, ringfd = false, dontwait = false, async = false, sqpoll = false;
  unsigned setup_flags = 0;
  unsigned qd = 0;     // 0: --uring-qd
  unsigned batch = 0;  // SQEs per submit; 0: qd
#if MCPFAN_HAVE_LIBURING
  io_uring ring{};
#endif
  bool ring_ok = false;
  // per N, per burst
  std::vector<double> cpu_us, writer_us, thread_us, rusage_us, softirqd_us, wps, wall_ms, enters;
  long short_writes = 0, errors = 0;
  int first_error = 0;
  std::string results_json;  // the "results" array's entries
};

bool parse_variant(const std::string& spec, Variant* v, std::string* err) {
  v->name = spec;
  std::vector<std::string> parts;
  std::string cur;
  for (char c : spec + "+") {
    if (c == '+') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  const std::string& op = parts[0];
  if (op == "writev") v->op = Op::Writev;
  else if (op == "sendmsg") v->op = Op::Sendmsg;
  else if (op == "send") v->op = Op::Send;
  else if (op == "uring-writev") { v->op = Op::Writev; v->uring = true; }
  else if (op == "uring-sendmsg") { v->op = Op::Sendmsg; v->uring = true; }
  else if (op == "uring-send") { v->op = Op::Send; v->uring = true; }
  else { *err = "unknown operation '" + op + "' in --mode " + spec; return false; }
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& m = parts[i];
    bool uring_only = true;
    if (m == "dontwait") { v->dontwait = true; uring_only = false; }
    else if (m == "fixed") v->fixed = true;
    else if (m == "ringfd") v->ringfd = true;
    else if (m == "async") v->async = true;
    else if (m == "sqpoll") v->sqpoll = true;
#if MCPFAN_HAVE_LIBURING
    else if (m == "single") v->setup_flags |= IORING_SETUP_SINGLE_ISSUER;
    else if (m == "coop") v->setup_flags |= IORING_SETUP_COOP_TASKRUN;
    else if (m == "defer") v->setup_flags |= IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER;
    else if (m == "taskrun") v->setup_flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
#endif
    else if (m.size() > 1 && m[0] == 'b' && std::atoi(m.c_str() + 1) > 0) v->batch = unsigned(std::atoi(m.c_str() + 1));
    else if (m.size() > 2 && m.compare(0, 2, "qd") == 0 && std::atoi(m.c_str() + 2) > 0)
      v->qd = unsigned(std::atoi(m.c_str() + 2));
    else { *err = "unknown modifier '" + m + "' in --mode " + spec; return false; }
    if (uring_only && !v->uring) {
      *err = "modifier '" + m + "' needs an io_uring operation (--mode " + spec + ")";
      return false;
    }
  }
#if !MCPFAN_HAVE_LIBURING
  if (v->uring) { *err = "built without liburing: --mode " + spec + " is not available"; return false; }
#endif
  return true;
}

double cpu_s(clockid_t clk) { return now_s(clk); }

double rusage_self_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// ksoftirqd/N threads: the loopback receive path (softirq) normally runs in the sender's own
// context when it re-enables bottom halves, and is then counted as the writer's CPU; but once
// softirq work piles up (a long run of sends inside one io_uring_enter, or a busy core) the
// kernel defers it to ksoftirqd, where the writer's clocks do not see it. The runtime of the
// writer core's ksoftirqd (/proc/PID/schedstat, ns; every ksoftirqd when not pinned) is read
// around each burst and added to cpu_us_per_write.
struct SoftirqClock {
  std::vector<int> fds;
  explicit SoftirqClock(int cpu) {
    char want[32];
    std::snprintf(want, sizeof want, "ksoftirqd/%d\n", cpu);
    if (DIR* d = opendir("/proc")) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], comm[64] = {0};
        std::snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t k = read(fd, comm, sizeof comm - 1);
        close(fd);
        if (k <= 0 || std::strncmp(comm, "ksoftirqd/", 10) != 0) continue;
        if (cpu >= 0 && std::strcmp(comm, want) != 0) continue;
        std::snprintf(path, sizeof path, "/proc/%s/schedstat", e->d_name);
        int sfd = open(path, O_RDONLY | O_CLOEXEC);
        if (sfd >= 0) fds.push_back(sfd);
      }
      closedir(d);
    }
  }
  double seconds() const {
    uint64_t ns = 0;
    for (int fd : fds) {
      char b[128];
      ssize_t k = pread(fd, b, sizeof b - 1, 0);
      if (k > 0) {
        b[k] = 0;
        ns += std::strtoull(b, nullptr, 10);
      }
    }
    return double(ns) * 1e-9;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ns{1000, 10000};
  int rounds = 20, frame_bytes = 250, iov_parts = 4, batch = 1;
  unsigned uring_qd = 4096;
  bool pin = true, per_burst = false;
  std::string modes = "writev";
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) { std::fprintf(stderr, "mcpfan_ceiling: %s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--n") ns = parse_list(val());
    else if (a == "--rounds") rounds = std::atoi(val());
    else if (a == "--frame-bytes") frame_bytes = std::atoi(val());
    else if (a == "--iov") iov_parts = std::atoi(val());
    else if (a == "--batch") batch = std::atoi(val());
    else if (a == "--mode") modes = val();
    else if (a == "--uring-qd") uring_qd = unsigned(std::atoi(val()));
    else if (a == "--no-pin") pin = false;
    else if (a == "--per-burst") per_burst = true;
    else if (a == "--json") json_path = val();
    else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: mcpfan_ceiling [--n 1000,10000] [--rounds 20] [--frame-bytes 250] [--iov 4] [--batch 1]\n"
          "                      [--mode writev[,VARIANT...]] [--uring-qd 4096] [--no-pin] [--per-burst] [--json "
          "FILE]\n"
          "  VARIANT: writev|sendmsg|send|uring-writev|uring-sendmsg|uring-send, then +modifiers:\n"
          "           bNUM qdNUM fixed ringfd dontwait single coop defer taskrun async sqpoll\n"
          "           (see the comment at the top of bench/ceiling.cc)%s\n",
#if MCPFAN_HAVE_LIBURING
          ""
#else
          "\n  (this build has no liburing: only writev, sendmsg, send)"
#endif
      );
      return 0;
    } else { std::fprintf(stderr, "mcpfan_ceiling: unknown argument %s\n", a.c_str()); return 2; }
  }
  if (ns.empty() || rounds < 1 || frame_bytes < 32 || iov_parts < 1 || iov_parts > 8 || batch < 1 || batch > 64 ||
      uring_qd < 1 || uring_qd > 32768) {
    std::fprintf(stderr, "mcpfan_ceiling: bad arguments\n");
    return 2;
  }
  std::vector<std::unique_ptr<Variant>> variants;
  for (const std::string& spec : [&] {
         std::vector<std::string> v;
         std::string cur;
         for (char c : modes + ",") {
           if (c == ',') { if (!cur.empty()) v.push_back(cur); cur.clear(); }
           else cur.push_back(c);
         }
         return v;
       }()) {
    auto v = std::make_unique<Variant>();
    std::string err;
    if (!parse_variant(spec, v.get(), &err)) { std::fprintf(stderr, "mcpfan_ceiling: %s\n", err.c_str()); return 2; }
    if (!v->qd) v->qd = uring_qd;
    if (!v->batch) v->batch = v->qd;
    variants.push_back(std::move(v));
  }
  if (variants.empty()) { std::fprintf(stderr, "mcpfan_ceiling: --mode is empty\n"); return 2; }
  const int nmax = *std::max_element(ns.begin(), ns.end());
  signal(SIGPIPE, SIG_IGN);

  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  if (rlim_t(nmax) + 16 > rl.rlim_cur) {
    std::fprintf(stderr, "mcpfan_ceiling: N=%d needs more descriptors than the limit %llu\n", nmax,
                 static_cast<unsigned long long>(rl.rlim_cur));
    return 2;
  }

  // A resources/updated notification as an SSE event, padded to frame_bytes.
  std::string frame =
      "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\","
      "\"params\":{\"uri\":\"file:///bench/a\",\"_meta\":{\"bench/seq\":1,\"bench/ts_ns\":1234567890123,"
      "\"io.modelcontextprotocol/subscriptionId\":\"listen:0\",\"pad\":\"";
  const std::string tail = "\"}}}\n\n";
  if (frame.size() + tail.size() < size_t(frame_bytes))
    frame.append(size_t(frame_bytes) - frame.size() - tail.size(), 'x');
  frame += tail;
  // Split like a server's [prefix][payload head][subscription id][payload tail] iovecs; with
  // --iov 6, also [chunk header] first and [CRLF] last, as mcpfan's HTTP transport writes it.
  std::vector<iovec> one;
  {
    const size_t prio[7] = {20, frame.size() / 2, frame.size() / 2 + 10, 5, frame.size() - 2, 60, 100};
    std::vector<size_t> cuts(prio, prio + (iov_parts - 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.push_back(frame.size());
    size_t b = 0;
    for (size_t e : cuts) {
      one.push_back({frame.data() + b, e - b});
      b = e;
    }
  }
  std::vector<iovec> iov;
  for (int b = 0; b < batch; ++b) iov.insert(iov.end(), one.begin(), one.end());
  const size_t bytes_per_write = frame.size() * size_t(batch);
  std::string flat;  // send: the batch as one contiguous buffer
  for (int b = 0; b < batch; ++b) flat += frame;
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = iov.size();

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) die("socket");
  int on = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in la{};
  la.sin_family = AF_INET;
  la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&la), sizeof la) != 0) die("bind");
  if (listen(lfd, 65535) != 0) die("listen");
  socklen_t ll = sizeof la;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&la), &ll);
  const uint16_t port = ntohs(la.sin_port);

  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) die("mmap");
  auto* sh = new (mem) Shared();

  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const int writer_cpu = pin ? 0 : -1;
  const int reader_cpu = (pin && ncpu > 1) ? 1 : -1;

  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    close(lfd);
    run_reader(sh, port, nmax, reader_cpu);
  }
  if (writer_cpu >= 0) pin_to(writer_cpu);

  // Accept every connection (bounded: 60 s).
  std::vector<int> fds;
  fds.reserve(size_t(nmax));
  fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
  const double accept_deadline = now_s(CLOCK_MONOTONIC) + 60;
  while (int(fds.size()) < nmax) {
    int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      fds.push_back(fd);
      continue;
    }
    if (sh->failed.load() || now_s(CLOCK_MONOTONIC) > accept_deadline) {
      std::fprintf(stderr, "mcpfan_ceiling: only %zu of %d connections came up\n", fds.size(), nmax);
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
      return 1;
    }
    usleep(200);
  }

  // io_uring rings, one per variant (set up once; a variant whose setup the kernel refuses is
  // reported as unsupported and skipped).
  std::vector<Variant*> active;
  std::string unsupported_json;
  for (auto& vp : variants) {
    Variant& v = *vp;
    if (!v.uring) { active.push_back(&v); continue; }
#if MCPFAN_HAVE_LIBURING
    io_uring_params p{};
    p.flags = v.setup_flags | IORING_SETUP_CQSIZE;
    p.cq_entries = 2 * v.qd;
    if (v.sqpoll) {
      p.flags |= IORING_SETUP_SQPOLL;
      p.sq_thread_idle = 1;  // ms
    }
    const char* what = "io_uring_queue_init_params";
    int rc = io_uring_queue_init_params(v.qd, &v.ring, &p);
    if (rc == 0) {
      v.ring_ok = true;
      if (v.fixed) {
        what = "io_uring_register_files";
        rc = io_uring_register_files(&v.ring, fds.data(), unsigned(nmax));
      }
      if (rc == 0 && v.ringfd) {
        what = "io_uring_register_ring_fd";
        rc = io_uring_register_ring_fd(&v.ring);
        rc = rc == 1 ? 0 : rc;
      }
    }
    if (rc != 0) {
      if (v.ring_ok) io_uring_queue_exit(&v.ring);
      v.ring_ok = false;
      std::printf("variant %s: %s: %s -- skipped\n", v.name.c_str(), what, std::strerror(-rc));
      unsupported_json += (unsupported_json.empty() ? "" : ",") + std::string("{\"mode\":\"") + v.name +
                          "\",\"unsupported\":\"" + what + ": " + std::strerror(-rc) + "\"}";
      continue;
    }
    active.push_back(&v);
#endif
  }
  if (active.empty()) {
    std::fprintf(stderr, "mcpfan_ceiling: no variant of --mode %s can run here\n", modes.c_str());
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    return 1;
  }

  const SoftirqClock softirqd(writer_cpu);
  uint64_t expected = 0;
  // One burst: the frame (or batch) once to each of the first n sockets. Records per write:
  // process CPU, this thread's CPU, getrusage(RUSAGE_SELF), writes/s, wall ms, kernel entries.
  auto burst = [&](Variant& v, int n, bool record) -> bool {
    const double s0 = softirqd.seconds();
    const double t0 = cpu_s(CLOCK_THREAD_CPUTIME_ID), c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), r0 = rusage_self_s();
    const double w0 = now_s(CLOCK_MONOTONIC);
    long enters = 0;
    auto account = [&](long r, int err) {
      if (r < 0) {
        ++v.errors;
        if (!v.first_error) v.first_error = err;
        return;
      }
      expected += uint64_t(r);
      if (size_t(r) != bytes_per_write) ++v.short_writes;  // partial: counted, the rest dropped
    };
    if (!v.uring) {
      const int flags = v.dontwait ? MSG_DONTWAIT : 0;
      for (int i = 0; i < n; ++i) {
        const int fd = fds[size_t(i)];
        ssize_t r;
        switch (v.op) {
          case Op::Writev: r = writev(fd, iov.data(), int(iov.size())); break;
          case Op::Sendmsg: r = sendmsg(fd, &msg, flags); break;
          default: r = send(fd, flat.data(), flat.size(), flags); break;
        }
        account(long(r), errno);
      }
      enters = n;
    } else {
#if MCPFAN_HAVE_LIBURING
      io_uring* ring = &v.ring;
      const unsigned cq_cap = ring->cq.ring_entries;
      const int sflags = v.dontwait ? MSG_DONTWAIT : 0;
      int next = 0, done = 0;
      unsigned inflight = 0;
      while (done < n) {
        unsigned k = 0;
        while (next < n && k < v.batch && inflight + k < cq_cap) {
          io_uring_sqe* sqe = io_uring_get_sqe(ring);
          if (!sqe) break;
          const int fd = v.fixed ? next : fds[size_t(next)];
          switch (v.op) {
            case Op::Writev:
              io_uring_prep_writev(sqe, fd, iov.data(), unsigned(iov.size()), 0);
              if (v.dontwait) sqe->rw_flags = RWF_NOWAIT;
              break;
            case Op::Sendmsg: io_uring_prep_sendmsg(sqe, fd, &msg, unsigned(sflags)); break;
            default: io_uring_prep_send(sqe, fd, flat.data(), flat.size(), sflags); break;
          }
          if (v.fixed) sqe->flags |= IOSQE_FIXED_FILE;
          if (v.async) sqe->flags |= IOSQE_ASYNC;
          sqe->user_data = uint64_t(next);
          ++next;
          ++k;
        }
        if (k) {
          int rc = io_uring_submit(ring);
          ++enters;
          if (rc < 0) {
            std::fprintf(stderr, "mcpfan_ceiling: %s: io_uring_submit: %s\n", v.name.c_str(), std::strerror(-rc));
            return false;
          }
          inflight += k;
        }
        unsigned head, seen = 0;
        io_uring_cqe* cqe;
        io_uring_for_each_cqe(ring, head, cqe) {
          account(cqe->res, -cqe->res);
          ++seen;
        }
        io_uring_cq_advance(ring, seen);
        done += int(seen);
        inflight -= seen;
        if (seen == 0 && (k == 0 || next == n) && inflight > 0) {
          // Nothing completed yet: wait for one (this also runs deferred task work).
          int rc = io_uring_wait_cqe(ring, &cqe);
          ++enters;
          if (rc < 0 && rc != -EINTR) {
            std::fprintf(stderr, "mcpfan_ceiling: %s: io_uring_wait_cqe: %s\n", v.name.c_str(), std::strerror(-rc));
            return false;
          }
        }
      }
#endif
    }
    const double t1 = cpu_s(CLOCK_THREAD_CPUTIME_ID), c1 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), r1 = rusage_self_s();
    const double w1 = now_s(CLOCK_MONOTONIC);
    const double s1 = softirqd.seconds();
    if (per_burst) {
      std::fprintf(
          stderr,
          "burst n=%d %s%s: process %.3f thread %.3f rusage %.3f ksoftirqd %.3f us/write, wall %.3f ms, %ld entries\n",
          n, v.name.c_str(), record ? "" : " (warm-up)", (c1 - c0) * 1e6 / n, (t1 - t0) * 1e6 / n, (r1 - r0) * 1e6 / n,
          (s1 - s0) * 1e6 / n, (w1 - w0) * 1e3, enters);
    }
    if (record) {
      v.cpu_us.push_back((c1 - c0 + s1 - s0) * 1e6 / n);
      v.writer_us.push_back((c1 - c0) * 1e6 / n);
      v.thread_us.push_back((t1 - t0) * 1e6 / n);
      v.rusage_us.push_back((r1 - r0) * 1e6 / n);
      v.softirqd_us.push_back((s1 - s0) * 1e6 / n);
      v.wps.push_back(n / (w1 - w0));
      v.wall_ms.push_back((w1 - w0) * 1e3);
      v.enters.push_back(double(enters));
    }
    // Let the reader drain everything before the next burst (bounded: 10 s).
    const double deadline = w1 + 10;
    while (sh->bytes_read.load(std::memory_order_relaxed) < expected) {
      if (now_s(CLOCK_MONOTONIC) > deadline) return false;
      usleep(100);
    }
    return true;
  };

  std::string json = "{\"ceiling\":{\"frame_bytes\":" + std::to_string(frame.size()) +
                     ",\"iov_per_frame\":" + std::to_string(one.size()) + ",\"batch\":" + std::to_string(batch) +
                     ",\"rounds\":" + std::to_string(rounds) + ",\"pinned\":" + (pin ? "true" : "false") +
                     ",\"mode\":\"" + active[0]->name + "\",\"results\":[";
  std::printf("raw-socket ceiling: %zu-byte SSE frame, %zu iovec(s) x batch %d per write, writer on one core%s\n",
              frame.size(), one.size(), batch, pin ? " (pinned to cpu 0, reader on cpu 1)" : "");
  if (active.size() > 1) std::printf("variants interleaved burst by burst: %zu\n", active.size());
  std::printf("%8s %-34s %12s %10s %10s %10s %10s %10s %12s %9s %8s\n", "N", "mode", "cpu_us/write", "process",
              "thread", "rusage", "ksoftirqd", "writes/s", "cpu_us/frame", "burst_ms", "enters");
  bool ok = true;
  for (size_t k = 0; k < ns.size() && ok; ++k) {
    const int n = ns[k];
    for (Variant* v : active) {
      v->cpu_us.clear();
      v->writer_us.clear();
      v->thread_us.clear();
      v->rusage_us.clear();
      v->softirqd_us.clear();
      v->wps.clear();
      v->wall_ms.clear();
      v->enters.clear();
      ok = burst(*v, n, false) && ok;  // warm-up (page-in, first-write paths)
    }
    for (int r = 0; r < rounds && ok; ++r) {
      for (size_t j = 0; j < active.size() && ok; ++j) ok = burst(*active[(size_t(r) + j) % active.size()], n, true);
    }
    for (size_t j = 0; j < active.size(); ++j) {
      Variant& v = *active[j];
      if (v.cpu_us.empty()) continue;
      Stat sc = stat_of(v.cpu_us), sw = stat_of(v.wps), sm = stat_of(v.wall_ms);
      Stat st = stat_of(v.thread_us), sr = stat_of(v.rusage_us), se = stat_of(v.enters), sq = stat_of(v.softirqd_us),
           sp = stat_of(v.writer_us);
      std::printf("%8d %-34s %12.3f %10.3f %10.3f %10.3f %10.3f %10.0f %12.3f %9.2f %8.0f\n", n, v.name.c_str(),
                  sc.median, sp.median, st.median, sr.median, sq.median, sw.median, sc.median / batch, sm.median,
                  se.median);
      char b[768];
      std::snprintf(b, sizeof b,
                    "%s{\"n\":%d,\"cpu_us_per_write\":{\"median\":%.4f,\"min\":%.4f,\"max\":%.4f},"
                    "\"cpu_us_per_frame\":%.4f,\"writes_per_s\":{\"median\":%.0f,\"min\":%.0f,\"max\":%.0f},"
                    "\"frames_per_s\":%.0f,\"burst_ms\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f},"
                    "\"process_cpu_us_per_write\":{\"median\":%.4f},\"thread_cpu_us_per_write\":{\"median\":%.4f},"
                    "\"rusage_us_per_write\":{\"median\":%.4f},"
                    "\"ksoftirqd_us_per_write\":{\"median\":%.4f,\"max\":%.4f},\"kernel_entries_per_burst\":%.0f}",
                    v.results_json.empty() ? "" : ",", n, sc.median, sc.min, sc.max, sc.median / batch, sw.median,
                    sw.min, sw.max, sw.median * batch, sm.median, sm.min, sm.max, sp.median, st.median, sr.median,
                    sq.median, sq.max, se.median);
      v.results_json += b;
    }
  }
  long short_total = 0;
  for (Variant* v : active) short_total += v->short_writes + v->errors;
  json += active[0]->results_json + "]";
  if (active.size() > 1 || !unsupported_json.empty() || active[0]->name != "writev") {
    json += ",\"variants\":[";
    for (size_t j = 0; j < active.size(); ++j) {
      Variant& v = *active[j];
      json += (j ? ",{\"mode\":\"" : "{\"mode\":\"") + v.name + "\",\"results\":[" + v.results_json +
              "],\"short_writes\":" + std::to_string(v.short_writes) + ",\"errors\":" + std::to_string(v.errors) +
              (v.first_error ? ",\"first_error\":\"" + std::string(std::strerror(v.first_error)) + "\"" : "") + "}";
    }
    if (!unsupported_json.empty()) json += "," + unsupported_json;
    json += "]";
  }
  for (Variant* v : active) {
    if (v->errors)
      std::printf("variant %s: %ld failed writes (first: %s)\n", v->name.c_str(), v->errors,
                  std::strerror(v->first_error));
  }
  json += ",\"short_writes\":" + std::to_string(short_total) + ",\"ok\":" + (ok ? "true" : "false") + "}}";
  std::printf("%s\n", json.c_str());
  if (json_path) {
    if (FILE* f = std::fopen(json_path, "a")) { std::fprintf(f, "%s\n", json.c_str()); std::fclose(f); }
  }
  sh->stop.store(1);
  int st = 0;
  waitpid(child, &st, 0);
#if MCPFAN_HAVE_LIBURING
  for (Variant* v : active) if (v->ring_ok) io_uring_queue_exit(&v->ring);
#endif
  for (int fd : fds) close(fd);
  return ok ? 0 : 1;
}
