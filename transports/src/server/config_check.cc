#include "server/config_check.h"

#include "net/send_ring.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace mcpfan::detail {

namespace {

// A range of one numeric field, read as a double: every bound here is exact in a double.
struct Range {
  const char* field;
  const char* flag;  // the mcpfan program's flag for it
  double value;
  double min;
  double max;
};

constexpr double kDay = 86'400'000;  // ms
constexpr double kHour = 3'600'000;  // ms
constexpr double kGiB = 1u << 30;

std::string number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e18) return std::to_string(static_cast<long long>(v));
  return std::to_string(v);
}

}  // namespace

Status check_config(const ServerConfig& c) {
  auto d = [](auto v) { return static_cast<double>(v); };
  const Range ranges[] = {
      {"workers", "--workers", d(c.workers), 0, kMaxWorkers},
      {"max_body", "--max-body", d(c.max_body), 1, kGiB},
      {"max_header_bytes", "--max-header-bytes", d(c.max_header_bytes), 256, 1 << 24},
      {"max_url_length", "--max-url-length", d(c.max_url_length), 16, 1 << 24},
      {"max_uri_length", "--max-uri-length", d(c.max_uri_length), 1, 1 << 24},
      {"max_uris_per_listen", "--max-uris-per-listen", d(c.max_uris_per_listen), 1, 1 << 24},
      {"keepalive_ms", "--keepalive-ms", d(c.keepalive_ms), 10, kHour},
      {"shutdown_grace_ms", "--shutdown-grace-ms", d(c.shutdown_grace_ms), 0, kHour},
      {"drain_delay_ms", "--drain-delay-ms", d(c.drain_delay_ms), 0, kHour},
      {"session_idle_ms", "--session-idle-ms", d(c.session_idle_ms), 10, kDay},
      {"session_replay_bytes", "--session-replay-bytes", d(c.session_replay_bytes), 0, kGiB},
      {"debounce_ms", "--debounce-ms", d(c.debounce_ms), 0, kHour},
      {"max_line_bytes", "--max-line-bytes", d(c.max_line_bytes), 1, 1e12},
      {"request_timeout_ms", "--request-timeout-ms", d(c.request_timeout_ms), 10, kHour},
      {"idle_timeout_ms", "--idle-timeout-ms", d(c.idle_timeout_ms), 10, kDay},
      {"write_timeout_ms", "--write-timeout-ms", d(c.write_timeout_ms), 10, kDay},
      {"max_requests_per_connection", "--max-requests-per-connection", d(c.max_requests_per_connection), 0,
       d(std::numeric_limits<std::uint32_t>::max())},
      {"tcp_keepalive_s", "--tcp-keepalive-s", d(c.tcp_keepalive_s), 0, 86400},
      {"max_connections_per_tenant", "--max-connections-per-tenant", d(c.max_connections_per_tenant), 0, 1e15},
      {"max_streams_per_tenant", "--max-streams-per-tenant", d(c.max_streams_per_tenant), 0, 1e15},
      {"max_subscriptions_per_tenant", "--max-subscriptions-per-tenant", d(c.max_subscriptions_per_tenant), 0, 1e15},
      {"max_tenants", "--max-tenants", d(c.max_tenants), 1, kMaxTenants},
      {"max_idle_sessions", "--max-idle-sessions", d(c.max_idle_sessions), 0, 1e9},
      {"max_idle_sessions_per_tenant", "--max-idle-sessions-per-tenant", d(c.max_idle_sessions_per_tenant), 0, 1e9},
      {"max_listens_per_connection", "--max-listens-per-connection", d(c.max_listens_per_connection), 1, 1'000'000},
      {"metrics_tenants", "--metrics-tenants", d(c.metrics_tenants), 0, 100'000},
      {"publish_rate", "--publish-rate", c.publish_rate, 0, 1e12},
      {"publish_burst", "--publish-burst", c.publish_burst, 0, 1e12},
      {"nats_linger_ms", "--nats-linger-ms", d(c.nats_linger_ms), 0, kDay},
      {"nats_outage_buffer_bytes", "--nats-outage-buffer-bytes", d(c.nats_outage_buffer_bytes), 1024, kGiB},
      {"nats_receive_buffer_bytes", "--nats-receive-buffer-bytes", d(c.nats_receive_buffer_bytes), 1024, 16 * kGiB},
      {"nats_settle_ms", "--nats-settle-ms", d(c.nats_settle_ms), 0, kHour},
      {"nats_max_subjects", "--nats-max-subjects", d(c.nats_max_subjects), 1, 100'000'000},
      {"nats_batch_window_us", "--nats-batch-us", d(c.nats_batch_window_us), 0, 1'000'000},
      {"nats_delivery_threads", "--nats-delivery-threads", d(c.nats_delivery_threads), 0, 64},
      {"upstream_resolve_ttl_ms", "--upstream-resolve-ttl-ms", d(c.upstream_resolve_ttl_ms), 0, kDay},
      {"upstream_connect_ms", "--upstream-connect-ms", d(c.upstream_connect_ms), 1, 600'000},
      {"upstream_first_byte_ms", "--upstream-first-byte-ms", d(c.upstream_first_byte_ms), 1, kDay},
      {"upstream_idle_ms", "--upstream-idle-ms", d(c.upstream_idle_ms), 1, kDay},
      {"upstream_max_idle", "--upstream-max-idle", d(c.upstream_max_idle), 0, 100'000},
      {"upstream_keepalive_ms", "--upstream-keepalive-ms", d(c.upstream_keepalive_ms), 1, kDay},
      {"upstream_max_answer_bytes", "--upstream-max-answer-bytes", d(c.upstream_max_answer_bytes), 1024, kGiB},
      {"shard.max_pending_bytes", "--max-pending-bytes", d(c.shard.max_pending_bytes), 1024, 1e12},
      {"shard.drain_batch", "(no flag)", d(c.shard.drain_batch), 1, d(kMaxDrainBatch)},
      {"shard.max_inbox", "--shard-inbox-max", d(c.shard.max_inbox), 1, 16'777'216},
      {"io_uring_entries", "--io-uring-entries", d(c.io_uring_entries), 0, SendRing::kMaxEntries},
  };
  for (const Range& r : ranges) {
    // !(a <= b) also catches NaN.
    if (!(r.value >= r.min && r.value <= r.max)) {
      return Error{rpc_code::kInvalidParams, std::string("ServerConfig::") + r.field + " = " + number(r.value) + " is outside " +
                                                 number(r.min) + ".." + number(r.max) + " (" + r.flag + ")"};
    }
  }
  if (c.nats_io != "libuv" && c.nats_io != "threads") {
    return Error{rpc_code::kInvalidParams, "ServerConfig::nats_io = \"" + c.nats_io + "\" is neither \"libuv\" nor \"threads\" (--nats-io)"};
  }
  if (c.readyz_backplane != "ignore" && c.readyz_backplane != "require") {
    return Error{rpc_code::kInvalidParams,
                 "ServerConfig::readyz_backplane = \"" + c.readyz_backplane + "\" is neither \"ignore\" nor \"require\" (--readyz-backplane)"};
  }
  return {};
}

}  // namespace mcpfan::detail
