#pragma once
// What the server's workers share: the configuration, the hub, the 2025-era sessions and
// the limits. Owned by Server; outlives every worker.
#include <memory>

#include "server_limits.h"
#include "mcpfan/hub.h"
#include "mcpfan/transport/server.h"
#include "sessions.h"

namespace mcpfan::detail {

struct ServerState {
  explicit ServerState(ServerConfig cfg);

  ServerConfig config;
  std::unique_ptr<Hub> hub;
  SessionRegistry sessions;
  Limits limits;
};

}  // namespace mcpfan::detail
