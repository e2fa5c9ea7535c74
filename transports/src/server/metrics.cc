#include "server/metrics.h"

#include "mcpfan/version.h"

// The families of GET /metrics and Server::collect_metrics(), walked over a StatsSnapshot
// (stats_snapshot.cc collects it). Adding a metric here adds it to both.
namespace mcpfan::detail {

namespace {

constexpr MetricType kCounter = MetricType::Counter;
constexpr MetricType kGauge = MetricType::Gauge;

// Values cross the public interface as doubles: exact for integers below 2^53 (centuries of
// deliveries at a million a second).
double num(long long v) { return static_cast<double>(v); }
double num(std::uint64_t v) { return static_cast<double>(v); }

class Walk {
 public:
  explicit Walk(MetricsSink& sink) : sink_(sink) {}

  /** A family of one unlabelled sample. */
  void one(std::string_view name, MetricType type, std::string_view help, double value) {
    sink_.family(name, type, help);
    sink_.sample({}, value);
  }
  void family(std::string_view name, MetricType type, std::string_view help) { sink_.family(name, type, help); }
  void sample(std::string_view label, std::string_view label_value, double value) {
    const MetricLabel l{label, label_value};
    sink_.sample({&l, 1}, value);
  }
  void sample(std::initializer_list<MetricLabel> labels, double value) { sink_.sample({labels.begin(), labels.size()}, value); }

