#include <cstdio>
#include <functional>

#include "server/log.h"
#include "server/server_impl.h"

// GET /metrics: Prometheus text built from every worker's and shard's counters, the limits,
// the auth counters and the per-tenant usage (its label set bounded by --metrics-tenants).
namespace mcpfan {

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

}  // namespace

std::string Server::Impl::metrics_text() {
  long long conns = 0, requests = 0, errors = 0;
  long long streams = 0, subs = 0, deliveries = 0, coalesced = 0, slow = 0, writes = 0, exceptions = 0, pauses = 0;
  long long proxied = 0, upstream_failures = 0;
  for (const auto& w : workers) {
    proxied += static_cast<long long>(w->stats().proxied_requests.load(std::memory_order_relaxed));
    upstream_failures += static_cast<long long>(w->stats().upstream_failures.load(std::memory_order_relaxed));
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
  const detail::SessionCounters& sc = sessions.counters();
  const long long parked = sc.parked.load(std::memory_order_relaxed);
  // A parked session holds a shard stream with no connection: not an open stream.
  metric(out, "mcpfan_listen_streams_open", "gauge", "Open subscriptions/listen streams.", streams - parked);
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
  metric(out, "mcpfan_sessions_parked", "gauge",
         "2025-era sessions without a GET stream still journaling for a Last-Event-ID resume.", parked);
  metric(out, "mcpfan_session_replayed_total", "counter", "Journaled notifications replayed to resuming GET streams.",
         static_cast<long long>(sc.replayed.load(std::memory_order_relaxed)));
  metric(out, "mcpfan_session_rereads_total", "counter",
         "Last-Event-IDs that could not be resumed exactly, answered with re-read hints.",
         static_cast<long long>(sc.rereads.load(std::memory_order_relaxed)));
  metric(out, "mcpfan_session_journaled_total", "counter",
         "Notifications recorded for 2025-era sessions without a live GET stream (parked, or being taken over).",
         static_cast<long long>(sc.journaled.load(std::memory_order_relaxed)));
  metric(out, "mcpfan_session_journal_evictions_total", "counter",
         "Session journal entries evicted by --session-replay-bytes (their cursors then get re-read hints).",
         static_cast<long long>(sc.evictions.load(std::memory_order_relaxed)));
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
  if (!config.upstream.empty()) {
    metric(out, "mcpfan_upstream_requests_total", "counter", "Requests forwarded to the --upstream MCP server.", proxied);
    metric(out, "mcpfan_upstream_failures_total", "counter",
           "Forwarded requests whose upstream leg failed: unreachable, timed out, invalid, cut short or too large.",
           upstream_failures);
  }
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
  if (state.backplane) {
    detail::nats::Backplane::Stats b = state.backplane->stats();
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

}  // namespace mcpfan
