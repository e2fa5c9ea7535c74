#include "mcpfan/transport/server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "server/config_check.h"
#include "server/listen_socket.h"
#include "server/preflight.h"
#include "server/server_impl.h"

namespace mcpfan {

using detail::Worker;

namespace {

// A stream socket at `path`; a stale socket file from an earlier run is replaced.
std::uint16_t port_of(const sockaddr_storage& a) {
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(a).sin6_port
                                       : reinterpret_cast<const sockaddr_in&>(a).sin_port);
}

}  // namespace

namespace detail {
namespace {
std::size_t clamped_tenants(const ServerConfig& c) noexcept {
  return std::clamp<std::size_t>(c.tenants.max_tenants, 1, kMaxTenants);
}

// The hub is built before the client core that refers to its tenant table.
TenantTable& make_hub(ServerConfig& config, std::unique_ptr<Hub>& hub) {
  if (config.workers == 0) config.workers = std::max(1u, std::thread::hardware_concurrency());
  // start() refuses sizes out of range (check_config); constructing must not allocate for them first.
  ShardOptions shard = config.shard;
  shard.drain_batch = std::clamp<std::size_t>(shard.drain_batch, 1, kMaxDrainBatch);
  hub = std::make_unique<Hub>(std::min(config.workers, kMaxWorkers), shard, clamped_tenants(config));
  return hub->tenants();
}
}  // namespace

std::string default_resource(const ServerConfig& c, std::uint16_t port) {
  std::string host = c.listen.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return (c.tls.cert_file.empty() ? "http://" : "https://") + host + ":" + std::to_string(port) + "/mcp";
}

TenantCeilings tenant_ceilings(const ServerConfig& c) noexcept {
  return TenantCeilings{c.tenants.max_connections_per_tenant, c.tenants.max_streams_per_tenant,
                        c.tenants.max_subscriptions_per_tenant, c.tenants.max_idle_sessions_per_tenant};
}

ServerState::ServerState(ServerConfig cfg)
    : config(std::move(cfg)),
      logger(config.log.sink, config.log.level, config.log.format),
      limits(tenant_ceilings(config), clamped_tenants(config)),
      sessions(limits, config.tenants.max_idle_sessions, config.mcp.max_uris_per_listen,
               config.mcp.session_replay_bytes),
      publishers(auth_counters),
      clients(make_hub(config, hub), limits, client_auth, config.auth.authenticate_client, auth_counters,
              config.mcp.max_uris_per_listen, config.mcp.max_listens_per_connection) {
  hub->tenants().set_on_new_slot([this](std::uint32_t slot) { limits.reset_slot(slot); });
  hub->set_debounce(std::chrono::milliseconds(config.debounce_ms));
  hub->task_states().set_limits(config.task_state_limits());
  clients.set_task_states(&hub->task_states());
  task_owners.set_max(config.upstream.task_poll_max_tasks);
  if (config.upstream.task_poll) clients.set_task_owners(&task_owners);
  install_transports(*this);
}
}  // namespace detail

namespace {
// Distinguishes the Servers of one process, so that a StdioClient handle given to the wrong
// one is refused instead of naming an unrelated client there.
std::atomic<std::uint64_t> g_server_serial{0};
}  // namespace

Server::Server(ServerConfig config)
    : impl_(std::make_unique<Impl>(std::move(config), g_server_serial.fetch_add(1, std::memory_order_relaxed) + 1)) {}

Server::~Server() { (void)stop(); }

Hub& Server::hub() noexcept { return *impl_->hub; }
std::uint16_t Server::publish_port() const noexcept { return impl_->publish_port; }
const ServerConfig& Server::config() const noexcept { return impl_->config; }

Result<std::string> Server::check(const ServerConfig& config) {
  auto pre = detail::preflight(config);
  if (!pre) return pre.error();
  auto loaded = detail::load_reloadable(config, static_cast<bool>(config.auth.authenticate_client));
  if (!loaded) return loaded.error();
  // The OAuth settings (URLs, files, the tenant rule); nothing is fetched.
  // (An ephemeral port is only known once bound: any port stands for it here.)
  std::uint16_t port = config.listen.port == 0 ? 1 : config.listen.port;
  if (auto agent = detail::oauth::Agent::make(config, detail::default_resource(config, port)); !agent)
    return agent.error();
  return std::move(loaded.value().summary);
}

