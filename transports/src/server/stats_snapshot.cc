#include "server/stats_snapshot.h"

#include <algorithm>

#include "server/counters.h"
#include "server/metrics.h"
#include "server/server_impl.h"

// The one place the server's numbers are gathered (GET /metrics, GET /status.json and
// Server::collect_metrics() render them).
namespace mcpfan {

namespace {

long long ll(std::uint64_t v) { return static_cast<long long>(v); }
template <class T>
long long load(const std::atomic<T>& a) {
  return static_cast<long long>(a.load(std::memory_order_relaxed));
}

}  // namespace

// The labelled families' numbers are gathered here by hand (their label sets are not rows), and
// so is the backplane's struct (its own); every other number by its row (server/counters.cc).
detail::StatsSnapshot Server::Impl::snapshot() {
  detail::StatsSnapshot s;
  s.serving = started.load(std::memory_order_acquire);
  s.draining = draining.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < s.limit_hits.size(); ++i) {
    s.limit_hits[i] = ll(state.limits.hits(static_cast<detail::Limit>(i)));
  }

  const detail::AuthCounters& a = state.auth_counters;
  for (std::size_t i = 0; i < detail::AuthCounters::kClientReasons; ++i) {
    const std::string_view reason = detail::auth_failure_name(static_cast<detail::AuthFailure>(i));
    s.auth_failures.push_back({"client", reason, load(a.client[i])});
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
    if (s.tenants.size() < config.tenants.metrics_tenants) {
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

  detail::gather_counters({workers, *hub, sessions, state}, s);
  if (!config.upstream.url.empty()) {
    s.upstream = detail::StatsSnapshot::Upstream{
        s.value("mcpfan_upstream_requests_total"), s.value("mcpfan_upstream_failures_total"),
        s.value("mcpfan_upstream_connects_total"), s.value("mcpfan_upstream_resolutions_total"),
        s.value("mcpfan_upstream_resolve_failures_total")};
  }
  if (state.oauth) {
    s.oauth = detail::StatsSnapshot::OAuth{state.oauth->ready(), s.value("mcpfan_oauth_keys"),
                                           state.oauth->last_error()};
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
