#include "mcpfan/transport/server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include <cstring>
#include <functional>
#include <thread>

#include "server/log.h"
#include "server/server_state.h"
#include "mcp/sessions.h"
#include "server/worker.h"

namespace mcpfan {

using detail::Worker;

struct Server::Impl {
  explicit Impl(ServerConfig cfg) : state(std::move(cfg)), config(state.config), hub(state.hub), sessions(state.sessions) {}
  detail::ServerState state;
  ServerConfig& config;
  std::unique_ptr<Hub>& hub;
  detail::SessionRegistry& sessions;
  std::vector<std::unique_ptr<Worker>> workers;
  std::atomic<bool> started{false};  // read by attach_stdio() on any thread
  bool stopped = false;
  std::atomic<unsigned> next_worker{0};

  std::string metrics_text();
  void auth_metrics(std::string& out);
  void tenant_metrics(std::string& out);
};

namespace {

// One listening socket per worker on the same address (SO_REUSEPORT): the kernel spreads
// connections across workers with no hand-off between threads.
int bind_reuseport(const sockaddr_storage& addr, std::string& err) {
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = std::strerror(errno);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  socklen_t len = addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  // listen() here, not in the worker thread: once start() returns (and the port is
  // announced) connections must queue, not be refused.
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    err = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

// A stream socket at `path`; a stale socket file from an earlier run is replaced.
int bind_unix(const std::string& path, std::string& err) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    err = "path longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes";
    return -1;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      err = "exists and is not a socket";
      return -1;
    }
    ::unlink(path.c_str());
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    err = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

std::uint16_t port_of(const sockaddr_storage& a) {
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(a).sin6_port
                                       : reinterpret_cast<const sockaddr_in&>(a).sin_port);
}

void set_port(sockaddr_storage& a, std::uint16_t port) {
  if (a.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(a).sin6_port = htons(port);
  else reinterpret_cast<sockaddr_in&>(a).sin_port = htons(port);
}

void metric_header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void metric(std::string& out, const char* name, const char* type, const char* help, long long value) {
  metric_header(out, name, type, help);
  out += name;
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

}  // namespace

std::string Server::Impl::metrics_text() {
  long long conns = 0, requests = 0, errors = 0;
  long long streams = 0, subs = 0, deliveries = 0, coalesced = 0, slow = 0, writes = 0, exceptions = 0, pauses = 0;
  for (const auto& w : workers) {
    pauses += static_cast<long long>(w->stats().read_pauses.load(std::memory_order_relaxed));
    exceptions += static_cast<long long>(w->stats().callback_exceptions.load(std::memory_order_relaxed));
    conns += w->stats().connections.load(std::memory_order_relaxed);
    requests += static_cast<long long>(w->stats().http_requests.load(std::memory_order_relaxed));
    errors += static_cast<long long>(w->stats().http_errors.load(std::memory_order_relaxed));
  }
  for (std::size_t i = 0; i < hub->shard_count(); ++i) {
    const ShardStats& s = hub->shard(i).stats();
    streams += s.streams.load(std::memory_order_relaxed);
    subs += s.subscriptions.load(std::memory_order_relaxed);
    deliveries += static_cast<long long>(s.deliveries.load(std::memory_order_relaxed));
    coalesced += static_cast<long long>(s.coalesced.load(std::memory_order_relaxed));
    slow += static_cast<long long>(s.slow_closes.load(std::memory_order_relaxed));
    writes += static_cast<long long>(s.writes.load(std::memory_order_relaxed));
    exceptions += static_cast<long long>(s.exceptions.load(std::memory_order_relaxed));
  }
  std::string out;
  metric(out, "mcpfan_connections_open", "gauge", "Open TCP connections.", conns);
  metric(out, "mcpfan_listen_streams_open", "gauge", "Open subscriptions/listen streams.", streams);
  metric(out, "mcpfan_subscriptions_active", "gauge", "Active listen subscriptions.", subs);
  metric(out, "mcpfan_published_total", "counter", "Notifications accepted for publishing.",
         static_cast<long long>(hub->published()));
  metric(out, "mcpfan_published_no_audience_total", "counter",
         "Notifications accepted for a tenant with no clients: nothing to deliver, not fanned out.",
         static_cast<long long>(hub->no_audience()));
  metric(out, "mcpfan_deliveries_total", "counter", "Notifications queued to streams.", deliveries);
  metric(out, "mcpfan_coalesced_total", "counter", "Unwritten notifications replaced by a newer one for the same (method, uri).", coalesced);
  metric(out, "mcpfan_slow_consumer_closes_total", "counter", "Streams closed for exceeding the pending-bytes bound.", slow);
  metric(out, "mcpfan_stream_writes_total", "counter", "Batched writes handed to streams.", writes);
  metric(out, "mcpfan_http_requests_total", "counter", "HTTP requests parsed.", requests);
  metric(out, "mcpfan_http_errors_total", "counter", "HTTP answers with a 4xx/5xx status.", errors);
  metric(out, "mcpfan_sessions_active", "gauge", "2025-era MCP sessions (initialize .. DELETE or expiry).",
         static_cast<long long>(sessions.size()));
  metric(out, "mcpfan_sessions_idle", "gauge", "2025-era sessions without an open GET stream (bounded by --max-idle-sessions).",
         static_cast<long long>(sessions.idle()));
  const Debouncer* d = hub->debouncer();
  metric(out, "mcpfan_debounce_suppressed_total", "counter",
         "Updates replaced by a newer one for the same (tenant, method, uri) within --debounce-ms.",
         d ? static_cast<long long>(d->suppressed()) : 0);
  metric(out, "mcpfan_debounce_trailing_total", "counter", "Held updates fanned out when their interval passed.",
         d ? static_cast<long long>(d->trailing()) : 0);
  metric(out, "mcpfan_workers", "gauge", "Worker loops.", static_cast<long long>(workers.size()));
  metric(out, "mcpfan_log_lines_dropped_total", "counter",
         "Log lines not written: the log queue was full (stderr not drained) or the kind was over its rate.",
         static_cast<long long>(detail::log::dropped() + detail::log::suppressed()));
  metric(out, "mcpfan_read_pauses_total", "counter",
         "Times a client's connection stopped being read until its unread answers drained.", pauses);
  metric(out, "mcpfan_callback_exceptions_total", "counter",
         "Exceptions caught at a loop callback boundary (the affected connection was closed; the server went on).",
         exceptions);
  metric_header(out, "mcpfan_limit_hits_total", "counter",
                "Requests, connections and streams refused or closed by a configured limit.");
  for (std::size_t i = 0; i < static_cast<std::size_t>(detail::Limit::kCount); ++i) {
    auto l = static_cast<detail::Limit>(i);
    out += "mcpfan_limit_hits_total{limit=\"";
    out += detail::limit_name(l);
    out += "\"} ";
    out += std::to_string(state.limits.hits(l));
    out += '\n';
  }
  auth_metrics(out);
  tenant_metrics(out);
  return out;
}

namespace detail {
namespace {
// The hub is built before the client core that refers to its tenant table.
TenantTable& make_hub(ServerConfig& config, std::unique_ptr<Hub>& hub) {
  if (config.workers == 0) config.workers = std::max(1u, std::thread::hardware_concurrency());
  hub = std::make_unique<Hub>(config.workers, config.shard, std::max<std::size_t>(config.max_tenants, 1));
  return hub->tenants();
}
}  // namespace

ServerState::ServerState(ServerConfig cfg)
    : config(std::move(cfg)),
      limits(TenantCeilings{config.max_connections_per_tenant, config.max_streams_per_tenant,
                            config.max_subscriptions_per_tenant, config.max_idle_sessions_per_tenant},
             std::max<std::size_t>(config.max_tenants, 1)),
      sessions(limits, config.max_idle_sessions, config.max_uris_per_listen),
      publishers(auth_counters),
      clients(make_hub(config, hub), limits, client_auth, auth_counters, config.max_uris_per_listen,
              config.max_listens_per_connection) {
  hub->tenants().set_on_new_slot([this](std::uint32_t slot) { limits.reset_slot(slot); });
  hub->set_debounce(std::chrono::milliseconds(config.debounce_ms));
}
}  // namespace detail

void Server::Impl::auth_metrics(std::string& out) {
  const detail::AuthCounters& a = state.auth_counters;
  metric_header(out, "mcpfan_auth_failures_total", "counter", "Refused credentials, by who presented them and why.");
  auto line = [&out](std::string_view scope, std::string_view reason, std::uint64_t v) {
    out += "mcpfan_auth_failures_total{scope=\"";
    out += scope;
    out += "\",reason=\"";
    out += reason;
    out += "\"} ";
    out += std::to_string(v);
    out += '\n';
  };
  for (std::size_t i = 0; i < detail::AuthCounters::kClientReasons; ++i) {
    line("client", detail::auth_failure_name(static_cast<detail::AuthFailure>(i)), a.client[i].load(std::memory_order_relaxed));
  }
  line("client", "forbidden_uri", a.client_forbidden_uri.load(std::memory_order_relaxed));
  line("client", "wrong_tenant", a.client_wrong_tenant.load(std::memory_order_relaxed));
  line("publisher", "missing", a.publisher_missing.load(std::memory_order_relaxed));
  line("publisher", "unknown_key", a.publisher_unknown_key.load(std::memory_order_relaxed));
  line("publisher", "forbidden_tenant", a.publisher_forbidden_tenant.load(std::memory_order_relaxed));
}

// Per-tenant gauges. Tenant names come from client tokens, so the label set is capped: the
// first --metrics-tenants live tenants by slot are named, the rest summed as "_other".
void Server::Impl::tenant_metrics(std::string& out) {
  const detail::Limits& limits = state.limits;
  struct Row {
    std::string name;
    const detail::TenantUsage* usage;
  };
  std::vector<Row> rows;
  hub->tenants().for_each([&](TenantId id, const std::string& name) {
    if (const detail::TenantUsage* u = limits.usage(id)) rows.push_back(Row{name, u});
  });
  std::size_t named = std::min(rows.size(), config.metrics_tenants);
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    std::function<long long(const detail::TenantUsage&)> value;
  };
  auto in_use = [](detail::Resource r) {
    return [r](const detail::TenantUsage& u) { return static_cast<long long>(u.in_use[static_cast<std::size_t>(r)].load(std::memory_order_relaxed)); };
  };
  const Family families[] = {
      {"mcpfan_tenant_connections", "gauge", "Connections bound to the tenant.", in_use(detail::Resource::Connections)},
      {"mcpfan_tenant_streams", "gauge", "Listens and 2025-era sessions of the tenant.", in_use(detail::Resource::Streams)},
      {"mcpfan_tenant_subscriptions", "gauge", "Resource URIs the tenant's clients subscribe to.", in_use(detail::Resource::Subscriptions)},
      {"mcpfan_tenant_limit_hits_total", "counter", "Limits hit by the tenant's clients and publishers since it last had no clients.",
       [](const detail::TenantUsage& u) { return static_cast<long long>(u.limit_hits.load(std::memory_order_relaxed)); }},
  };
  for (const Family& f : families) {
    metric_header(out, f.name, f.type, f.help);
    long long other = 0;
    for (std::size_t t = 0; t < rows.size(); ++t) {
      long long v = f.value(*rows[t].usage);
      if (t >= named) {
        other += v;
        continue;
      }
      out += f.name;
      out += "{tenant=\"";
      for (char ch : rows[t].name) {  // token tenants are [A-Za-z0-9._-]; escape anyway
        if (ch == '\\' || ch == '"') out += '\\';
        if (ch == '\n') out += "\\n";
        else out += ch;
      }
      out += "\"} ";
      out += std::to_string(v);
      out += '\n';
    }
    if (rows.size() > named) {
      out += f.name;
      out += "{tenant=\"_other\"} ";
      out += std::to_string(other);
      out += '\n';
    }
  }
  metric(out, "mcpfan_tenants", "gauge", "Tenants with clients (the default tenant included).", static_cast<long long>(rows.size()));
}

Server::Server(ServerConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

Server::~Server() { (void)stop(); }

Hub& Server::hub() noexcept { return *impl_->hub; }
const ServerConfig& Server::config() const noexcept { return impl_->config; }

Result<std::uint16_t> Server::start() {
  Impl& m = *impl_;
  if (m.started) return Error{rpc_code::kInternalError, "server already started"};
  sockaddr_storage addr{};
  const std::string& host = m.config.host;
  if (uv_ip4_addr(host.c_str(), m.config.port, reinterpret_cast<sockaddr_in*>(&addr)) != 0 &&
      uv_ip6_addr(host.c_str(), m.config.port, reinterpret_cast<sockaddr_in6*>(&addr)) != 0) {
    return Error{rpc_code::kInvalidParams, "cannot parse listen address " + host + " (use an IPv4 or IPv6 literal)"};
  }
  if (auto auth = detail::ClientAuth::load(m.config.jwt_secret_file, m.config.jwt_public_key_file); auth) {
    m.state.client_auth = std::move(auth.value());
  } else {
    return auth.error();
  }
  if (!m.config.publish_keys_file.empty()) {
    auto keys = detail::PublisherKeys::load(m.config.publish_keys_file);
    if (!keys) return keys.error();
    m.state.publishers.keys = std::move(keys.value());
  }
  m.state.publishers.rate.configure(m.config.publish_rate, m.config.publish_burst, m.state.publishers.keys.size());
  std::vector<int> fds;
  for (unsigned i = 0; i < m.config.workers; ++i) {
    std::string err;
    int fd = bind_reuseport(addr, err);
    if (fd < 0) {
      for (int f : fds) ::close(f);
      return Error{rpc_code::kInternalError, "cannot bind " + host + ":" + std::to_string(port_of(addr)) + ": " + err};
    }
    if (i == 0) {  // an ephemeral port is chosen by the first bind; the rest share it
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      set_port(addr, port_of(bound));
    }
    fds.push_back(fd);
  }
  int unix_fd = -1;
  if (!m.config.unix_path.empty()) {
    std::string err;
    unix_fd = bind_unix(m.config.unix_path, err);
    if (unix_fd < 0) {
      for (int f : fds) ::close(f);
      return Error{rpc_code::kInternalError, "cannot listen on Unix socket " + m.config.unix_path + ": " + err};
    }
  }
  auto metrics = [impl = impl_.get()] { return impl->metrics_text(); };
  for (unsigned i = 0; i < m.config.workers; ++i) {
    m.workers.push_back(std::make_unique<Worker>(i, m.state, metrics));
  }
  std::vector<Worker*> peers;
  for (auto& w : m.workers) peers.push_back(w.get());
  for (auto& w : m.workers) w->set_peers(peers);
  if (unix_fd >= 0) m.workers[0]->set_unix_listener(unix_fd);
  for (unsigned i = 0; i < m.config.workers; ++i) m.workers[i]->start(fds[i]);
  m.started.store(true, std::memory_order_release);
  return port_of(addr);
}

Status Server::stop() {
  Impl& m = *impl_;
  for (auto& w : m.workers) {
    if (w->on_own_thread()) {
      return Error{rpc_code::kInternalError, "Server::stop() called on a worker thread (from a callback); call it from the controlling thread"};
    }
  }
  if (!m.started || m.stopped) return {};
  m.stopped = true;
  // Publishing ends first: what is accepted from here on would reach no stream. Held
  // debounced updates go out now, while the workers can still deliver them.
  m.hub->close();
  for (auto& w : m.workers) (void)w->post(detail::ControlMsg{detail::ControlMsg::Type::Stop});
  for (auto& w : m.workers) w->join();
  if (!m.config.unix_path.empty()) ::unlink(m.config.unix_path.c_str());
  return {};
}

Status Server::attach_stdio(int in_fd, int out_fd, bool exit_on_eof) {
  Impl& m = *impl_;
  if (!m.started.load(std::memory_order_acquire)) return Error{rpc_code::kInternalError, "attach_stdio() before start(): no worker loop runs yet"};
  unsigned i = m.next_worker.fetch_add(1, std::memory_order_relaxed) % static_cast<unsigned>(m.workers.size());
  if (!m.workers[i]->post(detail::ControlMsg{detail::ControlMsg::Type::Adopt, in_fd, out_fd, exit_on_eof})) {
    return Error{rpc_code::kInternalError, "attach_stdio(): the server is stopping"};
  }
  return {};
}

}  // namespace mcpfan