Result<std::uint16_t> Server::start() {
  Impl& m = *impl_;
  detail::log::Bind logging(&m.state.logger);  // what start() logs (a first NATS connect) is this Server's
  if (m.started) return Error{rpc_code::kInternalError, "server already started"};
  // Everything Server::check() checks, before anything is bound, started or connected.
  auto pre = detail::preflight(m.config);
  if (!pre) return pre.error();
  sockaddr_storage addr = pre.value().addr;
  sockaddr_storage publish_addr = pre.value().publish_addr;
  if (auto loaded = m.install_reloadable(m.config, /*starting=*/true); !loaded) return loaded.error();
  m.state.upstream = std::move(pre.value().upstream);
  m.state.tls = std::move(pre.value().tls);
  m.state.publish_tls = std::move(pre.value().publish_tls);
  auto backplane = detail::start_backplane(m.config, *m.hub, m.state.logger);
  if (!backplane) return backplane.error();
  m.state.backplane = std::move(backplane.value());
  if (m.state.backplane) {
    // Ingress: what this node accepts goes out after its local fan-out (and the debouncer).
    // stop() closes the hub, which flushes the debouncer, before it destroys the backplane.
    m.hub->set_forwarder([bp = m.state.backplane.get()](std::vector<Notification>& n) { bp->forward(n); });
  }
  // Before any worker runs: a publish wakes only the loops holding a subscription it may match,
  // and every key a shard ever holds is also reported to the backplane's interest.
  m.hub->route_by_interest(m.state.backplane.get());
  std::vector<int> fds;
  // The host's own listening socket (checked by preflight): each worker serves a duplicate.
  if (m.config.listen.listen_fd >= 0) {
    for (unsigned i = 0; i < m.config.workers; ++i) {
      int fd = ::fcntl(m.config.listen.listen_fd, F_DUPFD_CLOEXEC, 0);
      if (fd < 0) {
        for (int f : fds) ::close(f);
        return Error{rpc_code::kInternalError,
                     std::string("cannot duplicate ServerConfig::listen.listen_fd: ") + std::strerror(errno)};
      }
      fds.push_back(fd);
    }
  } else if (auto bound = detail::bind_listener(addr, m.config.workers, m.config.listen.reuse_port, "--listen", fds);
             !bound) {
    return bound.error();  // one socket per worker; another process's port is refused (listen_socket.h)
  }
  // The operator listener: every worker accepts on it too (its own SO_REUSEPORT socket), so
  // publishes are parsed on whichever loop the kernel picks, as on the public listener.
  std::vector<int> publish_fds;
  if (!m.config.listen.publish_host.empty()) {
    // Not the public listener's port, even with reuse_port: the two would be one group and
    // the operator paths would answer on the public address.
    if (detail::addresses_overlap(publish_addr, addr)) {
      for (int f : fds) ::close(f);
      return Error{rpc_code::kInvalidParams,
                   "--publish-listen " + detail::address_text(publish_addr) +
                       ": the address of --listen (the operator paths need a listener of their own)"};
    }
    if (auto bound = detail::bind_listener(publish_addr, m.config.workers, m.config.listen.reuse_port,
                                           "--publish-listen", publish_fds);
        !bound) {
      for (int f : fds) ::close(f);
      return bound.error();
    }
    m.publish_port = port_of(publish_addr);
  }
  int unix_fd = -1;
  if (!m.config.listen.unix_path.empty()) {
    std::string err;
    unix_fd = detail::bind_unix_listener(m.config.listen.unix_path, err);
    if (unix_fd < 0) {
      for (int f : fds) ::close(f);
      for (int f : publish_fds) ::close(f);
      return Error{rpc_code::kInternalError, "cannot listen on Unix socket " + m.config.listen.unix_path + ": " + err};
    }
  }
  // The OAuth agent (--oauth-issuer), once the port is known (the default resource names it).
  auto agent = detail::oauth::Agent::make(m.config, detail::default_resource(m.config, port_of(addr)));
  if (!agent) {
    for (int f : fds) ::close(f);
    for (int f : publish_fds) ::close(f);
    if (unix_fd >= 0) ::close(unix_fd);
    return agent.error();
  }
  m.state.oauth = std::move(agent.value());
  if (m.state.oauth) {
    m.state.clients.set_oauth(m.state.oauth.get());
    m.state.oauth->start(&m.state.logger);
  }
  auto snapshot = [impl = impl_.get()] { return impl->snapshot(); };
  for (unsigned i = 0; i < m.config.workers; ++i) {
    m.workers.push_back(std::make_unique<Worker>(i, m.state, snapshot));
  }
  std::vector<Worker*> peers;
  for (auto& w : m.workers) peers.push_back(w.get());
  for (auto& w : m.workers) w->set_peers(peers);
  if (unix_fd >= 0) m.workers[0]->set_unix_listener(unix_fd);
  for (unsigned i = 0; i < m.config.workers; ++i)
    m.workers[i]->start(fds[i], publish_fds.empty() ? -1 : publish_fds[i]);
  m.started.store(true, std::memory_order_release);
  return port_of(addr);
}

