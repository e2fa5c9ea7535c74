#pragma once
// What the server's workers share, owned by Server and outliving every worker. A worker keeps
// references to the parts its connections use (Worker::clients(), publishers(), sessions(),
// limits(), hub()); nothing below the worker sees this struct.
#include <memory>
#include <optional>

#include "mcp/auth.h"
#include "mcp/client.h"
#include "mcp/limits.h"
#include "mcp/publishers.h"
#include "mcp/sessions.h"
#include "mcp/swappable.h"
#include "mcp/task_owners.h"
#include "backplane/backplane.h"
#include "proxy/upstream.h"
#include "tls/context.h"
#include "server/log.h"
#include "server/worker.h"
#include "mcpfan/hub.h"
#include "mcpfan/transport/server.h"

namespace mcpfan::detail {

/**
 * The one place that names the transports (transports/src/install_transports.cc): installs
 * HTTP/1.1 and stdio as the workers' acceptors, and what ends an expired session's stream.
 * Called by ServerState's constructor; server/ itself includes no transport.
 */
void install_transports(ServerState& state);

/** This server's /mcp URL as --listen gives it (the OAuth resource when --oauth-resource is not set). */
[[nodiscard]] std::string default_resource(const ServerConfig& c, std::uint16_t port);

/** The per-tenant ceilings a configuration sets. */
[[nodiscard]] TenantCeilings tenant_ceilings(const ServerConfig& c) noexcept;

struct ServerState {
  /** Builds the shared parts and installs the transports (install_transports). */
  explicit ServerState(ServerConfig cfg);

  ServerConfig config;
  log::Logger logger;        // before the rest: destroyed after everything that may log (server/log.h)
  std::unique_ptr<Hub> hub;
  Limits limits;             // before sessions: a session gives back its usage when destroyed
  SessionRegistry sessions;
  Swappable<ClientAuth> client_auth;  // loaded by Server::start(), replaced by Server::reload()
  AuthCounters auth_counters;
  Publishers publishers;     // keys loaded and rate sized by Server::start(), replaced by Server::reload()
  ClientCore clients;
  TaskOwners task_owners;  // poll-to-push: who created each task polled here (--upstream-task-poll)
  std::optional<proxy::UpstreamTarget>
      upstream;                          // with --upstream: parsed by start(); each worker pools its own connections
  std::unique_ptr<Backplane> backplane;  // with --nats: created by start(), destroyed by stop() after the workers
  // With --tls-cert / --publish-tls-cert: loaded by preflight, reloaded by Server::reload() (SIGHUP).
  std::shared_ptr<tls::ServerContext> tls;
  std::shared_ptr<tls::ServerContext> publish_tls;
  Acceptors acceptors;  // how workers serve clients: install_transports()
  // With --oauth-issuer: made and started by start() (the clients' core points at it), stopped by stop().
  std::unique_ptr<oauth::Agent> oauth;
};

}  // namespace mcpfan::detail
