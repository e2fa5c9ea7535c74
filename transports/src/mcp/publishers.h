#pragma once
// Who may publish and how fast: the publisher keys and their rate buckets. Loaded by
// Server::start() before any worker runs and replaced whole by Server::reload() (SIGHUP);
// a worker takes the current policy per publish (Swappable) and the buckets lock themselves.
// Thread-safe for every worker; owned by the Server's state, outlives the workers.
#include "mcp/auth.h"
#include "mcp/limits.h"
#include "mcp/publish_rate.h"
#include "mcp/swappable.h"

namespace mcpfan::detail {

/** One generation of publisher configuration: immutable once published (the buckets lock themselves). */
struct PublisherPolicy {
  PublisherKeys keys;
  PublishRate rate;  // one bucket per key, or one shared
};

struct Publishers {
  explicit Publishers(AuthCounters& c) noexcept : counters(c) {}
  Swappable<PublisherPolicy> policy;
  AuthCounters& counters;
};

}  // namespace mcpfan::detail
