#include "server/counters.h"

#include <atomic>
#include <cstdio>
#include <exception>

#include "mcp/sessions.h"
#include "mcpfan/hub.h"
#include "mcpfan/version.h"
#include "server/log.h"
#include "server/server_state.h"
#include "server/worker.h"

// The table of the server's metric families (counters.h). To add a counter: declare its atomic
// where the loop increments it (WorkerStats, ShardStats, ...) and add its row below, where
// /metrics should list it; /metrics, collect_metrics() and /status.json then have it.
namespace mcpfan::detail {

namespace {

constexpr MetricType kCounter = MetricType::Counter;
constexpr MetricType kGauge = MetricType::Gauge;
constexpr CounterGroup kUpstream = CounterGroup::Upstream;
constexpr CounterGroup kOAuth = CounterGroup::OAuth;

constexpr JsonSlot kNoJson{};
constexpr JsonSlot top(std::string_view key) { return {JsonPlace::Top, key}; }
constexpr JsonSlot gauges(std::string_view key) { return {JsonPlace::Gauges, key}; }
constexpr JsonSlot counters(std::string_view key) { return {JsonPlace::Counters, key}; }
constexpr JsonSlot group(std::string_view key) { return {JsonPlace::Group, key}; }

template <class T>
long long load(const std::atomic<T>& a) {
  return static_cast<long long>(a.load(std::memory_order_relaxed));
}
long long ll(std::uint64_t v) { return static_cast<long long>(v); }

// ---- gather sources: sums over the loops, or one accessor ----

/** A WorkerStats atomic (reached through `Path`, e.g. &WorkerStats::sends, &SendRingStats::rings), summed. */
template <auto... Path>
long long per_worker(const CounterInputs& in) {
  long long n = 0;
  for (const auto& w : in.workers) n += load((w->stats() .* ... .* Path));
  return n;
}

/** A ShardStats atomic, summed over the shards. */
/** A counter of the OAuth agent (oauth/agent.h); 0 without one. */
template <auto Member>
long long oauth_counter(const CounterInputs& in) {
  return in.state.oauth ? load(in.state.oauth->counters().*Member) : 0;
}

template <auto Member>
long long per_shard(const CounterInputs& in) {
  long long n = 0;
  for (std::size_t i = 0; i < in.hub.shard_count(); ++i) n += load(in.hub.shard(i).stats().*Member);
  return n;
}

/** A TlsCounters atomic of the listeners' TLS contexts (tls/context.h), summed. */
template <auto Member>
long long tls_counter(const CounterInputs& in) {
  long long n = 0;
  for (tls::ServerContext* ctx : {in.state.tls.get(), in.state.publish_tls.get()}) {
    if (ctx) n += load(ctx->counters().*Member);
  }
  return n;
}

/** A counter of the loops' upstream pools (proxy/upstream.h), summed. */
template <auto Member>
constexpr CounterSource::Gather pool = per_worker<&WorkerStats::upstream, Member>;

/** A counter of the loops' poll-to-push (server/task_poller.h), summed. */
template <auto Member>
constexpr CounterSource::Gather task_poll = per_worker<&WorkerStats::tasks, Member>;

long long task_owners_kept(const CounterInputs& in) {
  return static_cast<long long>(const_cast<ServerState&>(in.state).task_owners.stats().owners);
}
long long task_ids_withheld(const CounterInputs& in) {
  return static_cast<long long>(const_cast<ServerState&>(in.state).task_owners.stats().withheld);
}

template <auto Member>
long long session_counter(const CounterInputs& in) {
  return load(in.sessions.counters().*Member);
}

long long inbox_depth(const CounterInputs& in) {
  long long n = 0;
  for (std::size_t i = 0; i < in.hub.shard_count(); ++i) n += static_cast<long long>(in.hub.shard(i).inbox_depth());
  return n;
}
// A parked session holds a shard stream with no connection: not an open stream.
long long open_streams(const CounterInputs& in) {
  return per_shard<&ShardStats::streams>(in) - session_counter<&SessionCounters::parked>(in);
}
long long published(const CounterInputs& in) { return ll(in.hub.published()); }
long long no_audience(const CounterInputs& in) { return ll(in.hub.no_audience()); }
long long refused_full(const CounterInputs& in) { return ll(in.hub.refused_full()); }
long long sessions(const CounterInputs& in) { return static_cast<long long>(in.sessions.size()); }
long long sessions_idle(const CounterInputs& in) { return static_cast<long long>(in.sessions.idle()); }
template <auto Field>
long long task_states(const CounterInputs& in) {
  return static_cast<long long>(in.hub.task_states().stats().*Field);
}
long long task_states_refused(const CounterInputs& in) {
  TaskStates::Stats st = in.hub.task_states().stats();
  return static_cast<long long>(st.refused_tenant_full + st.refused_too_big);
}
long long debounce_suppressed(const CounterInputs& in) {
  const Debouncer* d = in.hub.debouncer();
  return d ? ll(d->suppressed()) : 0;
}
long long debounce_trailing(const CounterInputs& in) {
  const Debouncer* d = in.hub.debouncer();
  return d ? ll(d->trailing()) : 0;
}
long long workers(const CounterInputs& in) { return static_cast<long long>(in.workers.size()); }
long long log_lines_dropped(const CounterInputs&) { return ll(log::dropped() + log::suppressed()); }
// Caught in four places: the loops' callbacks, their io_uring completions, the shards' tasks,
// and the host's authenticator (called by no worker's own code).
long long callback_exceptions(const CounterInputs& in) {
  return per_worker<&WorkerStats::sends, &SendRingStats::exceptions>(in) +
         per_worker<&WorkerStats::callback_exceptions>(in) + per_shard<&ShardStats::exceptions>(in) +
         load(in.state.auth_counters.host_exceptions);
}

// ---- read sources: parts of the snapshot gathered whole by their owners ----

double tenant_count(const StatsSnapshot& s) { return static_cast<double>(s.tenant_count); }
// ---- labelled families: their samples ----

void sample1(MetricsSink& sink, std::string_view label, std::string_view value, double v) {
  const MetricLabel l{label, value};
  sink.sample({&l, 1}, v);
}

// The info-metric pattern: a constant 1 whose labels say what runs, to join on or alert on.
void build_info(const StatsSnapshot&, MetricsSink& sink) {
  const MetricLabel labels[] = {
      {"version", build::kVersion}, {"compiler", build::kCompiler}, {"build_type", build::kBuildType}};
  sink.sample(labels, 1);
}
void limit_hits(const StatsSnapshot& s, MetricsSink& sink) {
  for (std::size_t i = 0; i < s.limit_hits.size(); ++i) {
    sample1(sink, "limit", limit_name(static_cast<Limit>(i)), static_cast<double>(s.limit_hits[i]));
  }
}
void auth_failures(const StatsSnapshot& s, MetricsSink& sink) {
  for (const StatsSnapshot::AuthFailure& f : s.auth_failures) {
    const MetricLabel labels[] = {{"scope", f.scope}, {"reason", f.reason}};
    sink.sample(labels, static_cast<double>(f.count));
  }
}
// Per tenant: the snapshot's rows (bounded by --metrics-tenants), then "_other".
template <auto Member>
void per_tenant(const StatsSnapshot& s, MetricsSink& sink) {
  for (const StatsSnapshot::TenantRow& row : s.tenants) {
    sample1(sink, "tenant", row.name, static_cast<double>(row.*Member));
  }
  if (s.tenants_other) sample1(sink, "tenant", s.tenants_other->name, static_cast<double>((*s.tenants_other).*Member));
}
using Row = StatsSnapshot::TenantRow;
using Up = proxy::UpstreamCounters;

// Help texts are what /metrics has always said: dashboards and docs quote them.
constexpr CounterRow kRows[] = {
    {"mcpfan_connections_open", kGauge, gauges("connections"), per_worker<&WorkerStats::connections>,
     "Open TCP connections."},
    {"mcpfan_listen_streams_open", kGauge, gauges("streams"), open_streams, "Open subscriptions/listen streams."},
    {"mcpfan_subscriptions_active", kGauge, gauges("subscriptions"), per_shard<&ShardStats::subscriptions>,
     "Active listen subscriptions."},
    {"mcpfan_published_total", kCounter, counters("published"), published, "Notifications accepted for publishing."},
    {"mcpfan_published_no_audience_total", kCounter, counters("published_no_audience"), no_audience,
     "Notifications accepted for a tenant with no clients: nothing to deliver, not fanned out."},
    {"mcpfan_deliveries_total", kCounter, counters("deliveries"), per_shard<&ShardStats::deliveries>,
     "Notifications queued to streams."},
    {"mcpfan_coalesced_total", kCounter, counters("coalesced"), per_shard<&ShardStats::coalesced>,
     "Unwritten notifications replaced by a newer one for the same (method, uri)."},
    {"mcpfan_slow_consumer_closes_total", kCounter, counters("slow_consumer_closes"),
     per_shard<&ShardStats::slow_closes>, "Streams closed for exceeding the pending-bytes bound."},
    {"mcpfan_shard_inbox_depth", kGauge, counters("shard_inbox_depth"), inbox_depth,
     "Notifications queued in the worker loops' inboxes, not yet matched."},
    {"mcpfan_shard_inbox_full_total", kCounter, counters("shard_inbox_full"), per_shard<&ShardStats::inbox_full>,
     "Notifications that did not fit a worker loop's inbox (--shard-inbox-max): publishes refused, or dropped."},
    {"mcpfan_publish_refused_inbox_full_total", kCounter, counters("publish_refused_inbox_full"), refused_full,
     "Publishes refused whole (503) because a worker loop's inbox was full."},
    {"mcpfan_stream_writes_total", kCounter, counters("stream_writes"), per_shard<&ShardStats::writes>,
     "Batched writes handed to streams."},
    {"mcpfan_http_requests_total", kCounter, counters("http_requests"), per_worker<&WorkerStats::http_requests>,
     "HTTP requests parsed."},
    {"mcpfan_http_errors_total", kCounter, counters("http_errors"), per_worker<&WorkerStats::http_errors>,
     "HTTP answers with a 4xx/5xx status."},
    {"mcpfan_sessions_active", kGauge, gauges("sessions"), sessions,
     "2025-era MCP sessions (initialize .. DELETE or expiry)."},
    {"mcpfan_sessions_idle", kGauge, gauges("sessions_idle"), sessions_idle,
     "2025-era sessions without an open GET stream (bounded by --max-idle-sessions)."},
    {"mcpfan_sessions_parked", kGauge, gauges("sessions_parked"), session_counter<&SessionCounters::parked>,
     "2025-era sessions without a GET stream still journaling for a Last-Event-ID resume."},
    {"mcpfan_session_replayed_total", kCounter, counters("session_replayed"),
     session_counter<&SessionCounters::replayed>, "Journaled notifications replayed to resuming GET streams."},
    {"mcpfan_session_rereads_total", kCounter, counters("session_rereads"), session_counter<&SessionCounters::rereads>,
     "Last-Event-IDs that could not be resumed exactly, answered with re-read hints."},
    {"mcpfan_session_journaled_total", kCounter, counters("session_journaled"),
     session_counter<&SessionCounters::journaled>,
     "Notifications recorded for 2025-era sessions without a live GET stream (parked, or being taken over)."},
    {"mcpfan_session_journal_evictions_total", kCounter, counters("session_journal_evictions"),
     session_counter<&SessionCounters::evictions>,
     "Session journal entries evicted by --session-replay-bytes (their cursors then get re-read hints)."},
    {"mcpfan_debounce_suppressed_total", kCounter, counters("debounce_suppressed"), debounce_suppressed,
     "Updates replaced by a newer one for the same (tenant, method, uri) within --debounce-ms."},
    {"mcpfan_debounce_trailing_total", kCounter, counters("debounce_trailing"), debounce_trailing,
     "Held updates fanned out when their interval passed."},
    {"mcpfan_task_replays_total", kCounter, counters("task_replays"), per_shard<&ShardStats::replays>,
     "Task states sent to a listen right after its acknowledgement (the task moved before the listen opened)."},
    {"mcpfan_task_replays_skipped_total", kCounter, counters("task_replays_skipped"),
     per_shard<&ShardStats::replays_skipped>,
     "Publishes of a task state that a listen had just been sent as its current state: not sent twice."},
    {"mcpfan_task_states", kGauge, gauges("task_states"), task_states<&TaskStates::Stats::tasks>,
     "Tasks whose newest state is kept for listens that name them later (bounded by --task-states-max)."},
    {"mcpfan_task_states_bytes", kGauge, gauges("task_states_bytes"), task_states<&TaskStates::Stats::bytes>,
     "Encoded bytes of the task states kept (bounded by --task-states-max-bytes)."},
    {"mcpfan_task_states_stored_total", kCounter, counters("task_states_stored"),
     task_states<&TaskStates::Stats::stored>, "Tasks whose state began to be kept."},
    {"mcpfan_task_states_expired_total", kCounter, counters("task_states_expired"),
     task_states<&TaskStates::Stats::expired>,
     "Task states dropped at their ttlMs (at most --task-state-max-ttl-ms after they were kept)."},
    {"mcpfan_task_states_evicted_total", kCounter, counters("task_states_evicted"),
     task_states<&TaskStates::Stats::evicted>,
     "Task states dropped before their time to make room (--task-states-max, --task-states-max-bytes)."},
    {"mcpfan_task_states_refused_total", kCounter, counters("task_states_refused"), task_states_refused,
     "Task states not kept: their tenant had --task-states-per-tenant already, or one was larger than all the "
     "bytes allowed."},
    {"mcpfan_workers", kGauge, top("workers"), workers, "Worker loops."},
    {"mcpfan_build_info", kGauge, kNoJson, build_info,
     "The running mcpfan's version, compiler and build type (value 1)."},
    {"mcpfan_log_lines_dropped_total", kCounter, counters("log_lines_dropped"), log_lines_dropped,
     "Log lines not written: the log queue was full (stderr not drained) or the kind was over its rate."},
    {"mcpfan_read_pauses_total", kCounter, counters("read_pauses"), per_worker<&WorkerStats::read_pauses>,
     "Times a client's connection stopped being read until its unread answers drained."},
    {"mcpfan_tls_handshakes_total", kCounter, counters("tls_handshakes"), tls_counter<&tls::TlsCounters::handshakes>,
     "TLS handshakes completed on the listeners (resumed ones included)."},
    {"mcpfan_tls_resumed_total", kCounter, counters("tls_resumed"), tls_counter<&tls::TlsCounters::resumed>,
     "TLS handshakes that resumed a session by ticket."},
    {"mcpfan_tls_handshake_failures_total", kCounter, counters("tls_handshake_failures"),
     tls_counter<&tls::TlsCounters::handshake_failures>,
     "TLS handshakes that failed (no shared protocol or cipher, garbage, a bad record). Stalled ones are "
     "mcpfan_limit_hits_total{limit=\"tls_handshake_timeout\"}."},
    {"mcpfan_tls_reloads_total", kCounter, counters("tls_reloads"), tls_counter<&tls::TlsCounters::reloads>,
     "Certificate and key reloads that took effect (SIGHUP)."},
    {"mcpfan_tls_reload_failures_total", kCounter, counters("tls_reload_failures"),
     tls_counter<&tls::TlsCounters::reload_failures>,
     "Certificate and key reloads refused (the running ones stayed)."},
    {"mcpfan_h2_connections_open", kGauge, gauges("h2_connections"), per_worker<&WorkerStats::h2_connections>,
     "Open connections speaking HTTP/2 (of mcpfan_connections_open)."},
    {"mcpfan_h2_flushes_total", kCounter, counters("h2_flushes"), per_worker<&WorkerStats::h2_flushes>,
     "Socket writes of HTTP/2 connections: one per connection per loop turn carries every stream's frames."},
    {"mcpfan_io_uring_workers", kGauge, top("io_uring_workers"), per_worker<&WorkerStats::sends, &SendRingStats::rings>,
     "Worker loops sending stream batches through io_uring (0: libuv writes, by --io-uring-entries 0 or a kernel "
     "that refused)."},
    {"mcpfan_io_uring_sends_total", kCounter, counters("io_uring_sends"),
     per_worker<&WorkerStats::sends, &SendRingStats::sends>, "Stream batches sent through io_uring."},
    {"mcpfan_io_uring_submits_total", kCounter, kNoJson, per_worker<&WorkerStats::sends, &SendRingStats::submits>,
     "io_uring_enter calls that submitted them."},
    {"mcpfan_io_uring_short_sends_total", kCounter, counters("io_uring_short_sends"),
     per_worker<&WorkerStats::sends, &SendRingStats::short_sends>,
     "io_uring sends that left part of their batch (a full socket, or more than IOV_MAX pieces), queued as a libuv "
     "write."},
    {"mcpfan_upstream_requests_total", kCounter, group("requests"), per_worker<&WorkerStats::proxied_requests>,
     "Requests forwarded to the --upstream MCP server.", kUpstream},
    {"mcpfan_upstream_failures_total", kCounter, group("failures"), per_worker<&WorkerStats::upstream_failures>,
     "Forwarded requests whose upstream leg failed: unreachable, timed out, invalid, cut short or too large.",
     kUpstream},
    {"mcpfan_upstream_connects_total", kCounter, kNoJson, pool<&Up::connects>, "Connections opened to the upstream.",
     kUpstream},
    {"mcpfan_upstream_reused_total", kCounter, kNoJson, pool<&Up::reused>,
     "Forwarded requests sent on a pooled keep-alive connection.", kUpstream},
    {"mcpfan_upstream_retried_total", kCounter, kNoJson, pool<&Up::retried>,
     "Requests sent again on a fresh connection after a pooled one had closed: idempotent ones, or ones of which "
     "no byte left.", kUpstream},
    {"mcpfan_upstream_not_retried_total", kCounter, kNoJson, pool<&Up::not_retried>,
     "Requests failed (502) rather than sent twice: a pooled connection closed after they went out (RFC 9110 "
     "9.2.2).", kUpstream},
    {"mcpfan_upstream_expired_total", kCounter, kNoJson, pool<&Up::expired>,
     "Pooled upstream connections closed after --upstream-keepalive-ms idle.", kUpstream},
    {"mcpfan_upstream_resolutions_total", kCounter, kNoJson, pool<&Up::resolutions>,
     "Look-ups of the upstream's host name that answered (cached for --upstream-resolve-ttl-ms; none for an IP "
     "address).", kUpstream},
    {"mcpfan_upstream_resolve_failures_total", kCounter, kNoJson, pool<&Up::resolve_failures>,
     "Look-ups of the upstream's host name that failed; the requests waiting on them were answered 502.", kUpstream},
    {"mcpfan_upstream_tasks_tracked", kGauge, kNoJson, task_poll<&TaskPollStats::tracked>,
     "Tasks the upstream created that are polled now (--upstream-task-poll): while a listen here watches each.",
     kUpstream},
    {"mcpfan_upstream_tasks_tracked_total", kCounter, kNoJson, task_poll<&TaskPollStats::tracked_total>,
     "Tasks the upstream created for a tools/call proxied here and mcpfan took on to poll.", kUpstream},
    {"mcpfan_upstream_tasks_refused_total", kCounter, kNoJson, task_poll<&TaskPollStats::refused>,
     "Tasks not taken on: --upstream-task-poll-max-tasks reached, an id another principal's task has, or an id "
     "that cannot be sent in Mcp-Name.", kUpstream},
    {"mcpfan_upstream_task_polls_total", kCounter, kNoJson, task_poll<&TaskPollStats::polls>,
     "tasks/get requests sent to the upstream (one per task and interval, whatever the number of listeners).",
     kUpstream},
    {"mcpfan_upstream_task_poll_failures_total", kCounter, kNoJson, task_poll<&TaskPollStats::failures>,
     "Polls that failed: unreachable, timed out, an error status or JSON-RPC error, or not a valid task.", kUpstream},
    {"mcpfan_upstream_task_states_published_total", kCounter, kNoJson, task_poll<&TaskPollStats::published>,
     "Task states published as notifications/tasks by poll-to-push: each task's first, then each change.", kUpstream},
    {"mcpfan_upstream_task_polls_stopped_terminal_total", kCounter, kNoJson,
     task_poll<&TaskPollStats::stopped_terminal>,
     "Tasks whose polling stopped at a terminal status (completed, cancelled, failed).", kUpstream},
    {"mcpfan_upstream_task_polls_stopped_ttl_total", kCounter, kNoJson, task_poll<&TaskPollStats::stopped_ttl>,
     "Tasks whose polling stopped at their TTL (ttlMs from creation, at most --task-state-max-ttl-ms).", kUpstream},
    {"mcpfan_upstream_task_polls_stopped_failures_total", kCounter, kNoJson,
     task_poll<&TaskPollStats::stopped_failures>,
     "Tasks whose polling stopped after --upstream-task-poll-max-failures failed polls in a row.", kUpstream},
    {"mcpfan_upstream_task_owners", kGauge, kNoJson, task_owners_kept,
     "Owners (tenant and principal) kept for the tasks polled, until each task's TTL.", kUpstream},
    {"mcpfan_upstream_task_ids_withheld_total", kCounter, kNoJson, task_ids_withheld,
     "Task ids left out of a listen's acknowledgement: a task polled here for another principal.", kUpstream},
    {"mcpfan_oauth_jwks_fetches_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::jwks_fetches>,
     "JWKS documents fetched from the authorization server and installed (--oauth-issuer).", kOAuth},
    {"mcpfan_oauth_jwks_failures_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::jwks_failures>,
     "Discovery or JWKS fetches that failed (the keys held before stay in use).", kOAuth},
    {"mcpfan_oauth_keys", kGauge, kNoJson, oauth_counter<&oauth::AgentCounters::keys>,
     "Verification keys held from the issuer's JWKS.", kOAuth},
    {"mcpfan_oauth_unknown_kid_refetches_total", kCounter, kNoJson,
     oauth_counter<&oauth::AgentCounters::unknown_kid_refetches>,
     "JWKS fetches made because a token named a key id the set lacked.", kOAuth},
    {"mcpfan_oauth_unknown_kid_limited_total", kCounter, kNoJson,
     oauth_counter<&oauth::AgentCounters::unknown_kid_limited>,
     "Unknown key ids not fetched for: the JWKS was fetched within --oauth-jwks-min-refresh-s.", kOAuth},
    {"mcpfan_oauth_token_cache_hits_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::token_cache_hits>,
     "Access tokens found already verified (--oauth-token-cache): no signature check.", kOAuth},
    {"mcpfan_oauth_token_cache_misses_total", kCounter, kNoJson,
     oauth_counter<&oauth::AgentCounters::token_cache_misses>, "Access tokens verified (not in the token cache).",
     kOAuth},
    {"mcpfan_oauth_introspections_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::introspections>,
     "Introspection requests sent (RFC 7662; one per distinct token in flight).", kOAuth},
    {"mcpfan_oauth_introspection_failures_total", kCounter, kNoJson,
     oauth_counter<&oauth::AgentCounters::introspection_failures>,
     "Introspection requests that got no verdict (the client was answered 503).", kOAuth},
    {"mcpfan_oauth_introspection_cache_hits_total", kCounter, kNoJson,
     oauth_counter<&oauth::AgentCounters::introspection_hits>, "Introspection verdicts served from the cache.", kOAuth},
    {"mcpfan_oauth_introspection_cache_misses_total", kCounter, kNoJson,
     oauth_counter<&oauth::AgentCounters::introspection_misses>, "Tokens not found in the introspection cache.",
     kOAuth},
    {"mcpfan_authorize_calls_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::authorize_calls>,
     "Questions POSTed to --authorize-url (one per distinct question in flight).", kOAuth},
    {"mcpfan_authorize_failures_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::authorize_failures>,
     "--authorize-url questions without a usable answer (down, timed out, an error status, malformed): the "
     "requests failed closed (503).",
     kOAuth},
    {"mcpfan_authorize_cache_hits_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::authorize_hits>,
     "--authorize-url answers reused within their ttlMs.", kOAuth},
    {"mcpfan_authorize_cache_misses_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::authorize_misses>,
     "--authorize-url questions not in the cache.", kOAuth},
    {"mcpfan_oauth_waiting", kGauge, kNoJson, oauth_counter<&oauth::AgentCounters::waiting>,
     "Requests waiting now for the authorization server.", kOAuth},
    {"mcpfan_oauth_waiting_refused_total", kCounter, kNoJson, oauth_counter<&oauth::AgentCounters::waiting_refused>,
     "Requests answered 503 because --oauth-max-waiting were already waiting.", kOAuth},
    {"mcpfan_callback_exceptions_total", kCounter, counters("callback_exceptions"), callback_exceptions,
     "Exceptions caught at a loop callback boundary (the affected connection was closed; the server went on)."},
    {"mcpfan_limit_hits_total", kCounter, counters("limit_hits"), limit_hits,
     "Requests, connections and streams refused or closed by a configured limit."},
    {"mcpfan_auth_failures_total", kCounter, counters("auth_failures"), auth_failures,
     "Refused credentials, by who presented them and why."},
    // /status.json has these as one object per tenant (status_json.cc), not one list per family.
    {"mcpfan_tenant_connections", kGauge, kNoJson, per_tenant<&Row::connections>, "Connections bound to the tenant."},
    {"mcpfan_tenant_streams", kGauge, kNoJson, per_tenant<&Row::streams>,
     "Listens and 2025-era sessions of the tenant."},
    {"mcpfan_tenant_subscriptions", kGauge, kNoJson, per_tenant<&Row::subscriptions>,
     "Resource URIs the tenant's clients subscribe to."},
    {"mcpfan_tenant_limit_hits_total", kCounter, kNoJson, per_tenant<&Row::limit_hits>,
     "Limits hit by the tenant's clients and publishers since it last had no clients."},
    {"mcpfan_tenants", kGauge, gauges("tenants"), tenant_count, "Tenants with clients (the default tenant included)."},
};

std::size_t index_of(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kRows); ++i) {
    if (kRows[i].name == name) return i;
  }
  std::fprintf(stderr, "mcpfan: no counter row is named %.*s\n", static_cast<int>(name.size()), name.data());
  std::terminate();
}

}  // namespace

std::span<const CounterRow> counter_rows() noexcept { return kRows; }
std::size_t counter_row_count() noexcept { return std::size(kRows); }

bool counter_present(const StatsSnapshot& s, const CounterRow& row) noexcept {
  switch (row.group) {
    case CounterGroup::Server: return true;
    case CounterGroup::Upstream: return s.upstream.has_value();
    case CounterGroup::OAuth: return s.oauth.has_value();
  }
  return false;
}

double counter_value(const StatsSnapshot& s, std::size_t i) {
  const CounterRow& row = kRows[i];
  if (row.source.read) return row.source.read(s);
  return static_cast<double>(s.values[i]);
}

void gather_counters(const CounterInputs& in, StatsSnapshot& s) {
  s.values.assign(std::size(kRows), 0);
  for (std::size_t i = 0; i < std::size(kRows); ++i) {
    if (kRows[i].source.gather) s.values[i] = kRows[i].source.gather(in);
  }
}

long long StatsSnapshot::value(std::string_view name) const { return values[index_of(name)]; }
void StatsSnapshot::set(std::string_view name, long long v) { values[index_of(name)] = v; }

}  // namespace mcpfan::detail
