#include "nats_server.h"

#include "token_mint.h"

#include <signal.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <regex>
#include <thread>

namespace itest {

namespace {
constexpr const char* kNatsServer = "/usr/sbin/nats-server";
}  // namespace

// A free port below the kernel's ephemeral range, or -1 (then nats-server picks one). The
// kernel never hands such a port out on its own, so a NATS server killed and started again
// on it (an outage) finds it free: an ephemeral port could meanwhile be taken by any connect()
// or listen on port 0 of the tests running alongside (a ctest -j run saw an mcpfan listener
// take it).
int PortBelowEphemeralRange() {
  int low = 32768, high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
    std::fclose(f);
  }
  constexpr int kFloor = 10000;
  if (low - kFloor < 1000) return -1;
  static std::atomic<unsigned> calls{0};
  std::mt19937 rng(static_cast<unsigned>(::getpid()) * 7919u + calls++ * 104729u +
                   static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  for (int i = 0; i < 100; ++i) {
    int port = kFloor + static_cast<int>(rng() % static_cast<unsigned>(low - kFloor));
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool free = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (fd >= 0) ::close(fd);
    if (free) return port;
  }
  return -1;
}

NatsServer::NatsServer(int port, std::string cluster_routes, std::string config_file) {
  if (::access(kNatsServer, X_OK) != 0) {
    error_ = std::string(kNatsServer) + " is not installed (tools/setup.sh installs nats-server)";
    return;
  }
  if (port == -1) port = PortBelowEphemeralRange();
  std::vector<std::string> argv{kNatsServer, "-a", "127.0.0.1", "-p", std::to_string(port), "-m", "-1"};
  if (!config_file.empty()) argv.insert(argv.end(), {"-c", config_file});
  if (!cluster_routes.empty()) {
    argv.insert(argv.end(), {"--cluster_name", "itest", "-cluster", "nats://127.0.0.1:-1"});
    if (cluster_routes != "-") argv.insert(argv.end(), {"-routes", cluster_routes});
  }
  if (!proc_.Spawn(argv)) {
    error_ = proc_.error();
    return;
  }
  std::smatch m;
  static const std::regex client(R"(Listening for client connections on 127\.0\.0\.1:(\d+))");
  static const std::regex monitor(R"(Starting http monitor on 127\.0\.0\.1:(\d+))");
  static const std::regex route(R"(Listening for route connections on 127\.0\.0\.1:(\d+))");
  proc_.WaitStderrUntil(
      [&](const std::string& log) {
        if (std::regex_search(log, m, client)) port_ = std::stoi(m[1]);
        if (std::regex_search(log, m, monitor)) monitor_ = std::stoi(m[1]);
        if (std::regex_search(log, m, route)) route_ = std::stoi(m[1]);
        return port_ > 0 && monitor_ > 0 && (cluster_routes.empty() || route_ > 0);
      },
      kStart);
  if (port_ <= 0 || monitor_ <= 0) error_ = "nats-server did not log its ports:\n" + proc_.Stderr();
}

void NatsServer::Kill9() {
  proc_.Signal(SIGKILL);
  proc_.WaitExit(kIo);
}

void NatsServer::Signal(int sig) { proc_.Signal(sig); }

int NatsServer::Routes() const {
  auto r = Roundtrip(monitor_, BuildRequest("GET", "/routez", {}));
  if (!r || r->status != 200) return -1;
  return static_cast<int>(Json(r->body).GetInt({"num_routes"}).value_or(-1));
}

std::vector<std::string> NatsServer::Clients() const {
  auto r = Roundtrip(monitor_, BuildRequest("GET", "/connz", {}));
  std::vector<std::string> names;
  if (!r || r->status != 200) return names;
  Json j(r->body);
  auto conns = j.Get({"connections"});
  if (!conns) return names;
  for (auto c : conns->get_array()) {
    std::string_view n;
    if (!c["name"].get_string().get(n)) names.emplace_back(n);
  }
  return names;
}

std::vector<std::string> NatsServer::Subscriptions(std::string_view name) const {
  auto r = Roundtrip(monitor_, BuildRequest("GET", "/connz?subs=1", {}));
  if (!r || r->status != 200) return {"<no /connz>"};
  Json j(r->body);
  std::vector<std::string> subs;
  auto conns = j.Get({"connections"});
  if (!conns) return {"<no connections>"};
  for (auto c : conns->get_array()) {
    std::string_view n;
    if (c["name"].get_string().get(n) || n != name) continue;
    simdjson::dom::array list;
    if (c["subscriptions_list"].get_array().get(list)) continue;
    for (auto s : list) {
      std::string_view subject = s.get_string().value();
      if (!subject.ends_with(kHeartbeatSuffix)) subs.emplace_back(subject);
    }
  }
  return subs;
}

std::int64_t NatsServer::Subsz(std::string_view field) const {
  auto r = Roundtrip(monitor_, BuildRequest("GET", "/subsz", {}));
  if (!r || r->status != 200) return -1;
  return Json(r->body).GetInt({std::string(field)}).value_or(-1);
}

::testing::AssertionResult Eventually(const std::function<bool()>& pred, std::string_view what, Ms timeout) {
  for (auto end = After(timeout); Clock::now() < end; std::this_thread::sleep_for(Ms(10))) {
    if (pred()) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << what << " did not happen within " << timeout.count() << " ms";
}

std::vector<std::string> NodeArgs(const NatsServer& nats, std::string_view name) {
  return {"--workers", "2", "--nats", nats.url(), "--node-name", std::string(name), "--nats-linger-ms", "100",
          "--nats-settle-ms", "1000"};
}

bool HasSubject(const std::vector<std::string>& subs, std::string_view piece) {
  for (const auto& s : subs) {
    if (s.find(piece) != std::string::npos) return true;
  }
  return false;
}

::testing::AssertionResult ListenAsTenant(SseStream& s, int port, std::string_view secret, std::string_view tenant,
                                          std::string_view uri) {
  std::string body = RpcBody(R"("l")", "subscriptions/listen",
                             R"("notifications":{"resourceSubscriptions":[")" + std::string(uri) + R"("]})");
  auto h = McpHeaders(kV2026, "subscriptions/listen");
  h.push_back({"Authorization", "Bearer " + Hs256Token(secret, tenant)});
  std::string err;
  if (!s.Open(port, McpPost(body, h), kIo, &err)) return ::testing::AssertionFailure() << err;
  if (!s.NextMessage(kIo, &err)) return ::testing::AssertionFailure() << "no acknowledgement: " << err;
  return ::testing::AssertionSuccess();
}

std::optional<Json> NextNotHint(SseStream& s, int* hints, Ms timeout, std::string* err) {
  const Deadline until = After(timeout);
  for (int i = 0; i < 1000; ++i) {
    auto left = std::chrono::duration_cast<Ms>(until - Clock::now());
    if (left.count() <= 0) break;
    auto m = s.NextMessage(left, err);
    if (!m) return m;
    if (!m->Has({"params", "_meta", "mcpfan/reread"})) return m;
    if (hints) ++*hints;
  }
  if (err) *err = "only re-read hints within the wait";
  return std::nullopt;
}

}  // namespace itest
