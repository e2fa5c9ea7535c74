#include "mcp/limits.h"

#include "server/log.h"

namespace mcpfan::detail {

std::optional<Limit> limit_of(RpcLimitHit hit) noexcept {
  switch (hit) {
    case RpcLimitHit::UriLength: return Limit::UriLength;
    case RpcLimitHit::UrisPerListen: return Limit::UrisPerListen;
    case RpcLimitHit::TaskIdLength: return Limit::TaskIdLength;
    case RpcLimitHit::TaskIdsPerListen: return Limit::TaskIdsPerListen;
    case RpcLimitHit::None: break;
  }
  return std::nullopt;
}

std::optional<Limit> limit_of(PublishLimitHit hit) noexcept {
  switch (hit) {
    case PublishLimitHit::UriLength: return Limit::UriLength;
    case PublishLimitHit::TaskIdLength: return Limit::TaskIdLength;
    case PublishLimitHit::TaskBytes: return Limit::TaskBytes;
    case PublishLimitHit::None: break;
  }
  return std::nullopt;
}

std::string_view limit_name(Limit l) {
  switch (l) {
    case Limit::HeaderBytes: return "header_bytes";
    case Limit::BodyBytes: return "body_bytes";
    case Limit::UrlLength: return "url_length";
    case Limit::UriLength: return "uri_length";
    case Limit::UrisPerListen: return "uris_per_listen";
    case Limit::LineBytes: return "line_bytes";
    case Limit::RequestsPerConnection: return "requests_per_connection";
    case Limit::RequestTimeout: return "request_timeout";
    case Limit::IdleTimeout: return "idle_timeout";
    case Limit::WriteTimeout: return "write_timeout";
    case Limit::ConnectionsPerTenant: return "connections_per_tenant";
    case Limit::StreamsPerTenant: return "streams_per_tenant";
    case Limit::SubscriptionsPerTenant: return "subscriptions_per_tenant";
    case Limit::Tenants: return "tenants";
    case Limit::PublishRate: return "publish_rate";
    case Limit::IdleSessions: return "idle_sessions";
    case Limit::IdleSessionsPerTenant: return "idle_sessions_per_tenant";
    case Limit::ListensPerConnection: return "listens_per_connection";
    case Limit::TaskIdLength: return "task_id_length";
    case Limit::TaskIdsPerListen: return "task_ids_per_listen";
    case Limit::TaskBytes: return "task_bytes";
    case Limit::H2Streams: return "h2_streams";
    case Limit::H2RapidReset: return "h2_rapid_reset";
    case Limit::H2Continuation: return "h2_continuation_flood";
    case Limit::H2SettingsFlood: return "h2_settings_flood";
    case Limit::H2PingFlood: return "h2_ping_flood";
    case Limit::H2PriorityFlood: return "h2_priority_flood";
    case Limit::H2HeaderList: return "h2_header_list";
    case Limit::H2ZeroWindow: return "h2_zero_window";
    case Limit::TlsHandshakeTimeout: return "tls_handshake_timeout";
    case Limit::kCount: break;
  }
  return "unknown";
}

namespace {

// The log's view of a limit hit: its kind (each limit rate-limited on its own) and the flag
// that sets it, so that the operator knows what to change.
struct LimitLog {
  std::string_view kind;
  std::string_view flag;
};

LimitLog limit_log(Limit l) {
  switch (l) {
    case Limit::HeaderBytes: return {"limit_header_bytes", "--max-header-bytes"};
    case Limit::BodyBytes: return {"limit_body_bytes", "--max-body"};
    case Limit::UrlLength: return {"limit_url_length", "--max-url-length"};
    case Limit::UriLength: return {"limit_uri_length", "--max-uri-length"};
    case Limit::UrisPerListen: return {"limit_uris_per_listen", "--max-uris-per-listen"};
    case Limit::LineBytes: return {"limit_line_bytes", "--max-line-bytes"};
    case Limit::RequestsPerConnection: return {"limit_requests_per_connection", "--max-requests-per-connection"};
    case Limit::RequestTimeout: return {"limit_request_timeout", "--request-timeout-ms"};
    case Limit::IdleTimeout: return {"limit_idle_timeout", "--idle-timeout-ms"};
    case Limit::WriteTimeout: return {"limit_write_timeout", "--write-timeout-ms"};
    case Limit::ConnectionsPerTenant: return {"limit_connections_per_tenant", "--max-connections-per-tenant"};
    case Limit::StreamsPerTenant: return {"limit_streams_per_tenant", "--max-streams-per-tenant"};
    case Limit::SubscriptionsPerTenant: return {"limit_subscriptions_per_tenant", "--max-subscriptions-per-tenant"};
    case Limit::Tenants: return {"limit_tenants", "--max-tenants"};
    case Limit::PublishRate: return {"limit_publish_rate", "--publish-rate"};
    case Limit::IdleSessions: return {"limit_idle_sessions", "--max-idle-sessions"};
    case Limit::IdleSessionsPerTenant: return {"limit_idle_sessions_per_tenant", "--max-idle-sessions-per-tenant"};
    case Limit::ListensPerConnection: return {"limit_listens_per_connection", "--max-listens-per-connection"};
    case Limit::TaskIdLength: return {"limit_task_id_length", "--max-task-id-length"};
    case Limit::TaskIdsPerListen: return {"limit_task_ids_per_listen", "--max-task-ids-per-listen"};
    case Limit::TaskBytes: return {"limit_task_bytes", "--max-task-bytes"};
    case Limit::H2Streams: return {"limit_h2_streams", "--h2-max-streams"};
    case Limit::H2RapidReset: return {"limit_h2_rapid_reset", "HTTP/2 reset bucket"};
    case Limit::H2Continuation: return {"limit_h2_continuation_flood", "HTTP/2 CONTINUATION bound"};
    case Limit::H2SettingsFlood: return {"limit_h2_settings_flood", "HTTP/2 SETTINGS bucket"};
    case Limit::H2PingFlood: return {"limit_h2_ping_flood", "HTTP/2 PING bucket"};
    case Limit::H2PriorityFlood: return {"limit_h2_priority_flood", "HTTP/2 PRIORITY bucket"};
    case Limit::H2HeaderList: return {"limit_h2_header_list", "--max-header-bytes"};
    case Limit::H2ZeroWindow: return {"limit_h2_zero_window", "--write-timeout-ms"};
    case Limit::TlsHandshakeTimeout: return {"limit_tls_handshake_timeout", "--tls-handshake-timeout-ms"};
    case Limit::kCount: break;
  }
  return {"limit_unknown", ""};
}

}  // namespace

std::string per_client_refusal(Limit l, std::size_t ceiling) {
  if (l == Limit::ListensPerConnection) {
    return "this connection already holds " + std::to_string(ceiling) +
           " listens (--max-listens-per-connection); cancel one first";
  }
  return "this session already subscribes to " + std::to_string(ceiling) +
         " resources (--max-uris-per-listen); unsubscribe one first";
}

Limits::Limits(TenantCeilings ceilings, std::size_t max_tenants)
    : max_tenants_(max_tenants), usage_(std::make_unique<TenantUsage[]>(max_tenants)) {
  set_ceilings(ceilings);
}

void Limits::set_ceilings(const TenantCeilings& c) noexcept {
  auto set = [&](Resource r, std::int64_t v) {
    ceilings_[static_cast<std::size_t>(r)].store(v, std::memory_order_relaxed);
  };
  set(Resource::Connections, c.connections);
  set(Resource::Streams, c.streams);
  set(Resource::Subscriptions, c.subscriptions);
  set(Resource::IdleSessions, c.idle_sessions);
}

void Limits::hit(Limit l, TenantId tenant) noexcept {
  hits_[static_cast<std::size_t>(l)].fetch_add(1, std::memory_order_relaxed);
  if (tenant.index < max_tenants_) usage_[tenant.index].limit_hits.fetch_add(1, std::memory_order_relaxed);
  // A keep-alive connection closed when idle, or after its last request, is the limit
  // working as meant, not a problem: debug. Every other hit refused or cut someone.
  const bool routine = l == Limit::IdleTimeout || l == Limit::RequestsPerConnection;
  const LogLevel level = routine ? LogLevel::Debug : LogLevel::Warn;
  if (!log::enabled(level)) return;
  const LimitLog what = limit_log(l);
  try {
    log::line(level, what.kind, "limit hit: " + std::string(limit_name(l)) + " (" + std::string(what.flag) + ")",
              {{"limit", std::string(limit_name(l))}});
  } catch (...) {  // out of memory: the line is lost, the hit is counted
    log::count_dropped();
  }
}

void Limits::reset_slot(std::uint32_t slot) noexcept {
  if (slot >= max_tenants_) return;
  for (auto& u : usage_[slot].in_use) u.store(0, std::memory_order_relaxed);
  usage_[slot].limit_hits.store(0, std::memory_order_relaxed);
}

std::uint64_t Limits::hits(Limit l) const noexcept {
  return hits_[static_cast<std::size_t>(l)].load(std::memory_order_relaxed);
}

std::int64_t Limits::ceiling(Resource r) const noexcept {
  if (r >= Resource::kCount) return 0;
  return ceilings_[static_cast<std::size_t>(r)].load(std::memory_order_relaxed);
}

Limit Limits::refusal(TenantId tenant, Resource r) const noexcept {
  if (tenant.index >= max_tenants_) return Limit::Tenants;
  static constexpr Limit kFor[] = {Limit::ConnectionsPerTenant, Limit::StreamsPerTenant, Limit::SubscriptionsPerTenant,
                                   Limit::IdleSessionsPerTenant};
  return kFor[static_cast<std::size_t>(r)];
}

std::string Limits::refusal_message(Limit l, std::string_view tenant_name) const {
  std::string who = "tenant \"" + std::string(tenant_name) + "\" has reached its limit of ";
  switch (l) {
    case Limit::ConnectionsPerTenant: return who + std::to_string(ceiling(Resource::Connections)) + " connections";
    case Limit::StreamsPerTenant: return who + std::to_string(ceiling(Resource::Streams)) + " streams";
    case Limit::SubscriptionsPerTenant:
      return who + std::to_string(ceiling(Resource::Subscriptions)) + " subscriptions";
    case Limit::Tenants: return "the server serves at most " + std::to_string(max_tenants_) + " tenants";
    case Limit::IdleSessions:
      return "the server holds its limit of sessions without an open stream; open the GET stream of one, or DELETE one";
    case Limit::IdleSessionsPerTenant:
      return who + std::to_string(ceiling(Resource::IdleSessions)) +
             " sessions without an open stream; open the GET stream of one, or DELETE one";
    default: return "limit reached: " + std::string(limit_name(l));
  }
}

bool Limits::acquire(TenantId tenant, Resource r, std::int64_t n) noexcept {
  if (tenant.index >= max_tenants_) {
    hit(Limit::Tenants);
    return false;
  }
  auto& used = usage_[tenant.index].in_use[static_cast<std::size_t>(r)];
  std::int64_t cap = ceiling(r);
  // Optimistic add, undone on overshoot: concurrent acquirers may both be refused near the
  // ceiling, but the ceiling is never passed.
  std::int64_t now = used.fetch_add(n, std::memory_order_relaxed) + n;
  if (cap > 0 && now > cap) {
    used.fetch_sub(n, std::memory_order_relaxed);
    hit(refusal(tenant, r), tenant);
    return false;
  }
  return true;
}

void Limits::add(TenantId tenant, Resource r, std::int64_t n) noexcept {
  if (tenant.index < max_tenants_)
    usage_[tenant.index].in_use[static_cast<std::size_t>(r)].fetch_add(n, std::memory_order_relaxed);
}

void Limits::release(TenantId tenant, Resource r, std::int64_t n) noexcept {
  if (tenant.index < max_tenants_)
    usage_[tenant.index].in_use[static_cast<std::size_t>(r)].fetch_sub(n, std::memory_order_relaxed);
}

}  // namespace mcpfan::detail
