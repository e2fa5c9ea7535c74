#pragma once
// A real nats-server (Debian's /usr/sbin/nats-server) for the backplane tests: started on a
// loopback port below the ephemeral range (free to start again on after a kill), its ports read from its log, its state
// read from its own monitoring endpoints (/connz, /routez, /subsz), stopped by PID.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "child_process.h"
#include "harness.h"

namespace itest {

// A free loopback port below the kernel's ephemeral range (so a server killed and started again
// on it finds it free), or -1.
int PortBelowEphemeralRange();

class NatsServer {
 public:
  // `port` -1 = a free one below the ephemeral range. `cluster_routes`: join a cluster ("" = none; "-" = be its first
  // server). `config_file`: a nats-server configuration (users, permissions) read first; the flags win.
  explicit NatsServer(int port = -1, std::string cluster_routes = "", std::string config_file = "");
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  std::string route_url() const { return "nats://127.0.0.1:" + std::to_string(route_); }
  void Kill9();
  // SIGSTOP / SIGCONT: a server that stops reading, then goes on.
  void Signal(int sig);
  // Routes to other servers of the cluster (from /routez); -1 if unreadable.
  int Routes() const;
  // Every client connection's name (from /connz).
  std::vector<std::string> Clients() const;
  // The subjects NATS holds for the client connection named `name` (from /connz?subs=1), but
  // the heartbeat subject every node holds (kHeartbeatSuffix): what the node's listeners need.
  static constexpr std::string_view kHeartbeatSuffix = ".v1.~hb";
  std::vector<std::string> Subscriptions(std::string_view name) const;
  // A counter of the server's subscription table (from /subsz: "num_subscriptions",
  // "num_inserts", "num_removes", ...); -1 if unreadable.
  std::int64_t Subsz(std::string_view field) const;

 private:
  ChildProcess proc_;
  int port_ = 0;
  int monitor_ = 0;
  int route_ = 0;
  std::string error_;
};

// The stream's next message that is not a re-read hint (params._meta["mcpfan/reread"]: what a node
// sends its listeners after a backplane outage); the hints skipped are added to `*hints`.
std::optional<Json> NextNotHint(SseStream& s, int* hints = nullptr, Ms timeout = kIo, std::string* err = nullptr);
// Polls (bounded) until `pred` holds.
::testing::AssertionResult Eventually(const std::function<bool()>& pred, std::string_view what, Ms timeout = kIo);
// A node's arguments: 2 workers, a 100 ms linger, a 1 s settle delay.
std::vector<std::string> NodeArgs(const NatsServer& nats, std::string_view name);
bool HasSubject(const std::vector<std::string>& subs, std::string_view piece);
// Opens a 2026 listen on `uri` as JWT tenant `tenant` (an HS256 token signed with `secret`)
// and waits for its acknowledgement.
::testing::AssertionResult ListenAsTenant(SseStream& s, int port, std::string_view secret, std::string_view tenant,
                                          std::string_view uri);

}  // namespace itest
