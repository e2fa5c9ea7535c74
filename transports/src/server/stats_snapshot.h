#pragma once
// The server's numbers at one instant: the values of the counter rows (server/counters.h: every
// worker's and shard's counters summed, ...), the limits, the auth counters, the per-tenant rows
// (bounded by --metrics-tenants) and the backplane. Collected in one place (stats_snapshot.cc)
// and rendered from the same rows twice: walked as metric families (metrics.cc: GET /metrics and
// a host's Server::collect_metrics) and as JSON for GET /status.json (status/status_json.cc), so
// they cannot disagree.
// A plain value: made on any thread, owned by whoever asked.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/auth.h"
#include "mcp/limits.h"
#include "backplane/backplane.h"
#include "server/process_stats.h"

namespace mcpfan::detail {

/** How many rows server/counters.h declares. */
[[nodiscard]] std::size_t counter_row_count() noexcept;

struct StatsSnapshot {
  /**
   * The values of the rows gathered from the live server (server/counters.h: counter_rows(),
   * with a gather source), by row index; the other rows' slots stay 0.
   */
  std::vector<long long> values = std::vector<long long>(counter_row_count());
  /** The value of the row named `name`; terminates if no row has that name (a programming error). */
  [[nodiscard]] long long value(std::string_view name) const;
  void set(std::string_view name, long long v);

  /**
   * With --upstream: what /healthz reports of the forwarded requests (copied from the rows'
   * values). Its presence also says the upstream rows are walked.
   */
  struct Upstream {
    long long requests = 0;
    long long failures = 0;
    long long connects = 0;
    long long resolutions = 0;
    long long resolve_failures = 0;
  };
  std::optional<Upstream> upstream;
  /** With --oauth-issuer: the agent's state (/healthz, /readyz). */
  struct OAuth {
    bool keys_loaded = false;
    long long keys = 0;
    std::string last_error{};  // why the last JWKS fetch failed ("" after a success)
  };
  std::optional<OAuth> oauth;
  /** By detail::Limit. */
  std::array<long long, static_cast<std::size_t>(Limit::kCount)> limit_hits{};

  /** Refused credentials: one row per (scope, reason), in the order /metrics lists them. */
  struct AuthFailure {
    std::string_view scope;   // "client" or "publisher"; static strings
    std::string_view reason;
    long long count;
  };
  std::vector<AuthFailure> auth_failures;

  /** One tenant's usage (or the sum of the tenants past the bound). */
  struct TenantRow {
    std::string name;
    long long connections = 0;
    long long streams = 0;
    long long subscriptions = 0;
    long long limit_hits = 0;
  };
  /** The first --metrics-tenants live tenants by slot, named. */
  std::vector<TenantRow> tenants;
  /** The rest summed, named "_other"; absent when every tenant is named. */
  std::optional<TenantRow> tenants_other;
  /** Tenants with clients (the default tenant included): tenants.size() plus those in _other. */
  long long tenant_count = 0;

  /** With a backplane (--nats). */
  std::optional<BackplaneReport> backplane;

  // Readiness (http/routes_health.cc): start() has finished; drain() or stop() has begun.
  bool serving = false;
  bool draining = false;
  /**
   * The process's own numbers: filled by GET /metrics only (process_stats.h). A host's
   * collect_metrics() does not get them: they describe the host's process, which its own
   * metrics library already reports under the same names.
   */
  std::optional<ProcessStats> process;
};

}  // namespace mcpfan::detail
