#pragma once
// Server's private state (the pimpl of mcpfan::Server), shared by server.cc (start, stop,
// attach) and stats_snapshot.cc (the numbers of /metrics and /status.json). Owned by Server; workers run on it.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mcpfan/transport/server.h"
#include "server/server_state.h"
#include "server/stats_snapshot.h"
#include "server/worker.h"

namespace mcpfan {

struct Server::Impl {
  explicit Impl(ServerConfig cfg, std::uint64_t server_serial)
      : state(std::move(cfg)), config(state.config), hub(state.hub), sessions(state.sessions), serial(server_serial) {}
  detail::ServerState state;
  ServerConfig& config;
  std::unique_ptr<Hub>& hub;
  detail::SessionRegistry& sessions;
  std::vector<std::unique_ptr<detail::Worker>> workers;
  std::atomic<bool> started{false};  // read by attach_stdio() on any thread
  std::atomic<bool> draining{false};  // drain() or stop() began: GET /readyz answers 503 (routes_health.cc)
  bool stopped = false;
  std::atomic<std::uint64_t> next_worker{0};  // attach_stdio's: client n (from 1) is on worker (n - 1) % W
  const std::uint64_t serial;                 // this Server among the process's: StdioClient handles name it
  std::uint16_t publish_port = 0;  // the operator listener's, once bound
  // snapshot() on a host's thread (collect_metrics) may run while stop() destroys the backplane.
  std::mutex backplane_mutex;

  /** Loads what reload() may change and installs it (start() and reload(); reload.cc). */
  [[nodiscard]] Result<std::string> install_reloadable(const ServerConfig& next, bool starting);
  /** Reloads the listeners' certificates and keys (reload.cc): what is in force, or why not (the old stay). */
  [[nodiscard]] Result<std::string> reload_tls(const ServerConfig& next);

  /** The numbers of /metrics, /status.json and collect_metrics() (stats_snapshot.cc). Any thread, after start(). */
  detail::StatsSnapshot snapshot();
};

}  // namespace mcpfan
