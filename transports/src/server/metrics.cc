#include <cstdio>

#include "server/stats_snapshot.h"

// GET /metrics: the Prometheus text of a StatsSnapshot (stats_snapshot.cc collects it).
namespace mcpfan::detail {

namespace {

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

void metric_seconds(std::string& out, const char* name, const char* help, double seconds) {
  metric_header(out, name, "gauge", help);
  char v[32];
  std::snprintf(v, sizeof v, "%.3f", seconds);
  out += name;
  out += ' ';
  out += v;
  out += '\n';
}

// Per-tenant gauges: the snapshot's rows (bounded by --metrics-tenants), then "_other".
void tenant_metrics(std::string& out, const StatsSnapshot& s) {
  using Row = StatsSnapshot::TenantRow;
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    long long Row::*value;
  };
  const Family families[] = {
      {"mcpfan_tenant_connections", "gauge", "Connections bound to the tenant.", &Row::connections},
      {"mcpfan_tenant_streams", "gauge", "Listens and 2025-era sessions of the tenant.", &Row::streams},
      {"mcpfan_tenant_subscriptions", "gauge", "Resource URIs the tenant's clients subscribe to.", &Row::subscriptions},
      {"mcpfan_tenant_limit_hits_total", "counter", "Limits hit by the tenant's clients and publishers since it last had no clients.",
       &Row::limit_hits},
  };
  auto line = [&out](const char* family, const Row& row, long long v) {
    out += family;
    out += "{tenant=\"";
    for (char ch : row.name) {  // token tenants are [A-Za-z0-9._-]; escape anyway
      if (ch == '\\' || ch == '"') out += '\\';
      if (ch == '\n') out += "\\n";
      else out += ch;
    }
    out += "\"} ";
    out += std::to_string(v);
    out += '\n';
  };
  for (const Family& f : families) {
    metric_header(out, f.name, f.type, f.help);
    for (const Row& row : s.tenants) line(f.name, row, row.*f.value);
    if (s.tenants_other) line(f.name, *s.tenants_other, (*s.tenants_other).*f.value);
  }
  metric(out, "mcpfan_tenants", "gauge", "Tenants with clients (the default tenant included).", s.tenant_count);
}

}  // namespace

