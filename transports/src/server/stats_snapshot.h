#pragma once
// The server's numbers at one instant: every worker's and shard's counters summed, the limits,
// the auth counters, the per-tenant rows (bounded by --metrics-tenants) and the backplane.
// Collected in one place (stats_snapshot.cc) and rendered twice: walked as metric families
// (metrics.cc: GET /metrics and a host's Server::collect_metrics) and as JSON for
// GET /status.json (status/status_json.cc), so they cannot disagree.
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

struct StatsSnapshot {
  // Gauges.
  long long connections = 0;     // open TCP connections
  long long streams = 0;         // open subscriptions/listen streams (parked sessions' not counted)
  long long subscriptions = 0;   // active listen subscriptions
  long long sessions = 0;        // 2025-era sessions
  long long sessions_idle = 0;   // of those: without an open GET stream
  long long sessions_parked = 0; // of those: still journaling for a Last-Event-ID resume
  long long workers = 0;
  // Counters.
  long long published = 0;
  long long published_no_audience = 0;
  long long deliveries = 0;
  long long coalesced = 0;
  long long slow_closes = 0;
  long long shard_inbox_depth = 0;     // payloads queued in the shards' inboxes, not yet matched (a gauge)
  long long shard_inbox_full = 0;      // payloads that did not fit a shard inbox (--shard-inbox-max)
  long long publish_refused_full = 0;  // local publishes refused whole (503) for a full shard inbox
  long long stream_writes = 0;
  long long http_requests = 0;
  long long http_errors = 0;
  long long session_replayed = 0;           // journaled notifications replayed on resumes
  long long session_rereads = 0;            // Last-Event-IDs answered with re-read hints
  long long session_journaled = 0;
  long long session_journal_evictions = 0;
  long long debounce_suppressed = 0;
  long long debounce_trailing = 0;
  long long log_lines_dropped = 0;
  long long read_pauses = 0;
  long long callback_exceptions = 0;
  // io_uring sends (server/send_ring.h): loops with a ring, completed sends, submits, short sends.
  long long uring_workers = 0;
  long long uring_sends = 0;
  long long uring_submits = 0;
  long long uring_short_sends = 0;
  /** With --upstream: the forwarded requests and their failures. */
  struct Upstream {
    long long requests = 0;
    long long failures = 0;
    long long connects = 0;     // connections opened to it
    long long reused = 0;       // requests sent on a pooled connection
    long long retried = 0;      // sent again: the pooled connection had closed, and a retry was safe
    long long not_retried = 0;  // failed instead (502): the upstream may have received the request
    long long expired = 0;      // pooled connections closed after --upstream-keepalive-ms
    long long resolutions = 0;       // host name look-ups that answered (an IP literal needs none)
    long long resolve_failures = 0;  // look-ups that failed: the requests waiting on them got 502
  };
  std::optional<Upstream> upstream;
  /** By detail::Limit. */
  std::array<long long, static_cast<std::size_t>(Limit::kCount)> limit_hits{};
  [[nodiscard]] long long limit_hits_total() const noexcept;

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
