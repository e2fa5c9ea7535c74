#pragma once
// What the server's workers share: the configuration, the hub, the 2025-era sessions and
// the limits. Owned by Server; outlives every worker.
#include <memory>

#include "mcp/auth.h"
#include "mcp/publish_rate.h"
#include "mcp/limits.h"
#include "mcpfan/hub.h"
#include "mcpfan/transport/server.h"
#include "mcp/sessions.h"

namespace mcpfan::detail {

struct ServerState {
  explicit ServerState(ServerConfig cfg);

  ServerConfig config;
  std::unique_ptr<Hub> hub;
  Limits limits;             // before sessions: a session gives back its usage when destroyed
  SessionRegistry sessions;
  ClientAuth client_auth;        // loaded by Server::start()
  PublisherKeys publisher_keys;  // loaded by Server::start()
  PublishRate publish_rate;      // sized by Server::start() (one bucket per key, or one shared)
  AuthCounters auth_counters;
};

}  // namespace mcpfan::detail