std::string render_prometheus(const StatsSnapshot& s) {
  std::string out;
  metric(out, "mcpfan_connections_open", "gauge", "Open TCP connections.", s.connections);
  metric(out, "mcpfan_listen_streams_open", "gauge", "Open subscriptions/listen streams.", s.streams);
  metric(out, "mcpfan_subscriptions_active", "gauge", "Active listen subscriptions.", s.subscriptions);
  metric(out, "mcpfan_published_total", "counter", "Notifications accepted for publishing.", s.published);
  metric(out, "mcpfan_published_no_audience_total", "counter",
         "Notifications accepted for a tenant with no clients: nothing to deliver, not fanned out.", s.published_no_audience);
  metric(out, "mcpfan_deliveries_total", "counter", "Notifications queued to streams.", s.deliveries);
  metric(out, "mcpfan_coalesced_total", "counter", "Unwritten notifications replaced by a newer one for the same (method, uri).", s.coalesced);
  metric(out, "mcpfan_slow_consumer_closes_total", "counter", "Streams closed for exceeding the pending-bytes bound.", s.slow_closes);
  metric(out, "mcpfan_stream_writes_total", "counter", "Batched writes handed to streams.", s.stream_writes);
  metric(out, "mcpfan_http_requests_total", "counter", "HTTP requests parsed.", s.http_requests);
  metric(out, "mcpfan_http_errors_total", "counter", "HTTP answers with a 4xx/5xx status.", s.http_errors);
  metric(out, "mcpfan_sessions_active", "gauge", "2025-era MCP sessions (initialize .. DELETE or expiry).", s.sessions);
  metric(out, "mcpfan_sessions_idle", "gauge", "2025-era sessions without an open GET stream (bounded by --max-idle-sessions).",
         s.sessions_idle);
  metric(out, "mcpfan_sessions_parked", "gauge",
         "2025-era sessions without a GET stream still journaling for a Last-Event-ID resume.", s.sessions_parked);
  metric(out, "mcpfan_session_replayed_total", "counter", "Journaled notifications replayed to resuming GET streams.",
         s.session_replayed);
  metric(out, "mcpfan_session_rereads_total", "counter",
         "Last-Event-IDs that could not be resumed exactly, answered with re-read hints.", s.session_rereads);
  metric(out, "mcpfan_session_journaled_total", "counter",
         "Notifications recorded for 2025-era sessions without a live GET stream (parked, or being taken over).",
         s.session_journaled);
  metric(out, "mcpfan_session_journal_evictions_total", "counter",
         "Session journal entries evicted by --session-replay-bytes (their cursors then get re-read hints).",
         s.session_journal_evictions);
  metric(out, "mcpfan_debounce_suppressed_total", "counter",
         "Updates replaced by a newer one for the same (tenant, method, uri) within --debounce-ms.", s.debounce_suppressed);
  metric(out, "mcpfan_debounce_trailing_total", "counter", "Held updates fanned out when their interval passed.", s.debounce_trailing);
  metric(out, "mcpfan_workers", "gauge", "Worker loops.", s.workers);
  metric(out, "mcpfan_log_lines_dropped_total", "counter",
         "Log lines not written: the log queue was full (stderr not drained) or the kind was over its rate.", s.log_lines_dropped);
  metric(out, "mcpfan_read_pauses_total", "counter",
         "Times a client's connection stopped being read until its unread answers drained.", s.read_pauses);
  if (s.upstream) {
    metric(out, "mcpfan_upstream_requests_total", "counter", "Requests forwarded to the --upstream MCP server.", s.upstream->requests);
    metric(out, "mcpfan_upstream_failures_total", "counter",
           "Forwarded requests whose upstream leg failed: unreachable, timed out, invalid, cut short or too large.",
           s.upstream->failures);
  }
  metric(out, "mcpfan_callback_exceptions_total", "counter",
         "Exceptions caught at a loop callback boundary (the affected connection was closed; the server went on).",
         s.callback_exceptions);
  metric_header(out, "mcpfan_limit_hits_total", "counter",
                "Requests, connections and streams refused or closed by a configured limit.");
  for (std::size_t i = 0; i < s.limit_hits.size(); ++i) {
    out += "mcpfan_limit_hits_total{limit=\"";
    out += limit_name(static_cast<Limit>(i));
    out += "\"} ";
    out += std::to_string(s.limit_hits[i]);
    out += '\n';
  }
  metric_header(out, "mcpfan_auth_failures_total", "counter", "Refused credentials, by who presented them and why.");
  for (const StatsSnapshot::AuthFailure& f : s.auth_failures) {
    out += "mcpfan_auth_failures_total{scope=\"";
    out += f.scope;
    out += "\",reason=\"";
    out += f.reason;
    out += "\"} ";
    out += std::to_string(f.count);
    out += '\n';
  }
  tenant_metrics(out, s);
  if (s.backplane) {
    const nats::Backplane::Stats& b = *s.backplane;
    metric(out, "mcpfan_backplane_connected", "gauge", "1 while connected to a NATS server.", b.connected ? 1 : 0);
    metric(out, "mcpfan_backplane_subjects", "gauge", "NATS subjects this node subscribes to (incl. lingering ones).",
           static_cast<long long>(b.subjects));
    metric(out, "mcpfan_backplane_compacted_tenants", "gauge",
           "Tenants subscribed as one <prefix>.v1.<tenant>.> subject because --nats-max-subjects was reached.",
           static_cast<long long>(b.compacted_tenants));
    metric(out, "mcpfan_backplane_compactions_total", "counter", "Times a tenant's subjects were folded into one.",
           static_cast<long long>(b.compactions));
    metric(out, "mcpfan_backplane_sub_ops_total", "counter", "SUB and UNSUB operations sent to NATS.",
           static_cast<long long>(b.sub_ops + b.unsub_ops));
    metric(out, "mcpfan_backplane_sent_total", "counter", "Notifications sent to other nodes.", static_cast<long long>(b.sent));
    metric(out, "mcpfan_backplane_received_total", "counter", "Notifications received from other nodes.",
           static_cast<long long>(b.received));
    metric(out, "mcpfan_backplane_unmatched_total", "counter",
           "Received notifications no local subscription matched (hash, fold or folded-tenant over-match, or a subscriber just gone).",
           static_cast<long long>(b.unmatched));
    metric(out, "mcpfan_backplane_queued", "gauge",
           "Notifications for other nodes waiting: NATS unreachable, or within the settle delay after a reconnect.",
           static_cast<long long>(b.queued));
    metric_seconds(out, "mcpfan_backplane_lag_seconds",
                   "How long the oldest notification for other nodes has waited (0 when none waits).", b.lag_seconds);
    metric(out, "mcpfan_backplane_refused_total", "counter",
           "Publishes refused (503) while NATS was unreachable and the outage buffer full.", static_cast<long long>(b.refused));
    metric(out, "mcpfan_backplane_dropped_total", "counter",
           "Notifications or subjects lost on the backplane: slow-consumer drops, failed publishes, subjects past the bound.",
           static_cast<long long>(b.dropped));
  }
  return out;
}

}  // namespace mcpfan::detail
