// mcpfan_ceiling: the raw-socket ceiling for SSE fan-out on this machine.
//
// One thread, pinned to one core, writes one pre-built ~250-byte SSE frame to each of N
// loopback TCP sockets with writev(), and does nothing else: no parsing, no lookup, no
// allocation, no epoll. A child process (pinned to the other core when there is one) holds
// the peer ends and drains them. The figure is the cost of the syscall plus the kernel's
// loopback TCP path, i.e. the floor under any server that does one write per delivery:
// every server figure in bench/compare can be read as a fraction of it.
//
//   mcpfan_ceiling [--n 1000,10000] [--rounds 20] [--frame-bytes 250] [--iov 4] [--batch 1]
//                  [--no-pin] [--json FILE]
//
// For each N: `rounds` bursts, each writing the frame once to each of the first N sockets
// (with --batch B: B frames in one writev per socket, reported per frame too); after each
// burst the writer waits until the reader has drained every byte. Reported per N, as the
// median over the bursts (min and max too):
//   cpu_us_per_write  the writer thread's CPU time (CLOCK_THREAD_CPUTIME_ID) / writes
//   writes_per_s      writes / wall time of the burst (on the writer's core)
// stdout: a human summary, then one JSON line (also appended to --json FILE).
#include <arpa/inet.h>
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

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// The peer: connects n sockets to port (spreading the source addresses over 127.0.1.x so the
// ephemeral ports never run out) and drains them until told to stop.
[[noreturn]] void run_reader(Shared* sh, uint16_t port, int n, int cpu) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (cpu >= 0) pin_to(cpu);
  std::vector<int> fds;
  fds.reserve(size_t(n));
  for (int i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) { sh->failed.store(1); _exit(3); }
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(0x7F000100u + 1u + unsigned(i / 5000));  // 127.0.1.(1 + i/5000)
    src.sin_port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) { sh->failed.store(1); _exit(3); }
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    dst.sin_port = htons(port);
    if (connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) { sh->failed.store(1); _exit(3); }
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

int main(int argc, char** argv) {
  std::vector<int> ns{1000, 10000};
  int rounds = 20, frame_bytes = 250, iov_parts = 4, batch = 1;
  bool pin = true;
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
    else if (a == "--no-pin") pin = false;
    else if (a == "--json") json_path = val();
    else if (a == "-h" || a == "--help") {
      std::printf("usage: mcpfan_ceiling [--n 1000,10000] [--rounds 20] [--frame-bytes 250] [--iov 4] [--batch 1] [--no-pin] [--json FILE]\n");
      return 0;
    } else { std::fprintf(stderr, "mcpfan_ceiling: unknown argument %s\n", a.c_str()); return 2; }
  }
  if (ns.empty() || rounds < 1 || frame_bytes < 32 || iov_parts < 1 || iov_parts > 4 || batch < 1 || batch > 64) {
    std::fprintf(stderr, "mcpfan_ceiling: bad arguments\n");
    return 2;
  }
  const int nmax = *std::max_element(ns.begin(), ns.end());

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
  if (frame.size() + tail.size() < size_t(frame_bytes)) frame.append(size_t(frame_bytes) - frame.size() - tail.size(), 'x');
  frame += tail;
  // Split like a server's [prefix][payload head][subscription id][payload tail] iovecs.
  std::vector<iovec> one;
  {
    size_t cut[5] = {0, 20, frame.size() / 2, frame.size() / 2 + 10, frame.size()};
    if (iov_parts == 1) one.push_back({frame.data(), frame.size()});
    else {
      size_t parts = size_t(iov_parts);
      size_t b = 0;
      for (size_t p = 0; p < parts; ++p) {
        size_t e = (p + 1 == parts) ? frame.size() : cut[p + 1];
        one.push_back({frame.data() + b, e - b});
        b = e;
      }
    }
  }
  std::vector<iovec> iov;
  for (int b = 0; b < batch; ++b) iov.insert(iov.end(), one.begin(), one.end());
  const size_t bytes_per_write = frame.size() * size_t(batch);

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

  uint64_t expected = 0;
  long eagain = 0;
  // One burst: the frame (or batch) once to each of the first n sockets; returns {cpu s, wall s}.
  auto burst = [&](int n, double& cpu, double& wall) -> bool {
    const double c0 = now_s(CLOCK_THREAD_CPUTIME_ID), w0 = now_s(CLOCK_MONOTONIC);
    for (int i = 0; i < n; ++i) {
      ssize_t r = writev(fds[size_t(i)], iov.data(), int(iov.size()));
      if (r < 0) { ++eagain; continue; }
      expected += uint64_t(r);
      if (size_t(r) != bytes_per_write) ++eagain;  // partial: counted, the rest dropped
    }
    const double c1 = now_s(CLOCK_THREAD_CPUTIME_ID), w1 = now_s(CLOCK_MONOTONIC);
    cpu = c1 - c0;
    wall = w1 - w0;
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
                     ",\"results\":[";
  std::printf("raw-socket ceiling: %zu-byte SSE frame, writev of %zu iovec(s) x batch %d, writer on one core%s\n",
              frame.size(), one.size(), batch, pin ? " (pinned to cpu 0, reader on cpu 1)" : "");
  std::printf("%8s %16s %16s %16s %14s\n", "N", "cpu_us/write", "writes/s", "cpu_us/frame", "burst_ms");
  bool ok = true;
  for (size_t k = 0; k < ns.size(); ++k) {
    const int n = ns[k];
    double c, w;
    ok = burst(n, c, w) && ok;  // warm-up (page-in, first-write paths)
    std::vector<double> cpu_us, wps, wall_ms;
    for (int r = 0; r < rounds; ++r) {
      if (!burst(n, c, w)) { ok = false; break; }
      cpu_us.push_back(c * 1e6 / n);
      wps.push_back(n / w);
      wall_ms.push_back(w * 1e3);
    }
    if (cpu_us.empty()) break;
    Stat sc = stat_of(cpu_us), sw = stat_of(wps), sm = stat_of(wall_ms);
    std::printf("%8d %16.3f %16.0f %16.3f %14.2f\n", n, sc.median, sw.median, sc.median / batch, sm.median);
    char b[512];
    std::snprintf(b, sizeof b,
                  "%s{\"n\":%d,\"cpu_us_per_write\":{\"median\":%.4f,\"min\":%.4f,\"max\":%.4f},"
                  "\"cpu_us_per_frame\":%.4f,\"writes_per_s\":{\"median\":%.0f,\"min\":%.0f,\"max\":%.0f},"
                  "\"frames_per_s\":%.0f,\"burst_ms\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f}}",
                  k ? "," : "", n, sc.median, sc.min, sc.max, sc.median / batch, sw.median, sw.min, sw.max,
                  sw.median * batch, sm.median, sm.min, sm.max);
    json += b;
  }
  json += "],\"short_writes\":" + std::to_string(eagain) + ",\"ok\":" + (ok ? "true" : "false") + "}}";
  std::printf("%s\n", json.c_str());
  if (json_path) {
    if (FILE* f = std::fopen(json_path, "a")) { std::fprintf(f, "%s\n", json.c_str()); std::fclose(f); }
  }
  sh->stop.store(1);
  int st = 0;
  waitpid(child, &st, 0);
  for (int fd : fds) close(fd);
  return ok ? 0 : 1;
}
