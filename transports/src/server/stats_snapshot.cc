#include "server/stats_snapshot.h"

#include <algorithm>

#include "server/log.h"
#include "server/metrics.h"
#include "server/server_impl.h"

// The one place the server's numbers are computed (GET /metrics, GET /status.json and
// Server::collect_metrics() render them).
namespace mcpfan {

namespace {

long long ll(std::uint64_t v) { return static_cast<long long>(v); }
template <class T>
long long load(const std::atomic<T>& a) {
  return static_cast<long long>(a.load(std::memory_order_relaxed));
}

}  // namespace

detail::StatsSnapshot Server::Impl::snapshot() {
  detail::StatsSnapshot s;
  detail::StatsSnapshot::Upstream up;
  for (const auto& w : workers) {
    const detail::WorkerStats& ws = w->stats();
    up.requests += load(ws.proxied_requests);
    up.failures += load(ws.upstream_failures);
    up.connects += load(ws.upstream.connects);
    up.reused += load(ws.upstream.reused);
    up.retried += load(ws.upstream.retried);
    up.not_retried += load(ws.upstream.not_retried);
    up.expired += load(ws.upstream.expired);
    up.resolutions += load(ws.upstream.resolutions);
    up.resolve_failures += load(ws.upstream.resolve_failures);
    s.read_pauses += load(ws.read_pauses);
    s.uring_workers += load(ws.sends.rings);
    s.uring_sends += load(ws.sends.sends);
    s.uring_submits += load(ws.sends.submits);
    s.uring_short_sends += load(ws.sends.short_sends);
    s.callback_exceptions += load(ws.sends.exceptions);
    s.callback_exceptions += load(ws.callback_exceptions);
    s.connections += load(ws.connections);
    s.http_requests += load(ws.http_requests);
    s.http_errors += load(ws.http_errors);
  }
  for (std::size_t i = 0; i < hub->shard_count(); ++i) {
    const ShardStats& st = hub->shard(i).stats();
    s.streams += load(st.streams);
    s.subscriptions += load(st.subscriptions);
    s.deliveries += load(st.deliveries);
    s.coalesced += load(st.coalesced);
    s.slow_closes += load(st.slow_closes);
    s.shard_inbox_full += load(st.inbox_full);
    s.shard_inbox_depth += static_cast<long long>(hub->shard(i).inbox_depth());
    s.stream_writes += load(st.writes);
    s.callback_exceptions += load(st.exceptions);
  }
  s.published = ll(hub->published());
  s.published_no_audience = ll(hub->no_audience());
  s.publish_refused_full = ll(hub->refused_full());
  s.sessions = static_cast<long long>(sessions.size());
  s.sessions_idle = static_cast<long long>(sessions.idle());
  const detail::SessionCounters& sc = sessions.counters();
  s.sessions_parked = load(sc.parked);
  s.streams -= s.sessions_parked;  // a parked session holds a shard stream with no connection: not an open stream
  s.session_replayed = load(sc.replayed);
  s.session_rereads = load(sc.rereads);
  s.session_journaled = load(sc.journaled);
  s.session_journal_evictions = load(sc.evictions);
  if (const Debouncer* d = hub->debouncer()) {
    s.debounce_suppressed = ll(d->suppressed());
    s.debounce_trailing = ll(d->trailing());
  }
  s.workers = static_cast<long long>(workers.size());
  s.serving = started.load(std::memory_order_acquire);
  s.draining = draining.load(std::memory_order_relaxed);
  s.log_lines_dropped = ll(detail::log::dropped() + detail::log::suppressed());
  if (!config.upstream.empty()) s.upstream = up;
  for (std::size_t i = 0; i < s.limit_hits.size(); ++i) s.limit_hits[i] = ll(state.limits.hits(static_cast<detail::Limit>(i)));

  const detail::AuthCounters& a = state.auth_counters;
  s.callback_exceptions += load(a.host_exceptions);  // the host's authenticator, called by no worker's own code
  for (std::size_t i = 0; i < detail::AuthCounters::kClientReasons; ++i) {
    s.auth_failures.push_back({"client", detail::auth_failure_name(static_cast<detail::AuthFailure>(i)), load(a.client[i])});
  }
  s.auth_failures.push_back({"client", "forbidden_uri", load(a.client_forbidden_uri)});
  s.auth_failures.push_back({"client", "wrong_tenant", load(a.client_wrong_tenant)});
  s.auth_failures.push_back({"publisher", "missing", load(a.publisher_missing)});
  s.auth_failures.push_back({"publisher", "unknown_key", load(a.publisher_unknown_key)});
  s.auth_failures.push_back({"publisher", "forbidden_tenant", load(a.publisher_forbidden_tenant)});

  // Tenant names come from client tokens, so the rows are capped: the first --metrics-tenants
  // live tenants by slot are named, the rest summed as "_other".
  hub->tenants().for_each([&](TenantId id, const std::string& name) {
    const detail::TenantUsage* u = state.limits.usage(id);
    if (!u) return;
    auto in_use = [u](detail::Resource r) { return load(u->in_use[static_cast<std::size_t>(r)]); };
    detail::StatsSnapshot::TenantRow row{name, in_use(detail::Resource::Connections), in_use(detail::Resource::Streams),
                                         in_use(detail::Resource::Subscriptions), load(u->limit_hits)};
    ++s.tenant_count;
    if (s.tenants.size() < config.metrics_tenants) {
      s.tenants.push_back(std::move(row));
      return;
    }
    if (!s.tenants_other) s.tenants_other = detail::StatsSnapshot::TenantRow{"_other"};
    s.tenants_other->connections += row.connections;
    s.tenants_other->streams += row.streams;
    s.tenants_other->subscriptions += row.subscriptions;
    s.tenants_other->limit_hits += row.limit_hits;
  });
  {
    std::lock_guard lock(backplane_mutex);  // stop() destroys it, maybe while a host collects
    if (state.backplane) s.backplane = state.backplane->report();
  }
  return s;
}

Status Server::collect_metrics(MetricsSink& sink) const {
  // started is stored (release) after the workers and the backplane exist: they are read below.
  if (!impl_->started.load(std::memory_order_acquire)) {
    return Error{rpc_code::kInternalError, "collect_metrics() before start(): nothing is served yet"};
  }
  detail::walk_metrics(impl_->snapshot(), sink);
  return {};
}

}  // namespace mcpfan

namespace mcpfan::detail {

long long StatsSnapshot::limit_hits_total() const noexcept {
  long long n = 0;
  for (long long v : limit_hits) n += v;
  return n;
}

}  // namespace mcpfan::detail