 private:
  MetricsSink& sink_;
};

// Per-tenant gauges: the snapshot's rows (bounded by --metrics-tenants), then "_other".
void tenant_families(Walk& w, const StatsSnapshot& s) {
  using Row = StatsSnapshot::TenantRow;
  struct Family {
    std::string_view name;
    MetricType type;
    std::string_view help;
    long long Row::*value;
  };
  const Family families[] = {
      {"mcpfan_tenant_connections", kGauge, "Connections bound to the tenant.", &Row::connections},
      {"mcpfan_tenant_streams", kGauge, "Listens and 2025-era sessions of the tenant.", &Row::streams},
      {"mcpfan_tenant_subscriptions", kGauge, "Resource URIs the tenant's clients subscribe to.", &Row::subscriptions},
      {"mcpfan_tenant_limit_hits_total", kCounter,
       "Limits hit by the tenant's clients and publishers since it last had no clients.", &Row::limit_hits},
  };
  for (const Family& f : families) {
    w.family(f.name, f.type, f.help);
    for (const Row& row : s.tenants) w.sample("tenant", row.name, num(row.*f.value));
    if (s.tenants_other) w.sample("tenant", s.tenants_other->name, num((*s.tenants_other).*f.value));
  }
  w.one("mcpfan_tenants", kGauge, "Tenants with clients (the default tenant included).", num(s.tenant_count));
}

// The backplane's own families, as its report lists them (backplane/backplane.h).
void backplane_families(Walk& w, const BackplaneReport& b) {
  for (const BackplaneFigure& f : b.figures) {
    if (f.label.empty()) {
      w.one(f.metric, f.type, f.help, f.value);
      continue;
    }
    w.family(f.metric, f.type, f.help);
    for (const auto& [label_value, count] : f.by_label) w.sample(f.label, label_value, num(count));
  }
}

// The Prometheus process-metric conventions (client libraries' "process collector"): the
// same names, types and units, so existing dashboards and alerts apply unchanged.
void process_families(Walk& w, const ProcessStats& p) {
  w.one("process_cpu_seconds_total", kCounter, "Total user and system CPU time spent in seconds.", p.cpu_seconds);
  w.one("process_start_time_seconds", kGauge, "Start time of the process since unix epoch in seconds.", p.start_time_seconds);
  w.one("process_resident_memory_bytes", kGauge, "Resident memory size in bytes.", num(p.resident_bytes));
  w.one("process_virtual_memory_bytes", kGauge, "Virtual memory size in bytes.", num(p.virtual_bytes));
  w.one("process_open_fds", kGauge, "Number of open file descriptors.", num(p.open_fds));
  w.one("process_max_fds", kGauge, "Maximum number of open file descriptors.", num(p.max_fds));
}

}  // namespace

void walk_metrics(const StatsSnapshot& s, MetricsSink& sink) {
  Walk w(sink);
  w.one("mcpfan_connections_open", kGauge, "Open TCP connections.", num(s.connections));
  w.one("mcpfan_listen_streams_open", kGauge, "Open subscriptions/listen streams.", num(s.streams));
  w.one("mcpfan_subscriptions_active", kGauge, "Active listen subscriptions.", num(s.subscriptions));
  w.one("mcpfan_published_total", kCounter, "Notifications accepted for publishing.", num(s.published));
  w.one("mcpfan_published_no_audience_total", kCounter,
        "Notifications accepted for a tenant with no clients: nothing to deliver, not fanned out.", num(s.published_no_audience));
  w.one("mcpfan_deliveries_total", kCounter, "Notifications queued to streams.", num(s.deliveries));
  w.one("mcpfan_coalesced_total", kCounter, "Unwritten notifications replaced by a newer one for the same (method, uri).",
        num(s.coalesced));
  w.one("mcpfan_slow_consumer_closes_total", kCounter, "Streams closed for exceeding the pending-bytes bound.", num(s.slow_closes));
  w.one("mcpfan_shard_inbox_depth", kGauge, "Notifications queued in the worker loops' inboxes, not yet matched.",
        num(s.shard_inbox_depth));
  w.one("mcpfan_shard_inbox_full_total", kCounter,
        "Notifications that did not fit a worker loop's inbox (--shard-inbox-max): publishes refused, or dropped.",
        num(s.shard_inbox_full));
  w.one("mcpfan_publish_refused_inbox_full_total", kCounter,
        "Publishes refused whole (503) because a worker loop's inbox was full.", num(s.publish_refused_full));
  w.one("mcpfan_stream_writes_total", kCounter, "Batched writes handed to streams.", num(s.stream_writes));
  w.one("mcpfan_http_requests_total", kCounter, "HTTP requests parsed.", num(s.http_requests));
  w.one("mcpfan_http_errors_total", kCounter, "HTTP answers with a 4xx/5xx status.", num(s.http_errors));
  w.one("mcpfan_sessions_active", kGauge, "2025-era MCP sessions (initialize .. DELETE or expiry).", num(s.sessions));
  w.one("mcpfan_sessions_idle", kGauge, "2025-era sessions without an open GET stream (bounded by --max-idle-sessions).",
        num(s.sessions_idle));
  w.one("mcpfan_sessions_parked", kGauge,
        "2025-era sessions without a GET stream still journaling for a Last-Event-ID resume.", num(s.sessions_parked));
  w.one("mcpfan_session_replayed_total", kCounter, "Journaled notifications replayed to resuming GET streams.",
        num(s.session_replayed));
  w.one("mcpfan_session_rereads_total", kCounter,
        "Last-Event-IDs that could not be resumed exactly, answered with re-read hints.", num(s.session_rereads));
  w.one("mcpfan_session_journaled_total", kCounter,
        "Notifications recorded for 2025-era sessions without a live GET stream (parked, or being taken over).",
        num(s.session_journaled));
  w.one("mcpfan_session_journal_evictions_total", kCounter,
        "Session journal entries evicted by --session-replay-bytes (their cursors then get re-read hints).",
        num(s.session_journal_evictions));
  w.one("mcpfan_debounce_suppressed_total", kCounter,
        "Updates replaced by a newer one for the same (tenant, method, uri) within --debounce-ms.", num(s.debounce_suppressed));
  w.one("mcpfan_debounce_trailing_total", kCounter, "Held updates fanned out when their interval passed.", num(s.debounce_trailing));
  w.one("mcpfan_workers", kGauge, "Worker loops.", num(s.workers));
  // The info-metric pattern: a constant 1 whose labels say what runs, to join on or alert on.
  w.family("mcpfan_build_info", kGauge, "The running mcpfan's version, compiler and build type (value 1).");
  w.sample({{"version", build::kVersion}, {"compiler", build::kCompiler}, {"build_type", build::kBuildType}}, 1);
  w.one("mcpfan_log_lines_dropped_total", kCounter,
        "Log lines not written: the log queue was full (stderr not drained) or the kind was over its rate.", num(s.log_lines_dropped));
  w.one("mcpfan_read_pauses_total", kCounter,
        "Times a client's connection stopped being read until its unread answers drained.", num(s.read_pauses));
  w.one("mcpfan_io_uring_workers", kGauge,
        "Worker loops sending stream batches through io_uring (0: libuv writes, by --io-uring-entries 0 or a kernel that refused).",
        num(s.uring_workers));
  w.one("mcpfan_io_uring_sends_total", kCounter, "Stream batches sent through io_uring.", num(s.uring_sends));
  w.one("mcpfan_io_uring_submits_total", kCounter, "io_uring_enter calls that submitted them.", num(s.uring_submits));
  w.one("mcpfan_io_uring_short_sends_total", kCounter,
        "io_uring sends that left part of their batch (a full socket, or more than IOV_MAX pieces), queued as a libuv write.",
        num(s.uring_short_sends));
  if (s.upstream) {
    w.one("mcpfan_upstream_requests_total", kCounter, "Requests forwarded to the --upstream MCP server.", num(s.upstream->requests));
    w.one("mcpfan_upstream_failures_total", kCounter,
          "Forwarded requests whose upstream leg failed: unreachable, timed out, invalid, cut short or too large.",
          num(s.upstream->failures));
    w.one("mcpfan_upstream_connects_total", kCounter, "Connections opened to the upstream.", num(s.upstream->connects));
    w.one("mcpfan_upstream_reused_total", kCounter, "Forwarded requests sent on a pooled keep-alive connection.", num(s.upstream->reused));
    w.one("mcpfan_upstream_retried_total", kCounter,
          "Requests sent again on a fresh connection after a pooled one had closed: idempotent ones, or ones of which no byte left.",
          num(s.upstream->retried));
    w.one("mcpfan_upstream_not_retried_total", kCounter,
          "Requests failed (502) rather than sent twice: a pooled connection closed after they went out (RFC 9110 9.2.2).",
          num(s.upstream->not_retried));
    w.one("mcpfan_upstream_expired_total", kCounter, "Pooled upstream connections closed after --upstream-keepalive-ms idle.",
          num(s.upstream->expired));
    w.one("mcpfan_upstream_resolutions_total", kCounter,
          "Look-ups of the upstream's host name that answered (cached for --upstream-resolve-ttl-ms; none for an IP address).",
          num(s.upstream->resolutions));
    w.one("mcpfan_upstream_resolve_failures_total", kCounter,
          "Look-ups of the upstream's host name that failed; the requests waiting on them were answered 502.",
          num(s.upstream->resolve_failures));
  }
  w.one("mcpfan_callback_exceptions_total", kCounter,
        "Exceptions caught at a loop callback boundary (the affected connection was closed; the server went on).",
        num(s.callback_exceptions));
  w.family("mcpfan_limit_hits_total", kCounter, "Requests, connections and streams refused or closed by a configured limit.");
  for (std::size_t i = 0; i < s.limit_hits.size(); ++i) w.sample("limit", limit_name(static_cast<Limit>(i)), num(s.limit_hits[i]));
  w.family("mcpfan_auth_failures_total", kCounter, "Refused credentials, by who presented them and why.");
  for (const StatsSnapshot::AuthFailure& f : s.auth_failures) w.sample({{"scope", f.scope}, {"reason", f.reason}}, num(f.count));
  tenant_families(w, s);
  if (s.backplane) backplane_families(w, *s.backplane);
  if (s.process) process_families(w, *s.process);
}

}  // namespace mcpfan::detail