Status Server::stop() {
  Impl& m = *impl_;
  detail::log::Bind logging(&m.state.logger);  // never the process's stderr: after stop() records are dropped
  for (auto& w : m.workers) {
    if (w->on_own_thread()) {
      return Error{rpc_code::kInternalError,
                   "Server::stop() called on a worker thread (from a callback); call it from the controlling thread"};
    }
  }
  if (!m.started || m.stopped) return {};
  m.stopped = true;
  m.draining.store(true, std::memory_order_relaxed);  // a request answered during the grace period sees it
  // Publishing ends first: what is accepted from here on would reach no stream. Held
  // debounced updates go out now, while the workers can still deliver them.
  m.hub->close();
  for (auto& w : m.workers) (void)w->post(detail::ControlMsg(detail::ControlMsg::Type::Stop));
  for (auto& w : m.workers) w->join();
  // After the loops: what it still calls back posts to closed loops (refused, dropped); before
  // the workers are destroyed, whose contexts those posts name.
  if (m.state.oauth) m.state.oauth->stop();
  // After the workers: no route forwards through it; and shards destroyed later with streams
  // still open must not report to it.
  m.hub->detach_key_listener();
  std::unique_ptr<detail::Backplane> backplane;
  {
    std::lock_guard lock(m.backplane_mutex);  // a host's collect_metrics() may be reading its stats
    backplane = std::move(m.state.backplane);
  }
  backplane.reset();
  m.state.logger.stop();  // after every thread that logs: what they queued reaches the sink, then the sink is done
  if (!m.config.listen.unix_path.empty()) ::unlink(m.config.listen.unix_path.c_str());
  return {};
}

void Server::drain() noexcept { impl_->draining.store(true, std::memory_order_relaxed); }

Result<StdioClient> Server::attach_stdio(int in_fd, int out_fd, StdioOptions options) {
  Impl& m = *impl_;
  if (!m.started.load(std::memory_order_acquire))
    return Error{rpc_code::kInternalError, "attach_stdio() before start(): no worker loop runs yet"};
  std::uint64_t number = m.next_worker.fetch_add(1, std::memory_order_relaxed) + 1;
  StdioClient client(m.serial, number);
  detail::ControlMsg msg(detail::ControlMsg::Type::Adopt, in_fd, out_fd);
  msg.client = number;
  if (options.on_end) msg.on_end = [f = std::move(options.on_end), client](StdioEnd why) { f(client, why); };
  if (!m.workers[(number - 1) % m.workers.size()]->post(std::move(msg))) {
    return Error{rpc_code::kInternalError, "attach_stdio(): the server is stopping"};
  }
  return client;
}

Status Server::detach_stdio(StdioClient client) {
  Impl& m = *impl_;
  if (!client)
    return Error{rpc_code::kInvalidParams, "detach_stdio(): the handle names no client (default-constructed)"};
  if (client.server_ != m.serial) {
    return Error{rpc_code::kInvalidParams,
                 "detach_stdio(): client " + std::to_string(client.number_) + " was attached to another Server"};
  }
  if (!m.started.load(std::memory_order_acquire))
    return Error{rpc_code::kInternalError, "detach_stdio() before start()"};
  detail::ControlMsg msg(detail::ControlMsg::Type::Detach);
  msg.client = client.number_;
  if (!m.workers[(client.number_ - 1) % m.workers.size()]->post(std::move(msg))) {
    return Error{rpc_code::kInternalError, "detach_stdio(): the server has stopped (every client has ended)"};
  }
  return {};
}

}  // namespace mcpfan
