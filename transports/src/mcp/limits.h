#pragma once
// The limits the server enforces, counted when hit, and the per-tenant usage that the
// per-tenant limits are checked against. Shared by every worker: atomics only, so a check
// costs a fetch_add and never a lock.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mcp/auth.h"
#include "mcpfan/publish_decoder.h"
#include "mcpfan/rpc_decoder.h"
#include "mcpfan/tenants.h"

namespace mcpfan::detail {

enum class Limit : std::uint8_t {
  HeaderBytes,
  BodyBytes,
  UrlLength,
  UriLength,
  UrisPerListen,
  LineBytes,
  RequestsPerConnection,
  RequestTimeout,
  IdleTimeout,
  WriteTimeout,
  ConnectionsPerTenant,
  StreamsPerTenant,
  SubscriptionsPerTenant,
  Tenants,
  PublishRate,
  IdleSessions,           // in all
  IdleSessionsPerTenant,
  ListensPerConnection,
  TaskIdLength,           // a task id longer than --max-task-id-length (listen or publish)
  TaskIdsPerListen,       // taskIds past --max-task-ids-per-listen
  TaskBytes,              // a published notifications/tasks past --max-task-bytes
  // HTTP/2 (http2/connection.h): a peer past one of these gets a GOAWAY naming it (a stream alone: RST_STREAM)
  H2Streams,           // streams past SETTINGS_MAX_CONCURRENT_STREAMS (--h2-max-streams), refused
  H2RapidReset,        // streams reset by the client faster than the bucket allows (CVE-2023-44487)
  H2Continuation,      // CONTINUATION frames past nghttp2's bound for one header block
  H2SettingsFlood,     // SETTINGS frames, or entries in one, past their bound
  H2PingFlood,         // PING frames (or acks owed) past their bound
  H2PriorityFlood,     // PRIORITY frames past their bound
  H2HeaderList,        // a header list past --max-header-bytes once decoded (HPACK bomb), or one HPACK cannot decode
  H2ZeroWindow,        // a stream whose flow-control window stayed shut past --write-timeout-ms with bytes waiting
  TlsHandshakeTimeout, // a TLS handshake not done within --tls-handshake-timeout-ms
  kCount
};
/** The limit a decoder's refusal hit (RpcLimitHit, PublishLimitHit), to count it; nullopt for none. */
[[nodiscard]] std::optional<Limit> limit_of(RpcLimitHit hit) noexcept;
[[nodiscard]] std::optional<Limit> limit_of(PublishLimitHit hit) noexcept;
/** snake_case: the `limit` label of mcpfan_limit_hits_total. */
[[nodiscard]] std::string_view limit_name(Limit l);
/**
 * What a client is told when one of its own tables is full (Limit::UrisPerListen for a 2025
 * session's URIs, Limit::ListensPerConnection), on every transport: the ceiling and its flag.
 */
[[nodiscard]] std::string per_client_refusal(Limit l, std::size_t ceiling);

/** A per-tenant resource with a configurable ceiling. */
enum class Resource : std::uint8_t { Connections, Streams, Subscriptions, IdleSessions, kCount };

struct TenantUsage {
  std::array<std::atomic<std::int64_t>, static_cast<std::size_t>(Resource::kCount)> in_use{};
  std::atomic<std::uint64_t> limit_hits{0};
};

struct TenantCeilings {
  std::int64_t connections = 0;  // 0 = unlimited
  std::int64_t streams = 0;
  std::int64_t subscriptions = 0;
  std::int64_t idle_sessions = 0;
};

class Limits {
 public:
  /**
   * `max_tenants`: the size of the usage table, indexed by a tenant's slot (the tenant table
   * has the same bound). A slot given to a new tenant is zeroed by reset_slot().
   */
  Limits(TenantCeilings ceilings, std::size_t max_tenants);

  void hit(Limit l, TenantId tenant = kNoTenant) noexcept;
  [[nodiscard]] std::uint64_t hits(Limit l) const noexcept;

  /**
   * Takes `n` units of `r` for `tenant`; false when that would pass the tenant's ceiling
   * (the hit is counted, nothing is taken). A tenant past the table is refused too.
   */
  [[nodiscard]] bool acquire(TenantId tenant, Resource r, std::int64_t n = 1) noexcept;
  /** Forgets what a slot's previous tenant left (its limit hits). Called by the tenant table, under its lock. */
  void reset_slot(std::uint32_t slot) noexcept;
  /** The limit that refuses `r` for `tenant` (after acquire() returned false). */
  [[nodiscard]] Limit refusal(TenantId tenant, Resource r) const noexcept;
  /** What a refused client is told, on every transport: the tenant and the ceiling it hit. */
  [[nodiscard]] std::string refusal_message(Limit l, std::string_view tenant_name) const;
  void release(TenantId tenant, Resource r, std::int64_t n = 1) noexcept;
  /** Takes `n` units with no ceiling check (a session whose stream closed is idle again). */
  void add(TenantId tenant, Resource r, std::int64_t n = 1) noexcept;

  [[nodiscard]] const TenantUsage* usage(TenantId tenant) const noexcept {
    return tenant.index < max_tenants_ ? &usage_[tenant.index] : nullptr;
  }
  [[nodiscard]] std::int64_t ceiling(Resource r) const noexcept;
  /**
   * New per-tenant ceilings (a reload, SIGHUP), effective for the next acquire on any thread.
   * What is held already stays held: a tenant above a lowered ceiling keeps its connections
   * and streams and is refused more until its usage falls below the new ceiling.
   */
  void set_ceilings(const TenantCeilings& c) noexcept;

  static constexpr TenantId kNoTenant{};

 private:
  // Indexed by Resource; atomics because a reload may change them while workers check.
  std::array<std::atomic<std::int64_t>, static_cast<std::size_t>(Resource::kCount)> ceilings_{};
  std::size_t max_tenants_;
  std::unique_ptr<TenantUsage[]> usage_;
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Limit::kCount)> hits_{};
};

}  // namespace mcpfan::detail

namespace mcpfan::detail {

/** Refused credentials, by reason: mcpfan_auth_failures_total{scope, reason}. */
struct AuthCounters {
  static constexpr std::size_t kClientReasons = kAuthFailureCount;
  std::array<std::atomic<std::uint64_t>, kClientReasons> client{};
  std::atomic<std::uint64_t> client_forbidden_uri{0};     // a `uris` claim that does not cover the URI
  std::atomic<std::uint64_t> client_wrong_tenant{0};      // a session used with another tenant's token
  std::atomic<std::uint64_t> publisher_missing{0};        // no or malformed Authorization
  std::atomic<std::uint64_t> publisher_unknown_key{0};
  std::atomic<std::uint64_t> publisher_forbidden_tenant{0};
  // The host's authenticator threw (also in client[HostError]): summed into
  // mcpfan_callback_exceptions_total, which otherwise counts per worker, because the client
  // core that calls it belongs to no worker.
  std::atomic<std::uint64_t> host_exceptions{0};
};

}  // namespace mcpfan::detail
