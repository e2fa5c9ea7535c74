#pragma once
// Everything Server::start() checks of a ServerConfig before it binds a port, starts a thread
// or connects to NATS; Server::check() (the program's --check-config) is this and nothing
// more, so the two cannot disagree about a configuration. Pure: no socket is bound, no thread
// started, no connection made (files are read: the key files, the NATS credentials and CA).
#include <netinet/in.h>
#include <sys/socket.h>

#include <memory>
#include <optional>
#include <string>

#include "mcp/auth.h"
#include "mcp/limits.h"
#include "mcp/publishers.h"
#include "mcpfan/result.h"
#include "mcpfan/transport/server.h"
#include "proxy/upstream.h"
#include "tls/context.h"

namespace mcpfan::detail {

/** What start() goes on with once the configuration passed. */
struct Preflight {
  sockaddr_storage addr{};          // host:port, not bound yet; with listen_fd the socket's own address
  sockaddr_storage publish_addr{};  // publish_host:publish_port (when publish_host is set)
  std::optional<proxy::UpstreamTarget> upstream;
  std::shared_ptr<tls::ServerContext> tls;          // --tls-cert: the public listener's TLS
  std::shared_ptr<tls::ServerContext> publish_tls;  // --publish-tls-cert: the operator listener's
};

/**
 * The ranges (config_check.h), the listen addresses (and listen_fd: a listening TCP socket),
 * the rule for listeners that are not loopback (open_listener_error()), the Unix socket path,
 * the upstream URL, the TLS certificates and keys (loaded) and the NATS settings and files. The first problem, as
 * -32602 naming the flag (and for the listener rule what is missing).
 */
[[nodiscard]] Result<Preflight> preflight(const ServerConfig& config);

/**
 * A listener that is not on a loopback address serves whoever can reach it: it needs client
 * authentication (JWT key files or the host's authenticate_client) for /mcp and publisher keys
 * for /v1/publish (with publish_host set, each listener needs only what it serves), unless
 * `insecure`. Empty when allowed; else the message naming the listener and what is missing.
 */
[[nodiscard]] std::optional<std::string> open_listener_error(const ServerConfig& config, const Preflight& at);

/** IPv4 127.0.0.0/8, IPv6 ::1 or an IPv4-mapped 127.0.0.0/8. */
[[nodiscard]] bool is_loopback(const sockaddr_storage& addr) noexcept;

/** What reload() may change, loaded from files and ready to install (reload.cc). */
struct Reloadable {
  ClientAuth auth;
  std::shared_ptr<PublisherPolicy> policy;
  TenantCeilings ceilings;
  std::string summary;  // one line: what would be in force
};

/**
 * Loads the client token keys and the publisher keys of `next` (the error names the flag and
 * the file) and computes the rate and the ceilings. `host_authenticator`: the Server has an
 * authenticate_client, which excludes JWT key files. Installs nothing (reload.cc).
 */
[[nodiscard]] Result<Reloadable> load_reloadable(const ServerConfig& next, bool host_authenticator);

struct ServerState;
/** Puts what load_reloadable() loaded in force: the next request checks against it (reload.cc). */
void install_reloadable(ServerState& state, Reloadable&& r);

}  // namespace mcpfan::detail
