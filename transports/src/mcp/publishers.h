#pragma once
// Who may publish and how fast: the publisher keys and their rate buckets, loaded by
// Server::start() before any worker runs and only read after (the buckets lock themselves).
// Thread-safe for every worker; owned by the Server's state, outlives the workers.
#include "mcp/auth.h"
#include "mcp/limits.h"
#include "mcp/publish_rate.h"

namespace mcpfan::detail {

struct Publishers {
  explicit Publishers(AuthCounters& c) noexcept : counters(c) {}
  PublisherKeys keys;
  PublishRate rate;  // one bucket per key, or one shared
  AuthCounters& counters;
};

}  // namespace mcpfan::detail
